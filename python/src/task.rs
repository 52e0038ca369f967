//! `Task`: the library's RL tasks (`moreau::envs`), their functions
//! evaluated for many worlds at once, with their written derivatives, for
//! learners that differentiate through them (`moreau.autograd`).

use moreau::envs::{
    InputGradient, Rng, TASK_NAMES, Task as CoreTask, Transition, TransitionGradient, make_task,
    world_seed,
};
use moreau::sim::State;
use nalgebra::DVector;
use numpy::{PyArray1, PyArray2, PyArrayMethods, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::sync::Arc;

use crate::arrays::{Floats1, Floats2, array2, rows, vector};
use crate::model::{Model, Pair};

/// Three arrays: a reset's `(q, v, episode)`, a VJP's `(g_q, g_v, g_action)`.
type Triple<'py> = (
    Bound<'py, PyArray2<f64>>,
    Bound<'py, PyArray2<f64>>,
    Bound<'py, PyArray2<f64>>,
);
use crate::value_error;

/// One of the library's tasks by name, with its parameters.
#[pyclass(module = "moreau._moreau", frozen)]
pub struct Task {
    task: Box<dyn CoreTask>,
    /// Its model, starting where world 0 of seed 0 starts.
    model: Model,
}

/// The states of `n` worlds from their rows.
struct Worlds {
    states: Vec<State>,
    episode: Vec<f64>,
}

impl Task {
    fn nq(&self) -> usize {
        self.model.model.nq
    }
    fn nv(&self) -> usize {
        self.model.model.nv
    }
    fn na(&self) -> usize {
        self.task.action_dim()
    }
    fn ne(&self) -> usize {
        self.task.episode_dim()
    }

    /// The worlds `(q, v)` (n rows) at times `t` (a row each, or none: 0)
    /// with their episode parameters (a row each, or none: zeros).
    fn worlds(
        &self,
        q: &Floats2<'_>,
        v: &Floats2<'_>,
        t: &Option<Floats1<'_>>,
        episode: &Option<Floats2<'_>>,
    ) -> PyResult<Worlds> {
        let n = q.shape()[0];
        let (nq, nv, ne) = (self.nq(), self.nv(), self.ne());
        let qf = rows("q", q, n, nq)?;
        let vf = rows("v", v, n, nv)?;
        let times = match t {
            Some(t) => per_world("t", t, n)?,
            None => vec![0.0; n],
        };
        let episode = match episode {
            Some(e) => rows("episode", e, n, ne)?,
            None => vec![0.0; n * ne],
        };
        let states = (0..n)
            .map(|w| {
                let mut s = State::new(
                    DVector::from_column_slice(&qf[w * nq..(w + 1) * nq]),
                    DVector::from_column_slice(&vf[w * nv..(w + 1) * nv]),
                );
                s.t = times[w];
                s
            })
            .collect();
        Ok(Worlds { states, episode })
    }

    /// The (n, action_dim) actions, finite.
    fn actions(&self, a: &Floats2<'_>, n: usize) -> PyResult<Vec<f64>> {
        rows("action", a, n, self.na())
    }

    fn episode_of<'a>(&self, w: &'a Worlds, k: usize) -> &'a [f64] {
        &w.episode[k * self.ne()..(k + 1) * self.ne()]
    }

    /// The transitions of `n` worlds, checked.
    #[allow(clippy::too_many_arguments)]
    fn transitions(
        &self,
        q_prev: &Floats2<'_>,
        v_prev: &Floats2<'_>,
        q: &Floats2<'_>,
        v: &Floats2<'_>,
        action: &Floats2<'_>,
        energy: &Floats1<'_>,
        episode: &Option<Floats2<'_>>,
    ) -> PyResult<Transitions> {
        let prev = self.worlds(q_prev, v_prev, &None, episode)?;
        let next = self.worlds(q, v, &None, episode)?;
        let n = prev.states.len();
        if next.states.len() != n {
            return Err(value_error(format!(
                "q has {} rows, q_prev {n}: one transition per world",
                next.states.len()
            )));
        }
        Ok(Transitions {
            action: self.actions(action, n)?,
            energy: per_world("energy", energy, n)?,
            prev,
            next,
        })
    }

    /// World `k`'s transition of `t`.
    fn transition<'a>(&self, t: &'a Transitions, k: usize) -> Transition<'a> {
        let na = self.na();
        Transition {
            prev: &t.prev.states[k],
            state: &t.next.states[k],
            action: &t.action[k * na..(k + 1) * na],
            episode: &t.prev.episode[k * self.ne()..(k + 1) * self.ne()],
            energy: t.energy[k],
            dt: self.control_dt(),
        }
    }
}

