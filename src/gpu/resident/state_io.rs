//! The state in and out of a resident batch: setting worlds' states
//! (one, or all at once), reading the state, the stage probe and the
//! contacts back.

use super::contacts::{self, ContactSizes};
use super::{Columns, ResidentBatch, ResidentError, StageOutputs, stage_width, world_minor};
use crate::gpu::{GpuError, with_mapped};
use crate::sim::State;
use std::time::Instant;

impl ResidentBatch {
    /// Sets world `w`'s state (validated) and clears its flag; the next
    /// step starts from it.
    pub fn set_state(&mut self, w: usize, state: &State) -> Result<(), ResidentError> {
        ResidentError::check_world(w, self.nworlds)?;
        crate::sim::check_state(&self.model, state)?;
        let (n, queue) = (self.nworlds as u64, &self.ctx.queue);
        let write = |buffer: &wgpu::Buffer, t: usize, x: f32| {
            queue.write_buffer(
                buffer,
                (t as u64 * n + w as u64) * 4,
                bytemuck::bytes_of(&x),
            );
        };
        for (t, &x) in state.q.iter().enumerate() {
            write(&self.b.q, t, x as f32);
        }
        for (t, &x) in state.v.iter().enumerate() {
            write(&self.b.v, t, x as f32);
        }
        queue.write_buffer(&self.b.flags, w as u64 * 4, bytemuck::bytes_of(&0u32));
        if let Some((stage, _)) = self.contacts.as_mut() {
            // The next step starts without warm starts (a teleported world).
            stage.reset_warm_starts(queue, &[w], &self.model);
        }
        Ok(())
    }

    /// Sets every world's state at once (each validated first; nothing
    /// changes on a refusal), clears every world's flag, and starts the
    /// worlds in `fresh` without warm starts: two uploads of the whole `q`
    /// and `v` instead of one small write per element and world (4 096
    /// ants: 198 ms through [`Self::set_state`], lavapipe, 2026-11-26).
    pub fn set_states(&mut self, states: &[State], fresh: &[usize]) -> Result<(), ResidentError> {
        ResidentError::check_len("states", states.len(), self.nworlds)?;
        self.set_states_by(|w| &states[w], fresh)
    }

