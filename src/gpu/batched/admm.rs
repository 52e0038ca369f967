//! Batched ADMM (`shaders/admm.wgsl`): the f32 twins of `ncp-admm` and
//! `ccp-admm` ([`crate::contact::solvers::AdmmSolver`]), the same iteration
//! as the CPU core (relaxed x-update, cone projection, de Saxcé correction
//! held fixed within an iteration for the NCP, warm start of the dual, cold
//! restart when a corrected run diverges, best iterate returned on the cap,
//! residual balancing of ρ for `ncp-admm`). `ncp-admm` also has the CPU's
//! finishers: with `SolverSettings::polish`, the active-set polish of the
//! warm start and of iterates 2, 5, 10 and every 20th (f32 LU, one column
//! per step; sliding directions checked, see the WGSL); with `newton` as
//! well, semismooth Newton steps on the Alart–Curnier function from the
//! guess once `G + R + ρI` has factorized and after each failed polish of
//! every 20th iterate, on problems of up to [`POLISH_MAX_UNKNOWNS`] rows
//! (the CPU's `newton.rs` in f32, its `m × m` LU in the polish's scratch);
//! and with `stall_guard` the tenfold raise of a stalled ρ.
//!
//! Two entry points, one per [`Decomposition`]: `main`, one invocation per
//! problem; `main_workgroup`, one workgroup of [`WA_LANES`] invocations per
//! problem, each lane owning the rows of its units (contacts, unilateral
//! rows): the mat-vecs row-parallel, each column of the factor row-parallel,
//! the triangular solves by columns (one barrier per unit), the factor in
//! workgroup memory when its triangle fits [`WA_CACHE`] floats (88 rows)
//! and G after it when both fit (62 rows). Both run the same per-row and
//! per-unit functions, in the same order on every row, so they return the
//! same iterates (`tests/gpu_solvers.rs` checks it).
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
//! Bindings: as [`super::pgs`], plus 7 the scratch
//! ([`admm_work`](super::batch::admm_work)`(m)` f32 per problem: the
//! iterate's vectors, the factor, the polish's vectors and its factor).

use super::batch::{
    ADMM_SLOTS, BatchCapacity, CANARY, GpuParams, GpuResult, POLISH_MAX_UNKNOWNS, POLISH_SLOTS,
};
use super::kernel::Decomposition;
use super::kernel::{AdapterClass, BatchKernel, BatchShape, CPU_ADAPTER_LOOP_BUDGET, row_bucket};
use crate::contact::criteria::{F32_ROUNDOFF, FLOOR_STALL_FACTOR};
use crate::contact::solvers::{admm, newton, polish};
use crate::contact::{KernelModel, SolverSettings};
use crate::gpu::contract::WgslConst;

