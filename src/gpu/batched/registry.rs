//! The kernels by [`Kernel`]: the registry the solver, the capacity's
//! device bytes and the adapter checks look kernels up in (apart from the
//! trait's file, which the kernels implement).

use super::batch::{BatchCapacity, ROUND_TIMESTAMPS, RUNNING_COUNTER_BYTES};
use super::kernel::{BatchKernel, Decomposition, check_kernel};
use crate::contact::{Kernel, SolverKind};
use crate::gpu::GpuError;

/// The implementation of `kernel`.
pub fn of(kernel: Kernel) -> &'static dyn BatchKernel {
    match kernel {
        Kernel::Pgs => &super::pgs::PgsKernel,
        Kernel::Admm => &super::admm::AdmmKernel,
    }
}

/// Every kernel.
pub const ALL: [Kernel; 2] = [Kernel::Pgs, Kernel::Admm];

/// The largest workgroup any kernel's entry point uses (the adapter must allow it).
pub fn max_workgroup_size() -> u32 {
    ALL.iter()
        .flat_map(|&k| {
            Decomposition::ALL
                .iter()
                .map(move |&d| of(k).invocations_per_workgroup(d))
        })
        .max()
        .unwrap_or(1)
}

impl BatchCapacity {
    /// Device bytes of the buffers a solver of `kernel` allocates (ADMM adds
    /// its scratch), the running counter and the readback staging buffer included.
    pub fn device_bytes(&self, kernel: Kernel) -> u64 {
        let bound: u64 = self
            .buffer_bytes(of(kernel).work_floats(self))
            .iter()
            .map(|(_, b)| b)
            .sum();
        // The running counter, the readback of λ, c, results, the counter
        // and the timestamps, and the timestamps' resolve buffer.
        bound + RUNNING_COUNTER_BYTES + self.readback_bytes() + 8 * ROUND_TIMESTAMPS as u64
    }
}

impl Decomposition {
    /// The most rows (`3·nc + nl`) one problem of `kind` may have under
    /// this decomposition (`None`: no limit but the device's memory).
    pub fn max_rows(self, kind: SolverKind) -> Result<Option<usize>, GpuError> {
        let (k, _) = check_kernel(kind)?;
        Ok(of(k).max_rows(self))
    }

    /// The entry point of `kind`'s kernel for this decomposition; refuses
    /// a decomposition the kernel or `capacity` does not fit.
    pub fn check(
        self,
        kind: SolverKind,
        capacity: &BatchCapacity,
    ) -> Result<&'static str, GpuError> {
        let (k, _) = check_kernel(kind)?;
        let kernel = of(k);
        let entry = kernel
            .entry_point(self)
            .ok_or(GpuError::NoWorkgroupKernel {
                solver: kind.name(),
                decomposition: self.name(),
            })?;
        match kernel.max_rows(self) {
            Some(max) if capacity.max_rows_per_problem() > max => {
                Err(GpuError::WorkgroupCapacity {
                    decomposition: self.name(),
                    max_rows: max,
                    got: capacity.max_rows_per_problem(),
                })
            }
            _ => Ok(entry),
        }
    }
}