    /// [`Self::set_states`] with world `w`'s state `state(w)`.
    pub fn set_states_by<'a>(
        &mut self,
        state: impl Fn(usize) -> &'a State,
        fresh: &[usize],
    ) -> Result<(), ResidentError> {
        let n = self.nworlds;
        if let Some(&w) = fresh.iter().find(|&&w| w >= n) {
            return Err(ResidentError::NoSuchWorld {
                world: w,
                nworlds: n,
            });
        }
        for w in 0..n {
            crate::sim::check_state(&self.model, state(w)).map_err(|e| {
                ResidentError::Unsupported {
                    model: self.model.name.clone(),
                    reason: format!("state of world {w}: {e}"),
                }
            })?;
        }
        let (nq, nv) = (self.model.nq, self.model.nv);
        let mut flat = Vec::with_capacity(n * nq.max(nv));
        let queue = &self.ctx.queue;
        for (width, buffer, pick) in [
            (
                nq,
                &self.b.q,
                (|s: &State| s.q.as_slice()) as fn(&State) -> &[f64],
            ),
            (nv, &self.b.v, |s: &State| s.v.as_slice()),
        ] {
            flat.clear();
            for w in 0..n {
                flat.extend_from_slice(pick(state(w)));
            }
            world_minor(&flat, n, width, |_| true, &mut self.staging);
            queue.write_buffer(buffer, 0, bytemuck::cast_slice(&self.staging));
        }
        self.clear_flags = true;
        if let Some((stage, _)) = self.contacts.as_mut() {
            stage.reset_warm_starts(queue, fresh, &self.model);
        }
        Ok(())
    }

    /// Reads every world's `q` and `v` back into `states` (nworlds, their
    /// sizes the model's; times untouched), waiting for the submitted
    /// steps, and returns the worlds whose last step was refused because
    /// their state would have become non-finite (their state is the last
    /// finite one).
    pub fn read_states(&mut self, states: &mut [State]) -> Result<Vec<usize>, ResidentError> {
        let n = self.nworlds;
        ResidentError::check_len("states", states.len(), n)?;
        let mut flagged = Vec::new();
        self.read_raw(|w, q, v, _, flag| {
            states[w].q.iter_mut().zip(q).for_each(|(x, y)| *x = y);
            states[w].v.iter_mut().zip(v).for_each(|(x, y)| *x = y);
            if flag {
                flagged.push(w);
            }
        })?;
        Ok(flagged)
    }

    /// Reads the state back (waiting for the submitted steps) and calls
    /// `each(world, q, v, qfrc, flagged)` for every world in order, `q`,
    /// `v` and the last step's generalized constraint forces `qfrc` (the
    /// joint stops' `Sᵀλ/dt`) widened to f64.
    pub fn read_raw(
        &mut self,
        mut each: impl FnMut(
            usize,
            &mut dyn Iterator<Item = f64>,
            &mut dyn Iterator<Item = f64>,
            &mut dyn Iterator<Item = f64>,
            bool,
        ),
    ) -> Result<(), ResidentError> {
        let (nq, nv) = (self.model.nq, self.model.nv);
        self.read_columns(|c| {
            for w in 0..c.nworlds() {
                let mut qw = (0..nq).map(|t| c.q(w, t));
                let mut vw = (0..nv).map(|t| c.v(w, t));
                let mut fw = (0..nv).map(|t| c.qfrc(w, t));
                each(w, &mut qw, &mut vw, &mut fw, c.flagged(w));
            }
        })
    }

    /// Reads the state back (waiting for the submitted steps) and hands
    /// `read` the mapped columns, which it may read from many threads.
    pub fn read_columns<R>(
        &mut self,
        read: impl FnOnce(&Columns<'_>) -> R,
    ) -> Result<R, ResidentError> {
        let (n, nq, nv) = (self.nworlds, self.model.nq, self.model.nv);
        let (device, queue) = (&self.ctx.device, &self.ctx.queue);
        let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("resident readback"),
        });
        let (bq, bv) = ((n * nq * 4) as u64, (n * nv * 4) as u64);
        encoder.copy_buffer_to_buffer(&self.b.q, 0, &self.readback, 0, bq);
        encoder.copy_buffer_to_buffer(&self.b.v, 0, &self.readback, bq, bv);
        encoder.copy_buffer_to_buffer(&self.b.qfrc, 0, &self.readback, bq + bv, bv);
        encoder.copy_buffer_to_buffer(
            &self.b.flags,
            0,
            &self.readback,
            bq + 2 * bv,
            (n * 4) as u64,
        );
        if let Some((stage, _)) = &self.contacts {
            // The counts and the solve's statistics lead the scratch.
            encoder.copy_buffer_to_buffer(
                &stage.cwork,
                0,
                &self.readback,
                bq + 2 * bv + (n * 4) as u64,
                (n * ContactSizes::READBACK * 4) as u64,
            );
            // The contacts dropped are summed over the steps since this
            // readback: cleared once copied.
            let dropped = ContactSizes::DROPPED;
            encoder.clear_buffer(&stage.cwork, (dropped * n * 4) as u64, Some((n * 4) as u64));
        }
        // The last step's start, after all that.
        let solves_len = if self.contacts.is_some() {
            n * ContactSizes::READBACK
        } else {
            0
        };
        if let Some((sq, sv)) = &self.start {
            let at = bq + 2 * bv + ((n + solves_len) * 4) as u64;
            encoder.copy_buffer_to_buffer(sq, 0, &self.readback, at, bq);
            encoder.copy_buffer_to_buffer(sv, 0, &self.readback, at + bq, bv);
        }
        // The wait for the device starts at this submission: a software
        // adapter (lavapipe) runs the queued steps inside it.
        let kept = self.start.is_some();
        let wait = Instant::now();
        let index = queue.submit(Some(encoder.finish()));
        let mut waited = None;
        let mut out = None;
        with_mapped(
            device,
            &self.readback,
            index,
            "reading resident state",
            |bytes| {
                waited.get_or_insert(wait.elapsed());
                let words: &[f32] = bytemuck::cast_slice(bytes);
                let (q, rest) = words.split_at(n * nq);
                let (v, rest) = rest.split_at(n * nv);
                let (qfrc, rest) = rest.split_at(n * nv);
                let (flags, rest) = rest.split_at(n);
                let (solves, rest) = rest.split_at(solves_len);
                let start = kept.then(|| rest.split_at(n * nq));
                out = Some(read(&Columns {
                    n,
                    q,
                    v,
                    qfrc,
                    flags,
                    solves,
                    start,
                }));
            },
        )?;
        self.waited += waited.unwrap_or_default();
        self.ctx.take_error("reading resident state")?;
        out.ok_or_else(|| {
            ResidentError::Gpu(GpuError::Gpu {
                during: "reading resident state".into(),
                reason: "the readback buffer was not mapped".into(),
            })
        })
    }

    /// Each world's stage outputs of the last step (a batch made by
    /// [`Self::with_stage_probe`]; waits for the submitted steps).
    pub fn read_stages(&self) -> Result<Vec<StageOutputs>, ResidentError> {
        let (n, nb, nv) = (self.nworlds, self.model.nbodies, self.model.nv);
        let width = stage_width(&self.model);
        if self.step_params.probe[0] == 0 {
            return Err(ResidentError::Unsupported {
                model: self.model.name.clone(),
                reason: "the batch was not made with_stage_probe".into(),
            });
        }
        let (device, queue) = (&self.ctx.device, &self.ctx.queue);
        let bytes = (n * width * 4) as u64;
        let readback = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("resident stage readback"),
            size: bytes,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("resident stage readback"),
        });
        encoder.copy_buffer_to_buffer(&self.b.stages, 0, &readback, 0, bytes);
        let index = queue.submit(Some(encoder.finish()));
        let out = with_mapped(device, &readback, index, "reading resident stages", |b| {
            let x: &[f32] = bytemuck::cast_slice(b);
            let at = |w: usize, t: usize| x[t * n + w] as f64;
            (0..n)
                .map(|w| StageOutputs {
                    body_rotation: (0..nb)
                        .map(|i| crate::math::Mat3::from_fn(|r, c| at(w, 12 * i + 3 * c + r)))
                        .collect(),
                    body_position: (0..nb)
                        .map(|i| crate::math::Vec3::from_fn(|r, _| at(w, 12 * i + 9 + r)))
                        .collect(),
                    v_free: nalgebra::DVector::from_fn(nv, |k, _| at(w, 12 * nb + k)),
                    tau: nalgebra::DVector::from_fn(nv, |k, _| at(w, 12 * nb + nv + k)),
                })
                .collect()
        })?;
        self.ctx.take_error("reading resident stages")?;
        Ok(out)
    }

    /// Every world's contacts of its last step (waits for the submitted
    /// steps): empty lists for a model without contacts.
    pub fn read_contacts(&self) -> Result<Vec<Vec<crate::sim::WorldContact>>, ResidentError> {
        match &self.contacts {
            Some((stage, _)) => stage.read_contacts(&self.ctx, self.nworlds, &self.model),
            None => Ok(vec![Vec::new(); self.nworlds]),
        }
    }

    /// Every world's contact problem of its last step as the solver read
    /// it (waits for the submitted steps): none for a model without
    /// contacts.
    pub fn read_problems(&self) -> Result<Vec<contacts::DeviceProblem>, ResidentError> {
        match &self.contacts {
            Some((stage, _)) => stage.read_problems(&self.ctx, self.nworlds),
            None => Ok(Vec::new()),
        }
    }

    /// Every world's state, read back (waits for the submitted steps), and
    /// the worlds flagged because their state became non-finite.
    pub fn states(&mut self) -> Result<(Vec<State>, Vec<usize>), ResidentError> {
        let (nq, nv) = (self.model.nq, self.model.nv);
        let mut states = vec![
            State::new(nalgebra::DVector::zeros(nq), nalgebra::DVector::zeros(nv));
            self.nworlds
        ];
        let flagged = self.read_states(&mut states)?;
        Ok((states, flagged))
    }
}
