//! `moreau._moreau`: the Python bindings (pyo3, numpy). The Python package
//! `moreau` (python/moreau/__init__.py) re-exports them; the type stubs are
//! python/moreau/_moreau.pyi.
//!
//! Conventions: arrays in and out are float64 numpy arrays, copied at the
//! boundary (a world's state is a few hundred bytes); any bad input (a
//! wrong shape, a non-finite value, an unknown name, a malformed file)
//! raises `ValueError` (or `FileNotFoundError`) naming the culprit and
//! leaves the object as it was; long calls (a batch step) release the GIL.

use moreau::batch::solve::{SolveError, SolvedProblem, solve_problems};
use moreau::batch::{Backend, BatchOptions, BatchSim as CoreBatch, BatchTape, GPU_MIN_TOLERANCE};
use moreau::contact::{ContactProblem, DEFAULT_MAX_ITERATIONS, DEFAULT_TOLERANCE, SolverKind};
use moreau::dynamics::{
    COM_INERTIA, Data, center_of_mass, com_inertias, com_velocities, com_wrenches,
    configuration_charts, forward_kinematics, forward_velocity, subtree_coms,
};
use moreau::gpu::GpuError;
use moreau::math::{SE3, Vec3};
use moreau::sim::{
    SimParams, Simulator as CoreSim, Stage, StageTimes, State, StepJacobians, StepVjp,
    actuator_forces, check_rows,
};
use moreau::{Model as CoreModel, scenes};
use nalgebra::DVector;
use numpy::{
    PyArray1, PyArray2, PyArray3, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2,
    PyReadonlyArrayDyn, PyUntypedArrayMethods,
};
use pyo3::exceptions::{PyFileNotFoundError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::sync::Arc;

/// The coordinate charts `(c, d)` of `Model.configuration_charts`.
type Charts<'py> = (Bound<'py, PyArray3<f64>>, Bound<'py, PyArray3<f64>>);

/// Two arrays: a state `(q, v)` or MuJoCo's `(qpos, qvel)`.
type Pair<'py> = (Bound<'py, PyArray2<f64>>, Bound<'py, PyArray2<f64>>);

fn value_error(e: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// A model with where it starts: the configuration and velocity of its
/// file (MJCF's `qpos0`, URDF's neutral pose) or scene, and its time step.
#[pyclass(module = "moreau._moreau", frozen)]
#[derive(Clone)]
pub struct Model {
    model: Arc<CoreModel>,
    q0: DVector<f64>,
    v0: DVector<f64>,
    dt: f64,
}

impl Model {
    /// [`Model::to_mujoco`] (`to`) or [`Model::from_mujoco`].
    fn convert<'py>(
        &self,
        py: Python<'py>,
        q: PyReadonlyArray2<'py, f64>,
        v: PyReadonlyArray2<'py, f64>,
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
    fn configuration_charts<'py>(
        &self,
        py: Python<'py>,
        q: PyReadonlyArray2<'py, f64>,
    ) -> PyResult<Charts<'py>> {
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
        q: PyReadonlyArray2<'py, f64>,
        v: PyReadonlyArray2<'py, f64>,
    ) -> PyResult<Pair<'py>> {
        self.convert(py, q, v, true)
    }
    /// The states ``(q, v)`` of MuJoCo's ``qpos`` (n, nq) and ``qvel`` (n,
    /// nv): the inverse of ``to_mujoco``.
    #[pyo3(name = "from_mujoco")]
    fn state_from_mujoco<'py>(
        &self,
        py: Python<'py>,
        qpos: PyReadonlyArray2<'py, f64>,
        qvel: PyReadonlyArray2<'py, f64>,
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
fn load(path: &str, floating_base: Option<bool>, package_dirs: Vec<String>) -> PyResult<Model> {
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
fn scene(name: &str) -> PyResult<Model> {
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
fn scene_names() -> Vec<&'static str> {
    scenes::SCENE_NAMES.to_vec()
}

/// Simulation parameters from keyword arguments.
fn params(model: &Model, dt: Option<f64>, solver: &str, tolerance: f64) -> PyResult<SimParams> {
    let mut p = SimParams {
        dt: dt.unwrap_or(model.dt),
        solver: solver.parse::<SolverKind>().map_err(value_error)?,
        ..Default::default()
    };
    p.solver_settings.tolerance = tolerance;
    p.validate().map_err(value_error)?;
    Ok(p)
}

/// A world step's stages and their wall times in seconds, as a dict.
fn stage_seconds<'py>(py: Python<'py>, times: &StageTimes) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for stage in Stage::WORLD {
        d.set_item(stage.name(), times.get(stage).as_secs_f64())?;
    }
    Ok(d)
}

/// A row-major `rows × cols` buffer as a numpy array.
fn array2(py: Python<'_>, flat: Vec<f64>, rows: usize, cols: usize) -> Bound<'_, PyArray2<f64>> {
    debug_assert_eq!(flat.len(), rows * cols);
    PyArray1::from_vec(py, flat)
        .reshape([rows, cols])
        .expect("the length is rows × cols")
}

/// A row-major `n × rows × cols` buffer as a numpy array.
fn array3(
    py: Python<'_>,
    flat: Vec<f64>,
    n: usize,
    rows: usize,
    cols: usize,
) -> Bound<'_, PyArray3<f64>> {
    debug_assert_eq!(flat.len(), n * rows * cols);
    PyArray1::from_vec(py, flat)
        .reshape([n, rows, cols])
        .expect("the length is n × rows × cols")
}

/// A matrix as a (rows, cols) numpy array.
fn matrix<'py>(py: Python<'py>, m: &nalgebra::DMatrix<f64>) -> Bound<'py, PyArray2<f64>> {
    let rows: Vec<f64> = m.transpose().as_slice().to_vec();
    array2(py, rows, m.nrows(), m.ncols())
}

