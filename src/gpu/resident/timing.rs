//! The resident step's time per stage, when asked for
//! ([`ResidentBatch::set_stage_timing`]): each step's stages — the step
//! kernel (actuators, dynamics, the joint-limit rows, collision and the
//! contact problem's assembly), the contact solve's dispatches, the finish
//! (velocity update, integration) — go in passes of their own, each
//! submitted alone and waited for, and are timed twice: by the device's
//! timestamp queries where the adapter has them (the passes' beginning and
//! end), and by the host's clock from each stage's submission to its
//! completion (the stated fallback, submission and wait included). On an
//! adapter with a loop limit (lavapipe), the solve's later rounds are
//! submissions of their own, timed by the host's clock in both.
//!
//! Timing costs a submission and a wait per stage and step: the numbers
//! say where a step's device time goes, not how fast steps run when
//! pipelined (`moreau bench` measures that first, then times a few steps
//! this way).

use super::{ResidentBatch, ResidentError, WORKGROUP};
use crate::counters::{ResidentStageTimes, ResidentStages};
use crate::gpu::{GpuContext, GpuError};
use std::time::{Duration, Instant};

/// Timestamps of one timed step: a beginning and an end per stage.
const STAMPS: u32 = 6;

/// The query set and buffers of the timestamps, and what they measured.
pub(super) struct StageTimer {
    stamps: Option<(wgpu::QuerySet, wgpu::Buffer, wgpu::Buffer)>,
    pub(super) times: ResidentStageTimes,
}

impl StageTimer {
    pub(super) fn new(ctx: &GpuContext) -> Self {
        let device = &ctx.device;
        let buffer = |label, usage| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: 8 * STAMPS as u64,
                usage,
                mapped_at_creation: false,
            })
        };
        let stamps = ctx.timestamps.then(|| {
            (
                device.create_query_set(&wgpu::QuerySetDescriptor {
                    label: Some("resident stage timestamps"),
                    ty: wgpu::QueryType::Timestamp,
                    count: STAMPS,
                }),
                buffer(
                    "resident stage timestamps resolve",
                    wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
                ),
                buffer(
                    "resident stage timestamps readback",
                    wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                ),
            )
        });
        StageTimer {
            times: ResidentStageTimes {
                device_measured: stamps.is_some(),
                ..Default::default()
            },
            stamps,
        }
    }
}

/// Submits `encoder` and waits for it: the host's time from submission to
/// completion.
fn submit_and_wait(
    ctx: &GpuContext,
    encoder: wgpu::CommandEncoder,
) -> Result<Duration, ResidentError> {
    let t = Instant::now();
    let index = ctx.queue.submit(Some(encoder.finish()));
    ctx.device
        .poll(wgpu::PollType::Wait {
            submission_index: Some(index),
            timeout: None,
        })
        .map_err(|e| GpuError::Gpu {
            during: "waiting for a timed resident stage".into(),
            reason: e.to_string(),
        })?;
    Ok(t.elapsed())
}

impl ResidentBatch {
    /// Times the resident step's stages from the next step on (`true`), or
    /// stops (`false`, the default): see the module's documentation. The
    /// times gather until [`Self::reset_stage_times`].
    pub fn set_stage_timing(&mut self, on: bool) {
        if on && self.timer.is_none() {
            self.timer = Some(StageTimer::new(&self.ctx));
        } else if !on {
            self.timer = None;
        }
    }

    /// What the stage timing measured since it was switched on or reset
    /// (`None`: it is off).
    pub fn stage_times(&self) -> Option<ResidentStageTimes> {
        self.timer.as_ref().map(|t| t.times)
    }

    pub fn reset_stage_times(&mut self) {
        if let Some(t) = self.timer.as_mut() {
            t.times = ResidentStageTimes {
                device_measured: t.stamps.is_some(),
                ..Default::default()
            };
        }
    }

