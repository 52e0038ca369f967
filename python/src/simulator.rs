//! `Simulator`: one world.

use moreau::contact::{DEFAULT_TOLERANCE, SolverKind};
use moreau::sim::{
    SimParams, Simulator as CoreSim, Snapshot, Stage, StageTimes, State, StepJacobians, StepVjp,
    snapshots_from_bytes, snapshots_to_bytes,
};
use nalgebra::DVector;
use numpy::{IntoPyArray, PyArray1, PyArray2, PyArray3};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::arrays::{Floats1, FloatsDyn, array2, matrix, vector};
use crate::model::{Model, Pair};
use crate::render::{CachedRenderer, CameraId, ViewArgs, to_python};
use crate::value_error;
use moreau::render::Overlay;

/// Simulation parameters from keyword arguments.
pub(crate) fn params(
    model: &Model,
    dt: Option<f64>,
    solver: &str,
    tolerance: f64,
) -> PyResult<SimParams> {
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
pub(crate) fn stage_seconds<'py>(
    py: Python<'py>,
    times: &StageTimes,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for stage in Stage::WORLD {
        d.set_item(stage.name(), times.get(stage).as_secs_f64())?;
    }
    Ok(d)
}

/// One world.
#[pyclass(module = "moreau._moreau", unsendable)]
pub struct Simulator {
    sim: CoreSim,
    state: State,
    renderer: CachedRenderer,
}

#[pymethods]
impl Simulator {
    #[new]
    #[pyo3(signature = (model, dt=None, solver=SolverKind::DEFAULT.name(), tolerance=DEFAULT_TOLERANCE))]
    fn new(model: &Model, dt: Option<f64>, solver: &str, tolerance: f64) -> PyResult<Self> {
        let p = params(model, dt, solver, tolerance)?;
        let sim = CoreSim::new(model.model.clone(), p).map_err(value_error)?;
        Ok(Simulator {
            renderer: CachedRenderer::default(),
            sim,
            state: State::new(model.q0.clone(), model.v0.clone()),
        })
    }