/// A (n, width) array, in any memory order or strides, read row-major and
/// refused (by the library's check, naming its row and column) if a value
/// is not finite.
fn rows(
    what: &'static str,
    a: &PyReadonlyArray2<'_, f64>,
    n: usize,
    width: usize,
) -> PyResult<Vec<f64>> {
    let shape = a.shape();
    if shape != [n, width] {
        return Err(value_error(format!(
            "{what} has shape ({}), expected ({n}, {width})",
            shape
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    let flat = flat(&a.as_array());
    check_rows(what, &flat, width).map_err(value_error)?;
    Ok(flat)
}

/// The values of an array in row-major (C) order, whatever its memory
/// order or strides (a Fortran-ordered or sliced array is read as numpy
/// indexes it, not as its memory lies).
fn flat<D: numpy::ndarray::Dimension>(a: &numpy::ndarray::ArrayView<'_, f64, D>) -> Vec<f64> {
    match a.as_slice() {
        Some(s) => s.to_vec(),
        None => a.iter().copied().collect(),
    }
}

/// A vector argument as a `Vec`, in index order whatever its strides; its
/// length and values are checked where it enters the library.
fn vector(x: &PyReadonlyArray1<'_, f64>) -> Vec<f64> {
    flat(&x.as_array())
}

/// One world.
#[pyclass(module = "moreau._moreau", unsendable)]
pub struct Simulator {
    sim: CoreSim,
    state: State,
}

#[pymethods]
impl Simulator {
    #[new]
    #[pyo3(signature = (model, dt=None, solver=SolverKind::DEFAULT.name(), tolerance=DEFAULT_TOLERANCE))]
    fn new(model: &Model, dt: Option<f64>, solver: &str, tolerance: f64) -> PyResult<Self> {
        let p = params(model, dt, solver, tolerance)?;
        let sim = CoreSim::new(model.model.clone(), p).map_err(value_error)?;
        Ok(Simulator {
            sim,
            state: State::new(model.q0.clone(), model.v0.clone()),
        })
    }

    /// One step under joint torques `tau` (nv,) or actuator controls
    /// `ctrl` (nu,) (neither: zero torques). Returns a dict: `nc` contacts,
    /// `nl` active joint limits, and where there were constraints the
    /// solver's `iterations` and `converged`.
    #[pyo3(signature = (tau=None, ctrl=None))]
    fn step<'py>(
        &mut self,
        py: Python<'py>,
        tau: Option<PyReadonlyArray1<'py, f64>>,
        ctrl: Option<PyReadonlyArray1<'py, f64>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let nv = self.sim.model().nv;
        let report = match (tau, ctrl) {
            (Some(_), Some(_)) => {
                return Err(value_error("give tau or ctrl, not both"));
            }
            (None, Some(c)) => {
                let c = vector(&c);
                self.sim.step_controls(&mut self.state, &c)
            }
            (t, None) => {
                let t = match t {
                    Some(t) => vector(&t),
                    None => vec![0.0; nv],
                };
                self.sim.step(&mut self.state, &t)
            }
        }
        .map_err(value_error)?;
        let d = PyDict::new(py);
        d.set_item("nc", report.nc)?;
        d.set_item("nl", report.nl)?;
        if let Some(s) = report.solver {
            d.set_item("iterations", s.iterations)?;
            d.set_item("converged", s.converged)?;
            d.set_item("eps_abs", s.residuals.eps_abs)?;
        }
        d.set_item("times", stage_seconds(py, &report.times)?)?;
        Ok(d)
    }

    /// One step under joint torques `tau` (nv,) with its Jacobians: a dict
    /// of (nv, nv) arrays `dv_dq`, `dv_dv`, `dv_dtau`, `dq_dq`, `dq_dv`,
    /// `dq_dtau` (`q` in the tangent space), (nv, nc) `dv_dmu` and
    /// `dq_dmu`, and `wrt_q` (false: the `q` ones are not available, a
    /// contact's features have no written derivatives) and `q_residual`
    /// (above 1e-6: not differentiable in `q`, the least-squares
    /// derivative). Use a tight `tolerance` (1e-10 or less).
    fn step_with_jacobians<'py>(
        &mut self,
        py: Python<'py>,
        tau: PyReadonlyArray1<'py, f64>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let tau = vector(&tau);
        let mut jac = StepJacobians::default();
        self.sim
            .step_with_jacobians(&mut self.state, &tau, &mut jac)
            .map_err(value_error)?;
        let d = PyDict::new(py);
        for (name, m) in [
            ("dv_dq", &jac.dv_dq),
            ("dv_dv", &jac.dv_dv),
            ("dv_dtau", &jac.dv_dtau),
            ("dq_dq", &jac.dq_dq),
            ("dq_dv", &jac.dq_dv),
            ("dq_dtau", &jac.dq_dtau),
            ("dv_dmu", &jac.dv_dmu),
            ("dq_dmu", &jac.dq_dmu),
        ] {
            d.set_item(name, matrix(py, m))?;
        }
        d.set_item("wrt_q", jac.wrt_q)?;
        d.set_item("q_residual", jac.q_residual)?;
        Ok(d)
    }

    /// One step under joint torques `tau` (nv,) with the vector–Jacobian
    /// product of the adjoints `w_v` of `v⁺` and `w_q` of `q⁺` (nv each): a
    /// dict of arrays `q`, `v`, `tau` (nv,) and `mu` (nc,), and `wrt_q`,
    /// `q_residual` as in `step_with_jacobians`.
    fn step_with_vjp<'py>(
        &mut self,
        py: Python<'py>,
        tau: PyReadonlyArray1<'py, f64>,
        w_v: PyReadonlyArray1<'py, f64>,
        w_q: PyReadonlyArray1<'py, f64>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let tau = vector(&tau);
        let (w_v, w_q) = (vector(&w_v), vector(&w_q));
        let (mut work, mut out) = (StepJacobians::default(), StepVjp::default());
        self.sim
            .step_with_vjp(&mut self.state, &tau, (&w_v, &w_q), &mut work, &mut out)
            .map_err(value_error)?;
        let d = PyDict::new(py);
        for (name, v) in [
            ("q", &out.q),
            ("v", &out.v),
            ("tau", &out.tau),
            ("mu", &out.mu),
        ] {
            d.set_item(name, PyArray1::from_slice(py, v.as_slice()))?;
        }
        d.set_item("wrt_q", out.wrt_q)?;
        d.set_item("q_residual", out.q_residual)?;
        Ok(d)
    }

    /// The configuration (nq,), a copy; assigning checks the shape, the
    /// values and the quaternions' norms.
    #[getter]
    fn q<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        PyArray1::from_slice(py, self.state.q.as_slice())
    }
    #[setter]
    fn set_q(&mut self, q: PyReadonlyArray1<'_, f64>) -> PyResult<()> {
        let q = vector(&q);
        let trial = State::new(DVector::from_vec(q), self.state.v.clone());
        self.sim.energy(&trial).map_err(value_error)?;
        self.state.q = trial.q;
        Ok(())
    }
    /// The velocity (nv,), a copy.
    #[getter]
    fn v<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        PyArray1::from_slice(py, self.state.v.as_slice())
    }
    #[setter]
    fn set_v(&mut self, v: PyReadonlyArray1<'_, f64>) -> PyResult<()> {
        let trial = State::new(self.state.q.clone(), DVector::from_vec(vector(&v)));
        self.sim.check_state(&trial).map_err(value_error)?;
        self.state.v = trial.v;
        Ok(())
    }
    /// Simulated time (s).
    #[getter]
    fn t(&self) -> f64 {
        self.state.t
    }
    /// Wall time (s) per stage of a step (`free_dynamics`, `collision`,
    /// `delassus`, `solve`, `velocity_update`, `integrate`), summed over
    /// the steps since the simulator was made or `reset_timers` was called.
    #[getter]
    fn stage_times<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        stage_seconds(py, &self.sim.times)
    }
    /// Zeroes `stage_times`.
    fn reset_timers(&mut self) {
        self.sim.reset_timers();
    }
    /// The contacts of the last step: a list of dicts (`bodies`, `point`,
    /// `normal`, `distance`).
    fn contacts<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let names = &self.sim.model().body_name;
        self.sim
            .contacts()
            .iter()
            .map(|c| {
                let d = PyDict::new(py);
                d.set_item("bodies", (names[c.body_a].clone(), names[c.body_b].clone()))?;
                d.set_item("point", c.point.as_slice().to_vec())?;
                d.set_item("normal", c.normal().as_slice().to_vec())?;
                d.set_item("distance", c.distance)?;
                Ok(d)
            })
            .collect()
    }
}

