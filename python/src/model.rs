//! `Model`, `load`, `scene`: models and where they start.

use moreau::dynamics::configuration_charts;
use moreau::{Model as CoreModel, scenes};
use nalgebra::DVector;
use numpy::{PyArray1, PyArray2, PyArray3, PyUntypedArrayMethods};
use pyo3::exceptions::PyFileNotFoundError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::sync::Arc;

use crate::arrays::{Floats1, Floats2, FloatsDyn, array2, array3, flat, rows, vector};
use crate::value_error;

/// The coordinate charts `(c, d)` of `Model.configuration_charts`.
pub(crate) type Charts<'py> = (Bound<'py, PyArray3<f64>>, Bound<'py, PyArray3<f64>>);

/// Two arrays: a state `(q, v)` or MuJoCo's `(qpos, qvel)`.
pub(crate) type Pair<'py> = (Bound<'py, PyArray2<f64>>, Bound<'py, PyArray2<f64>>);

/// A model with where it starts: the configuration and velocity of its
/// file (MJCF's `qpos0`, URDF's neutral pose) or scene, and its time step.
#[pyclass(module = "moreau._moreau", frozen)]
#[derive(Clone)]
pub struct Model {
    pub(crate) model: Arc<CoreModel>,
    pub(crate) q0: DVector<f64>,
    pub(crate) v0: DVector<f64>,
    pub(crate) dt: f64,
}

impl Model {
    /// [`Model::to_mujoco`] (`to`) or [`Model::from_mujoco`].
    fn convert<'py>(
        &self,
        py: Python<'py>,
        q: Floats2<'py>,
        v: Floats2<'py>,
        to: bool,
    ) -> PyResult<Pair<'py>> {
        let m = &self.model;
        let names = if to { ["q", "v"] } else { ["qpos", "qvel"] };
        let n = q.shape()[0];
        let q = rows(names[0], &q, n, m.nq)?;
        let v = rows(names[1], &v, n, m.nv)?;
        let (mut qo, mut vo) = (vec![0.0; n * m.nq], vec![0.0; n * m.nv]);
        for w in 0..n {
            let (qw, vw) = (&q[w * m.nq..(w + 1) * m.nq], &v[w * m.nv..(w + 1) * m.nv]);
            let (qow, vow) = (
                &mut qo[w * m.nq..(w + 1) * m.nq],
                &mut vo[w * m.nv..(w + 1) * m.nv],
            );
            if to {
                m.mujoco_qpos(qw, qow);
                m.mujoco_qvel(qw, vw, vow);
            } else {
                m.q_from_mujoco(qw, qow);
                m.v_from_mujoco(qow, vw, vow);
            }
        }
        Ok((array2(py, qo, n, m.nq), array2(py, vo, n, m.nv)))
    }
}

