//! Batched projected Gauss-Seidel (`shaders/pgs.wgsl`): the f32 twins of
//! [`crate::contact::solvers::NcpPgs`], [`crate::contact::solvers::CcpPgs`]
//! and [`crate::contact::solvers::LcpPgs`], and of
//! [`crate::contact::solvers::Raisim`] (`raisim`, `raisim-ds`: the same
//! sweep with RaiSim's exact per-contact step, relaxed by the decaying
//! `α`, computed in closed form from the sweep count; `raisim` stops on its
//! largest local correction, `raisim-ds` on the NCP's `ε_abs`; the angular
//! tolerance of the 1-D search is 1e-6 rad instead of the CPU's 1e-12,
//! below f32's resolution), selected by `GpuParams::model`.
//!
//! The same sweep as the CPU's `gauss_seidel` (per-contact local update,
//! column update of `c`), the same stopping test (the model's `ε_abs`
//! evaluated before each sweep, early exit per problem), and the same
//! warm-start mapping. Two differences, both for f32: the incrementally
//! updated `c` is recomputed exactly at the start of each dispatch's chunk
//! of sweeps and before convergence is declared; and the 3×3 block test for
//! positive semi-definiteness compares minors with `−1e-6·scaleᵏ` instead
//! of `−1e-12·scaleᵏ`. The CCP step size, the largest eigenvalue of each
//! contact block, is computed in closed form.
//!
//! Two entry points, one per [`super::Decomposition`]: `main`, one
//! invocation per problem, and `main_workgroup`, one workgroup of [`LANES`]
//! invocations per problem (λ, c and, up to [`WG_G_CACHE_ROWS`] rows, G in
//! workgroup memory; lane 0 makes the local updates, every lane updates its
//! rows of `c`). Both make the same floating-point operations in the same
//! order on each row.
//!
//! Bindings (group 0), shared with [`super::admm`]: 0 `GpuParams`
//! (uniform), 1 `GpuProblem`s, 2 packed lower triangles of G, 3
//! `GpuContact`s, 4 λ (warm start in, λ out), 5 c (out), 6 `GpuResult`s,
//! 7 ADMM scratch (unused here).

use super::Decomposition;
use super::batch::{BatchCapacity, CANARY, GpuParams, tri};
use super::kernel::{AdapterClass, BatchKernel, BatchShape, CPU_ADAPTER_LOOP_BUDGET};
use super::shader::WgslConst;
use crate::contact::solvers::raisim;
use crate::contact::{KernelModel, SolverSettings};

/// Invocations per workgroup of `main` (the WGSL constant of the same name).
pub const WORKGROUP_SIZE: u32 = 64;
/// Invocations per workgroup of `main_workgroup` (WGSL `LANES`).
pub const LANES: u32 = 32;
/// The most contacts per problem `main_workgroup` holds (WGSL `WG_MAX_ROWS / 3`).
pub const WG_MAX_CONTACTS: usize = 64;
/// Rows of G up to which `main_workgroup` keeps the triangle in workgroup
/// memory (WGSL `WG_G_CACHE` = 80·81/2 floats: 26 contacts).
pub const WG_G_CACHE_ROWS: usize = 80;
/// Workgroup memory of `main_workgroup`, in bytes: λ, c, the cached
/// triangle, the reductions (WGSL `wg_*`), under WebGPU's default 16 KiB.
pub const WG_WORKGROUP_BYTES: u64 = 4
    * (2 * 3 * WG_MAX_CONTACTS as u64 + (WG_G_CACHE_ROWS * (WG_G_CACHE_ROWS + 1) / 2) as u64)
    + 16
    + (16 + 4) * LANES as u64
    + 32
    + 4;
const _: () = assert!(WG_WORKGROUP_BYTES <= 16384);
/// Angular tolerance of RaiSim's 1-D search: the CPU's 1e-12 rad is below
/// f32's resolution of an angle.
pub const RAISIM_THETA_TOLERANCE: f64 = 1e-6;
/// RaiSim impulses relaxed below this are set to 0: a contact that takes off
/// has its impulse relaxed geometrically towards 0, which f32 cannot follow
/// below ~1e-38 as f64 does (both precisions then agree it is open).
pub const RAISIM_FLUSH: f64 = 1e-30;
/// Iterations per dispatch on a real GPU (bounded so that a long solve
/// never trips a driver's watchdog).
pub const GPU_CHUNK_ITERATIONS: u32 = 256;

/// The PGS kernel (`shaders/pgs.wgsl`).
pub struct PgsKernel;