    /// The mocap bodies' poses (``Model.mocap_names``) as MuJoCo's
    /// ``mocap_pos`` (nmocap, 3) and ``mocap_quat`` (nmocap, 4; ``(w, x,
    /// y, z)``, ``w >= 0``).
    fn mocap_poses<'py>(&self, py: Python<'py>) -> Pair<'py> {
        let (mut pos, mut quat) = (Vec::new(), Vec::new());
        let poses = self.sim.mocap_poses();
        crate::mocap::poses_out(poses, &mut pos, &mut quat);
        let nm = poses.len();
        (array2(py, pos, nm, 3), array2(py, quat, nm, 4))
    }

    /// Sets the mocap bodies' poses from the next step on: ``pos`` (nmocap,
    /// 3) and ``quat`` (nmocap, 4; ``(w, x, y, z)``, normalized; not given:
    /// each keeps its orientation). The ``connect``s and ``weld``s naming
    /// them follow. A bad value raises ValueError and nothing changes.
    #[pyo3(signature = (pos, quat=None))]
    fn set_mocap(&mut self, pos: FloatsDyn<'_>, quat: Option<FloatsDyn<'_>>) -> PyResult<()> {
        let current = self.sim.mocap_poses().to_vec();
        if current.is_empty() {
            return Err(value_error(format!(
                "model `{}` has no mocap bodies",
                self.sim.model().name
            )));
        }
        let poses = crate::mocap::poses_in(&pos, quat.as_ref(), &[], &current)?;
        for (i, pose) in poses.into_iter().enumerate() {
            self.sim.set_mocap_pose(i, pose).map_err(value_error)?;
        }
        Ok(())
    }

    /// One step under joint torques `tau` (nv,) or actuator controls
    /// `ctrl` (nu,) (neither: zero torques). Returns a dict: `nc` contacts,
    /// `nl` active joint limits, and where there were constraints the
    /// solver's `iterations` and `converged`.
    #[pyo3(signature = (tau=None, ctrl=None))]
    fn step<'py>(
        &mut self,
        py: Python<'py>,
        tau: Option<Floats1<'py>>,
        ctrl: Option<Floats1<'py>>,
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
    /// contact's features have no written derivatives), `q_residual`
    /// (above 1e-6: not differentiable in `q`, the least-squares
    /// derivative) and `q_side` (nv,) int8: which perturbations of each
    /// `q` column its derivative is for, 0 both signs, +1 from above, -1
    /// from below (one-sided), 2 neither (a kink: a contact's or a stop's
    /// mode or slope changes either way within 1e-6; a robot at rest sits
    /// on such boundaries); `v_side` and `tau_side` (nv,) the same for the
    /// columns of `v` and `tau` (a stick reaching its cone's edge, a
    /// pressed contact or a stop letting go). Use a tight `tolerance`
    /// (1e-10 or less).
    fn step_with_jacobians<'py>(
        &mut self,
        py: Python<'py>,
        tau: Floats1<'py>,
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
        d.set_item("q_side", PyArray1::from_vec(py, q_side_codes(&jac)))?;
        let nv = jac.dv_dv.ncols();
        d.set_item(
            "v_side",
            PyArray1::from_vec(py, side_codes(&jac.v_sides, nv)),
        )?;
        d.set_item(
            "tau_side",
            PyArray1::from_vec(py, side_codes(&jac.tau_sides, nv)),
        )?;
        Ok(d)
    }

    /// One step under joint torques `tau` (nv,) with the vector–Jacobian
    /// product of the adjoints `w_v` of `v⁺` and `w_q` of `q⁺` (nv each): a
    /// dict of arrays `q`, `v`, `tau` (nv,) and `mu` (nc,), and `wrt_q`,
    /// `q_residual`, `q_side` as in `step_with_jacobians` (`q_side[k]`:
    /// which perturbations of `q`'s component `k` the product is for).
    fn step_with_vjp<'py>(
        &mut self,
        py: Python<'py>,
        tau: Floats1<'py>,
        w_v: Floats1<'py>,
        w_q: Floats1<'py>,
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
        d.set_item(
            "q_side",
            PyArray1::from_vec(py, side_codes(&out.q_sides, out.q.len())),
        )?;
        Ok(d)
    }

    /// The configuration (nq,), a copy (a free or ball joint's quaternion
    /// ``(x, y, z, w)``); assigning checks the shape, the values and the
    /// quaternions' norms.
    #[getter]
    fn q<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        PyArray1::from_slice(py, self.state.q.as_slice())
    }
    #[setter]
    fn set_q(&mut self, q: Floats1<'_>) -> PyResult<()> {
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
    fn set_v(&mut self, v: Floats1<'_>) -> PyResult<()> {
        let trial = State::new(self.state.q.clone(), DVector::from_vec(vector(&v)));
        self.sim.check_state(&trial).map_err(value_error)?;
        self.state.v = trial.v;
        Ok(())
    }
    /// The actuators' activations (na,), a copy (MuJoCo's ``act``: the
    /// state of the actuators with activation dynamics, ``dyntype``);
    /// assigning checks the shape and the values.
    #[getter]
    fn act<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        let na = self.sim.model().na();
        if self.state.act.is_empty() {
            return PyArray1::from_vec(py, vec![0.0; na]);
        }
        PyArray1::from_slice(py, self.state.act.as_slice())
    }
    #[setter]
    fn set_act(&mut self, act: Floats1<'_>) -> PyResult<()> {
        let mut trial = self.state.clone();
        trial.act = DVector::from_vec(vector(&act));
        if trial.act.is_empty() && self.sim.model().na() > 0 {
            return Err(value_error(format!(
                "act: expected {} activations, got 0",
                self.sim.model().na()
            )));
        }
        self.sim.check_state(&trial).map_err(value_error)?;
        self.state.act = trial.act;
        Ok(())
    }
    /// The world's full state as bytes: ``q``, ``v``, ``act``, time and
    /// the warm starts (see ``BatchSim.snapshot``); ``restore`` sets it
    /// back and the world continues bit for bit.
    fn snapshot<'py>(&mut self, py: Python<'py>) -> Bound<'py, PyBytes> {
        let s = Snapshot {
            state: self.state.clone(),
            warm: self.sim.warm_start(),
        };
        PyBytes::new(py, &snapshots_to_bytes(&[s]))
    }
    /// Sets the full state from ``snapshot()`` bytes of a simulator of the
    /// same model; a snapshot that does not fit raises ValueError and
    /// nothing changes.
    fn restore(&mut self, snapshot: &[u8]) -> PyResult<()> {
        let mut worlds = snapshots_from_bytes(snapshot).map_err(value_error)?;
        if worlds.len() != 1 {
            return Err(value_error(format!(
                "snapshot of {} worlds (a BatchSim's?) for one simulator",
                worlds.len()
            )));
        }
        let s = worlds.pop().expect("one world");
        self.sim.energy(&s.state).map_err(value_error)?;
        self.sim.set_warm_start(s.warm).map_err(value_error)?;
        self.state = s.state;
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
    /// The sensor values (``Model.sensor_names``, ``sensor_address``):
    /// position and velocity sensors at the state; touch, accelerometer,
    /// force and torque of the last step, at the state it started from
    /// (dm_control's convention), or 0 when the state was set since.
    fn sensors<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let values = self.sim.sensors(&self.state).map_err(value_error)?;
        Ok(PyArray1::from_vec(py, values))
    }
    /// An image of the world at its configuration, drawn offscreen on the
    /// GPU: (height, width, 3) uint8 RGB, and with ``depth=True`` also
    /// (height, width) float32 depths (see ``BatchSim.render``).
    #[pyo3(signature = (width=480, height=480, camera=None, track=None, azimuth=None, elevation=None, distance=None, target=None, depth=false, contacts=false))]
    #[allow(clippy::too_many_arguments)]
    fn render<'py>(
        &mut self,
        py: Python<'py>,
        width: u32,
        height: u32,
        camera: Option<CameraId>,
        track: Option<String>,
        azimuth: Option<f64>,
        elevation: Option<f64>,
        distance: Option<f64>,
        target: Option<[f64; 3]>,
        depth: bool,
        contacts: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let view = ViewArgs {
            camera,
            track,
            azimuth,
            elevation,
            distance,
            target,
        };
        let model = self.sim.model().clone();
        let qs = [self.state.q.as_slice()];
        let overlays = if contacts {
            let marks = self.sim.solved_contacts();
            vec![Overlay::from_contacts(&model, marks, self.sim.params.dt)]
        } else {
            Vec::new()
        };
        let frames = (self.renderer).render(&model, &qs, (width, height), &view, &overlays)?;
        to_python(py, frames, depth, true)
    }
    /// The file's cameras at the configuration: their positions (ncam, 3)
    /// and orientations (ncam, 3, 3), columns the camera's axes in the
    /// world (it looks along −z, y up), as MuJoCo's ``cam_xpos`` and
    /// ``cam_xmat`` (rows: ``Model.camera_names``).
    fn camera_poses<'py>(
        &self,
        py: Python<'py>,
    ) -> (Bound<'py, PyArray2<f64>>, Bound<'py, PyArray3<f64>>) {
        let model = self.sim.model();
        let mut data = moreau::dynamics::Data::new(model);
        moreau::dynamics::forward_kinematics(model, &mut data, self.state.q.as_slice());
        let n = model.cameras.len();
        let (mut pos, mut mat) = (Vec::with_capacity(3 * n), Vec::with_capacity(9 * n));
        for c in &model.cameras {
            let x = c.pose(model, &data.world_from_body);
            pos.extend(x.translation.iter());
            // Row by row.
            mat.extend(x.rotation.transpose().iter());
        }
        let mat = numpy::ndarray::Array3::from_shape_vec((n, 3, 3), mat).expect("n 3 × 3 matrices");
        (array2(py, pos, n, 3), mat.into_pyarray(py))
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

/// [`StepJacobians::q_sides`] as codes (0 both, ±1 one side, 2 a kink;
/// 2 for every column where the `q` columns are not available).
pub(crate) fn q_side_codes(jac: &StepJacobians) -> Vec<i8> {
    side_codes(&jac.q_sides, jac.dv_dq.ncols())
}

/// Sides as codes, 2 throughout where they are not `nv` of them.
pub(crate) fn side_codes(sides: &[moreau::sim::QSide], nv: usize) -> Vec<i8> {
    if sides.len() == nv {
        sides.iter().map(|s| s.code()).collect()
    } else {
        vec![2; nv]
    }
}