/// The record of one `BatchSim.step_for_vjp`: each world's step, kept for
/// `BatchSim.vjp` (any number of times). Opaque.
#[pyclass(module = "moreau._moreau", unsendable)]
pub struct Tape {
    tape: BatchTape,
}

#[pymethods]
impl Tape {
    /// Number of worlds recorded.
    #[getter]
    fn nworlds(&self) -> usize {
        self.tape.nworlds()
    }
    fn __repr__(&self) -> String {
        format!("Tape(nworlds={})", self.tape.nworlds())
    }
}

/// Many worlds of one model, stepped together.
#[pyclass(module = "moreau._moreau", unsendable)]
pub struct BatchSim {
    batch: CoreBatch,
    /// The model it was made with (its `q0`, `v0` and `dt` included).
    model: Model,
    /// The worlds that failed in the last step, with why.
    failures: Vec<(usize, String)>,
    /// Kinematics workspace of `body_positions`.
    data: Data,
    nq: usize,
    nv: usize,
    nu: usize,
}

impl BatchSim {
    /// A (nworlds, width) C-contiguous array, finite, as a flat slice.
    fn actions(
        &self,
        what: &'static str,
        a: &PyReadonlyArray2<'_, f64>,
        width: usize,
    ) -> PyResult<Vec<f64>> {
        rows(what, a, self.batch.nworlds(), width)
    }

    /// [`Self::actions`] of an optional argument.
    fn optional(
        &self,
        what: &'static str,
        a: &Option<PyReadonlyArray2<'_, f64>>,
        width: usize,
    ) -> PyResult<Option<Vec<f64>>> {
        a.as_ref().map(|a| self.actions(what, a, width)).transpose()
    }

