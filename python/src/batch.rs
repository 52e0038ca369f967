//! `BatchSim` and its `Tape`: many worlds.

use moreau::Model as CoreModel;
use moreau::batch::{
    Backend, BatchOptions, BatchSim as CoreBatch, BatchStepReport, BatchTape, GPU_MIN_TOLERANCE,
};
use moreau::contact::SolverKind;
use moreau::dynamics::{
    COM_INERTIA, Data, center_of_mass, com_inertias, com_velocities, com_wrenches,
    forward_kinematics, forward_velocity, subtree_coms,
};
use moreau::math::{SE3, Vec3};
use moreau::sim::{Snapshot, State, actuator_forces, snapshots_from_bytes, snapshots_to_bytes};
use nalgebra::DVector;
use numpy::{PyArray1, PyArray2, PyArray3, PyArrayMethods};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::arrays::{Floats1, Floats2, FloatsDyn, array2, array3, rows, vector};
use crate::model::{Model, Pair};
use crate::render::{CachedRenderer, CameraId, ViewArgs, to_python};
use crate::simulator::{params, q_side_codes, side_codes};
use crate::value_error;
use crate::views::{StateViews, Which, lend_times, lend2};
use moreau::render::Overlay;

mod gym;
mod helpers;
mod mocap;
mod pickle;

pub(crate) use gym::Gym;
pub(crate) use pickle::_batch_from_pickle;
use pickle::Pickled;

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

/// Two (n, k, width) arrays.
type Pair3<'py> = (Bound<'py, PyArray3<f64>>, Bound<'py, PyArray3<f64>>);

/// Many worlds of one model, stepped together.
#[pyclass(module = "moreau._moreau", unsendable)]
pub struct BatchSim {
    batch: CoreBatch,
    /// What it was made with (for pickling).
    args: BatchArgs,
    /// The model it was made with (its `q0`, `v0` and `dt` included).
    model: Model,
    /// The worlds that failed in the last step, with why.
    failures: Vec<(usize, String)>,
    /// Kinematics workspace of `body_positions`.
    data: Data,
    /// Every world's state, batch-major, for `q_view` and the others:
    /// synced at the end of every call that changes a state.
    views: StateViews,
    /// `render`'s renderer, made on first use.
    renderer: CachedRenderer,
    nq: usize,
    nv: usize,
    nu: usize,
}

/// World `w`'s row of `given` (all worlds' rows, each as long as `own`),
/// or the world's `own` vector when none is given.
fn row<'a>(given: Option<&'a [f64]>, own: &'a DVector<f64>, w: usize) -> &'a [f64] {
    let n = own.len();
    given.map_or(own.as_slice(), |g| &g[w * n..(w + 1) * n])
}

