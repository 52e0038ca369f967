//! `Model`, `load`, `scene`: models and where they start.

use moreau::dynamics::configuration_charts;
use moreau::{Model as CoreModel, scenes};
use nalgebra::DVector;
use numpy::{PyArray1, PyArray2, PyArray3, PyUntypedArrayMethods};
use pyo3::exceptions::PyFileNotFoundError;
use pyo3::prelude::*;
use std::sync::Arc;

use crate::arrays::{Floats2, array2, array3, rows};
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
    /// Joint names, one per body (the world's first).
    #[getter]
    fn joint_names(&self) -> Vec<String> {
        self.model.joint_name.clone()
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
    /// The initial configuration (nq,).
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

/// Loads a URDF or MJCF file. `floating_base` (URDF): attach the root link
/// by a free joint (default: unless the root link is `world`).
#[pyfunction]
#[pyo3(signature = (path, floating_base=None, package_dirs=Vec::new()))]
pub(crate) fn load(
    path: &str,
    floating_base: Option<bool>,
    package_dirs: Vec<String>,
) -> PyResult<Model> {
    if !std::path::Path::new(path).exists() {
        return Err(PyFileNotFoundError::new_err(format!(
            "no such file: {path}"
        )));
    }
    let options = moreau::load::LoadOptions {
        floating_base,
        package_dirs: package_dirs.into_iter().map(Into::into).collect(),
    };
    let loaded = moreau::load::load_model_file(path, &options).map_err(value_error)?;
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