    /// World positions (nworlds, 3) of the point `body_from_point` of
    /// `body`, at each world's configuration or at `q` (nworlds × nq, flat).
    fn positions<'py>(
        &mut self,
        py: Python<'py>,
        body: usize,
        body_from_point: &SE3,
        q: Option<&[f64]>,
    ) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let model = self.batch.model().clone();
        let (n, nq) = (self.batch.nworlds(), self.nq);
        let mut flat = Vec::with_capacity(3 * n);
        for (w, s) in self.batch.states().enumerate() {
            let qw = q.map_or(s.q.as_slice(), |g| &g[w * nq..(w + 1) * nq]);
            forward_kinematics(&model, &mut self.data, qw);
            let p = self.data.world_from_body[body].act_point(&body_from_point.translation);
            flat.extend_from_slice(p.as_slice());
        }
        Ok(array2(py, flat, n, 3))
    }

    /// `each(world, model, data, subtree coms, out)` of every world, its
    /// `out`s concatenated, after the kinematics (and the velocities when
    /// `velocities`) at each world's state or at the given `q`, `v`.
    fn per_world<'py>(
        &mut self,
        q: Option<PyReadonlyArray2<'py, f64>>,
        v: Option<PyReadonlyArray2<'py, f64>>,
        velocities: bool,
        each: impl Fn(usize, &CoreModel, &Data, &[Vec3], &mut Vec<f64>) -> PyResult<()>,
    ) -> PyResult<Vec<f64>> {
        let q = self.optional("q", &q, self.nq)?;
        let v = self.optional("v", &v, self.nv)?;
        let model = self.batch.model().clone();
        let (nq, nv) = (self.nq, self.nv);
        let mut flat = Vec::new();
        let (mut coms, mut out) = (Vec::new(), Vec::new());
        for (w, s) in self.batch.states().enumerate() {
            let qw = q
                .as_ref()
                .map_or(s.q.as_slice(), |g| &g[w * nq..(w + 1) * nq]);
            forward_kinematics(&model, &mut self.data, qw);
            if velocities {
                let vw = v
                    .as_ref()
                    .map_or(s.v.as_slice(), |g| &g[w * nv..(w + 1) * nv]);
                forward_velocity(&model, &mut self.data, vw);
            }
            subtree_coms(&model, &self.data, &mut coms);
            each(w, &model, &self.data, &coms, &mut out)?;
            flat.extend_from_slice(&out);
        }
        Ok(flat)
    }

    /// [`Self::per_world`] as a (nworlds, body frames, width) array.
    fn per_body_frame<'py>(
        &mut self,
        py: Python<'py>,
        width: usize,
        q: Option<PyReadonlyArray2<'py, f64>>,
        v: Option<PyReadonlyArray2<'py, f64>>,
        velocities: bool,
        each: impl Fn(usize, &CoreModel, &Data, &[Vec3], &mut Vec<f64>) -> PyResult<()>,
    ) -> PyResult<Bound<'py, PyArray3<f64>>> {
        let (n, k) = (
            self.batch.nworlds(),
            self.batch.model().body_frames().count(),
        );
        let flat = self.per_world(q, v, velocities, each)?;
        Ok(array3(py, flat, n, k, width))
    }

    fn stacked<'py>(&self, py: Python<'py>, width: usize, q: bool) -> Bound<'py, PyArray2<f64>> {
        let mut flat = Vec::with_capacity(self.batch.nworlds() * width);
        for s in self.batch.states() {
            flat.extend_from_slice(if q { s.q.as_slice() } else { s.v.as_slice() });
        }
        array2(py, flat, self.batch.nworlds(), width)
    }
}

