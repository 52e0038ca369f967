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

use super::GpuParams;
use super::batch::CANARY;
use crate::contact::{SolverKind, SolverSettings};

/// Invocations per workgroup of `main` (the WGSL constant of the same name).
pub const WORKGROUP_SIZE: u32 = 64;
/// Invocations per workgroup of `main_workgroup` (WGSL `LANES`).
pub const LANES: u32 = 32;
/// The most contacts per problem `main_workgroup` holds (WGSL `WG_MAX_ROWS / 3`).
pub const WG_MAX_CONTACTS: usize = 64;
/// Rows of G up to which `main_workgroup` keeps the triangle in workgroup
/// memory (WGSL `WG_G_CACHE` = 80·81/2 floats).
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

/// `common.wgsl` followed by `pgs.wgsl`.
pub const SOURCE: &str = concat!(
    include_str!("../../shaders/common.wgsl"),
    "\n",
    include_str!("../../shaders/pgs.wgsl")
);

/// The kernel's parameters for `kind` (one of the three PGS solvers or the two RaiSims).
pub fn params(kind: SolverKind, settings: &SolverSettings, num_problems: u32) -> GpuParams {
    GpuParams {
        num_problems,
        model: match kind {
            SolverKind::CcpPgs => 1,
            SolverKind::LcpPgs => 2,
            SolverKind::Raisim => 3,
            SolverKind::RaisimDs => 4,
            _ => 0,
        },
        facets: settings.pyramid_facets as u32,
        adaptive_rho: 0,
        omega: settings.over_relaxation as f32,
        rho: 0.0,
        chunk: 1,
        canary: CANARY,
    }
}