/// One environment step of `n` worlds: before, after, the actions, the
/// energies.
struct Transitions {
    prev: Worlds,
    next: Worlds,
    action: Vec<f64>,
    energy: Vec<f64>,
}

#[pymethods]
impl Task {
    /// The task `name` (`moreau.Task.names()`) with its parameters set by
    /// keyword (`dt`, `substeps`, `episode_steps` and the task's own: see
    /// `parameters`). An unknown name or parameter raises `ValueError`.
    #[new]
    #[pyo3(signature = (name, **parameters))]
    fn new(name: &str, parameters: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let mut given: Vec<(String, f64)> = Vec::new();
        if let Some(p) = parameters {
            for (k, v) in p.iter() {
                let key: String = k.extract()?;
                let value: f64 = v.extract().map_err(|_| {
                    value_error(format!("parameter `{key}` must be a number, got {v}"))
                })?;
                given.push((key, value));
            }
        }
        let refs: Vec<(&str, f64)> = given.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        let task = make_task(name, &refs).map_err(value_error)?;
        let mut episode = vec![0.0; task.episode_dim()];
        let start = task.reset(&mut Rng::new(world_seed(0, 0)), &mut episode);
        let model = Model {
            model: Arc::clone(task.model()),
            q0: start.q,
            v0: start.v,
            dt: task.sim_params().dt,
        };
        Ok(Task { task, model })
    }