#[pymethods]
impl BatchSim {
    #[new]
    #[pyo3(signature = (model, nworlds, backend="cpu", dt=None, solver=SolverKind::DEFAULT.name(), tolerance=GPU_MIN_TOLERANCE, decomposition="invocation", layout="packed", pipeline=1))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        model: &Model,
        nworlds: usize,
        backend: &str,
        dt: Option<f64>,
        solver: &str,
        tolerance: f64,
        decomposition: &str,
        layout: &str,
        pipeline: usize,
    ) -> PyResult<Self> {
        if pipeline == 0 {
            return Err(value_error("pipeline must be at least 1 chunk"));
        }
        let options = BatchOptions {
            backend: backend.parse::<Backend>().map_err(value_error)?,
            params: params(model, dt, solver, tolerance)?,
            gpu_decomposition: decomposition.parse().map_err(value_error)?,
            gpu_layout: layout.parse().map_err(value_error)?,
            pipeline_chunks: pipeline,
            ..Default::default()
        };
        let initial = State::new(model.q0.clone(), model.v0.clone());
        let batch = CoreBatch::new(model.model.clone(), &initial, nworlds, &options)
            .map_err(value_error)?;
        Ok(BatchSim {
            batch,
            model: model.clone(),
            failures: Vec::new(),
            data: Data::new(&model.model),
            nq: model.model.nq,
            nv: model.model.nv,
            nu: model.model.nu(),
        })
    }

    /// The model the worlds simulate.
    #[getter]
    fn model(&self) -> Model {
        self.model.clone()
    }

    /// Number of worlds.
    #[getter]
    fn nworlds(&self) -> usize {
        self.batch.nworlds()
    }

    /// One step of every world under joint torques `tau` (nworlds, nv).
    /// Returns the number of contacts over all worlds. The GIL is released
    /// while the worlds step. A world whose step fails keeps its state and
    /// is listed in `failures`.
    fn step(&mut self, py: Python<'_>, tau: PyReadonlyArray2<'_, f64>) -> PyResult<usize> {
        let a = self.actions("tau", &tau, self.nv)?;
        let batch = &mut self.batch;
        let report = py.detach(|| batch.step(&a)).map_err(value_error)?;
        self.failures = report
            .failed
            .iter()
            .map(|(w, e)| (*w, e.to_string()))
            .collect();
        Ok(report.contacts)
    }

    /// One step of every world under actuator controls `ctrl` (nworlds, nu).
    fn step_controls(
        &mut self,
        py: Python<'_>,
        ctrl: PyReadonlyArray2<'_, f64>,
    ) -> PyResult<usize> {
        let a = self.actions("ctrl", &ctrl, self.nu)?;
        let batch = &mut self.batch;
        let report = py.detach(|| batch.step_controls(&a)).map_err(value_error)?;
        self.failures = report
            .failed
            .iter()
            .map(|(w, e)| (*w, e.to_string()))
            .collect();
        Ok(report.contacts)
    }

    /// One step of every world under joint torques `tau` (nworlds, nv),
    /// each world also computing the Jacobians of its step (in parallel
    /// except on "cpu1"; on "gpu" at the f32 kernel's impulses, in f64 on
    /// the host; the GIL is released): a dict of
    /// (nworlds, nv, nv) arrays `dv_dq`, `dv_dv`, `dv_dtau`, `dq_dq`,
    /// `dq_dv`, `dq_dtau` (`q` in the tangent space: see
    /// `Model.configuration_charts`), and (nworlds,) `wrt_q` (false: that
    /// world's `q` columns are not available) and `q_residual` (see
    /// `Simulator.step_with_jacobians`). A failed world (in `failures`)
    /// keeps its state and gets NaN Jacobians.
    fn step_with_jacobians<'py>(
        &mut self,
        py: Python<'py>,
        tau: PyReadonlyArray2<'py, f64>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let a = self.actions("tau", &tau, self.nv)?;
        let batch = &mut self.batch;
        let report = py
            .detach(|| batch.step_with_jacobians(&a, None))
            .map_err(value_error)?;
        self.failures = report
            .failed
            .iter()
            .map(|(w, e)| (*w, e.to_string()))
            .collect();
        let (n, nv) = (self.batch.nworlds(), self.nv);
        let names = ["dv_dq", "dv_dv", "dv_dtau", "dq_dq", "dq_dv", "dq_dtau"];
        let mut flats: Vec<Vec<f64>> = vec![Vec::with_capacity(n * nv * nv); names.len()];
        let (mut wrt_q, mut residual) = (Vec::with_capacity(n), Vec::with_capacity(n));
        for w in 0..n {
            let jac = self.batch.jacobians(w).map_err(value_error)?;
            match jac {
                Some(j) => {
                    for (flat, m) in flats.iter_mut().zip([
                        &j.dv_dq, &j.dv_dv, &j.dv_dtau, &j.dq_dq, &j.dq_dv, &j.dq_dtau,
                    ]) {
                        // Row-major: the transpose's column-major storage.
                        flat.extend_from_slice(m.transpose().as_slice());
                    }
                    wrt_q.push(j.wrt_q);
                    residual.push(j.q_residual);
                }
                None => {
                    for flat in flats.iter_mut() {
                        flat.extend(std::iter::repeat_n(f64::NAN, nv * nv));
                    }
                    wrt_q.push(false);
                    residual.push(f64::NAN);
                }
            }
        }
        let d = PyDict::new(py);
        for (name, flat) in names.iter().zip(flats) {
            d.set_item(*name, array3(py, flat, n, nv, nv))?;
        }
        d.set_item("wrt_q", PyArray1::from_vec(py, wrt_q))?;
        d.set_item("q_residual", PyArray1::from_vec(py, residual))?;
        Ok(d)
    }

    /// One step of every world under joint torques `tau` (nworlds, nv),
    /// each world recording what its step's vector–Jacobian product needs
    /// (the GIL is released): returns the `Tape` of this step, for
    /// `vjp`. A failed world (in `failures`) keeps its state and records
    /// nothing.
    fn step_for_vjp(&mut self, py: Python<'_>, tau: PyReadonlyArray2<'_, f64>) -> PyResult<Tape> {
        let a = self.actions("tau", &tau, self.nv)?;
        let batch = &mut self.batch;
        let (report, tape) = py
            .detach(|| batch.step_for_vjp(&a, None))
            .map_err(value_error)?;
        self.failures = report
            .failed
            .iter()
            .map(|(w, e)| (*w, e.to_string()))
            .collect();
        Ok(Tape { tape })
    }

    /// The vector–Jacobian products of the step recorded in `tape` (by
    /// this batch's `step_for_vjp`) with the adjoints `w_v` of `v⁺` and
    /// `w_q` of `q⁺` (nworlds, nv each; `q⁺` in the tangent space, see
    /// `Model.configuration_charts`): a dict of (nworlds, nv) arrays `q`,
    /// `v`, `tau` (`wᵀ ∂(v⁺, q⁺)/∂x`), a list `mu` (per world, one entry per
    /// contact of its step), (nworlds,) `wrt_q` and `q_residual` (see
    /// `step_with_jacobians`), and `gpu_fallbacks` (worlds whose contact
    /// stage the GPU flagged and the CPU solved). On the GPU backend the
    /// contact stages' transposed solves run in one GPU dispatch (f32);
    /// on "cpu" in parallel. The GIL is released. A world that did not
    /// step passes its adjoints through.
    fn vjp<'py>(
        &mut self,
        py: Python<'py>,
        tape: &mut Tape,
        w_v: PyReadonlyArray2<'py, f64>,
        w_q: PyReadonlyArray2<'py, f64>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let (n, nv) = (self.batch.nworlds(), self.nv);
        let w_v = self.actions("w_v", &w_v, nv)?;
        let w_q = self.actions("w_q", &w_q, nv)?;
        let batch = &mut self.batch;
        let tape = &mut tape.tape;
        let out = py
            .detach(|| batch.vjp(tape, &w_v, &w_q))
            .map_err(value_error)?;
        let d = PyDict::new(py);
        d.set_item("q", array2(py, out.q, n, nv))?;
        d.set_item("v", array2(py, out.v, n, nv))?;
        d.set_item("tau", array2(py, out.tau, n, nv))?;
        let mu: Vec<_> = out
            .mu
            .into_iter()
            .map(|m| PyArray1::from_vec(py, m))
            .collect();
        d.set_item("mu", mu)?;
        d.set_item("wrt_q", PyArray1::from_vec(py, out.wrt_q))?;
        d.set_item("q_residual", PyArray1::from_vec(py, out.q_residual))?;
        d.set_item("gpu_fallbacks", out.gpu_fallbacks)?;
        Ok(d)
    }

    /// The worlds whose last step failed (a diverged solve, a non-finite
    /// state), as (world, why); they kept their state.
    #[getter]
    fn failures(&self) -> Vec<(usize, String)> {
        self.failures.clone()
    }

    /// The worlds' configurations (nworlds, nq), a copy.
    #[getter]
    fn q<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray2<f64>> {
        self.stacked(py, self.nq, true)
    }

    /// The worlds' velocities (nworlds, nv), a copy.
    #[getter]
    fn v<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray2<f64>> {
        self.stacked(py, self.nv, false)
    }

    /// World-frame positions (nworlds, 3) of the origin of body `body`
    /// (an index into `Model.body_names`) at each world's configuration
    /// (MuJoCo's `xpos`).
    fn body_positions<'py>(
        &mut self,
        py: Python<'py>,
        body: usize,
    ) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let nbodies = self.batch.model().nbodies;
        if body >= nbodies {
            return Err(value_error(format!(
                "body {body} does not exist (the model has {nbodies})"
            )));
        }
        self.positions(py, body, &SE3::identity(), None)
    }

    /// World-frame positions (nworlds, 3) of the named frame `name` (a
    /// file's body, including those welded into their parents) at each
    /// world's configuration, or at the configurations `q` (nworlds, nq).
    #[pyo3(signature = (name, q=None))]
    fn frame_positions<'py>(
        &mut self,
        py: Python<'py>,
        name: &str,
        q: Option<PyReadonlyArray2<'py, f64>>,
    ) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let Some(frame) = self
            .batch
            .model()
            .frames
            .iter()
            .find(|f| f.name == name)
            .cloned()
        else {
            return Err(value_error(format!("no frame named {name:?}")));
        };
        let given = self.optional("q", &q, self.nq)?;
        self.positions(py, frame.body, &frame.body_from_frame, given.as_deref())
    }

    /// Each world's generalized constraint forces (nworlds, nv) in its last
    /// step, `Jᵀλ/dt` (contacts and joint stops; MuJoCo's
    /// `qfrc_constraint`).
    fn constraint_forces<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let n = self.batch.nworlds();
        let mut flat = vec![0.0; n * self.nv];
        for w in 0..n {
            let sim = self.batch.simulator(w).map_err(value_error)?;
            let m = sim.problem().m();
            if m == 0 {
                continue;
            }
            let (j, lambda, dt) = (
                &sim.jacobian().jacobian,
                &sim.solution().lambda,
                sim.params.dt,
            );
            for k in 0..self.nv {
                flat[w * self.nv + k] = (0..m).map(|r| j[(r, k)] * lambda[r]).sum::<f64>() / dt;
            }
        }
        Ok(array2(py, flat, n, self.nv))
    }

    /// The centre of mass of each world's bodies (nworlds, 3), at each
    /// world's configuration or at ``q`` (nworlds, nq).
    #[pyo3(signature = (q=None))]
    fn centers_of_mass<'py>(
        &mut self,
        py: Python<'py>,
        q: Option<PyReadonlyArray2<'py, f64>>,
    ) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let n = self.batch.nworlds();
        let flat = self.per_world(q, None, false, |_, m, d, _, out| {
            out.clear();
            out.extend_from_slice(center_of_mass(m, d).as_slice());
            Ok(())
        })?;
        Ok(array2(py, flat, n, 3))
    }

    /// Each body frame's inertia about the centre of mass of its top-level
    /// body's subtree, in world orientation (MuJoCo's ``cinert``:
    /// ``[Ixx, Iyy, Izz, Ixy, Ixz, Iyz, m·dx, m·dy, m·dz, m]``, ``d`` the
    /// body's centre of mass from that point), (nworlds, body frames, 10),
    /// at each world's configuration or at ``q`` (nworlds, nq). Rows:
    /// ``Model.body_frame_names``.
    #[pyo3(signature = (q=None))]
    fn com_inertias<'py>(
        &mut self,
        py: Python<'py>,
        q: Option<PyReadonlyArray2<'py, f64>>,
    ) -> PyResult<Bound<'py, PyArray3<f64>>> {
        self.per_body_frame(py, COM_INERTIA, q, None, false, |_, m, d, c, out| {
            com_inertias(m, d, c, out);
            Ok(())
        })
    }

    /// Each body frame's velocity ``[ω; v]`` in world orientation, ``v``
    /// that of the body's point at the centre of mass of its top-level
    /// body's subtree (MuJoCo's ``cvel``), (nworlds, body frames, 6), at
    /// each world's state or at ``q`` (nworlds, nq) and ``v`` (nworlds, nv).
    #[pyo3(signature = (q=None, v=None))]
    fn com_velocities<'py>(
        &mut self,
        py: Python<'py>,
        q: Option<PyReadonlyArray2<'py, f64>>,
        v: Option<PyReadonlyArray2<'py, f64>>,
    ) -> PyResult<Bound<'py, PyArray3<f64>>> {
        self.per_body_frame(py, 6, q, v, true, |_, m, d, c, out| {
            com_velocities(m, d, c, out);
            Ok(())
        })
    }

    /// The contact wrenches ``[torque; force]`` on each body frame in each
    /// world's last step (impulse over ``dt``), about the centre of mass of
    /// its top-level body's subtree at each world's configuration or at
    /// ``q`` (nworlds, nq), in world orientation (MuJoCo's ``cfrc_ext``),
    /// (nworlds, body frames, 6).
    #[pyo3(signature = (q=None))]
    fn com_external_forces<'py>(
        &mut self,
        py: Python<'py>,
        q: Option<PyReadonlyArray2<'py, f64>>,
    ) -> PyResult<Bound<'py, PyArray3<f64>>> {
        let sims: Vec<&CoreSim> = (0..self.batch.nworlds())
            .map(|w| self.batch.simulator(w).map_err(value_error))
            .collect::<PyResult<_>>()?;
        // (Borrowed apart from the kinematics workspace.)
        let forces: Vec<Vec<(usize, Vec3, Vec3)>> = sims
            .iter()
            .map(|sim| {
                let model = sim.model();
                sim.contact_forces()
                    .filter_map(|(g, p, f)| model.geometries[g].frame.map(|fr| (fr, p, f)))
                    .collect()
            })
            .collect();
        self.per_body_frame(py, 6, q, None, false, |w, m, _, c, out| {
            com_wrenches(m, c, forces[w].iter().copied(), out);
            Ok(())
        })
    }

    /// The generalized forces of the actuators (nworlds, nv) under controls
    /// ``ctrl`` (nworlds, nu), at each world's state or at ``q``, ``v``
    /// (MuJoCo's ``qfrc_actuator``: clamped to the control and force ranges).
    #[pyo3(signature = (ctrl, q=None, v=None))]
    fn actuator_forces<'py>(
        &self,
        py: Python<'py>,
        ctrl: PyReadonlyArray2<'py, f64>,
        q: Option<PyReadonlyArray2<'py, f64>>,
        v: Option<PyReadonlyArray2<'py, f64>>,
    ) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let ctrl = self.actions("ctrl", &ctrl, self.nu)?;
        let q = self.optional("q", &q, self.nq)?;
        let v = self.optional("v", &v, self.nv)?;
        let model = self.batch.model();
        let (n, nq, nv, nu) = (self.batch.nworlds(), self.nq, self.nv, self.nu);
        let mut flat = vec![0.0; n * nv];
        for (w, s) in self.batch.states().enumerate() {
            let qw = q
                .as_ref()
                .map_or(s.q.as_slice(), |g| &g[w * nq..(w + 1) * nq]);
            let vw = v
                .as_ref()
                .map_or(s.v.as_slice(), |g| &g[w * nv..(w + 1) * nv]);
            actuator_forces(
                model,
                qw,
                vw,
                &ctrl[w * nu..(w + 1) * nu],
                &mut flat[w * nv..(w + 1) * nv],
            );
        }
        Ok(array2(py, flat, n, nv))
    }

    /// Sets every world's state: configurations `q` (nworlds, nq) and
    /// velocities `v` (nworlds, nv). Checked first: on bad input no world
    /// changes.
    fn set_states(
        &mut self,
        q: PyReadonlyArray2<'_, f64>,
        v: PyReadonlyArray2<'_, f64>,
    ) -> PyResult<()> {
        let q = self.actions("q", &q, self.nq)?;
        let v = self.actions("v", &v, self.nv)?;
        let (nq, nv) = (self.nq, self.nv);
        let states: Vec<State> = (0..self.batch.nworlds())
            .map(|w| {
                State::new(
                    DVector::from_column_slice(&q[w * nq..(w + 1) * nq]),
                    DVector::from_column_slice(&v[w * nv..(w + 1) * nv]),
                )
            })
            .collect();
        // (Each world's state is checked before any is set.)
        for (w, s) in states.iter().enumerate() {
            self.batch
                .simulator(w)
                .map_err(value_error)?
                .check_state(s)
                .map_err(|e| value_error(format!("world {w}: {e}")))?;
        }
        for (w, s) in states.into_iter().enumerate() {
            self.batch.set_state(w, s).map_err(value_error)?;
        }
        Ok(())
    }

    /// Sets world `world`'s state.
    fn set_state(
        &mut self,
        world: usize,
        q: PyReadonlyArray1<'_, f64>,
        v: PyReadonlyArray1<'_, f64>,
    ) -> PyResult<()> {
        let q = vector(&q);
        let v = vector(&v);
        self.batch
            .set_state(
                world,
                State::new(DVector::from_vec(q), DVector::from_vec(v)),
            )
            .map_err(value_error)
    }
}