/// Solves of one polish round (the first, then refinements; the last
/// candidate is judged), as on the CPU.
const POLISH_SOLVES: u32 = 4;
/// How far a sliding contact's friction direction may be from that of
/// `−c_T` in a polished solution (the residuals alone let it be 0.05 rad off
/// at f32's tolerances, see `shaders/admm.wgsl`).
const POLISH_DIRECTION_TOLERANCE: f64 = 1e-4;
/// Where f32 cannot tell `c_T`'s direction that well, the floors of
/// rounding (`GpuResult::eps_floor`) over `|c_T|` it may be off instead
/// (each component of `c_T` carries up to a floor of rounding).
const DIRECTION_FLOORS: f64 = 4.0;
/// How close to the cone's boundary, relative to `μλ_N`, Newton's
/// candidate's `|λ_T|` is sliding (its direction then judged).
const SLIDING_BAND: f64 = 1e-3;
/// The polish's regularization of `H`, relative to its largest diagonal
/// entry: the CPU's 1e-6 of `H`'s largest entry is ten f32 roundings.
const POLISH_REGULARIZATION: f64 = 1e-5;
/// Newton's regularization of `J`, relative to its largest diagonal entry.
/// Where `G` is singular (a box resting on four corners) `F`'s rounding
/// along `G`'s null space comes back divided by it, as internal forces in
/// λ that move nothing: at the polish's 1e-5 the resting cube's λ had
/// tangential impulses 0.4 % of its normal ones and its derivatives were
/// 1e-3 from the CPU's (`tests/batch_gradients.rs`); at 1e-4, 2e-5.
const NEWTON_REGULARIZATION: f64 = 1e-4;
/// Invocations per workgroup (the WGSL constant of the same name).
pub const WORKGROUP_SIZE: u32 = 64;
/// The lower end of ρ's range, relative to `L`: the CPU's is 1e-6, but in
/// f32 the factorization of `G + ρI` keeps about `7 − log10(L/ρ)` digits.
pub const RHO_RANGE_MIN: f64 = 1e-4;
/// Loop budget per problem and dispatch on a CPU adapter: lanes of one SIMD
/// batch that are in different phases run one after the other, so the
/// budget per lane is a fraction of lavapipe's limit.
pub const CPU_ADAPTER_ADMM_BUDGET: u32 = 8_000;
/// Loop budget per problem and dispatch on a GPU.
pub const GPU_ADMM_BUDGET: u32 = u32::MAX;
/// Invocations per workgroup of `main_workgroup` (WGSL `WA_LANES`): one
/// warp of an NVIDIA GPU, so that its barriers are cheap.
pub const WA_LANES: u32 = 32;
/// Workgroup memory of `main_workgroup` besides the cache: the reduction
/// (`wa_red`), the broadcast state and word, the loop-limit flag.
const WA_OTHER_BYTES: u64 = 16 * WA_LANES as u64 + std::mem::size_of::<GpuResult>() as u64 + 16 + 4;
/// The most floats of `main_workgroup`'s cache (WGSL override `WA_CACHE`):
/// the factor's triangle when it fits (`m ≤ 88`), G's after it when both
/// fit (`m ≤ 62`), within WebGPU's default 16 KiB of workgroup memory.
pub const WA_CACHE: u64 = (16384 - WA_OTHER_BYTES) / 4;
/// Workgroup memory of `main_workgroup` at its largest, in bytes.
pub const WA_WORKGROUP_BYTES: u64 = 4 * WA_CACHE + WA_OTHER_BYTES;
const _: () = assert!(WA_WORKGROUP_BYTES <= 16384);

/// `main_workgroup`'s cache for problems of at most `max_rows` rows: the
/// factor's and G's triangles (`m(m + 1)` floats) for `m` =
/// [`row_bucket`]`(max_rows)`, or [`WA_CACHE`], whichever is smaller, so
/// that small problems leave workgroup memory to more resident workgroups.
pub fn wa_cache_floats(max_rows: usize) -> u64 {
    let m = row_bucket(max_rows);
    ((m * (m + 1)) as u64).clamp(1, WA_CACHE)
}

/// The ADMM kernel (`shaders/admm.wgsl`).
pub struct AdmmKernel;

/// The phases of the kernel's state machine (`GpuResult::state` of a
/// running solve; WGSL `PHASE_*`), numbered after
/// [`STATE_DONE`](super::batch::STATE_DONE): ADMM's (power iteration,
/// attempt, factorization, iterations, final), the polish's (modes,
/// factorization, solve) and Newton's (start, Jacobian, factorization,
/// solve, line search). See `shaders/admm.wgsl`.
pub const PHASES: [&str; 13] = [
    "PHASE_POWER",
    "PHASE_ATTEMPT",
    "PHASE_FACTOR",
    "PHASE_ITERATE",
    "PHASE_FINAL",
    "PHASE_PMODES",
    "PHASE_PFACTOR",
    "PHASE_PSOLVE",
    "PHASE_NSTART",
    "PHASE_NJAC",
    "PHASE_NFACTOR",
    "PHASE_NSOLVE",
    "PHASE_NLINE",
];

/// The first phase's number.
const FIRST_PHASE: u32 = super::batch::STATE_DONE + 1;

// The polish and Newton pack the phase to return to in 4 bits of
// `GpuResult::polish`.
const _: () = assert!(FIRST_PHASE as usize + PHASES.len() <= 16);

