//! Resident batches larger than one binding holds (issue 74): the worlds
//! split into chunks of consecutive worlds, each a [`ResidentBatch`] with
//! its own buffers, all of them built from one kernel and stepped in turn
//! on the same queue.
//!
//! A device binds at most `max_storage_buffer_binding_size` bytes of a
//! buffer (2 GiB on NVIDIA's Vulkan driver, 128 MiB by wgpu's default
//! limits) and dispatches at most `max_compute_workgroups_per_dimension`
//! workgroups. Every per-world buffer grows with the batch: 65 536 of
//! Gymnasium's ants need 3.7 GB of contact scratch. A batch over a limit
//! was refused, or left the device for the host-prepared path. Here the
//! largest chunk that fits is found from the limits
//! ([`check_capacity`]: the same checks a batch's construction makes,
//! before any kernel is built), and a batch of `N` worlds becomes
//! `⌈N / chunk⌉` batches of at most `chunk` worlds. `max_chunk` (the
//! `gpu_chunk_worlds` batch option) asks for smaller chunks.
//!
//! Every chunk's kernel is the same (the contact room counted over all the
//! worlds' initial states, as one batch counts it), so that a world steps
//! bit for bit as it would in one batch: each invocation reads and writes
//! its own world's columns only (`tests/resident_chunks.rs` checks it on
//! worlds with contacts and joint stops, with inputs, masks, resets and
//! per-world parameters, against one batch).

use super::buffers::{Columns, kernel};
use super::contacts::{ContactSizes, device_pairs, initial_moving_contacts};
use super::records::{STORAGE_BUFFERS, lcp_floats, limit_rows};
use super::{DeviceTaskSpec, ResidentBatch, ResidentError, WORKGROUP, unsupported};
use crate::counters::ResidentStageTimes;
use crate::gpu::GpuContext;
use crate::model::Model;
use crate::sim::{Actuation, SimParams, State, WorldContact};
use std::time::Duration;

/// Refuses a model the kernel cannot run and invalid parameters.
pub(super) fn check_model(model: &Model, params: &SimParams) -> Result<(), ResidentError> {
    if let Some(reason) = unsupported(model) {
        return Err(ResidentError::Unsupported {
            model: model.name.clone(),
            reason,
        });
    }
    params.validate()?;
    Ok(())
}

impl ResidentError {
    /// `DimensionMismatch` unless there is one initial state or one per world.
    pub(super) fn check_initial(got: usize, nworlds: usize) -> Result<(), Self> {
        if got == 1 || got == nworlds {
            return Ok(());
        }
        Err(Self::DimensionMismatch {
            what: "initial states",
            got,
            expected: nworlds,
        })
    }
}

/// The most contacts between moving shapes over the initial states: the
/// kernel's contact room grows from it.
pub(super) fn initial_moving(model: &Model, params: &SimParams, initial: &[State]) -> usize {
    let pairs = device_pairs(model).unwrap_or_default();
    initial_moving_contacts(model, &pairs, params.contact_margin, initial)
}

/// Whether `nworlds` worlds of `model` fit one batch on `ctx`'s device:
/// the workgroups of one dispatch, every per-world buffer under the
/// binding and buffer sizes, the readback, the storage buffers the kernel
/// binds. [`ResidentError::Capacity`] says by how much a limit is passed.
pub(super) fn check_capacity(
    ctx: &GpuContext,
    model: &Model,
    nworlds: usize,
    initial_moving: usize,
) -> Result<(), ResidentError> {
    let limits = &ctx.limits;
    let over = |what, needed: u64, limit: u64| {
        if needed > limit {
            Err(ResidentError::Capacity {
                nworlds,
                what,
                needed,
                limit,
            })
        } else {
            Ok(())
        }
    };
    let (nq, nv, nu) = (model.nq, model.nv, model.nu().max(1));
    let limit = limits
        .max_storage_buffer_binding_size
        .min(limits.max_buffer_size);
    let n = nworlds as u64;
    over(
        "workgroups in one dispatch",
        n.div_ceil(WORKGROUP as u64),
        limits.max_compute_workgroups_per_dimension as u64,
    )?;
    over(
        "bytes in one buffer",
        (nq.max(nv).max(nu) as u64).saturating_mul(n * 4),
        limit,
    )?;
    over(
        "bytes of joint-limit scratch (G and its factor per world)",
        (lcp_floats(model, nworlds) as u64).saturating_mul(4),
        limit,
    )?;
    let pairs = device_pairs(model).unwrap_or_default();
    // (The contact stage's group binds 8 more.)
    let needed = STORAGE_BUFFERS + if pairs.is_empty() { 0 } else { 8 };
    let storage_buffers = limits.max_storage_buffers_per_shader_stage;
    if storage_buffers < needed {
        return Err(ResidentError::Unsupported {
            model: model.name.clone(),
            reason: format!(
                "the kernel binds {needed} storage buffers, {} allows {storage_buffers}",
                ctx.adapter.name
            ),
        });
    }
    let extra = if pairs.is_empty() {
        0
    } else {
        ContactSizes::READBACK
    };
    over(
        "bytes in the readback buffer",
        ((nq + 2 * nv + 1 + extra) as u64).saturating_mul(n * 4),
        limits.max_buffer_size,
    )?;
    if !pairs.is_empty() {
        let sizes = ContactSizes::starting_with(&pairs, limit_rows(model).max(4), initial_moving);
        over(
            "bytes of contact scratch (M̃⁻¹Jᵀ, J, warm starts)",
            (sizes.scratch_floats(model.nv, model.nbodies) as u64).saturating_mul(n * 4),
            limit,
        )?;
    }
    Ok(())
}