#[pymethods]
impl Model {
    /// The model's name.
    #[getter]
    fn name(&self) -> String {
        self.model.name.clone()
    }
    /// Configuration size.
    #[getter]
    fn nq(&self) -> usize {
        self.model.nq
    }
    /// Velocity size (degrees of freedom).
    #[getter]
    fn nv(&self) -> usize {
        self.model.nv
    }
    /// Number of actuators.
    #[getter]
    fn nu(&self) -> usize {
        self.model.nu()
    }
    /// Number of activation states (actuators with activation dynamics,
    /// MJCF's ``dyntype``): the width of ``act``.
    #[getter]
    fn na(&self) -> usize {
        self.model.na()
    }
    /// The file's or scene's time step (s).
    #[getter]
    fn dt(&self) -> f64 {
        self.dt
    }
    /// Body names, the world first.
    #[getter]
    fn body_names(&self) -> Vec<String> {
        self.model.body_name.clone()
    }
    /// The file's bodies (MJCF: every ``<body>``, world excluded, in
    /// MuJoCo's body order; unnamed ones ``body{id}``): the rows of
    /// ``BatchSim.com_inertias``, ``com_velocities`` and
    /// ``com_external_forces``.
    #[getter]
    fn body_frame_names(&self) -> Vec<String> {
        self.model
            .body_frames()
            .map(|(_, f)| f.name.clone())
            .collect()
    }
    /// The mocap bodies' names (``mocap="true"``), in file order: the
    /// order of ``BatchSim.mocap_poses`` and ``set_mocap``.
    #[getter]
    fn mocap_names(&self) -> Vec<String> {
        self.model.mocap.iter().map(|m| m.name.clone()).collect()
    }
    /// Joint names, one per body (the world's first, ``""``: it has no
    /// joint), aligned with ``body_names``; MuJoCo's joint ``j`` is moreau's
    /// joint of the body it moves.
    #[getter]
    fn joint_names(&self) -> Vec<String> {
        self.model.joint_name.clone()
    }
    /// The collision geometries' names (indices of ``BatchSim.contacts``'s
    /// ``geoms``).
    #[getter]
    fn geom_names(&self) -> Vec<String> {
        self.model
            .geometries
            .iter()
            .map(|g| g.name.clone())
            .collect()
    }
    /// The tendons' names (MJCF's ``<tendon>``, fixed and spatial): the
    /// columns of ``BatchSim.tendon_states``.
    #[getter]
    fn tendon_names(&self) -> Vec<String> {
        self.model.tendons.iter().map(|t| t.name.clone()).collect()
    }
    /// The sensors' names (MJCF's ``<sensor>``, in file order; unnamed
    /// ones ``sensor{k}``, ``k`` the element's index): the columns of
    /// ``BatchSim.sensors`` from ``sensor_address``, ``sensor_dims`` wide.
    #[getter]
    fn sensor_names(&self) -> Vec<String> {
        self.model.sensors.iter().map(|s| s.name.clone()).collect()
    }
    /// The file's cameras' names (MJCF's ``<camera>``, in MuJoCo's order:
    /// camera ``k`` is MuJoCo's camera id ``k``; unnamed ones
    /// ``camera{k}``): ``render(camera=...)``'s names.
    #[getter]
    fn camera_names(&self) -> Vec<String> {
        self.model.cameras.iter().map(|c| c.name.clone()).collect()
    }
    /// Each camera's vertical field of view (degrees; MuJoCo's
    /// ``cam_fovy``).
    #[getter]
    fn camera_fovy(&self) -> Vec<f64> {
        self.model.cameras.iter().map(|c| c.fovy_degrees).collect()
    }
    /// The named frames: the file's bodies (as ``body_frame_names``), then
    /// its named sites; a free camera can follow one (``render(track=...)``).
    #[getter]
    fn frame_names(&self) -> Vec<String> {
        self.model.frames.iter().map(|f| f.name.clone()).collect()
    }
    /// Each sensor's MuJoCo type (``"touch"``, ``"accelerometer"``, ...).
    #[getter]
    fn sensor_types(&self) -> Vec<&'static str> {
        (self.model.sensors.iter())
            .map(|s| s.kind.mujoco_type())
            .collect()
    }
    /// Each sensor's first column in the sensor values (MuJoCo's
    /// ``sensor_adr``).
    #[getter]
    fn sensor_address(&self) -> Vec<usize> {
        self.model.sensor_address()
    }
    /// Each sensor's number of values (MuJoCo's ``sensor_dim``).
    #[getter]
    fn sensor_dims(&self) -> Vec<usize> {
        self.model.sensors.iter().map(|s| s.kind.dim()).collect()
    }
    /// Each joint's type, aligned with ``joint_names``: ``"free"``,
    /// ``"ball"``, ``"hinge"``, ``"slide"``, ``"fixed"`` (the world's:
    /// ``"fixed"``).
    #[getter]
    fn joint_types(&self) -> Vec<&'static str> {
        use moreau::model::JointType;
        (self.model.joint_type.iter())
            .map(|t| match t {
                JointType::Free => "free",
                JointType::Spherical => "ball",
                JointType::Revolute(_) => "hinge",
                JointType::Prismatic(_) => "slide",
                JointType::Fixed => "fixed",
            })
            .collect()
    }
    /// Where each joint's coordinates start in ``q`` (MuJoCo's
    /// ``jnt_qposadr``), aligned with ``joint_names``; -1 for a joint
    /// without coordinates (fixed, the world's). A ball or free joint's
    /// quaternion is stored ``(x, y, z, w)`` in ``q`` (MuJoCo's ``qpos``:
    /// ``(w, x, y, z)``; see ``Model.to_mujoco``).
    #[getter]
    fn joint_qpos_address(&self) -> Vec<i64> {
        let m = &self.model;
        (0..m.nbodies)
            .map(|i| match m.joint_type[i].nq() {
                0 => -1,
                _ => m.joint_idx_q[i] as i64,
            })
            .collect()
    }
    /// Where each joint's velocities start in ``v`` (MuJoCo's
    /// ``jnt_dofadr``), aligned with ``joint_names``; -1 for a joint
    /// without dofs.
    #[getter]
    fn joint_dof_address(&self) -> Vec<i64> {
        let m = &self.model;
        (0..m.nbodies)
            .map(|i| match m.joint_type[i].nv() {
                0 => -1,
                _ => m.joint_idx_v[i] as i64,
            })
            .collect()
    }
    /// Actuator names, in control order.
    #[getter]
    fn actuator_names(&self) -> Vec<String> {
        self.model
            .actuators
            .iter()
            .map(|a| a.name.clone())
            .collect()
    }
    /// Each actuator's control range (nu, 2): `[low, high]`, `[-inf, inf]`
    /// where unlimited.
    #[getter]
    fn ctrl_range<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray2<f64>> {
        let flat: Vec<f64> = self
            .model
            .actuators
            .iter()
            .flat_map(|a| {
                let (lo, hi) = a.ctrl_range.unwrap_or((f64::NEG_INFINITY, f64::INFINITY));
                [lo, hi]
            })
            .collect();
        array2(py, flat, self.model.nu(), 2)
    }
    /// Each body's mass (nbodies,), the world's (0) first.
    #[getter]
    fn body_mass<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        let m: Vec<f64> = self.model.body_inertia.iter().map(|b| b.mass).collect();
        PyArray1::from_vec(py, m)
    }
    /// Each body's centre of mass in its frame (nbodies, 3).
    #[getter]
    fn body_com<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray2<f64>> {
        let c: Vec<f64> = (self.model.body_inertia.iter())
            .flat_map(|b| [b.com.x, b.com.y, b.com.z])
            .collect();
        array2(py, c, self.model.nbodies, 3)
    }
    /// Each body's rotational inertia about its centre of mass, in its
    /// frame (nbodies, 3, 3).
    #[getter]
    fn body_inertia<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray3<f64>> {
        let i: Vec<f64> = (self.model.body_inertia.iter())
            .flat_map(|b| {
                let r = &b.rotational;
                (0..3).flat_map(move |row| (0..3).map(move |col| r[(row, col)]))
            })
            .collect();
        array3(py, i, self.model.nbodies, 3, 3)
    }
    /// Gravity (3,), m/s².
    #[getter]
    fn gravity<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        PyArray1::from_slice(py, self.model.gravity.as_slice())
    }
    /// Each dof's viscous damping (nv,).
    #[getter]
    fn dof_damping<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        PyArray1::from_slice(py, &self.model.dof_damping)
    }
    /// Each dof's armature (nv,).
    #[getter]
    fn dof_armature<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        PyArray1::from_slice(py, &self.model.dof_armature)
    }
    /// Each actuator's gear (nu,).
    #[getter]
    fn actuator_gear<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        let g: Vec<f64> = self.model.actuators.iter().map(|a| a.gear).collect();
        PyArray1::from_vec(py, g)
    }
    /// A copy of the model with the given arrays in place of its own (the
    /// getters of the same names: shapes, the world body first), for
    /// domain randomization with `BatchSim.set_world_model`. Each changed
    /// body's inertia is checked as a file's is (mass > 0, rotational
    /// inertia symmetric positive definite, the triangle inequality);
    /// damping and armature must be ≥ 0, everything finite. A bad value
    /// raises ValueError naming it, and nothing is made.
    #[pyo3(signature = (*, body_mass=None, body_com=None, body_inertia=None, gravity=None, dof_damping=None, dof_armature=None, actuator_gear=None))]
    #[allow(clippy::too_many_arguments)]
    fn with_parameters(
        &self,
        body_mass: Option<Floats1<'_>>,
        body_com: Option<Floats2<'_>>,
        body_inertia: Option<FloatsDyn<'_>>,
        gravity: Option<Floats1<'_>>,
        dof_damping: Option<Floats1<'_>>,
        dof_armature: Option<Floats1<'_>>,
        actuator_gear: Option<Floats1<'_>>,
    ) -> PyResult<Model> {
        let mut m = self.model.as_ref().clone();
        let (nb, nv, nu) = (m.nbodies, m.nv, m.nu());
        let values = |what: &str, a: &[f64], expected: usize| -> PyResult<Vec<f64>> {
            if a.len() != expected {
                return Err(value_error(format!(
                    "{what} has {} values, expected {expected}",
                    a.len()
                )));
            }
            if let Some(k) = a.iter().position(|x| !x.is_finite()) {
                return Err(value_error(format!("{what}[{k}] is not finite ({})", a[k])));
            }
            Ok(a.to_vec())
        };
        let nonnegative = |what: &str, a: &[f64]| -> PyResult<()> {
            match a.iter().position(|&x| x < 0.0) {
                Some(k) => Err(value_error(format!("{what}[{k}] is negative ({})", a[k]))),
                None => Ok(()),
            }
        };
        let mut inertias = m.body_inertia.clone();
        if let Some(a) = body_mass {
            let a = values("body_mass", &vector(&a), nb)?;
            for (i, &x) in a.iter().enumerate() {
                inertias[i].mass = x;
            }
        }
        if let Some(a) = body_com {
            let a = values("body_com", &flat(&a.as_array()), 3 * nb)?;
            for (i, inertia) in inertias.iter_mut().enumerate() {
                inertia.com = moreau::math::Vec3::new(a[3 * i], a[3 * i + 1], a[3 * i + 2]);
            }
        }
        if let Some(a) = body_inertia {
            if a.shape() != [nb, 3, 3] {
                return Err(value_error(format!(
                    "body_inertia has shape {:?}, expected ({nb}, 3, 3)",
                    a.shape()
                )));
            }
            let a = values("body_inertia", &flat(&a.as_array()), 9 * nb)?;
            for (i, inertia) in inertias.iter_mut().enumerate() {
                inertia.rotational = moreau::math::Mat3::from_row_slice(&a[9 * i..9 * i + 9]);
            }
        }
        if inertias[0] != m.body_inertia[0] {
            return Err(value_error(
                "the world (row 0) has no inertia to change: keep its row as the getters give it",
            ));
        }
        // Each changed body checked, and its file body's frame kept in step.
        for (i, inertia) in inertias.into_iter().enumerate().skip(1) {
            if inertia != m.body_inertia[i] {
                m.set_body_inertia(i, inertia).map_err(value_error)?;
            }
        }
        if let Some(a) = gravity {
            let a = values("gravity", &vector(&a), 3)?;
            m.gravity = moreau::math::Vec3::new(a[0], a[1], a[2]);
        }
        if let Some(a) = dof_damping {
            let a = values("dof_damping", &vector(&a), nv)?;
            nonnegative("dof_damping", &a)?;
            m.dof_damping = a;
        }
        if let Some(a) = dof_armature {
            let a = values("dof_armature", &vector(&a), nv)?;
            nonnegative("dof_armature", &a)?;
            m.dof_armature = a;
        }
        if let Some(a) = actuator_gear {
            let a = values("actuator_gear", &vector(&a), nu)?;
            for (act, g) in m.actuators.iter_mut().zip(a) {
                act.gear = g;
            }
        }
        Ok(Model {
            model: Arc::new(m),
            q0: self.q0.clone(),
            v0: self.v0.clone(),
            dt: self.dt,
        })
    }
    /// The initial configuration (nq,); a free or ball joint's quaternion
    /// is stored ``(x, y, z, w)`` (MuJoCo's ``qpos``: ``(w, x, y, z)``).
    #[getter]
    fn q0<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        PyArray1::from_slice(py, self.q0.as_slice())
    }
    /// The initial velocity (nv,).
    #[getter]
    fn v0<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        PyArray1::from_slice(py, self.v0.as_slice())
    }
    /// The coordinate charts at configurations ``q`` (n, nq): ``c`` (n, nq,
    /// nv) ``= ∂(q ⊕ δ)/∂δ`` and ``d`` (n, nv, nq) ``= ∂(q' ⊖ q)/∂q'``,
    /// which carry gradients between the tangent space (the step
    /// Jacobians' ``q`` columns) and the coordinates (quaternions ``(x, y,
    /// z, w)``): a gradient ``g`` with respect to coordinates is ``cᵀg`` in
    /// the tangent space, a tangent gradient ``h`` is ``dᵀh`` with respect
    /// to the coordinates. Identities for models without quaternions.
    fn configuration_charts<'py>(&self, py: Python<'py>, q: Floats2<'py>) -> PyResult<Charts<'py>> {
        let m = &self.model;
        let n = q.shape()[0];
        let q = rows("q", &q, n, m.nq)?;
        let (mut cs, mut ds) = (
            Vec::with_capacity(n * m.nq * m.nv),
            Vec::with_capacity(n * m.nq * m.nv),
        );
        let (mut c, mut d) = (
            nalgebra::DMatrix::zeros(0, 0),
            nalgebra::DMatrix::zeros(0, 0),
        );
        for w in 0..n {
            configuration_charts(m, &q[w * m.nq..(w + 1) * m.nq], &mut c, &mut d);
            cs.extend_from_slice(c.transpose().as_slice());
            ds.extend_from_slice(d.transpose().as_slice());
        }
        Ok((array3(py, cs, n, m.nq, m.nv), array3(py, ds, n, m.nv, m.nq)))
    }
    /// MuJoCo's ``(qpos, qvel)`` (each (n, nq), (n, nv)) of states ``q``
    /// (n, nq), ``v`` (n, nv): quaternions ``(w, x, y, z)`` there, ``(x, y,
    /// z, w)`` here, and a free joint's linear velocity in the world frame
    /// there, in the body frame here; the rest is the same.
    fn to_mujoco<'py>(
        &self,
        py: Python<'py>,
        q: Floats2<'py>,
        v: Floats2<'py>,
    ) -> PyResult<Pair<'py>> {
        self.convert(py, q, v, true)
    }
    /// The states ``(q, v)`` of MuJoCo's ``qpos`` (n, nq) and ``qvel`` (n,
    /// nv): the inverse of ``to_mujoco``.
    #[pyo3(name = "from_mujoco")]
    fn state_from_mujoco<'py>(
        &self,
        py: Python<'py>,
        qpos: Floats2<'py>,
        qvel: Floats2<'py>,
    ) -> PyResult<Pair<'py>> {
        self.convert(py, qpos, qvel, false)
    }
    /// Pickling: the model as the library's bytes (every number bit for
    /// bit; meshes' colliders rebuilt when read), with ``q0``, ``v0``,
    /// ``dt``.
    #[allow(clippy::type_complexity)]
    fn __reduce__<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<(
        Bound<'py, PyAny>,
        (Bound<'py, PyBytes>, Vec<f64>, Vec<f64>, f64),
    )> {
        let f = py.import("moreau._moreau")?.getattr("_model_from_pickle")?;
        let bytes = PyBytes::new(py, &self.model.to_bytes());
        Ok((
            f,
            (
                bytes,
                self.q0.as_slice().to_vec(),
                self.v0.as_slice().to_vec(),
                self.dt,
            ),
        ))
    }
    fn __repr__(&self) -> String {
        format!(
            "Model({:?}, nq={}, nv={}, nu={}, dt={})",
            self.model.name,
            self.model.nq,
            self.model.nv,
            self.model.nu(),
            self.dt
        )
    }
}