/// The constructor's arguments but the model and the number of worlds.
#[derive(Clone)]
struct BatchArgs {
    backend: String,
    dt: Option<f64>,
    solver: String,
    tolerance: f64,
    decomposition: String,
    layout: String,
    pipeline: usize,
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
        let mut views = StateViews::new(nworlds, model.model.nq, model.model.nv, model.model.na());
        views.sync(batch.states());
        Ok(BatchSim {
            views,
            renderer: CachedRenderer::default(),
            batch,
            args: BatchArgs {
                backend: backend.into(),
                dt,
                solver: solver.into(),
                tolerance,
                decomposition: decomposition.into(),
                layout: layout.into(),
                pipeline,
            },
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

    /// One step of every world under joint torques `tau` (nworlds, nv), or
    /// `repeats` steps under the same torques. Returns the number of
    /// contacts over all worlds (in the last step). The GIL is released
    /// while the worlds step. A world whose step fails keeps its state and
    /// is listed in `failures`.
    #[pyo3(signature = (tau, repeats=1))]
    fn step(&mut self, py: Python<'_>, tau: Floats2<'_>, repeats: usize) -> PyResult<usize> {
        let a = self.actions("tau", &tau, self.nv)?;
        let batch = &mut self.batch;
        let report = py.detach(|| batch.step_repeated(&a, repeats, None));
        self.sync_views();
        let report = report.map_err(value_error)?;
        self.record_failures(&report);
        Ok(report.contacts)
    }

    /// One step of every world under actuator controls `ctrl` (nworlds, nu),
    /// or `repeats` steps under the same controls (a frame skip: on the
    /// device the state is read back once, after the last).
    #[pyo3(signature = (ctrl, repeats=1))]
    fn step_controls(
        &mut self,
        py: Python<'_>,
        ctrl: Floats2<'_>,
        repeats: usize,
    ) -> PyResult<usize> {
        let a = self.actions("ctrl", &ctrl, self.nu)?;
        let batch = &mut self.batch;
        let report = py.detach(|| batch.step_controls_repeated(&a, repeats, None));
        self.sync_views();
        let report = report.map_err(value_error)?;
        self.record_failures(&report);
        Ok(report.contacts)
    }

    /// One step of every world under joint torques `tau` (nworlds, nv),
    /// each world also computing the Jacobians of its step (in parallel
    /// except on "cpu1"; on "gpu" at the f32 kernel's impulses, in f64 on
    /// the host; the GIL is released): a dict of
    /// (nworlds, nv, nv) arrays `dv_dq`, `dv_dv`, `dv_dtau`, `dq_dq`,
    /// `dq_dv`, `dq_dtau` (`q` in the tangent space: see
    /// `Model.configuration_charts`), and (nworlds,) `wrt_q` (false: that
    /// world's `q` columns are not available), `q_residual` and
    /// (nworlds, nv) `q_side`, `v_side`, `tau_side` (see
    /// `Simulator.step_with_jacobians`). A failed world (in `failures`)
    /// keeps its state and gets NaN Jacobians (and sides 2).
    fn step_with_jacobians<'py>(
        &mut self,
        py: Python<'py>,
        tau: Floats2<'py>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let a = self.actions("tau", &tau, self.nv)?;
        let batch = &mut self.batch;
        let report = py.detach(|| batch.step_with_jacobians(&a, None));
        self.sync_views();
        let report = report.map_err(value_error)?;
        self.record_failures(&report);
        let (n, nv) = (self.batch.nworlds(), self.nv);
        let names = ["dv_dq", "dv_dv", "dv_dtau", "dq_dq", "dq_dv", "dq_dtau"];
        let mut flats: Vec<Vec<f64>> = vec![Vec::with_capacity(n * nv * nv); names.len()];
        let (mut wrt_q, mut residual) = (Vec::with_capacity(n), Vec::with_capacity(n));
        let mut sides: [Vec<i8>; 3] = std::array::from_fn(|_| Vec::with_capacity(n * nv));
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
                    sides[0].extend(q_side_codes(j));
                    sides[1].extend(side_codes(&j.v_sides, nv));
                    sides[2].extend(side_codes(&j.tau_sides, nv));
                }
                None => {
                    for flat in flats.iter_mut() {
                        flat.extend(std::iter::repeat_n(f64::NAN, nv * nv));
                    }
                    wrt_q.push(false);
                    residual.push(f64::NAN);
                    sides
                        .iter_mut()
                        .for_each(|s| s.extend(std::iter::repeat_n(2, nv)));
                }
            }
        }
        let d = PyDict::new(py);
        for (name, flat) in names.iter().zip(flats) {
            d.set_item(*name, array3(py, flat, n, nv, nv))?;
        }
        d.set_item("wrt_q", PyArray1::from_vec(py, wrt_q))?;
        d.set_item("q_residual", PyArray1::from_vec(py, residual))?;
        for (name, codes) in ["q_side", "v_side", "tau_side"].into_iter().zip(sides) {
            let codes = PyArray1::from_vec(py, codes).reshape([n, nv]);
            d.set_item(name, codes.expect("n × nv"))?;
        }
        Ok(d)
    }

    /// One step of every world under joint torques `tau` (nworlds, nv),
    /// each world recording what its step's vector–Jacobian product needs
    /// (the GIL is released): returns the `Tape` of this step, for
    /// `vjp`. A failed world (in `failures`) keeps its state and records
    /// nothing.
    fn step_for_vjp(&mut self, py: Python<'_>, tau: Floats2<'_>) -> PyResult<Tape> {
        let a = self.actions("tau", &tau, self.nv)?;
        let batch = &mut self.batch;
        let stepped = py.detach(|| batch.step_for_vjp(&a, None));
        self.sync_views();
        let (report, tape) = stepped.map_err(value_error)?;
        self.record_failures(&report);
        Ok(Tape { tape })
    }

    /// The vector–Jacobian products of the step recorded in `tape` (by
    /// this batch's `step_for_vjp`) with the adjoints `w_v` of `v⁺` and
    /// `w_q` of `q⁺` (nworlds, nv each; `q⁺` in the tangent space, see
    /// `Model.configuration_charts`): a dict of (nworlds, nv) arrays `q`,
    /// `v`, `tau` (`wᵀ ∂(v⁺, q⁺)/∂x`), a list `mu` (per world, one entry per
    /// contact of its step), (nworlds,) `wrt_q` and `q_residual`, (nworlds,
    /// nv) `q_side` (see `step_with_jacobians`), and `gpu_fallbacks` (worlds whose contact
    /// stage the GPU flagged and the CPU solved). On the GPU backend the
    /// contact stages' transposed solves run in one GPU dispatch (f32);
    /// on "cpu" in parallel. The GIL is released. A world that did not
    /// step passes its adjoints through.
    fn vjp<'py>(
        &mut self,
        py: Python<'py>,
        tape: &mut Tape,
        w_v: Floats2<'py>,
        w_q: Floats2<'py>,
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
        let sides: Vec<i8> = out.q_sides.iter().map(|s| s.code()).collect();
        d.set_item(
            "q_side",
            PyArray1::from_vec(py, sides)
                .reshape([n, nv])
                .expect("n × nv"),
        )?;
        d.set_item("gpu_fallbacks", out.gpu_fallbacks)?;
        Ok(d)
    }

    /// The worlds whose last step failed (a diverged solve, a non-finite
    /// state), as (world, why); they kept their state.
    #[getter]
    fn failures(&self) -> Vec<(usize, String)> {
        self.failures.clone()
    }

    /// Whether the worlds live on the GPU (backend "gpu" on a model the
    /// resident path runs: the whole step on the device).
    #[getter]
    fn resident(&self) -> bool {
        self.batch.is_resident()
    }

    /// Why backend "gpu" runs the host-prepared path ("gpu-solve"), if it
    /// does: one line naming the reason.
    #[getter]
    fn notice(&self) -> Option<String> {
        self.batch.notice().map(str::to_string)
    }

    /// The worlds' configurations (nworlds, nq), a copy; a free or ball
    /// joint's quaternion is stored ``(x, y, z, w)`` (``Model.to_mujoco``
    /// gives MuJoCo's ``(w, x, y, z)``).
    #[getter]
    fn q<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray2<f64>> {
        self.stacked(py, self.nq, true)
    }

    /// The worlds' velocities (nworlds, nv), a copy.
    #[getter]
    fn v<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray2<f64>> {
        self.stacked(py, self.nv, false)
    }

    /// The actuators' activations (nworlds, na), a copy (MuJoCo's ``act``:
    /// the state of the actuators with activation dynamics, ``dyntype``).
    #[getter]
    fn act<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray2<f64>> {
        let na = self.batch.model().na();
        let mut flat = vec![0.0; self.batch.nworlds() * na];
        for (s, out) in self.batch.states().zip(flat.chunks_mut(na.max(1))) {
            if !s.act.is_empty() {
                out.copy_from_slice(s.act.as_slice());
            }
        }
        array2(py, flat, self.batch.nworlds(), na)
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
    /// world's configuration, or at the configurations `q` (nworlds, nq);
    /// a mocap body's frames where each world's mocap pose puts them.
    #[pyo3(signature = (name, q=None))]
    fn frame_positions<'py>(
        &mut self,
        py: Python<'py>,
        name: &str,
        q: Option<Floats2<'py>>,
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
        let index = (self.batch.model().frames.iter()).position(|f| f.name == name);
        if let Some(m) = index.and_then(|f| self.batch.model().mocap_of_frame(f)) {
            // A mocap body's frame: where each world's mocap pose puts it.
            let file = self.batch.model().mocap[m].pose;
            let n = self.batch.nworlds();
            let mut flat = Vec::with_capacity(3 * n);
            for w in 0..n {
                let pose = self.batch.mocap_poses(w).map_err(value_error)?[m];
                let p = pose
                    .mul(&file.inverse())
                    .act_point(&frame.body_from_frame.translation);
                flat.extend_from_slice(p.as_slice());
            }
            return Ok(array2(py, flat, n, 3));
        }
        self.positions(py, frame.body, &frame.body_from_frame, given.as_deref())
    }

    /// Each world's generalized constraint forces (nworlds, nv) in its last
    /// step, `Jᵀλ/dt` (contacts and joint stops; MuJoCo's
    /// `qfrc_constraint`).
    fn constraint_forces<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let n = self.batch.nworlds();
        let mut flat = Vec::with_capacity(n * self.nv);
        for w in 0..n {
            let f = self.batch.constraint_forces(w).map_err(value_error)?;
            flat.extend_from_slice(f.as_slice());
        }
        Ok(array2(py, flat, n, self.nv))
    }

    /// Every world's contacts of its last step, as arrays of one row per
    /// contact (``k`` of them, all worlds): ``world`` (k,) int64,
    /// ``geoms`` and ``bodies`` (k, 2) int64 (the pair ``a``, ``b``:
    /// indices into the model's geometries and ``Model.body_names``),
    /// ``point`` (k, 3) midway between the surfaces, ``normal`` (k, 3) from
    /// ``b`` to ``a``, ``distance`` (k,) (< 0: penetration) and
    /// ``impulse`` (k, 3) on ``a`` over the step (the force times ``dt``;
    /// ``-impulse`` on ``b``), world frame. Read back from the device for
    /// worlds living there. A world whose last step failed has none.
    fn contacts<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let all = self.batch.contacts().map_err(value_error)?;
        let model = self.batch.model();
        let k: usize = all.iter().map(Vec::len).sum();
        let (mut world, mut geoms, mut bodies) = (Vec::with_capacity(k), Vec::new(), Vec::new());
        let (mut point, mut normal, mut distance, mut impulse) =
            (Vec::new(), Vec::new(), Vec::with_capacity(k), Vec::new());
        for (w, contacts) in all.iter().enumerate() {
            for c in contacts {
                world.push(w as i64);
                geoms.extend([c.geom_a as i64, c.geom_b as i64]);
                let body = |g: usize| model.geometries[g].body as i64;
                bodies.extend([body(c.geom_a), body(c.geom_b)]);
                point.extend_from_slice(c.point.as_slice());
                normal.extend_from_slice(c.normal.as_slice());
                distance.push(c.distance);
                impulse.extend_from_slice(c.impulse.as_slice());
            }
        }
        let pairs = |v: Vec<i64>| {
            PyArray1::from_vec(py, v)
                .reshape([k, 2])
                .expect("two per contact")
        };
        let d = PyDict::new(py);
        d.set_item("world", PyArray1::from_vec(py, world))?;
        d.set_item("geoms", pairs(geoms))?;
        d.set_item("bodies", pairs(bodies))?;
        d.set_item("point", array2(py, point, k, 3))?;
        d.set_item("normal", array2(py, normal, k, 3))?;
        d.set_item("distance", PyArray1::from_vec(py, distance))?;
        d.set_item("impulse", array2(py, impulse, k, 3))?;
        Ok(d)
    }

    /// Images of the worlds ``worlds`` (default: all) at their
    /// configurations, drawn offscreen on the GPU: (n, height, width, 3)
    /// uint8 RGB, and with ``depth=True`` also (n, height, width) float32
    /// distances along the camera's axis (0 where nothing is drawn). The
    /// camera looks at each world's centre of mass (or ``target``) from
    /// ``azimuth`` and ``elevation`` (degrees) at ``distance`` (m; default
    /// from what it must hold). Drawn: the model's visuals (a file's geoms
    /// with their ``rgba``), else its geometries and skeleton; with
    /// ``contacts=True`` each world's last step's contacts over it (points
    /// red, forces as yellow arrows, the model's weight 0.5 m long). The
    /// camera: ``camera``, a file's camera (``Model.camera_names`` or its
    /// index), or the free camera following ``track`` (a body or frame).
    #[pyo3(signature = (worlds=None, width=480, height=480, camera=None, track=None, azimuth=None, elevation=None, distance=None, target=None, depth=false, contacts=false))]
    #[allow(clippy::too_many_arguments)]
    fn render<'py>(
        &mut self,
        py: Python<'py>,
        worlds: Option<Vec<usize>>,
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
        let n = self.batch.nworlds();
        let worlds = worlds.unwrap_or_else(|| (0..n).collect());
        if let Some(&w) = worlds.iter().find(|&&w| w >= n) {
            return Err(value_error(format!("world {w} of a batch of {n}")));
        }
        let qs: Vec<&[f64]> = worlds
            .iter()
            .map(|&w| Ok(self.batch.state(w)?.q.as_slice()))
            .collect::<Result<_, moreau::batch::BatchError>>()
            .map_err(value_error)?;
        let view = ViewArgs {
            camera,
            track,
            azimuth,
            elevation,
            distance,
            target,
        };
        let model = self.batch.model().clone();
        let overlays = if contacts {
            let all = self.batch.contacts().map_err(value_error)?;
            let mut overlays = Vec::with_capacity(worlds.len());
            for &w in &worlds {
                let dt = self.batch.params(w).map_err(value_error)?.dt;
                overlays.push(Overlay::from_contacts(&model, all[w].iter().cloned(), dt));
            }
            overlays
        } else {
            Vec::new()
        };
        let frames = (self.renderer).render(&model, &qs, (width, height), &view, &overlays)?;
        to_python(py, frames, depth, false)
    }

    /// Every world's sensor values (nworlds, ``Model.nsensordata``): the
    /// columns of sensor ``k`` from ``Model.sensor_address[k]``,
    /// ``sensor_dims[k]`` wide. Position and velocity sensors read each
    /// world's state; touch, accelerometer, force and torque its last step,
    /// at the state that step started from (dm_control's convention), and
    /// read 0 in a world whose state was set since. Vectors in the site's
    /// frame (site sensors) or the world's (frame and subtree sensors, or
    /// the reference frame's); ``framequat`` is ``(w, x, y, z)`` with
    /// ``w >= 0``. Refused (ValueError) for worlds living on the device.
    fn sensors<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let values = self.batch.sensors().map_err(value_error)?;
        let (n, ns) = (self.batch.nworlds(), self.batch.model().nsensordata());
        Ok(array2(py, values, n, ns))
    }

    /// Each world's tendon lengths and velocities (MuJoCo's ``ten_length``
    /// and ``ten_velocity``), two (nworlds, ntendon) arrays, at each
    /// world's state or at ``q`` (nworlds, nq) and ``v`` (nworlds, nv).
    /// Columns: ``Model.tendon_names``.
    #[pyo3(signature = (q=None, v=None))]
    fn tendon_states<'py>(
        &mut self,
        py: Python<'py>,
        q: Option<Floats2<'py>>,
        v: Option<Floats2<'py>>,
    ) -> PyResult<Pair<'py>> {
        let q = self.optional("q", &q, self.nq)?;
        let v = self.optional("v", &v, self.nv)?;
        let model = self.batch.model().clone();
        let (n, nt) = (self.batch.nworlds(), model.tendons.len());
        let (mut lengths, mut rates) = (Vec::with_capacity(n * nt), Vec::with_capacity(n * nt));
        let mut jac = Vec::new();
        for (w, s) in self.batch.states().enumerate() {
            let qw = row(q.as_deref(), &s.q, w);
            let vw = row(v.as_deref(), &s.v, w);
            forward_kinematics(&model, &mut self.data, qw);
            for t in 0..nt {
                jac.clear();
                let c = moreau::model::Coordinate::Tendon(t);
                lengths.push(moreau::sim::rows::coordinate(
                    &model, c, &self.data, qw, 1.0, &mut jac,
                ));
                rates.push(jac.iter().map(|&(k, a)| a * vw[k]).sum());
            }
        }
        Ok((array2(py, lengths, n, nt), array2(py, rates, n, nt)))
    }

    /// The centre of mass of each world's bodies (nworlds, 3), at each
    /// world's configuration or at ``q`` (nworlds, nq).
    #[pyo3(signature = (q=None))]
    fn centers_of_mass<'py>(
        &mut self,
        py: Python<'py>,
        q: Option<Floats2<'py>>,
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
        q: Option<Floats2<'py>>,
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
        q: Option<Floats2<'py>>,
        v: Option<Floats2<'py>>,
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
        q: Option<Floats2<'py>>,
    ) -> PyResult<Bound<'py, PyArray3<f64>>> {
        // From the device for resident worlds, else the worlds' simulators.
        let model = self.batch.model().clone();
        let forces: Vec<Vec<(usize, Vec3, Vec3)>> = self
            .batch
            .contact_forces()
            .map_err(value_error)?
            .into_iter()
            .map(|world| {
                world
                    .into_iter()
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
    /// ``ctrl`` (nworlds, nu), at each world's state (its activations
    /// included) or at ``q``, ``v`` (MuJoCo's ``qfrc_actuator``: clamped to
    /// the control and force ranges).
    #[pyo3(signature = (ctrl, q=None, v=None))]
    fn actuator_forces<'py>(
        &self,
        py: Python<'py>,
        ctrl: Floats2<'py>,
        q: Option<Floats2<'py>>,
        v: Option<Floats2<'py>>,
    ) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let ctrl = self.actions("ctrl", &ctrl, self.nu)?;
        let q = self.optional("q", &q, self.nq)?;
        let v = self.optional("v", &v, self.nv)?;
        let model = self.batch.model();
        let (n, nv, nu) = (self.batch.nworlds(), self.nv, self.nu);
        let mut flat = vec![0.0; n * nv];
        for (w, s) in self.batch.states().enumerate() {
            let qw = row(q.as_deref(), &s.q, w);
            let vw = row(v.as_deref(), &s.v, w);
            let dt = self.batch.params(w).map_err(value_error)?.dt;
            actuator_forces(
                model,
                qw,
                vw,
                &ctrl[w * nu..(w + 1) * nu],
                s.act.as_slice(),
                dt,
                &mut flat[w * nv..(w + 1) * nv],
            );
        }
        Ok(array2(py, flat, n, nv))
    }

    /// Sets every world's state: configurations `q` (nworlds, nq),
    /// velocities `v` (nworlds, nv) and the actuators' activations `act`
    /// (nworlds, na; not given: zero, as a reset); or, with ``worlds`` (a
    /// list of distinct world indices), those worlds' states, one row of
    /// each array per listed world. Checked first: on bad input no world
    /// changes.
    #[pyo3(signature = (q, v, act=None, worlds=None))]
    fn set_states(
        &mut self,
        q: Floats2<'_>,
        v: Floats2<'_>,
        act: Option<Floats2<'_>>,
        worlds: Option<Vec<usize>>,
    ) -> PyResult<()> {
        let set = self.set_states_unsynced(q, v, act, worlds);
        self.sync_views();
        set
    }

    /// The worlds' configurations (nworlds, nq) as a live, read-only view:
    /// the same memory at every access, which every step and every set
    /// state updates in place (no copy per access; ``torch.from_numpy``
    /// shares it). Quaternions ``(x, y, z, w)``. Set states with
    /// ``set_states``.
    #[getter]
    fn q_view<'py>(slf: Bound<'py, Self>) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let this = slf.borrow();
        lend2(slf.clone().into_any(), &this.views, Which::Q)
    }

    /// The worlds' velocities (nworlds, nv) as a live, read-only view (see
    /// ``q_view``).
    #[getter]
    fn v_view<'py>(slf: Bound<'py, Self>) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let this = slf.borrow();
        lend2(slf.clone().into_any(), &this.views, Which::V)
    }

    /// The actuators' activations (nworlds, na) as a live, read-only view
    /// (see ``q_view``).
    #[getter]
    fn act_view<'py>(slf: Bound<'py, Self>) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let this = slf.borrow();
        lend2(slf.clone().into_any(), &this.views, Which::Act)
    }

    /// The worlds' times (nworlds,) as a live, read-only view (see
    /// ``q_view``).
    #[getter]
    fn t_view<'py>(slf: Bound<'py, Self>) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let this = slf.borrow();
        lend_times(slf.clone().into_any(), &this.views)
    }

    /// Gives world `world` its own model (``Model.with_parameters``: the
    /// batch's structure, other masses, inertias, gravity, damping,
    /// armature or gears) from its next step on: domain randomization, on
    /// every backend. On "gpu" the worlds stay on the device (``resident``)
    /// unless the model's joints differ from the batch's, which moves the
    /// batch to the host-prepared path (``notice`` says why). The world's
    /// state is kept. A model of another structure raises ValueError.
    fn set_world_model(&mut self, world: usize, model: &Model) -> PyResult<()> {
        self.batch
            .set_world_model(world, model.model.clone())
            .map_err(value_error)
    }

    /// Sets world `world`'s step parameters from its next step on: the
    /// time step ``dt``, ``limit_margin``, ``baumgarte``, ``compliance``,
    /// ``friction_scale``, ``max_recovery_speed`` (the most speed the
    /// recovery of a penetration or a joint past its stop may ask for;
    /// ``math.inf``: unbounded), ``max_equality_recovery_speed`` (an
    /// equality's: 5 by default; ``math.inf``: unbounded),
    /// ``mocap_compliance`` (the compliance of an equality to a mocap
    /// body: 0.01 by default, 0 rigid), ``penetration_compliance`` (the
    /// compliance of a penetrating contact's normal row: 0, rigid, by
    /// default; 1 holds files that start overlapping), ``screen_contacts`` (False: every
    /// contact within the margin stays in the problem) (those not given
    /// are kept). A bad value (not finite,
    /// out of range) raises ValueError naming it, and nothing changes.
    #[pyo3(signature = (world, *, dt=None, limit_margin=None, baumgarte=None, compliance=None, friction_scale=None, max_recovery_speed=None, max_equality_recovery_speed=None, mocap_compliance=None, penetration_compliance=None, screen_contacts=None))]
    #[allow(clippy::too_many_arguments)]
    fn set_world_params(
        &mut self,
        world: usize,
        dt: Option<f64>,
        limit_margin: Option<f64>,
        baumgarte: Option<f64>,
        compliance: Option<f64>,
        friction_scale: Option<f64>,
        max_recovery_speed: Option<f64>,
        max_equality_recovery_speed: Option<f64>,
        mocap_compliance: Option<f64>,
        penetration_compliance: Option<f64>,
        screen_contacts: Option<bool>,
    ) -> PyResult<()> {
        let mut p = *self.batch.params(world).map_err(value_error)?;
        p.screen_contacts = screen_contacts.unwrap_or(p.screen_contacts);
        for (field, value) in [
            (&mut p.max_recovery_speed, max_recovery_speed),
            (
                &mut p.max_equality_recovery_speed,
                max_equality_recovery_speed,
            ),
        ] {
            if let Some(v) = value {
                *field = (v != f64::INFINITY).then_some(v);
            }
        }
        for (field, value) in [
            (&mut p.dt, dt),
            (&mut p.limit_margin, limit_margin),
            (&mut p.baumgarte, baumgarte),
            (&mut p.compliance, compliance),
            (&mut p.friction_scale, friction_scale),
            (&mut p.mocap_compliance, mocap_compliance),
            (&mut p.penetration_compliance, penetration_compliance),
        ] {
            if let Some(x) = value {
                *field = x;
            }
        }
        p.validate().map_err(value_error)?;
        *self.batch.params_mut(world).map_err(value_error)? = p;
        Ok(())
    }

    /// Every world's full state as bytes: its ``q``, ``v``, ``act``, time
    /// and warm starts (the last step's impulses by contact, joint stop and
    /// row, and the solver's penalty; the mocap poses), which ``restore`` sets back so that
    /// the worlds continue bit for bit as they would have (``set_states``
    /// sets ``q``, ``v``, ``act`` only: the next solves then start cold and
    /// the worlds drift apart by the solver's tolerance). On "gpu" with the
    /// worlds on the device (``resident``) the warm starts live there:
    /// refused (ValueError).
    fn snapshot<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let worlds = (0..self.batch.nworlds())
            .map(|w| {
                Ok(Snapshot {
                    state: self.batch.state(w)?.clone(),
                    warm: self.batch.warm_start(w)?,
                })
            })
            .collect::<Result<Vec<_>, moreau::batch::BatchError>>()
            .map_err(value_error)?;
        Ok(PyBytes::new(py, &snapshots_to_bytes(&worlds)))
    }

    /// Sets every world's full state from ``snapshot`` (bytes of
    /// ``snapshot()`` of a batch of the same model and number of worlds).
    /// A snapshot that does not fit is refused (ValueError) and no world
    /// changes.
    fn restore(&mut self, snapshot: &[u8]) -> PyResult<()> {
        let restored = self.restore_unsynced(snapshot);
        self.sync_views();
        restored
    }

    /// Pickling: the model, the constructor's arguments, each world's
    /// parameters and own model (domain randomization), and ``snapshot()``:
    /// an unpickled batch continues bit for bit. Refused where
    /// ``snapshot`` is.
    fn __reduce__<'py>(&mut self, py: Python<'py>) -> PyResult<(Bound<'py, PyAny>, Pickled<'py>)> {
        let f = py.import("moreau._moreau")?.getattr("_batch_from_pickle")?;
        let n = self.batch.nworlds();
        let mut params = Vec::with_capacity(n);
        let mut own = Vec::new();
        for w in 0..n {
            params.push(*self.batch.params(w).map_err(value_error)?);
            let sim = self.batch.simulator(w).map_err(value_error)?;
            if !std::sync::Arc::ptr_eq(sim.model(), self.batch.model()) {
                let m = Model {
                    model: sim.model().clone(),
                    ..self.model.clone()
                };
                own.push((w, m));
            }
        }
        let mut bytes = Vec::new();
        ciborium::into_writer(&params, &mut bytes).map_err(value_error)?;
        let a = self.args.clone();
        let args = (
            a.backend,
            a.dt,
            a.solver,
            a.tolerance,
            a.decomposition,
            a.layout,
            a.pipeline,
        );
        let snapshot = self.snapshot(py)?;
        Ok((
            f,
            (
                self.model.clone(),
                n,
                args,
                PyBytes::new(py, &bytes),
                own,
                snapshot,
            ),
        ))
    }

    /// Every world's mocap body poses (``Model.mocap_names``), as MuJoCo's
    /// ``mocap_pos`` and ``mocap_quat``: positions (nworlds, nmocap, 3)
    /// and quaternions (nworlds, nmocap, 4), ``(w, x, y, z)`` with ``w >= 0``.
    fn mocap_poses<'py>(&self, py: Python<'py>) -> PyResult<Pair3<'py>> {
        let (n, nm) = (self.batch.nworlds(), self.batch.model().mocap.len());
        let (pos, quat) = self.mocap_arrays()?;
        Ok((array3(py, pos, n, nm, 3), array3(py, quat, n, nm, 4)))
    }

    /// Sets the mocap bodies' poses from the next step on: ``pos`` (k,
    /// nmocap, 3) and ``quat`` (k, nmocap, 4; ``(w, x, y, z)``, normalized
    /// as MuJoCo does; not given: each keeps its orientation) for every
    /// world (k = nworlds) or for the worlds listed in ``worlds``. The
    /// ``connect``s and ``weld``s that name a mocap body pull their other
    /// body after it. A bad value raises ValueError and no world changes.
    #[pyo3(signature = (pos, quat=None, worlds=None))]
    fn set_mocap(
        &mut self,
        pos: FloatsDyn<'_>,
        quat: Option<FloatsDyn<'_>>,
        worlds: Option<Vec<usize>>,
    ) -> PyResult<()> {
        self.set_mocap_checked(pos, quat, worlds)
    }

    /// Sets world `world`'s state (``act``: the activations, (na,); not
    /// given: zero).
    #[pyo3(signature = (world, q, v, act=None))]
    fn set_state(
        &mut self,
        world: usize,
        q: Floats1<'_>,
        v: Floats1<'_>,
        act: Option<Floats1<'_>>,
    ) -> PyResult<()> {
        let mut state = State::new(DVector::from_vec(vector(&q)), DVector::from_vec(vector(&v)));
        if let Some(a) = act {
            state.act = DVector::from_vec(vector(&a));
            if state.act.is_empty() && self.batch.model().na() > 0 {
                return Err(value_error(format!(
                    "act: expected {} activations, got 0",
                    self.batch.model().na()
                )));
            }
        }
        let set = self.batch.set_state(world, state).map_err(value_error);
        self.sync_views();
        set
    }
}