/// [`PHASES`] with their numbers.
pub fn phase_constants() -> Vec<WgslConst> {
    PHASES
        .iter()
        .enumerate()
        .map(|(i, &name)| WgslConst::u32(name, FIRST_PHASE + i as u32))
        .collect()
}

/// A one-dimensional row's modes in the polish (`polish.rs`'s `RowMode`:
/// λ fixed on its set's lower end, `c = 0`, λ on the upper end), coded
/// 0, 1, 2 among the polish's floats.
pub const ROW_MODES: [&str; 3] = ["ROW_AT_LOWER", "ROW_ACTIVE", "ROW_AT_UPPER"];

impl BatchKernel for AdmmKernel {
    fn name(&self) -> &'static str {
        "admm"
    }

    fn wgsl_files(&self) -> &'static [(&'static str, &'static str)] {
        &[
            ("admm.wgsl", include_str!("../../../shaders/admm.wgsl")),
            (
                "admm_polish.wgsl",
                include_str!("../../../shaders/admm_polish.wgsl"),
            ),
            (
                "admm_newton.wgsl",
                include_str!("../../../shaders/admm_newton.wgsl"),
            ),
            (
                "admm_main.wgsl",
                include_str!("../../../shaders/admm_main.wgsl"),
            ),
        ]
    }

    fn constants(&self) -> Vec<WgslConst> {
        let mut c = vec![
            WgslConst::u32("WORKGROUP_SIZE", WORKGROUP_SIZE),
            WgslConst::u32("WA_LANES", WA_LANES),
            WgslConst::u32("ADMM_SLOTS", ADMM_SLOTS as u32),
            WgslConst::f32("RHO_RATIO", admm::RHO_RATIO),
            WgslConst::f32("DIVERGENCE_FACTOR", admm::DIVERGENCE_FACTOR),
            WgslConst::u32("RHO_MIN_INTERVAL", admm::RHO_MIN_INTERVAL as u32),
            WgslConst::f32("RHO_MAX_STEP", admm::RHO_MAX_STEP),
            WgslConst::f32("RHO_RANGE_MIN", RHO_RANGE_MIN),
            WgslConst::f32("RHO_RANGE_MAX", admm::RHO_RANGE.1),
            WgslConst::u32("LANCZOS_STEPS", admm::LANCZOS_STEPS as u32),
            WgslConst::f32("WEIGHT_FLOOR", admm::WEIGHT_FLOOR),
            WgslConst::f32("SCALED_SPREAD", admm::SCALED_SPREAD),
            WgslConst::u32("STALL_WINDOW", admm::STALL_WINDOW as u32),
            WgslConst::f32("F32_ROUNDOFF", F32_ROUNDOFF),
            WgslConst::f32("FLOOR_STALL_FACTOR", FLOOR_STALL_FACTOR),
            WgslConst::u32("POLISH_SLOTS", POLISH_SLOTS as u32),
            WgslConst::u32("POLISH_INTERVAL", admm::POLISH_INTERVAL as u32),
            WgslConst::u32("POLISH_ROUNDS", admm::POLISH_ROUNDS as u32),
            WgslConst::u32("POLISH_MAX_ROUNDS", polish::MAX_ROUNDS as u32),
            WgslConst::u32("POLISH_SOLVES", POLISH_SOLVES),
            WgslConst::f32("POLISH_REGULARIZATION", POLISH_REGULARIZATION),
            WgslConst::u32("POLISH_MAX_UNKNOWNS", POLISH_MAX_UNKNOWNS as u32),
            WgslConst::f32("POLISH_DIRECTION_TOLERANCE", POLISH_DIRECTION_TOLERANCE),
            WgslConst::f32("DIRECTION_FLOORS", DIRECTION_FLOORS),
            WgslConst::f32("SLIDING_BAND", SLIDING_BAND),
            WgslConst::f32("NEWTON_REGULARIZATION", NEWTON_REGULARIZATION),
            WgslConst::u32("NEWTON_STEPS", newton::NEWTON_STEPS as u32),
            WgslConst::u32("NEWTON_SOLVES", 1 + newton::REFINEMENTS as u32),
            WgslConst::f32("NEWTON_SCALE_0", newton::R_SCALES[0]),
            WgslConst::f32("NEWTON_SCALE_1", newton::R_SCALES[1]),
            WgslConst::f32("NEWTON_ARMIJO", newton::ARMIJO),
            WgslConst::f32("NEWTON_MIN_STEP", newton::MIN_STEP),
        ];
        c.extend(phase_constants());
        c.extend(crate::gpu::contract::mode_constants(true));
        c.extend(
            ROW_MODES
                .iter()
                .enumerate()
                .map(|(i, &name)| WgslConst::f32(name, i as f64)),
        );
        c
    }

    fn workgroup_size(&self) -> u32 {
        WORKGROUP_SIZE
    }

    fn entry_point(&self, decomposition: Decomposition) -> Option<&'static str> {
        match decomposition {
            Decomposition::Invocation => Some("main"),
            Decomposition::Workgroup => Some("main_workgroup"),
            Decomposition::Lane => None,
        }
    }

    fn max_rows(&self, _decomposition: Decomposition) -> Option<usize> {
        None
    }

    fn invocations_per_workgroup(&self, decomposition: Decomposition) -> u32 {
        match decomposition {
            Decomposition::Workgroup => WA_LANES,
            _ => WORKGROUP_SIZE,
        }
    }

    fn workgroup_memory(&self, decomposition: Decomposition, max_rows: usize) -> u64 {
        match decomposition {
            Decomposition::Workgroup => 4 * wa_cache_floats(max_rows) + WA_OTHER_BYTES,
            _ => 0,
        }
    }

    /// `main_workgroup` sizes its cache for the capacity's largest problem
    /// ([`wa_cache_floats`]); `main` leaves it at 1 float.
    fn overrides(&self, decomposition: Decomposition, max_rows: usize) -> Vec<(&'static str, f64)> {
        match decomposition {
            Decomposition::Workgroup => vec![("WA_CACHE", wa_cache_floats(max_rows) as f64)],
            _ => Vec::new(),
        }
    }

    /// As on the CPU, `ccp-admm` never adapts ρ, and `ncp-admm` adapts it
    /// when `settings.adaptive_rho`.
    fn params(&self, model: KernelModel, settings: &SolverSettings) -> GpuParams {
        let ncp = model == KernelModel::Ncp;
        GpuParams {
            num_problems: 0,
            model: model as u32,
            facets: settings.pyramid_facets as u32,
            adaptive_rho: (ncp && settings.adaptive_rho) as u32,
            polish: (ncp && settings.polish) as u32,
            stall_guard: (ncp && settings.adaptive_rho && settings.stall_guard) as u32,
            newton: (ncp && settings.polish && settings.newton) as u32,
            floor_stop: settings.f32_floor as u32,
            // (From the start; `ncp-admm` below it at its first stall, as
            // on the CPU.)
            scaled_spread: match (settings.scaled_rho, ncp) {
                (false, _) => 0.0,
                (true, true) => admm::SCALED_AT_START as f32,
                (true, false) => admm::SCALED_SPREAD as f32,
            },
            omega: settings.over_relaxation as f32,
            rho: settings.rho.unwrap_or(0.0) as f32,
            chunk: 1,
            canary: CANARY,
            ..Default::default()
        }
    }

    fn work_floats(&self, capacity: &BatchCapacity) -> usize {
        capacity.admm_work_floats()
    }

    /// A loop budget (its steps have unequal costs). On a CPU adapter, the
    /// lanes of `main_workgroup` are all in the same step, so each may
    /// spend the driver's whole budget.
    fn chunk(
        &self,
        adapter: AdapterClass,
        decomposition: Decomposition,
        _model: KernelModel,
        _settings: &SolverSettings,
        _batch: BatchShape,
    ) -> u32 {
        match (adapter, decomposition) {
            (AdapterClass::Gpu, _) => GPU_ADMM_BUDGET,
            (AdapterClass::Cpu, Decomposition::Workgroup) => CPU_ADAPTER_LOOP_BUDGET as u32,
            (AdapterClass::Cpu, _) => CPU_ADAPTER_ADMM_BUDGET,
        }
    }

    /// Each dispatch advances every running problem by at least one step
    /// (see admm.wgsl): the power iteration, `m` factorization columns per
    /// factorization, and the iterations with their ρ changes.
    fn max_dispatches(&self, batch: BatchShape, _chunk: u32) -> u64 {
        let m = batch.max_rows as u64;
        // Each polish (the warm start's, then one per POLISH_INTERVAL
        // iterations) takes at most MAX_ROUNDS rounds of a few steps and
        // one factor column per unknown.
        let polishes = 1 + batch.max_iterations / admm::POLISH_INTERVAL as u64;
        let k = m.min(POLISH_MAX_UNKNOWNS as u64);
        let polish_steps = polish::MAX_ROUNDS as u64 * (2 + k + 2 * POLISH_SOLVES as u64);
        // Newton, after two attempts' first factorizations and each of
        // those polishes: per scale of r, its steps of a Jacobian, k
        // columns, the solves and at most 14 trials of the line search.
        let newton_runs = 2 + polishes;
        let newton_steps = newton::R_SCALES.len() as u64
            * (1 + newton::NEWTON_STEPS as u64 * (2 + k + 1 + newton::REFINEMENTS as u64 + 14));
        64 + 2
            * (24
                + m
                + batch.max_iterations * (3 + m / 5)
                + polishes * polish_steps
                + newton_runs * newton_steps)
    }

    /// A dispatch runs steps until its budget (`chunk` loop iterations) is
    /// spent, so it runs at least `chunk / max_step_cost` of them; the
    /// solve takes at most `max_dispatches` steps.
    fn dispatches_to_finish(&self, batch: BatchShape, chunk: u32) -> u64 {
        let steps_per_dispatch = (chunk as u64 / max_step_cost(batch.max_rows as u64)).max(1);
        self.max_dispatches(batch, chunk)
            .div_ceil(steps_per_dispatch)
            .max(1)
    }
}

