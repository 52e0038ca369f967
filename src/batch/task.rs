//! An RL task computed where resident worlds live
//! ([`crate::gpu::resident::DeviceTaskSpec`]): the reset draws and the
//! step's outputs on the device, the host's copies of the states kept in
//! step (a world reset on the device is read back at once).

use super::*;
use crate::gpu::resident::DeviceTaskSpec;

impl BatchSim {
    /// Time the host has waited for the resident worlds' device in reads
    /// since the batch was made (`None`: not resident): the rest of a
    /// call's time is the host's own.
    pub fn resident_waited(&self) -> Option<std::time::Duration> {
        self.resident.as_ref().map(|r| r.waited())
    }

    /// Computes `spec`'s task on the device from now on (the last steps'
    /// starts kept). Refused, naming why, where the worlds are not
    /// resident or the device cannot run the task.
    pub fn attach_device_task(&mut self, spec: &DeviceTaskSpec) -> Result<(), BatchError> {
        let r = on_device(&mut self.resident)?;
        r.attach_task(spec)
            .map_err(|e| BatchError::Resident(e.to_string()))?;
        self.keep_start = true;
        Ok(())
    }

    /// Resets the worlds where `which` is true to states drawn on the
    /// device by the attached task from Philox4x32-10 keyed by `seeds`,
    /// the world's index and `episodes` (nworlds each); their states are
    /// then read back (times 0, warm starts dropped), as
    /// [`Self::set_state`] would have left them.
    pub fn device_task_reset(
        &mut self,
        which: &[bool],
        seeds: &[u64],
        episodes: &[u32],
    ) -> Result<(), BatchError> {
        let resident = |e: crate::gpu::resident::ResidentError| BatchError::Resident(e.to_string());
        self.flush_resident_inputs()?;
        let r = on_device(&mut self.resident)?;
        r.task_reset(which, seeds, episodes).map_err(resident)?;
        let worlds = &mut self.worlds;
        let (nq, nv) = (self.model.nq, self.model.nv);
        r.read_columns(|first, c| {
            let chunk = &mut worlds[first..first + c.nworlds()];
            chunk.par_iter_mut().enumerate().for_each(|(w, world)| {
                if !which[first + w] {
                    return;
                }
                for t in 0..nq {
                    world.state.q[t] = c.q(w, t);
                }
                for t in 0..nv {
                    world.state.v[t] = c.v(w, t);
                }
                world.state.t = 0.0;
                world.start = None;
                world.sim.clear_warm_start();
            })
        })
        .map_err(resident)?;
        Ok(())
    }

    /// Evaluates the attached task on every world after the last steps
    /// (the worlds where `fresh` is true as just reset; `action_sq` each
    /// world's `Σ a²`), handing `read` each chunk's first world and its
    /// rows: (observation, reward, termination, info) in f32, world after
    /// world ([`DeviceTaskSpec::row`] floats each).
    pub fn device_task_evaluate(
        &mut self,
        fresh: &[bool],
        action_sq: &[f64],
        read: impl FnMut(usize, &[f32]),
    ) -> Result<(), BatchError> {
        self.flush_resident_inputs()?;
        let r = on_device(&mut self.resident)?;
        r.task_evaluate(fresh, action_sq, read)
            .map_err(|e| BatchError::Resident(e.to_string()))
    }
}

/// The resident worlds, or why there are none.
fn on_device(
    r: &mut Option<crate::gpu::resident::ResidentChunks>,
) -> Result<&mut crate::gpu::resident::ResidentChunks, BatchError> {
    r.as_mut()
        .ok_or_else(|| BatchError::Resident("the worlds are not resident on a device".into()))
}
