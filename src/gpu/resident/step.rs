//! Stepping the resident worlds: the inputs checked (where they enter
//! from outside the library) and uploaded, then each step's passes
//! encoded and submitted (the step kernel; with contacts, the solve in
//! place and the finish).

use super::{ResidentBatch, ResidentError, WORKGROUP, world_minor};
use crate::sim::Actuation;
use std::time::Instant;

impl ResidentBatch {
    /// One step of every world under joint torques `tau` (nworlds × nv,
    /// world after world). Refused, and nothing moves, if a torque is not
    /// finite. Returns when the step is submitted; reading the state
    /// waits for it.
    pub fn step(&mut self, tau: &[f64]) -> Result<(), ResidentError> {
        self.step_with(Actuation::Torques(tau))
    }

    /// One step of every world under the actuators' controls `ctrl`
    /// (nworlds × nu), as [`crate::sim::actuator_forces`] turns them into
    /// forces.
    pub fn step_controls(&mut self, ctrl: &[f64]) -> Result<(), ResidentError> {
        self.step_with(Actuation::Controls(ctrl))
    }

    /// One step of every world under torques or controls.
    pub fn step_with(&mut self, input: Actuation<'_>) -> Result<(), ResidentError> {
        self.step_active(input, None)
    }

    /// One step of the worlds whose `active` entry is true (nworlds; `None`:
    /// all) under torques or controls (nworlds rows; the inactive worlds'
    /// rows are not read). Refused, and nothing moves, if an active
    /// world's input is not finite. A flagged world does not step (until
    /// [`Self::clear_flags`] or [`Self::set_state`]).
    pub fn step_active(
        &mut self,
        input: Actuation<'_>,
        active: Option<&[bool]>,
    ) -> Result<(), ResidentError> {
        self.step_repeated(input, active, 1)
    }

    /// Clears every world's flag (on the device, before the next step): the
    /// flagged worlds step again from their last finite state.
    pub fn clear_flags(&mut self) {
        self.clear_flags = true;
    }