impl BatchKernel for PgsKernel {
    fn name(&self) -> &'static str {
        "pgs"
    }

    fn wgsl(&self) -> &'static str {
        include_str!("../../shaders/pgs.wgsl")
    }

    fn constants(&self) -> Vec<WgslConst> {
        vec![
            WgslConst::u32("WORKGROUP_SIZE", WORKGROUP_SIZE),
            WgslConst::u32("LANES", LANES),
            WgslConst::u32("WG_MAX_ROWS", 3 * WG_MAX_CONTACTS as u32),
            WgslConst::u32("WG_G_CACHE", tri(WG_G_CACHE_ROWS) as u32),
            WgslConst::f32("RAISIM_ALPHA_0", raisim::ALPHA_0),
            WgslConst::f32("RAISIM_ALPHA_MIN", raisim::ALPHA_MIN),
            WgslConst::f32("RAISIM_ALPHA_DECAY", raisim::ALPHA_DECAY),
            WgslConst::f32("RAISIM_MAX_STEP", raisim::MAX_STEP),
            WgslConst::f32("RAISIM_THETA_TOLERANCE", RAISIM_THETA_TOLERANCE),
            WgslConst::f32("RAISIM_FLUSH", RAISIM_FLUSH),
        ]
    }

    fn workgroup_size(&self) -> u32 {
        WORKGROUP_SIZE
    }

    fn entry_point(&self, decomposition: Decomposition) -> Option<&'static str> {
        Some(match decomposition {
            Decomposition::Invocation => "main",
            Decomposition::Workgroup => "main_workgroup",
        })
    }

    fn max_rows(&self, decomposition: Decomposition) -> Option<usize> {
        match decomposition {
            Decomposition::Invocation => None,
            Decomposition::Workgroup => Some(3 * WG_MAX_CONTACTS),
        }
    }

    fn invocations_per_workgroup(&self, decomposition: Decomposition) -> u32 {
        match decomposition {
            Decomposition::Invocation => WORKGROUP_SIZE,
            Decomposition::Workgroup => LANES,
        }
    }

    fn workgroup_memory(&self, decomposition: Decomposition) -> u64 {
        match decomposition {
            Decomposition::Invocation => 0,
            Decomposition::Workgroup => WG_WORKGROUP_BYTES,
        }
    }

    fn params(&self, model: KernelModel, settings: &SolverSettings) -> GpuParams {
        GpuParams {
            num_problems: 0,
            model: model as u32,
            facets: settings.pyramid_facets as u32,
            adaptive_rho: 0,
            omega: settings.over_relaxation as f32,
            rho: 0.0,
            chunk: 1,
            canary: CANARY,
        }
    }

    fn work_floats(&self, _capacity: &BatchCapacity) -> usize {
        0
    }

    /// Iterations per dispatch: on a CPU adapter, as many as the loop
    /// budget allows for the batch's largest problem (at least 1); on a
    /// GPU, [`GPU_CHUNK_ITERATIONS`].
    fn chunk(
        &self,
        adapter: AdapterClass,
        decomposition: Decomposition,
        model: KernelModel,
        settings: &SolverSettings,
        batch: BatchShape,
    ) -> u32 {
        if adapter == AdapterClass::Gpu {
            return GPU_CHUNK_ITERATIONS;
        }
        // Local updates per sweep: the contacts', and the unilateral rows'
        // (cheaper; counted as contacts).
        let m = batch.max_rows as u64;
        let nc = batch.max_local_updates as u64;
        // Rows of c one invocation computes, and loop iterations of one
        // (G + R)λ product over them, unrolled by 4.
        let rows = match decomposition {
            Decomposition::Invocation => m,
            Decomposition::Workgroup => m.div_ceil(LANES as u64),
        };
        let mv = rows * (m / 4 + 8) + 8;
        let facets = if model == KernelModel::Lcp && settings.pyramid_facets != 4 {
            settings.pyramid_facets as u64
        } else {
            0
        };
        // RaiSim's 1-D search: up to ~60 march and 100 regula falsi steps.
        let search = if matches!(model, KernelModel::Raisim | KernelModel::RaisimDs) {
            170
        } else {
            0
        };
        let (fixed, per_iteration) = match decomposition {
            Decomposition::Invocation => (3 * mv + 4 * nc, mv + nc * (8 + 4 * facets + search)),
            // Lane 0 makes every local update; each lane updates its rows
            // of c after each contact (3 columns) and reduces the residuals.
            Decomposition::Workgroup => (
                3 * mv + tri(m as usize) as u64 / LANES as u64 + 2 * nc + 64,
                mv + nc * (8 + 4 * facets + search + 4 * rows + 2) + 2 * LANES as u64,
            ),
        };
        (CPU_ADAPTER_LOOP_BUDGET.saturating_sub(fixed) / per_iteration.max(1)).clamp(1, 1 << 16)
            as u32
    }

    /// Every running problem advances by `chunk` iterations per dispatch.
    fn max_dispatches(&self, batch: BatchShape, chunk: u32) -> u64 {
        2 + batch.max_iterations.div_ceil(chunk as u64)
    }
}