    /// The names of the library's tasks.
    #[staticmethod]
    fn names() -> Vec<&'static str> {
        TASK_NAMES.to_vec()
    }

    #[getter]
    fn name(&self) -> &str {
        self.task.name()
    }
    /// The model every world simulates (its `q0`, `v0`: world 0's reset of
    /// seed 0; its `dt`: the task's physics step).
    #[getter]
    fn model(&self) -> Model {
        self.model.clone()
    }
    /// The task's parameters and their values.
    #[getter]
    fn parameters<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (k, v) in self.task.parameters() {
            d.set_item(k, v)?;
        }
        Ok(d)
    }
    #[getter]
    fn obs_dim(&self) -> usize {
        self.task.observation_space().dim()
    }
    #[getter]
    fn action_dim(&self) -> usize {
        self.na()
    }
    /// Per-world, per-episode parameters drawn at reset (a goal).
    #[getter]
    fn episode_dim(&self) -> usize {
        self.ne()
    }
    /// Physics steps per environment step.
    #[getter]
    fn substeps(&self) -> usize {
        self.task.substeps()
    }
    /// Physics time step (s).
    #[getter]
    fn dt(&self) -> f64 {
        self.task.sim_params().dt
    }
    /// Duration of an environment step (s): `substeps · dt`.
    #[getter]
    fn control_dt(&self) -> f64 {
        self.task.substeps() as f64 * self.task.sim_params().dt
    }
    #[getter]
    fn max_episode_steps(&self) -> usize {
        self.task.max_episode_steps()
    }
    /// The observation's bounds `(low, high)` (float32, ±inf where unbounded).
    #[getter]
    fn observation_space<'py>(
        &self,
        py: Python<'py>,
    ) -> (Bound<'py, PyArray1<f32>>, Bound<'py, PyArray1<f32>>) {
        let s = self.task.observation_space();
        (
            PyArray1::from_vec(py, s.low),
            PyArray1::from_vec(py, s.high),
        )
    }

    /// Initial states of `n` worlds for reset seed `seed` (world `w` draws
    /// from the stream `VecEnv.reset(seed)` gives it): `(q, v, episode)`.
    fn reset<'py>(&self, py: Python<'py>, n: usize, seed: u64) -> Triple<'py> {
        let (nq, nv, ne) = (self.nq(), self.nv(), self.ne());
        let (mut q, mut v, mut e) = (
            Vec::with_capacity(n * nq),
            Vec::with_capacity(n * nv),
            vec![0.0; n * ne],
        );
        for w in 0..n {
            let mut rng = Rng::new(world_seed(seed, w));
            let s = self.task.reset(&mut rng, &mut e[w * ne..(w + 1) * ne]);
            q.extend_from_slice(s.q.as_slice());
            v.extend_from_slice(s.v.as_slice());
        }
        (
            array2(py, q, n, nq),
            array2(py, v, n, nv),
            array2(py, e, n, ne),
        )
    }

    /// Observations `(n, obs_dim)` (float32) of the worlds `(q, v)` at
    /// times `t` (default 0) with episode parameters `episode`.
    #[pyo3(signature = (q, v, t=None, episode=None))]
    fn observe<'py>(
        &self,
        py: Python<'py>,
        q: Floats2<'py>,
        v: Floats2<'py>,
        t: Option<Floats1<'py>>,
        episode: Option<Floats2<'py>>,
    ) -> PyResult<Bound<'py, PyArray2<f32>>> {
        let w = self.worlds(&q, &v, &t, &episode)?;
        let no = self.obs_dim();
        let mut out = vec![0f32; w.states.len() * no];
        for (k, s) in w.states.iter().enumerate() {
            self.task
                .observe(s, self.episode_of(&w, k), &mut out[k * no..(k + 1) * no]);
        }
        Ok(PyArray1::from_vec(py, out)
            .reshape([w.states.len(), no])
            .expect("n × obs_dim"))
    }

    /// Reverse mode of `observe`: `(g_q, g_v)` for the observations'
    /// adjoint `g` (n, obs_dim), with respect to `q`'s coordinates as they
    /// are. A task without written derivatives raises `ValueError`.
    #[pyo3(signature = (q, v, g, t=None, episode=None))]
    fn observe_vjp<'py>(
        &self,
        py: Python<'py>,
        q: Floats2<'py>,
        v: Floats2<'py>,
        g: Floats2<'py>,
        t: Option<Floats1<'py>>,
        episode: Option<Floats2<'py>>,
    ) -> PyResult<Pair<'py>> {
        let w = self.worlds(&q, &v, &t, &episode)?;
        let (n, no, nq, nv) = (w.states.len(), self.obs_dim(), self.nq(), self.nv());
        let g = rows("g", &g, n, no)?;
        let (mut gq, mut gv) = (Vec::with_capacity(n * nq), Vec::with_capacity(n * nv));
        for (k, s) in w.states.iter().enumerate() {
            let mut grad = InputGradient::zeros(nq, nv, 0);
            self.task
                .observe_vjp(
                    s,
                    self.episode_of(&w, k),
                    &g[k * no..(k + 1) * no],
                    &mut grad,
                )
                .map_err(value_error)?;
            gq.extend(grad.q);
            gv.extend(grad.v);
        }
        Ok((array2(py, gq, n, nq), array2(py, gv, n, nv)))
    }

    /// Joint torques `(n, nv)` of the actions `action` (n, action_dim), used
    /// as given (a `VecEnv` clips them to [-1, 1] first), at `(q, v)`.
    #[pyo3(signature = (q, v, action, episode=None))]
    fn torques<'py>(
        &self,
        py: Python<'py>,
        q: Floats2<'py>,
        v: Floats2<'py>,
        action: Floats2<'py>,
        episode: Option<Floats2<'py>>,
    ) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let w = self.worlds(&q, &v, &None, &episode)?;
        let (n, na, nv) = (w.states.len(), self.na(), self.nv());
        let a = self.actions(&action, n)?;
        let mut tau = vec![0.0; n * nv];
        for (k, s) in w.states.iter().enumerate() {
            self.task.torques(
                s,
                &a[k * na..(k + 1) * na],
                self.episode_of(&w, k),
                &mut tau[k * nv..(k + 1) * nv],
            );
        }
        Ok(array2(py, tau, n, nv))
    }

    /// Reverse mode of `torques`: `(g_q, g_v, g_action)` for the torques'
    /// adjoint `g` (n, nv).
    #[pyo3(signature = (q, v, action, g, episode=None))]
    fn torques_vjp<'py>(
        &self,
        py: Python<'py>,
        q: Floats2<'py>,
        v: Floats2<'py>,
        action: Floats2<'py>,
        g: Floats2<'py>,
        episode: Option<Floats2<'py>>,
    ) -> PyResult<Triple<'py>> {
        let w = self.worlds(&q, &v, &None, &episode)?;
        let (n, na, nq, nv) = (w.states.len(), self.na(), self.nq(), self.nv());
        let a = self.actions(&action, n)?;
        let g = rows("g", &g, n, nv)?;
        let (mut gq, mut gv, mut ga) = (Vec::new(), Vec::new(), Vec::new());
        for (k, s) in w.states.iter().enumerate() {
            let mut grad = InputGradient::zeros(nq, nv, na);
            self.task
                .torques_vjp(
                    s,
                    &a[k * na..(k + 1) * na],
                    self.episode_of(&w, k),
                    &g[k * nv..(k + 1) * nv],
                    &mut grad,
                )
                .map_err(value_error)?;
            gq.extend(grad.q);
            gv.extend(grad.v);
            ga.extend(grad.action);
        }
        Ok((
            array2(py, gq, n, nq),
            array2(py, gv, n, nv),
            array2(py, ga, n, na),
        ))
    }

    /// Rewards `(n,)` of one environment step from `(q_prev, v_prev)` to
    /// `(q, v)` under `action`, with the step's mechanical work `energy`
    /// (n,; `Σ_substeps Σ_k |τ_k v_k| dt`, J) and duration `control_dt`.
    #[pyo3(signature = (q_prev, v_prev, q, v, action, energy, episode=None))]
    #[allow(clippy::too_many_arguments)]
    fn reward<'py>(
        &self,
        py: Python<'py>,
        q_prev: Floats2<'py>,
        v_prev: Floats2<'py>,
        q: Floats2<'py>,
        v: Floats2<'py>,
        action: Floats2<'py>,
        energy: Floats1<'py>,
        episode: Option<Floats2<'py>>,
    ) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let t = self.transitions(&q_prev, &v_prev, &q, &v, &action, &energy, &episode)?;
        let r = (0..t.energy.len())
            .map(|k| self.task.reward(&self.transition(&t, k)))
            .collect();
        Ok(PyArray1::from_vec(py, r))
    }

    /// Reverse mode of `reward` for the rewards' adjoint `g` (n,): a dict
    /// of `q_prev`, `v_prev`, `q`, `v`, `action` (arrays as the inputs)
    /// and `energy` (n,).
    #[pyo3(signature = (q_prev, v_prev, q, v, action, energy, g, episode=None))]
    #[allow(clippy::too_many_arguments)]
    fn reward_vjp<'py>(
        &self,
        py: Python<'py>,
        q_prev: Floats2<'py>,
        v_prev: Floats2<'py>,
        q: Floats2<'py>,
        v: Floats2<'py>,
        action: Floats2<'py>,
        energy: Floats1<'py>,
        g: Floats1<'py>,
        episode: Option<Floats2<'py>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let t = self.transitions(&q_prev, &v_prev, &q, &v, &action, &energy, &episode)?;
        let n = t.energy.len();
        let g = per_world("g", &g, n)?;
        let (na, nq, nv) = (self.na(), self.nq(), self.nv());
        let mut out: [Vec<f64>; 6] = Default::default();
        for (k, &gk) in g.iter().enumerate() {
            let mut grad = TransitionGradient::zeros(nq, nv, na);
            self.task
                .reward_vjp(&self.transition(&t, k), gk, &mut grad)
                .map_err(value_error)?;
            out[0].extend(grad.prev.q);
            out[1].extend(grad.prev.v);
            out[2].extend(grad.next.q);
            out[3].extend(grad.next.v);
            out[4].extend(grad.next.action);
            out[5].push(grad.energy);
        }
        let d = PyDict::new(py);
        let [gqp, gvp, gq, gv, ga, ge] = out;
        d.set_item("q_prev", array2(py, gqp, n, nq))?;
        d.set_item("v_prev", array2(py, gvp, n, nv))?;
        d.set_item("q", array2(py, gq, n, nq))?;
        d.set_item("v", array2(py, gv, n, nv))?;
        d.set_item("action", array2(py, ga, n, na))?;
        d.set_item("energy", PyArray1::from_vec(py, ge))?;
        Ok(d)
    }

    /// Whether each world's episode ends at `(q, v)` (a fall, a success).
    #[pyo3(signature = (q, v, t=None, episode=None))]
    fn terminated<'py>(
        &self,
        py: Python<'py>,
        q: Floats2<'py>,
        v: Floats2<'py>,
        t: Option<Floats1<'py>>,
        episode: Option<Floats2<'py>>,
    ) -> PyResult<Bound<'py, PyArray1<bool>>> {
        let w = self.worlds(&q, &v, &t, &episode)?;
        let done: Vec<bool> = w
            .states
            .iter()
            .enumerate()
            .map(|(k, s)| self.task.terminated(s, self.episode_of(&w, k)))
            .collect();
        Ok(PyArray1::from_vec(py, done))
    }

    fn __repr__(&self) -> String {
        format!("Task({:?})", self.task.name())
    }
}

/// A (n,) argument, one finite value per world.
fn per_world(what: &str, x: &Floats1<'_>, n: usize) -> PyResult<Vec<f64>> {
    let x = vector(x);
    if x.len() != n {
        return Err(value_error(format!(
            "{what} has length {}, expected {n} (one per world)",
            x.len()
        )));
    }
    if let Some(k) = x.iter().position(|v| !v.is_finite()) {
        return Err(value_error(format!("{what}[{k}] is not finite ({})", x[k])));
    }
    Ok(x)
}
