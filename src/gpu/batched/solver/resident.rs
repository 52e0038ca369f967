//! The [`GpuSolver`] of a resident batch: the problems the step kernel
//! writes into the solver's own buffers, solved in place (no upload, no
//! readback of the problems).

use super::{AdapterClass, BatchShape, Decomposition, FIRST_ROUND, GpuSolver, grid_of};
use crate::contact::SolverSettings;
use crate::gpu::GpuError;

impl GpuSolver {
    /// Sets the solver up to solve, in place, the `nworlds` problems a
    /// resident batch writes into its buffers (problem `w` is world `w`,
    /// interleaved: every array's element `t` at `w + t·nworlds`), with at
    /// most `max_contacts` contacts and `max_rows` rows each: writes the
    /// kernel parameters (one chunk per dispatch, as [`Self::submit`]
    /// sizes it). Returns the dispatches a step encodes after the
    /// problems are written: on a GPU, as many as the solve can need
    /// (`BatchKernel::dispatches_to_finish`: one for small problems; those
    /// after the last problem finishes return at once), since no readback
    /// comes between them; on a CPU adapter, whose driver cuts long loops,
    /// the first round of [`Self::resident_rounds`].
    pub(crate) fn prepare_resident(
        &mut self,
        nworlds: usize,
        settings: &SolverSettings,
        max_contacts: usize,
        max_rows: usize,
    ) -> Result<u32, GpuError> {
        settings.validate()?;
        if self.decomposition != Decomposition::Invocation {
            return Err(GpuError::Gpu {
                during: "preparing a resident solve".into(),
                reason: "only the one-invocation-per-problem decomposition solves in place".into(),
            });
        }
        let shape = BatchShape {
            max_contacts,
            max_rows,
            max_local_updates: max_rows,
            max_iterations: settings.max_iterations as u64,
        };
        let chunk = self.chunk(shape, settings);
        let params = crate::gpu::GpuParams {
            num_problems: nworlds as u32,
            chunk,
            ..self.kernel.params(self.model, settings)
        };
        self.ctx
            .queue
            .write_buffer(&self.buffers.params, 0, bytemuck::bytes_of(&params));
        self.resident_max_dispatches = self.kernel.max_dispatches(shape, chunk);
        Ok(match self.adapter_class() {
            AdapterClass::Gpu => {
                let n = self.kernel.dispatches_to_finish(shape, chunk);
                u32::try_from(n).map_err(|_| GpuError::Gpu {
                    during: "preparing a resident solve".into(),
                    reason: format!(
                        "problems of {max_rows} rows at {} iterations could need {n} dispatches a step",
                        settings.max_iterations
                    ),
                })?
            }
            AdapterClass::Cpu => FIRST_ROUND,
        })
    }

    /// The buffers a resident batch writes its problems into: problems,
    /// delassus, contacts (blocks), lambda, results.
    pub(crate) fn resident_buffers(&self) -> [&wgpu::Buffer; 5] {
        let b = &self.buffers;
        [&b.problems, &b.delassus, &b.contacts, &b.lambda, &b.results]
    }

    /// Encodes `dispatches` dispatches of the kernel over `nworlds` problems.
    pub(crate) fn encode_resident(
        &self,
        pass: &mut wgpu::ComputePass<'_>,
        nworlds: usize,
        dispatches: u32,
    ) {
        let per = self.kernel.problems_per_workgroup(self.decomposition);
        let groups = (nworlds as u64).div_ceil(per.max(1) as u64);
        let grid = grid_of(groups, self.ctx.limits.max_compute_workgroups_per_dimension);
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, &self.bind_group, &[]);
        for _ in 0..dispatches {
            pass.dispatch_workgroups(grid.0, grid.1, 1);
        }
    }

    /// On a CPU adapter, after the first round: one dispatch at a time
    /// until no problem is left running (the count read back each time) or
    /// the kernel's bound on dispatches is reached (then the unfinished
    /// problems are flagged by the resident step). A GPU's single
    /// dispatch needs none. Returns the dispatches made.
    pub(crate) fn resident_rounds(&self, nworlds: usize) -> Result<u64, GpuError> {
        if self.adapter_class() == AdapterClass::Gpu {
            return Ok(0);
        }
        let b = &self.buffers;
        let mut made = 0u64;
        while made < self.resident_max_dispatches {
            let mut encoder =
                self.ctx
                    .device
                    .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                        label: Some("resident solve round"),
                    });
            encoder.clear_buffer(&b.active, 0, None);
            {
                let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: Some("resident solve round"),
                    timestamp_writes: None,
                });
                self.encode_resident(&mut pass, nworlds, 1);
            }
            encoder.copy_buffer_to_buffer(&b.active, 0, &b.readback, 0, 4);
            let index = self.ctx.queue.submit(Some(encoder.finish()));
            made += 1;
            let running = crate::gpu::with_mapped(
                &self.ctx.device,
                &b.readback,
                index,
                "counting running problems",
                |bytes| u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]),
            )?;
            if running == 0 {
                break;
            }
        }
        self.ctx.take_error("a resident solve round")?;
        Ok(made)
    }
}
