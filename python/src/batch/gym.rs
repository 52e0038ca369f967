//! `Gym`: one of Gymnasium's v5 tasks evaluated over a `BatchSim`'s worlds
//! in the library (`moreau::envs::gymnasium`), for `moreau.gym`.

use super::*;
use moreau::envs::gymnasium::{GymBatch, GymKind, GymParams, GymTask};
use numpy::PyReadonlyArray1;
use pyo3::types::PyTuple;

/// Gymnasium's v5 task `task_id` over the worlds of ``batch``: each
/// environment step (``step``) runs the frame skip and computes every
/// world's observation, reward, termination and info in one call on the
/// batch's threads. ``params``: Gymnasium's keyword arguments (those the
/// task reads; missing ones take Gymnasium 1.2's defaults); ``qpos0``:
/// MuJoCo's initial ``qpos`` of the file. Used by ``moreau.gym``.
#[pyclass(module = "moreau._moreau", unsendable)]
pub struct Gym {
    gym: GymBatch,
}

/// Reads Gymnasium's keyword argument `key` into `slot` when `params` has it.
fn read<'py, T>(params: &Bound<'py, PyDict>, key: &str, slot: &mut T) -> PyResult<()>
where
    T: for<'a> FromPyObject<'a, 'py>,
    for<'a> <T as FromPyObject<'a, 'py>>::Error: Into<PyErr>,
{
    if let Some(v) = params.get_item(key)? {
        *slot = v
            .extract::<T>()
            .map_err(|e| value_error(format!("{key}: {}", Into::<PyErr>::into(e))))?;
    }
    Ok(())
}

type Outputs<'py> = (
    Bound<'py, PyArray2<f64>>,
    Bound<'py, PyArray1<f64>>,
    Bound<'py, PyArray1<bool>>,
    Bound<'py, PyArray2<f64>>,
);

impl Gym {
    fn outputs<'py>(&self, py: Python<'py>) -> Outputs<'py> {
        let out = self.gym.output();
        let n = out.reward.len();
        let task = self.gym.task();
        (
            array2(py, out.obs.clone(), n, task.obs_dim()),
            PyArray1::from_slice(py, &out.reward),
            PyArray1::from_slice(py, &out.terminated),
            array2(py, out.info.clone(), n, task.info_dim()),
        )
    }
}

fn mask(what: &str, m: &PyReadonlyArray1<'_, bool>, n: usize) -> PyResult<Vec<bool>> {
    let m: Vec<bool> = m.as_array().iter().copied().collect();
    if m.len() != n {
        return Err(value_error(format!(
            "{what} has {} entries for {n} worlds",
            m.len()
        )));
    }
    Ok(m)
}

#[pymethods]
impl Gym {
    #[new]
    fn new(
        batch: PyRef<'_, BatchSim>,
        task_id: &str,
        params: &Bound<'_, PyDict>,
        qpos0: Floats1<'_>,
        qvel0: Floats1<'_>,
        frame_skip: usize,
    ) -> PyResult<Self> {
        let kind = GymKind::from_id(task_id)
            .ok_or_else(|| value_error(format!("unknown Gymnasium task {task_id:?}")))?;
        let mut p = GymParams::gymnasium(kind);
        for (key, slot) in [
            ("forward_reward_weight", &mut p.forward_reward_weight),
            ("ctrl_cost_weight", &mut p.ctrl_cost_weight),
            ("contact_cost_weight", &mut p.contact_cost_weight),
            ("healthy_reward", &mut p.healthy_reward),
            ("reward_dist_weight", &mut p.reward_dist_weight),
            ("reward_control_weight", &mut p.reward_control_weight),
            ("reset_noise_scale", &mut p.reset_noise_scale),
        ] {
            read(params, key, slot)?;
        }
        for (key, slot) in [
            ("contact_cost_range", &mut p.contact_cost_range),
            ("healthy_z_range", &mut p.healthy_z_range),
            ("healthy_state_range", &mut p.healthy_state_range),
            ("healthy_angle_range", &mut p.healthy_angle_range),
            ("contact_force_range", &mut p.contact_force_range),
        ] {
            read(params, key, slot)?;
        }
        for (key, slot) in [
            ("terminate_when_unhealthy", &mut p.terminate_when_unhealthy),
            (
                "exclude_current_positions_from_observation",
                &mut p.exclude_current_positions,
            ),
            ("include_cfrc_ext_in_observation", &mut p.include_cfrc_ext),
            ("include_cinert_in_observation", &mut p.include_cinert),
            ("include_cvel_in_observation", &mut p.include_cvel),
            (
                "include_qfrc_actuator_in_observation",
                &mut p.include_qfrc_actuator,
            ),
        ] {
            read(params, key, slot)?;
        }
        read(params, "main_body", &mut p.main_body)?;
        let model = batch.batch.model().clone();
        let task =
            GymTask::new(kind, p, model, &vector(&qpos0), &vector(&qvel0)).map_err(value_error)?;
        let gym = GymBatch::new(task, &batch.batch, frame_skip).map_err(value_error)?;
        Ok(Gym { gym })
    }

    /// Gymnasium 1.2's registration of ``task_id`` as the library keeps it
    /// (``moreau bench env`` runs by it): ``(xml_file, frame_skip,
    /// max_episode_steps)``.
    #[staticmethod]
    fn registration(task_id: &str) -> PyResult<(&'static str, usize, usize)> {
        GymKind::from_id(task_id)
            .map(GymKind::registration)
            .ok_or_else(|| value_error(format!("unknown Gymnasium task {task_id:?}")))
    }