/// A model from what `Model.__reduce__` pickled: the library's bytes of
/// the model ([`CoreModel::to_bytes`]), `q0`, `v0` and `dt`.
#[pyfunction]
pub(crate) fn _model_from_pickle(
    bytes: &[u8],
    q0: Vec<f64>,
    v0: Vec<f64>,
    dt: f64,
) -> PyResult<Model> {
    let model = CoreModel::from_bytes(bytes).map_err(value_error)?;
    if q0.len() != model.nq || v0.len() != model.nv || !(dt.is_finite() && dt > 0.0) {
        return Err(value_error(format!(
            "pickled model `{}`: q0 ({}), v0 ({}) or dt ({dt}) do not fit it (nq {}, nv {})",
            model.name,
            q0.len(),
            v0.len(),
            model.nq,
            model.nv
        )));
    }
    Ok(Model {
        model: Arc::new(model),
        q0: DVector::from_vec(q0),
        v0: DVector::from_vec(v0),
        dt,
    })
}

/// Loads a URDF or MJCF file. `floating_base` (URDF): attach the root link
/// by a free joint (default: unless the root link is `world`).
/// `sliding_friction_only` (MJCF): take contacts with torsional or rolling
/// friction (`condim` 4 or 6, simulated on the CPU backends and by the GPU's
/// ADMM kernels, host-prepared) as `condim` 3. What the file holds that moreau
/// does not load (an unsupported sensor type, …) is said in a
/// `UserWarning` each, naming the element.
#[pyfunction]
#[pyo3(signature = (path, floating_base=None, package_dirs=Vec::new(), sliding_friction_only=false))]
pub(crate) fn load(
    py: Python<'_>,
    path: &str,
    floating_base: Option<bool>,
    package_dirs: Vec<String>,
    sliding_friction_only: bool,
) -> PyResult<Model> {
    if !std::path::Path::new(path).exists() {
        return Err(PyFileNotFoundError::new_err(format!(
            "no such file: {path}"
        )));
    }
    let options = moreau::load::LoadOptions {
        floating_base,
        package_dirs: package_dirs.into_iter().map(Into::into).collect(),
        sliding_friction_only,
    };
    let loaded = moreau::load::load_model_file(path, &options).map_err(value_error)?;
    let category = py.get_type::<pyo3::exceptions::PyUserWarning>();
    for w in &loaded.warnings {
        // (An interior NUL cannot come from an XML file's text.)
        let text = std::ffi::CString::new(format!("{path}: {w}")).unwrap_or_default();
        PyErr::warn(py, &category, &text, 1)?;
    }
    let v0 = DVector::zeros(loaded.model.nv);
    Ok(Model {
        dt: loaded.timestep.unwrap_or(1e-3),
        q0: loaded.q0,
        v0,
        model: Arc::new(loaded.model),
    })
}

/// A built-in scene by name (`cube-resting`, `quadruped`, …).
#[pyfunction]
pub(crate) fn scene(name: &str) -> PyResult<Model> {
    let s = scenes::scene(name).map_err(value_error)?;
    Ok(Model {
        model: s.model,
        q0: s.state.q,
        v0: s.state.v,
        dt: s.dt,
    })
}

/// The names of the built-in scenes.
#[pyfunction]
pub(crate) fn scene_names() -> Vec<&'static str> {
    scenes::SCENE_NAMES.to_vec()
}
