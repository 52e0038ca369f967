//! Batched ADMM (`shaders/admm.wgsl`): the f32 twins of `ncp-admm` and
//! `ccp-admm` ([`crate::contact::solvers::AdmmSolver`]), one invocation per
//! problem, the same iteration as the CPU core (relaxed x-update, cone
//! projection, de Saxcé correction held fixed within an iteration for the
//! NCP, warm start of the dual, cold restart when a corrected run diverges,
//! best iterate returned on the cap, residual balancing of ρ for `ncp-admm`).
//!
//! **Who factorizes `G + R + ρI`: the kernel**, in its scratch (dense
//! Cholesky of the packed lower triangle, `m³/6` flops), each time ρ
//! changes. A host-uploaded factor cannot follow an adaptive ρ without a
//! round trip per change, and it would double the bytes uploaded per problem
//! (the triangle of G plus the triangle of L) while the CPU twin, measured on
//! the scenes, changes ρ 2 to 3 times per solve; one factorization costs
//! about as much as `m/3` ADMM iterations (two triangular solves, `m²`), so
//! the in-kernel factorizations are a small share of a solve of tens to
//! hundreds of iterations. Unlike the CPU, the kernel does not keep the
//! factor across solves (each problem's scratch is reused by the next batch).
//!
//! f32 differences: ρ is kept within `[1e-4, 1e3]·L` (the CPU allows
//! `1e-6·L`), since an f32 factorization of `G + ρI` with a singular `G`
//! keeps about `7 − log10(L/ρ)` digits; if a refactorization at a new ρ
//! still meets a non-positive pivot, the kernel keeps the previous ρ and stops
//! adapting (the CPU would report the problem as not PSD).
//!
//! Bindings: as [`super::pgs`], plus 7 the scratch (`6m + m(m+1)/2` f32 per problem).

use super::GpuParams;
use super::batch::CANARY;
use crate::contact::{SolverKind, SolverSettings};

/// Invocations per workgroup (the WGSL constant of the same name).
pub const WORKGROUP_SIZE: u32 = 64;

/// `common.wgsl` followed by `admm.wgsl`.
pub const SOURCE: &str = concat!(
    include_str!("../../shaders/common.wgsl"),
    "\n",
    include_str!("../../shaders/admm.wgsl")
);

/// The kernel's parameters for `ncp-admm` or `ccp-admm`. As on the CPU,
/// `ccp-admm` never adapts ρ, and `ncp-admm` adapts it when
/// `settings.adaptive_rho`.
pub fn params(kind: SolverKind, settings: &SolverSettings, num_problems: u32) -> GpuParams {
    let ncp = kind == SolverKind::NcpAdmm;
    GpuParams {
        num_problems,
        model: if ncp { 0 } else { 1 },
        facets: settings.pyramid_facets as u32,
        adaptive_rho: (ncp && settings.adaptive_rho) as u32,
        omega: settings.over_relaxation as f32,
        rho: settings.rho.unwrap_or(0.0) as f32,
        chunk: 1,
        canary: CANARY,
    }
}