/// One problem of `solve`'s arguments (problem `k` of a batch, or the only one).
fn problem_at(
    k: Option<usize>,
    g_matrix: &numpy::ndarray::ArrayViewD<'_, f64>,
    g: &numpy::ndarray::ArrayViewD<'_, f64>,
    mu: &numpy::ndarray::ArrayViewD<'_, f64>,
) -> PyResult<ContactProblem> {
    use numpy::ndarray::{Axis, Ix1, Ix2};
    let (gm, gv, mv) = match k {
        Some(k) => (
            g_matrix.index_axis(Axis(0), k),
            g.index_axis(Axis(0), k),
            mu.index_axis(Axis(0), k),
        ),
        None => (g_matrix.view(), g.view(), mu.view()),
    };
    let culprit = k.map_or(String::new(), |k| format!("problem {k}: "));
    let gm = gm.into_dimensionality::<Ix2>().map_err(value_error)?;
    let gv = gv.into_dimensionality::<Ix1>().map_err(value_error)?;
    let mv = mv.into_dimensionality::<Ix1>().map_err(value_error)?;
    let m = gv.len();
    if gm.shape() != [m, m] {
        return Err(value_error(format!(
            "{culprit}G has shape ({}, {}), expected ({m}, {m}) (g has length {m})",
            gm.shape()[0],
            gm.shape()[1]
        )));
    }
    let delassus = nalgebra::DMatrix::from_fn(m, m, |r, c| gm[[r, c]]);
    let g = DVector::from_iterator(m, gv.iter().copied());
    ContactProblem::new(delassus, g, mv.to_vec()).map_err(|e| value_error(format!("{culprit}{e}")))
}