    /// One step of every world (its inputs written), its stages timed.
    pub(super) fn timed_step(&mut self, clear_flags: bool) -> Result<(), ResidentError> {
        let ctx = self.ctx.clone();
        let n = self.nworlds;
        let groups = (n as u32).div_ceil(WORKGROUP);
        let timer = self.timer.as_mut().expect("timing is on");
        let set = timer.stamps.as_ref().map(|(set, _, _)| set);
        let writes = |k: u32| {
            set.map(|set| wgpu::ComputePassTimestampWrites {
                query_set: set,
                beginning_of_pass_write_index: Some(2 * k),
                end_of_pass_write_index: Some(2 * k + 1),
            })
        };
        let encoder = |label| {
            ctx.device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some(label) })
        };
        let mut host = ResidentStages::default();
        let contacts = self.contacts.as_ref();
        // The step kernel.
        let mut enc = encoder("timed resident step");
        if clear_flags {
            enc.clear_buffer(&self.b.flags, 0, None);
        }
        {
            let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("resident step (timed)"),
                timestamp_writes: writes(0),
            });
            pass.set_pipeline(&self.kernel.step);
            pass.set_bind_group(0, &self.bind_group, &[]);
            if let Some((_, group)) = contacts {
                pass.set_bind_group(1, group, &[]);
            }
            pass.dispatch_workgroups(groups, 1, 1);
        }
        host.step = submit_and_wait(&ctx, enc)?;
        let mut stages = 1;
        if let Some((stage, group)) = contacts {
            // The solve: its dispatches, then (loop-limited adapters) its
            // rounds.
            let mut enc = encoder("timed resident solve");
            {
                let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: Some("resident solve (timed)"),
                    timestamp_writes: writes(1),
                });
                stage.solver.encode_resident(&mut pass, n, stage.dispatches);
            }
            host.solve = submit_and_wait(&ctx, enc)?;
            let t = Instant::now();
            let rounds = stage.solver.resident_rounds(n)?;
            let rounds_time = t.elapsed();
            host.solve += rounds_time;
            self.waited += host.solve;
            // The finish.
            let mut enc = encoder("timed resident finish");
            {
                let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: Some("resident finish (timed)"),
                    timestamp_writes: writes(2),
                });
                pass.set_pipeline(
                    self.kernel
                        .finish
                        .as_ref()
                        .expect("a contact kernel has `finish`"),
                );
                pass.set_bind_group(0, &self.bind_group, &[]);
                pass.set_bind_group(1, group, &[]);
                pass.dispatch_workgroups(groups, 1, 1);
            }
            host.finish = submit_and_wait(&ctx, enc)?;
            stages = 3;
            timer.times.solve_rounds += rounds;
            timer.times.device.solve += if rounds > 0 {
                rounds_time
            } else {
                Duration::ZERO
            };
        }
        self.waited += host.step + host.finish;
        if let Some((set, resolve, readback)) = timer.stamps.as_ref() {
            let mut enc = encoder("resident stage timestamps");
            enc.resolve_query_set(set, 0..2 * stages, resolve, 0);
            enc.copy_buffer_to_buffer(resolve, 0, readback, 0, 16 * stages as u64);
            let index = ctx.queue.submit(Some(enc.finish()));
            let period = ctx.timestamp_period_ns;
            let spans = crate::gpu::with_mapped(
                &ctx.device,
                readback,
                index,
                "reading the resident stage timestamps",
                |bytes| {
                    let tick =
                        |i: usize| u64::from_le_bytes(bytes[8 * i..8 * i + 8].try_into().unwrap());
                    (0..stages as usize)
                        .map(|k| {
                            let ns = tick(2 * k + 1).saturating_sub(tick(2 * k)) as f64 * period;
                            Duration::from_nanos(ns as u64)
                        })
                        .collect::<Vec<_>>()
                },
            )?;
            let d = &mut timer.times.device;
            d.step += spans[0];
            if stages == 3 {
                d.solve += spans[1];
                d.finish += spans[2];
            }
        }
        timer.times.host.accumulate(&host);
        timer.times.steps += 1;
        ctx.take_error("a timed resident step")?;
        Ok(())
    }
}