/// A bound on the loop iterations of one step of `admm.wgsl`'s state
/// machine on a problem of `m` rows (`step_cost`, `polish_step_cost` and
/// `newton_step_cost` there: the largest of them with every count at `m`).
fn max_step_cost(m: u64) -> u64 {
    let mv = m * (m / 4 + 8) + 16;
    2 * mv + m * (m + 4) + 32 * m + 64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On a GPU a resident step encodes the dispatches its solve can need
    /// (a bound: every polish and Newton run at its most; the dispatches
    /// after the last problem finishes return at once): one for the
    /// quadruped's problems at the default cap, a few for the humanoid's
    /// room, some tens for a bed of 120 balls (360 rows), never fewer than
    /// the step bound allows (each dispatch runs at least `chunk / cost`
    /// steps).
    #[test]
    fn a_gpu_dispatch_count_covers_the_whole_solve() {
        let shape = |rows: usize| BatchShape {
            max_contacts: rows / 3,
            max_rows: rows,
            max_local_updates: rows,
            max_iterations: 1000,
        };
        let k = AdmmKernel;
        let counts: Vec<u64> = [12, 91, 169, 360]
            .iter()
            .map(|&rows| k.dispatches_to_finish(shape(rows), GPU_ADMM_BUDGET))
            .collect();
        println!("dispatches for 12, 91, 169, 360 rows: {counts:?}");
        assert_eq!(counts[0], 1, "the quadruped's problems");
        assert!(counts.windows(2).all(|w| w[0] <= w[1]));
        assert!(counts[3] <= 100, "a bed of 120 balls");
        for rows in [12, 60, 169, 360, 2000] {
            let s = shape(rows);
            let n = k.dispatches_to_finish(s, GPU_ADMM_BUDGET);
            let per = GPU_ADMM_BUDGET as u64 / max_step_cost(rows as u64);
            assert!(
                n * per >= k.max_dispatches(s, GPU_ADMM_BUDGET),
                "{rows} rows: {n}"
            );
            assert!(
                (n - 1) * per < k.max_dispatches(s, GPU_ADMM_BUDGET),
                "{rows} rows: {n}"
            );
        }
        // The budget of old (2^24 loop iterations) held no 60-row solve.
        assert!(k.dispatches_to_finish(shape(60), 1 << 24) > 1);
    }
}