    /// What `input` is called, its values, its width per world, and the
    /// uniform's code for it (0: torques, 1: controls).
    fn input_of<'a>(&self, input: Actuation<'a>) -> (&'static str, &'a [f64], usize, u32) {
        match input {
            Actuation::Torques(t) => ("tau", t, self.model.nv, 0),
            Actuation::Controls(c) => ("ctrl", c, self.model.nu(), 1),
        }
    }

    /// [`Self::step_active`] `repeats` times under the same input, in one
    /// submission.
    pub fn step_repeated(
        &mut self,
        input: Actuation<'_>,
        active: Option<&[bool]>,
        repeats: usize,
    ) -> Result<(), ResidentError> {
        let n = self.nworlds;
        let (what, x, width, _) = self.input_of(input);
        ResidentError::check_len(what, x.len(), n * width)?;
        if let Some(a) = active {
            ResidentError::check_len("active", a.len(), n)?;
        }
        let is_active = |w: usize| active.is_none_or(|a| a[w]);
        for w in (0..n).filter(|&w| is_active(w)) {
            let row = &x[w * width..(w + 1) * width];
            if let Some(index) = row.iter().position(|v| !v.is_finite()) {
                return Err(ResidentError::NonFinite {
                    what,
                    world: w,
                    index,
                    value: row[index],
                });
            }
        }
        self.step_checked(input, active, repeats)
    }

    /// [`Self::step_repeated`] of inputs whose sizes and values the caller
    /// has checked (`BatchSim`, which checks each world's where it enters
    /// and fails that world alone): the inputs are read once.
    pub(crate) fn step_checked(
        &mut self,
        input: Actuation<'_>,
        active: Option<&[bool]>,
        repeats: usize,
    ) -> Result<(), ResidentError> {
        let n = self.nworlds;
        let (_, x, width, controls) = self.input_of(input);
        debug_assert!(x.len() == n * width && active.is_none_or(|a| a.len() == n));
        let is_active = |w: usize| active.is_none_or(|a| a[w]);
        let queue = &self.ctx.queue;
        if self.step_params.controls != controls {
            self.step_params.controls = controls;
            queue.write_buffer(&self.b.uniform, 0, bytemuck::bytes_of(&self.step_params));
        }
        if width > 0 {
            world_minor(x, n, width, is_active, &mut self.staging);
            let target = if controls == 1 {
                &self.b.ctrl
            } else {
                &self.b.tau
            };
            queue.write_buffer(target, 0, bytemuck::cast_slice(&self.staging));
        }
        match active {
            Some(a) => {
                self.active_words.clear();
                self.active_words.extend(a.iter().map(|&x| u32::from(x)));
                queue.write_buffer(
                    &self.b.stepping,
                    0,
                    bytemuck::cast_slice(&self.active_words),
                );
                self.all_active = false;
            }
            None if !self.all_active => {
                self.active_words.clear();
                self.active_words.resize(n, 1);
                queue.write_buffer(
                    &self.b.stepping,
                    0,
                    bytemuck::cast_slice(&self.active_words),
                );
                self.all_active = true;
            }
            None => {}
        }
        if self.timer.is_some() {
            for r in 0..repeats {
                let clear = r == 0 && std::mem::take(&mut self.clear_flags);
                if r + 1 == repeats && self.start.is_some() {
                    let mut encoder =
                        (self.ctx.device).create_command_encoder(&wgpu::CommandEncoderDescriptor {
                            label: Some("resident start"),
                        });
                    self.encode_start(&mut encoder);
                    self.ctx.queue.submit(Some(encoder.finish()));
                }
                self.timed_step(clear)?;
            }
            if let Some((stage, _)) = self.contacts.as_mut() {
                stage.stepped(active);
            }
            return Ok(());
        }
        let mut encoder = self
            .ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("resident step"),
            });
        if std::mem::take(&mut self.clear_flags) {
            encoder.clear_buffer(&self.b.flags, 0, None);
        }
        let groups = (n as u32).div_ceil(WORKGROUP);
        let Some((stage, contact_group)) = &self.contacts else {
            // All the steps in one pass; with the last step's start kept,
            // its copy between the others and the last.
            let kept = self.start.is_some();
            let passes = if kept { [repeats - 1, 1] } else { [repeats, 0] };
            for (k, dispatches) in passes.into_iter().enumerate() {
                if k == 1 && kept {
                    self.encode_start(&mut encoder);
                }
                if dispatches == 0 {
                    continue;
                }
                let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: Some("resident step"),
                    timestamp_writes: None,
                });
                pass.set_pipeline(&self.kernel.step);
                pass.set_bind_group(0, &self.bind_group, &[]);
                for _ in 0..dispatches {
                    pass.dispatch_workgroups(groups, 1, 1);
                }
            }
            queue.submit(Some(encoder.finish()));
            self.ctx.take_error("a resident step")?;
            return Ok(());
        };
        // With contacts, each step is: the step kernel (dynamics, collision,
        // the problem), the solver's dispatches over the problems in place,
        // the finish (velocity update, integration). On a GPU all steps go
        // in one submission; on a CPU adapter the solver's rounds read
        // back a count of unfinished problems (see GpuSolver::resident_rounds).
        let finish = self
            .kernel
            .finish
            .as_ref()
            .expect("a contact kernel has `finish`");
        let gpu = self.ctx.loop_limit.is_none();
        let mut encoder = Some(encoder);
        for r in 0..repeats {
            let enc = encoder.get_or_insert_with(|| {
                self.ctx
                    .device
                    .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                        label: Some("resident step"),
                    })
            });
            if r + 1 == repeats {
                self.encode_start(enc);
            }
            let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("resident step with contacts"),
                timestamp_writes: None,
            });
            pass.set_pipeline(&self.kernel.step);
            pass.set_bind_group(0, &self.bind_group, &[]);
            pass.set_bind_group(1, contact_group, &[]);
            pass.dispatch_workgroups(groups, 1, 1);
            stage.solver.encode_resident(&mut pass, n, stage.dispatches);
            if !gpu {
                // A CPU adapter runs the work inside the submission and the
                // rounds' waits: the device's time, not the host's.
                drop(pass);
                let device_time = Instant::now();
                queue.submit(encoder.take().map(|e| e.finish()));
                stage.solver.resident_rounds(n)?;
                self.waited += device_time.elapsed();
                let enc = encoder.insert(self.ctx.device.create_command_encoder(
                    &wgpu::CommandEncoderDescriptor {
                        label: Some("resident finish"),
                    },
                ));
                pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: Some("resident finish"),
                    timestamp_writes: None,
                });
            }
            pass.set_pipeline(finish);
            pass.set_bind_group(0, &self.bind_group, &[]);
            pass.set_bind_group(1, contact_group, &[]);
            pass.dispatch_workgroups(groups, 1, 1);
            drop(pass);
            if !gpu || r + 1 == repeats {
                let device_time = Instant::now();
                queue.submit(encoder.take().map(|e| e.finish()));
                if !gpu {
                    self.waited += device_time.elapsed();
                }
            }
        }
        if let Some((stage, _)) = self.contacts.as_mut() {
            stage.stepped(active);
        }
        self.ctx.take_error("a resident step")?;
        Ok(())
    }
}