/// The next chunk size to try after `per` worlds needed `needed` of a
/// limit of `limit`: the share that fits (the needs grow with the worlds),
/// strictly fewer worlds, at least one.
fn shrink(per: usize, needed: u64, limit: u64) -> usize {
    let fits = (per as u128 * limit as u128 / needed.max(1) as u128) as usize;
    fits.min(per - 1).max(1)
}

/// Worlds on the device in chunks (see the module doc). Its methods are
/// [`ResidentBatch`]'s over the whole batch, worlds numbered across chunks.
pub struct ResidentChunks {
    chunks: Vec<ResidentBatch>,
    /// Each chunk's first world, and the batch's size last.
    first: Vec<usize>,
}

impl ResidentChunks {
    /// `nworlds` worlds of `model` from `initial` (one state, or one per
    /// world), in chunks of at most `max_chunk` worlds (`None`: as many as
    /// the device's limits allow). Refused as [`ResidentBatch::new`]
    /// refuses, or with [`ResidentError::Capacity`] when one world does not
    /// fit.
    pub fn new(
        ctx: &GpuContext,
        model: &Model,
        params: &SimParams,
        initial: &[State],
        nworlds: usize,
        max_chunk: Option<usize>,
    ) -> Result<Self, ResidentError> {
        check_model(model, params)?;
        if nworlds == 0 {
            return Err(ResidentError::Unsupported {
                model: model.name.clone(),
                reason: "a batch of 0 worlds".into(),
            });
        }
        ResidentError::check_initial(initial.len(), nworlds)?;
        for (w, s) in initial.iter().enumerate() {
            crate::sim::check_state(model, s).map_err(|e| ResidentError::Unsupported {
                model: model.name.clone(),
                reason: format!("initial state of world {w}: {e}"),
            })?;
        }
        let moving = initial_moving(model, params, initial);
        let mut per = max_chunk.unwrap_or(nworlds).clamp(1, nworlds.max(1));
        loop {
            match check_capacity(ctx, model, per, moving) {
                Ok(()) => break,
                Err(ResidentError::Capacity { needed, limit, .. }) if per > 1 => {
                    per = shrink(per, needed, limit)
                }
                Err(e) => return Err(e),
            }
        }
        // As many chunks as that size needs, of even sizes.
        per = nworlds.div_ceil(nworlds.div_ceil(per).max(1)).max(1);
        let built = kernel(ctx, model, false, moving)?;
        'sizes: loop {
            let mut chunks = Vec::with_capacity(nworlds.div_ceil(per));
            let mut first = Vec::with_capacity(chunks.capacity() + 1);
            for start in (0..nworlds).step_by(per) {
                let n = per.min(nworlds - start);
                let part = if initial.len() == 1 {
                    initial
                } else {
                    &initial[start..start + n]
                };
                match ResidentBatch::assemble(
                    ctx,
                    model,
                    params,
                    part,
                    n,
                    false,
                    moving,
                    built.clone(),
                ) {
                    Ok(b) => chunks.push(b),
                    // The contact solver's own limits (checked as it is made).
                    Err(ResidentError::Capacity { needed, limit, .. }) if per > 1 => {
                        per = shrink(per, needed, limit);
                        per = nworlds.div_ceil(nworlds.div_ceil(per));
                        continue 'sizes;
                    }
                    Err(e) => return Err(e),
                }
                first.push(start);
            }
            first.push(nworlds);
            return Ok(ResidentChunks { chunks, first });
        }
    }

    /// The chunks' sizes, in order.
    pub fn chunk_sizes(&self) -> Vec<usize> {
        self.first.windows(2).map(|w| w[1] - w[0]).collect()
    }
    pub fn nworlds(&self) -> usize {
        *self.first.last().unwrap_or(&0)
    }
    /// The chunks with their first worlds.
    fn parts(&mut self) -> impl Iterator<Item = (usize, &mut ResidentBatch)> {
        self.first.iter().copied().zip(self.chunks.iter_mut())
    }
    /// World `w`'s chunk and index there.
    fn locate(&self, w: usize) -> Result<(usize, usize), ResidentError> {
        ResidentError::check_world(w, self.nworlds())?;
        let c = self.first.partition_point(|&f| f <= w) - 1;
        Ok((c, w - self.first[c]))
    }
    pub fn params(&self) -> &SimParams {
        self.chunks[0].params()
    }
    pub fn context(&self) -> &GpuContext {
        self.chunks[0].context()
    }
    /// [`ResidentBatch::waited`], all chunks together.
    pub fn waited(&self) -> Duration {
        self.chunks.iter().map(|c| c.waited()).sum()
    }
    /// [`ResidentBatch::device_bytes`], all chunks together.
    pub fn device_bytes(&self) -> u64 {
        self.chunks.iter().map(|c| c.device_bytes()).sum()
    }
    /// [`ResidentBatch::set_stage_timing`] on every chunk.
    pub fn set_stage_timing(&mut self, on: bool) {
        self.chunks.iter_mut().for_each(|c| c.set_stage_timing(on));
    }
    /// The chunks' stage times added (a step of the batch steps each
    /// chunk: the steps are counted once).
    pub fn stage_times(&self) -> Option<ResidentStageTimes> {
        let mut parts = self.chunks.iter().map(|c| c.stage_times());
        let mut total = parts.next()??;
        for t in parts {
            let t = t?;
            total.device.accumulate(&t.device);
            total.host.accumulate(&t.host);
            total.solve_rounds += t.solve_rounds;
            total.device_measured &= t.device_measured;
        }
        Some(total)
    }
    /// [`ResidentBatch::set_world`] on world `w`'s chunk.
    pub fn set_world(
        &mut self,
        w: usize,
        model: &Model,
        params: &SimParams,
    ) -> Result<(), ResidentError> {
        let (c, l) = self.locate(w)?;
        self.chunks[c].set_world(l, model, params)
    }
    /// [`ResidentBatch::set_states_by`] on the chunks that hold a world of
    /// `fresh` (each chunk's states all uploaded, as one batch's are).
    pub fn set_states_by<'a>(
        &mut self,
        state: impl Fn(usize) -> &'a State,
        fresh: &[usize],
    ) -> Result<(), ResidentError> {
        for &w in fresh {
            self.locate(w)?;
        }
        let mut local = Vec::new();
        for (start, chunk) in self.parts() {
            let end = start + chunk.nworlds();
            local.clear();
            local.extend(
                fresh
                    .iter()
                    .filter(|&&w| (start..end).contains(&w))
                    .map(|&w| w - start),
            );
            if !local.is_empty() {
                chunk
                    .set_states_by(|l| state(start + l), &local)
                    .map_err(|e| chunk_error(e, start))?;
            }
        }
        Ok(())
    }
    /// [`ResidentBatch::keep_last_start`] on every chunk (on failure, the
    /// chunks already switched are switched back).
    pub fn keep_last_start(&mut self, on: bool) -> Result<(), ResidentError> {
        for k in 0..self.chunks.len() {
            if let Err(e) = self.chunks[k].keep_last_start(on) {
                for c in &mut self.chunks[..k] {
                    // (Switching back frees or regrows what was there.)
                    let _ = c.keep_last_start(!on);
                }
                return Err(e);
            }
        }
        Ok(())
    }
    /// [`ResidentBatch::clear_flags`] on every chunk.
    pub fn clear_flags(&mut self) {
        self.chunks.iter_mut().for_each(|c| c.clear_flags());
    }
    /// [`ResidentBatch::step_checked`]: each chunk's rows of the inputs and
    /// of `active`, all chunks submitted before any is read.
    pub(crate) fn step_checked(
        &mut self,
        input: Actuation<'_>,
        active: Option<&[bool]>,
        repeats: usize,
    ) -> Result<(), ResidentError> {
        let n = self.nworlds();
        let (x, controls) = match input {
            Actuation::Torques(x) => (x, false),
            Actuation::Controls(x) => (x, true),
        };
        let width = x.len() / n.max(1);
        for (ends, chunk) in self.first.windows(2).zip(self.chunks.iter_mut()) {
            let (a, b) = (ends[0], ends[1]);
            let rows = &x[a * width..b * width];
            let input = if controls {
                Actuation::Controls(rows)
            } else {
                Actuation::Torques(rows)
            };
            chunk
                .step_checked(input, active.map(|m| &m[a..b]), repeats)
                .map_err(|e| chunk_error(e, a))?;
        }
        Ok(())
    }
    /// [`ResidentBatch::read_columns`] of each chunk in turn, `read` given
    /// the chunk's first world and its columns (indexed within the chunk).
    pub fn read_columns(
        &mut self,
        mut read: impl FnMut(usize, &Columns<'_>),
    ) -> Result<(), ResidentError> {
        for (start, chunk) in self.parts() {
            chunk
                .read_columns(|c| read(start, c))
                .map_err(|e| chunk_error(e, start))?;
        }
        Ok(())
    }
    /// [`ResidentBatch::attach_task`] on every chunk, each keying its
    /// worlds' streams by their indices in the batch.
    pub fn attach_task(&mut self, spec: &DeviceTaskSpec) -> Result<(), ResidentError> {
        for (start, chunk) in self.parts() {
            chunk
                .attach_task(spec.clone(), start)
                .map_err(|e| chunk_error(e, start))?;
        }
        Ok(())
    }
    /// [`ResidentBatch::task_reset`] on each chunk's worlds (nworlds each).
    pub fn task_reset(
        &mut self,
        which: &[bool],
        seeds: &[u64],
        episodes: &[u32],
    ) -> Result<(), ResidentError> {
        let n = self.nworlds();
        ResidentError::check_len("which", which.len(), n)?;
        ResidentError::check_len("seeds", seeds.len(), n)?;
        ResidentError::check_len("episodes", episodes.len(), n)?;
        for (ends, chunk) in self.first.windows(2).zip(self.chunks.iter_mut()) {
            let (a, b) = (ends[0], ends[1]);
            chunk
                .task_reset(&which[a..b], &seeds[a..b], &episodes[a..b])
                .map_err(|e| chunk_error(e, a))?;
        }
        Ok(())
    }
    /// [`ResidentBatch::task_evaluate`] of each chunk in turn, `read`
    /// given the chunk's first world and its rows.
    pub fn task_evaluate(
        &mut self,
        fresh: &[bool],
        action_sq: &[f64],
        mut read: impl FnMut(usize, &[f32]),
    ) -> Result<(), ResidentError> {
        let n = self.nworlds();
        ResidentError::check_len("fresh", fresh.len(), n)?;
        ResidentError::check_len("action_sq", action_sq.len(), n)?;
        for (ends, chunk) in self.first.windows(2).zip(self.chunks.iter_mut()) {
            let (a, b) = (ends[0], ends[1]);
            chunk
                .task_evaluate(&fresh[a..b], &action_sq[a..b], |rows| read(a, rows))
                .map_err(|e| chunk_error(e, a))?;
        }
        Ok(())
    }
    /// Every world's `q` and `v` (read back, waiting for the submitted
    /// steps) and the worlds flagged because their state became non-finite.
    pub fn states(&mut self) -> Result<(Vec<State>, Vec<usize>), ResidentError> {
        let (mut states, mut flagged) = (Vec::new(), Vec::new());
        for (start, chunk) in self.parts() {
            let (s, f) = chunk.states()?;
            states.extend(s);
            flagged.extend(f.into_iter().map(|w| start + w));
        }
        Ok((states, flagged))
    }
    /// Every world's contacts of its last step ([`ResidentBatch::read_contacts`]).
    pub fn read_contacts(&self) -> Result<Vec<Vec<WorldContact>>, ResidentError> {
        let mut out = Vec::with_capacity(self.nworlds());
        for chunk in &self.chunks {
            out.extend(chunk.read_contacts()?);
        }
        Ok(out)
    }
}

/// A chunk's error with its worlds numbered in the batch.
fn chunk_error(e: ResidentError, start: usize) -> ResidentError {
    match e {
        ResidentError::NoSuchWorld { world, nworlds } => ResidentError::NoSuchWorld {
            world: start + world,
            nworlds,
        },
        ResidentError::NonFinite {
            what,
            world,
            index,
            value,
        } => ResidentError::NonFinite {
            what,
            world: start + world,
            index,
            value,
        },
        e => e,
    }
}

#[cfg(test)]
mod tests {
    use super::shrink;

    #[test]
    fn a_chunk_shrinks_to_the_share_that_fits_and_at_least_by_one() {
        assert_eq!(shrink(65_536, 4_000, 2_000), 32_768);
        assert_eq!(shrink(100, 101, 100), 99);
        assert_eq!(shrink(2, 1_000, 1), 1);
        assert_eq!(shrink(10, 0, 5), 9);
    }
}