    /// The observation's length.
    #[getter]
    fn obs_dim(&self) -> usize {
        self.gym.task().obs_dim()
    }

    /// The info's terms, ``[(name, width, in_reset_info)]``, in the order
    /// of an info row's columns.
    #[getter]
    fn info_columns<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyTuple>>> {
        let task = self.gym.task();
        task.info_columns()
            .iter()
            .map(|&(name, width)| {
                PyTuple::new(
                    py,
                    [
                        name.into_pyobject(py)?.into_any(),
                        width.into_pyobject(py)?.into_any(),
                        pyo3::types::PyBool::new(py, task.reset_info(name))
                            .to_owned()
                            .into_any(),
                    ],
                )
            })
            .collect()
    }

    /// Takes the worlds where ``reset`` (bool, (nworlds,)) is true as just
    /// reset at their states and evaluates them. Returns every world's
    /// ``(obs, reward, terminated, info)`` (the others' as last computed).
    fn observe<'py>(
        &mut self,
        py: Python<'py>,
        mut batch: PyRefMut<'py, BatchSim>,
        reset: PyReadonlyArray1<'py, bool>,
    ) -> PyResult<Outputs<'py>> {
        let reset = mask("reset", &reset, batch.batch.nworlds())?;
        self.gym
            .observe(&mut batch.batch, &reset)
            .map_err(value_error)?;
        Ok(self.outputs(py))
    }

    /// One environment step of every world but those just reset (``reset``
    /// true: observed at their states, not stepped): the frame skip under
    /// controls ``ctrl`` (nworlds, nu), then the observations, rewards,
    /// terminations and infos ``(obs, reward, terminated, info)``.
    /// ``action_sq`` (nworlds,): each world's ``Σ a²`` of its actions as
    /// Gymnasium's task costs them. Worlds whose physics failed are in
    /// ``batch.failures``. The GIL is released.
    fn step<'py>(
        &mut self,
        py: Python<'py>,
        mut batch: PyRefMut<'py, BatchSim>,
        ctrl: Floats2<'py>,
        action_sq: Floats1<'py>,
        reset: PyReadonlyArray1<'py, bool>,
    ) -> PyResult<Outputs<'py>> {
        let nu = batch.nu;
        let ctrl = batch.actions("ctrl", &ctrl, nu)?;
        let action_sq = vector(&action_sq);
        let reset = mask("reset", &reset, batch.batch.nworlds())?;
        let gym = &mut self.gym;
        let core = &mut batch.batch;
        let stepped = py.detach(|| gym.step(core, &ctrl, &action_sq, &reset));
        batch.sync_views();
        let failed = stepped.map_err(value_error)?;
        batch.failures = failed.iter().map(|(w, e)| (*w, e.to_string())).collect();
        Ok(self.outputs(py))
    }

    /// Keys the reset streams of the worlds where ``which`` (bool,
    /// (nworlds,)) is true with ``seeds`` (nworlds integers in [0, 2**64)),
    /// their episodes counted from 0 again.
    fn seed(&mut self, which: PyReadonlyArray1<'_, bool>, seeds: Vec<u64>) -> PyResult<()> {
        let which = mask("which", &which, self.gym.output().reward.len())?;
        self.gym.seed(&which, &seeds).map_err(value_error)
    }

    /// Resets the worlds where ``which`` is true to states drawn from
    /// their Philox streams (keyed by seed, world and episode: the same on
    /// every backend); their observations come with the next ``step`` or
    /// ``observe``.
    fn reset_worlds(
        &mut self,
        mut batch: PyRefMut<'_, BatchSim>,
        which: PyReadonlyArray1<'_, bool>,
    ) -> PyResult<()> {
        let which = mask("which", &which, batch.batch.nworlds())?;
        let reset = self.gym.reset_worlds(&mut batch.batch, &which);
        batch.sync_views();
        reset.map_err(value_error)
    }

    /// The states each world's last physics step started from (its state
    /// for a world reset since): ``(q, v)``, (nworlds, nq), (nworlds, nv).
    fn kinematic_states<'py>(&self, py: Python<'py>) -> Pair<'py> {
        let (q, v) = self.gym.kinematic_states();
        let n = self.gym.output().reward.len();
        (
            array2(py, q.to_vec(), n, q.len() / n),
            array2(py, v.to_vec(), n, v.len() / n),
        )
    }

    /// Seconds spent since the last ``reset_times`` (or since made):
    /// ``{"physics": …, "task": …, "steps": …}``: in the batch's physics
    /// steps, in the rest of ``step`` and ``observe`` (kinematic states
    /// kept, contact forces gathered, the worlds evaluated), and the
    /// number of ``step`` calls.
    fn times<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let t = self.gym.times();
        let d = PyDict::new(py);
        d.set_item("physics", t.physics.as_secs_f64())?;
        d.set_item("task", t.task.as_secs_f64())?;
        d.set_item("steps", t.steps)?;
        Ok(d)
    }

    fn reset_times(&mut self) {
        self.gym.reset_times();
    }

    /// Whether each world was reset since its last step (nworlds,).
    #[getter]
    fn fresh<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<bool>> {
        PyArray1::from_slice(py, self.gym.fresh())
    }
}