/// Solves contact problems `K ∋ λ ⟂ Gλ + g + Γ ∈ K*` (`nc` friction cones
/// with coefficients `mu`, then unilateral rows): one, with `G` (m, m), `g`
/// (m,), `mu` (nc,), `m = 3 nc + nl`; or a batch of `B` problems of one
/// size, with `G` (B, m, m), `g` (B, m), `mu` (B, nc). `device="cpu"`:
/// f64, the problems in parallel; `device="gpu"`: f32, all the problems in
/// one batched kernel (wgpu; `solver` one with a GPU kernel; each call
/// compiles it, so give it a batch). Returns a dict: `lambda`, `c = Gλ + g`
/// ((m,) or (B, m)), and the solver's `iterations`, `converged`, `eps_abs`
/// (scalars, or (B,) arrays). A bad problem (shapes, a negative μ, a
/// non-finite entry, `G` not symmetric or, on the GPU, not PSD) raises
/// `ValueError` naming it; no GPU adapter raises `RuntimeError`. The GIL
/// is released while it solves.
#[pyfunction]
#[pyo3(signature = (g_matrix, g, mu, solver=SolverKind::DEFAULT.name(), tolerance=DEFAULT_TOLERANCE, max_iterations=DEFAULT_MAX_ITERATIONS, device="cpu"))]
#[allow(clippy::too_many_arguments)]
fn solve<'py>(
    py: Python<'py>,
    g_matrix: PyReadonlyArrayDyn<'py, f64>,
    g: PyReadonlyArrayDyn<'py, f64>,
    mu: PyReadonlyArrayDyn<'py, f64>,
    solver: &str,
    tolerance: f64,
    max_iterations: usize,
    device: &str,
) -> PyResult<Bound<'py, PyDict>> {
    let (gm, gv, mv) = (g_matrix.as_array(), g.as_array(), mu.as_array());
    let batched = match (gm.ndim(), gv.ndim(), mv.ndim()) {
        (2, 1, 1) => None,
        (3, 2, 2) if gm.shape()[0] == gv.shape()[0] && gv.shape()[0] == mv.shape()[0] => {
            Some(gm.shape()[0])
        }
        _ => {
            return Err(value_error(format!(
                "G, g, mu have shapes {:?}, {:?}, {:?}: expected (m, m), (m,), (nc,) for one problem or (B, m, m), (B, m), (B, nc) for a batch",
                gm.shape(),
                gv.shape(),
                mv.shape()
            )));
        }
    };
    let problems: Vec<ContactProblem> = match batched {
        None => vec![problem_at(None, &gm, &gv, &mv)?],
        Some(b) => (0..b)
            .map(|k| problem_at(Some(k), &gm, &gv, &mv))
            .collect::<PyResult<_>>()?,
    };
    let kind = solver.parse::<SolverKind>().map_err(value_error)?;
    let settings = moreau::contact::SolverSettings {
        tolerance,
        max_iterations,
        ..Default::default()
    };
    let backend = match device {
        "cpu" => Backend::CpuParallel,
        "gpu" => Backend::Gpu,
        other => {
            return Err(value_error(format!(
                "unknown device {other:?}: \"cpu\" or \"gpu\""
            )));
        }
    };
    let prefix = |k: usize| batched.map_or(String::new(), |_| format!("problem {k}: "));
    let solved = py
        .detach(|| solve_problems(&problems, kind, &settings, backend))
        .map_err(|e| match e {
            SolveError::Problem { index, error } => {
                value_error(format!("{}{error}", prefix(index)))
            }
            SolveError::Gpu(e @ (GpuError::NoAdapter | GpuError::NoMatchingAdapter { .. })) => {
                PyRuntimeError::new_err(format!("device=\"gpu\": {e}"))
            }
            SolveError::Gpu(e) => value_error(format!("device=\"gpu\": {e}")),
            SolveError::Flagged(flagged) => {
                let (k, names) = &flagged[0];
                value_error(format!(
                    "{}flagged by the GPU solver: {}",
                    prefix(*k),
                    names.join(", ")
                ))
            }
        })?;
    let d = PyDict::new(py);
    if batched.is_none() {
        let s = &solved[0];
        d.set_item("lambda", PyArray1::from_slice(py, &s.lambda))?;
        d.set_item("c", PyArray1::from_slice(py, &s.c))?;
        d.set_item("iterations", s.iterations)?;
        d.set_item("converged", s.converged)?;
        d.set_item("eps_abs", s.residuals.eps_abs)?;
    } else {
        let (b, m) = (solved.len(), gv.shape()[1]);
        let flat = |pick: fn(&SolvedProblem) -> &Vec<f64>| {
            solved
                .iter()
                .flat_map(|s| pick(s).iter().copied())
                .collect()
        };
        d.set_item("lambda", array2(py, flat(|s| &s.lambda), b, m))?;
        d.set_item("c", array2(py, flat(|s| &s.c), b, m))?;
        let iterations: Vec<usize> = solved.iter().map(|s| s.iterations).collect();
        let converged: Vec<bool> = solved.iter().map(|s| s.converged).collect();
        let eps: Vec<f64> = solved.iter().map(|s| s.residuals.eps_abs).collect();
        d.set_item("iterations", PyArray1::from_vec(py, iterations))?;
        d.set_item("converged", PyArray1::from_vec(py, converged))?;
        d.set_item("eps_abs", PyArray1::from_vec(py, eps))?;
    }
    Ok(d)
}

#[pymodule]
fn _moreau(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Model>()?;
    m.add_class::<Simulator>()?;
    m.add_class::<BatchSim>()?;
    m.add_class::<Tape>()?;
    m.add_function(wrap_pyfunction!(load, m)?)?;
    m.add_function(wrap_pyfunction!(scene, m)?)?;
    m.add_function(wrap_pyfunction!(scene_names, m)?)?;
    m.add_function(wrap_pyfunction!(solve, m)?)?;
    // The defaults, from the library's catalog (the stubs say `...`).
    m.add("DEFAULT_SOLVER", SolverKind::DEFAULT.name())?;
    m.add("DEFAULT_TOLERANCE", DEFAULT_TOLERANCE)?;
    m.add("BATCH_DEFAULT_TOLERANCE", GPU_MIN_TOLERANCE)?;
    m.add("DEFAULT_MAX_ITERATIONS", DEFAULT_MAX_ITERATIONS)?;
    Ok(())
}
