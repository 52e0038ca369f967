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
//! Three entry points, one per [`super::kernel::Decomposition`]: `main`, one
//! invocation per problem; `main_workgroup`, one workgroup of [`LANES`]
//! invocations per problem (λ, c and, up to [`WG_G_CACHE_ROWS`] rows, G in
//! workgroup memory; lane 0 makes the local updates, every lane updates its
//! rows of `c`); and `main_lanes`, one lane per contact ([`LC_LANES`]
//! invocations hold [`lanes_for`] lanes for each of several
//! problems; a lane makes its contacts' local updates and alone updates
//! their rows of `c`; problems uploaded in segments of equal lanes,
//! [`lane_segments`]). All three make the same floating-point operations in
//! the same order on each row.
//!
//! Bindings (group 0), shared with [`super::admm`]: 0 `GpuParams`
//! (uniform), 1 `GpuProblem`s, 2 packed lower triangles of G, 3
//! `GpuContact`s, 4 λ (warm start in, λ out), 5 c (out), 6 `GpuResult`s,
//! 7 ADMM scratch (unused here).

use super::batch::{BatchCapacity, CANARY, GpuParams, GpuProblem, LANE_SEGMENTS, tri};
use super::kernel::Decomposition;
use super::kernel::{AdapterClass, BatchKernel, BatchShape, CPU_ADAPTER_LOOP_BUDGET, row_bucket};
use crate::contact::solvers::raisim;
use crate::contact::{KernelModel, SolverSettings};
use crate::gpu::contract::WgslConst;

/// Invocations per workgroup of `main` (the WGSL constant of the same name).
pub const WORKGROUP_SIZE: u32 = 64;
/// Invocations per workgroup of `main_workgroup` (WGSL `LANES`).
pub const LANES: u32 = 32;
/// The most contacts per problem `main_workgroup` holds (WGSL `WG_MAX_ROWS / 3`).
pub const WG_MAX_CONTACTS: usize = 64;
/// Rows of G up to which `main_workgroup` keeps the triangle in workgroup
/// memory (WGSL `WG_G_CACHE` = 80·81/2 floats: 26 contacts).
pub const WG_G_CACHE_ROWS: usize = 80;
/// Workgroup memory of `main_workgroup` besides λ, c and the cached
/// triangle: the reductions (WGSL `wg_*`).
const WG_OTHER_BYTES: u64 = 16 + (16 + 4) * LANES as u64 + 32 + 4;
/// Workgroup memory of `main_workgroup` at its largest, in bytes: λ, c, the
/// cached triangle and the reductions, under WebGPU's default 16 KiB.
pub const WG_WORKGROUP_BYTES: u64 = wg_workgroup_bytes(3 * WG_MAX_CONTACTS);
const _: () = assert!(WG_WORKGROUP_BYTES <= 16384);

/// `main_workgroup`'s rows of λ and c and floats of cached G (WGSL
/// overrides `WG_MAX_ROWS`, `WG_G_CACHE`) for a capacity whose largest
/// problem has `max_rows` rows: for [`row_bucket`]`(max_rows)` rows, not
/// many more than it needs, so that small problems leave workgroup memory
/// to more resident workgroups.
pub const fn wg_sizes(max_rows: usize) -> (usize, usize) {
    let bucket = row_bucket(max_rows);
    let rows = if bucket < 3 * WG_MAX_CONTACTS {
        bucket
    } else {
        3 * WG_MAX_CONTACTS
    };
    let cache = if rows < WG_G_CACHE_ROWS {
        tri(rows)
    } else {
        tri(WG_G_CACHE_ROWS)
    };
    (
        if rows > 1 { rows } else { 1 },
        if cache > 1 { cache } else { 1 },
    )
}

/// Workgroup memory of `main_workgroup` for problems of at most `max_rows` rows.
pub const fn wg_workgroup_bytes(max_rows: usize) -> u64 {
    let (rows, cache) = wg_sizes(max_rows);
    4 * (2 * rows + cache) as u64 + WG_OTHER_BYTES
}
/// Invocations per workgroup of `main_lanes` (WGSL `LC_LANES`): one lane
/// per contact, `LC_LANES / S` problems of `S` lanes each.
pub const LC_LANES: u32 = 64;
/// Rows of λ and c `main_lanes` keeps in workgroup memory, shared by the
/// problems of a workgroup (WGSL `LC_ROWS`): a problem of `S` lanes may
/// have up to `LC_ROWS · S / LC_LANES` rows, and at most `LC_ROWS` (341
/// contacts) with `S = LC_LANES`.
pub const LC_ROWS: usize = 1024;
/// Workgroup memory of `main_lanes`, in bytes: λ and c, the double-buffered
/// Δλ of each problem, and the reductions (WGSL `lc_*`), under WebGPU's
/// default 16 KiB.
pub const LC_WORKGROUP_BYTES: u64 =
    4 * 2 * LC_ROWS as u64 + 16 * 2 * LC_LANES as u64 + (16 + 4 + 4 + 32 + 4) * LC_LANES as u64 + 4;
const _: () = assert!(LC_WORKGROUP_BYTES <= 16384);

/// Lanes per problem of `main_lanes` for a batch: those of its largest
/// problem ([`lanes_for`]), the most any of its problems gets.
pub fn lanes_per_problem(batch: BatchShape) -> u32 {
    lanes_for(batch.max_contacts, batch.max_rows)
}

/// Lanes per problem of `main_lanes` for a problem of `contacts` contacts
/// and `rows` rows: the smallest power of two that gives each contact a
/// lane (capped at [`LC_LANES`]), doubled while its rows do not fit the
/// share of workgroup memory that leaves each problem.
pub fn lanes_for(contacts: usize, rows: usize) -> u32 {
    let mut s = (contacts.max(1) as u32).next_power_of_two().min(LC_LANES);
    while s < LC_LANES && rows > LC_ROWS * s as usize / LC_LANES as usize {
        s *= 2;
    }
    s
}

/// How `main_lanes` lays a batch on workgroups: `headers` (with `order`,
/// the batch index of each, empty for the identity) sorted stably by
/// their lanes per problem into `sorted` and `sorted_order`, and the runs
/// of equal lanes as `GpuParams::segment`s. A batch of 4- and 12-contact
/// problems gives the 4-contact ones 4 lanes each (16 to a workgroup)
/// where one batch-wide count would give every problem 16.
pub fn lane_segments(
    headers: &[GpuProblem],
    order: &[u32],
    sorted: &mut Vec<GpuProblem>,
    sorted_order: &mut Vec<u32>,
) -> LaneSegments {
    let lanes = |h: &GpuProblem| lanes_for(h.nc as usize, h.m());
    let mut idx: Vec<usize> = (0..headers.len()).collect();
    idx.sort_by_key(|&k| lanes(&headers[k]));
    sorted.clear();
    sorted.extend(idx.iter().map(|&k| headers[k]));
    sorted_order.clear();
    sorted_order.extend(
        idx.iter()
            .map(|&k| order.get(k).copied().unwrap_or(k as u32)),
    );
    let mut out = LaneSegments::default();
    let mut k = 0;
    while k < sorted.len() {
        let s = lanes(&sorted[k]);
        let count = sorted[k..].iter().take_while(|h| lanes(h) == s).count();
        let q = out.count as usize;
        out.segment[q] = [out.workgroups as u32, k as u32, count as u32, s];
        out.count += 1;
        out.workgroups += count.div_ceil((LC_LANES / s) as usize) as u64;
        k += count;
    }
    out
}

/// The segments of a batch for `main_lanes` ([`lane_segments`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LaneSegments {
    /// Segments in use (`GpuParams::segments`).
    pub count: u32,
    /// `[first workgroup, first problem, problems, lanes per problem]`.
    pub segment: [[u32; 4]; LANE_SEGMENTS],
    /// Workgroups of the dispatch.
    pub workgroups: u64,
}
/// Angular tolerance of RaiSim's 1-D search: the CPU's 1e-12 rad is below
/// f32's resolution of an angle.
pub const RAISIM_THETA_TOLERANCE: f64 = 1e-6;
/// RaiSim impulses relaxed below this are set to 0: a contact that takes off
/// has its impulse relaxed geometrically towards 0, which f32 cannot follow
/// below ~1e-38 as f64 does (both precisions then agree it is open).
pub const RAISIM_FLUSH: f64 = 1e-30;

/// The PGS kernel (`shaders/pgs.wgsl`).
pub struct PgsKernel;

impl BatchKernel for PgsKernel {
    fn name(&self) -> &'static str {
        "pgs"
    }

    fn wgsl_files(&self) -> &'static [(&'static str, &'static str)] {
        &[
            ("pgs.wgsl", include_str!("../../../shaders/pgs.wgsl")),
            (
                "pgs_workgroup.wgsl",
                include_str!("../../../shaders/pgs_workgroup.wgsl"),
            ),
            (
                "pgs_lanes.wgsl",
                include_str!("../../../shaders/pgs_lanes.wgsl"),
            ),
        ]
    }

    fn constants(&self) -> Vec<WgslConst> {
        vec![
            WgslConst::u32("WORKGROUP_SIZE", WORKGROUP_SIZE),
            WgslConst::u32("LANES", LANES),
            WgslConst::u32("LC_LANES", LC_LANES),
            WgslConst::u32("LC_ROWS", LC_ROWS as u32),
            WgslConst::u32("LC_DELTAS", 2 * LC_LANES),
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
            Decomposition::Lane => "main_lanes",
        })
    }

    fn max_rows(&self, decomposition: Decomposition) -> Option<usize> {
        match decomposition {
            Decomposition::Invocation => None,
            Decomposition::Workgroup => Some(3 * WG_MAX_CONTACTS),
            Decomposition::Lane => Some(LC_ROWS),
        }
    }

    fn invocations_per_workgroup(&self, decomposition: Decomposition) -> u32 {
        match decomposition {
            Decomposition::Invocation => WORKGROUP_SIZE,
            Decomposition::Workgroup => LANES,
            Decomposition::Lane => LC_LANES,
        }
    }

    fn workgroup_memory(&self, decomposition: Decomposition, max_rows: usize) -> u64 {
        match decomposition {
            Decomposition::Invocation => 0,
            Decomposition::Workgroup => wg_workgroup_bytes(max_rows),
            Decomposition::Lane => LC_WORKGROUP_BYTES,
        }
    }

    /// `main_workgroup` sizes λ, c and the cache of G for the capacity's
    /// largest problem ([`wg_sizes`]); the other entry points leave them at 1.
    fn overrides(&self, decomposition: Decomposition, max_rows: usize) -> Vec<(&'static str, f64)> {
        match decomposition {
            Decomposition::Workgroup => {
                let (rows, cache) = wg_sizes(max_rows);
                vec![("WG_MAX_ROWS", rows as f64), ("WG_G_CACHE", cache as f64)]
            }
            _ => Vec::new(),
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
            ..Default::default()
        }
    }

    fn work_floats(&self, _capacity: &BatchCapacity) -> usize {
        0
    }

    /// Iterations per dispatch: on a CPU adapter, as many as the loop
    /// budget allows for the batch's largest problem (at least 1); on a
    /// GPU, the iteration cap of the batch (one dispatch: no loop limiter).
    fn chunk(
        &self,
        adapter: AdapterClass,
        decomposition: Decomposition,
        model: KernelModel,
        settings: &SolverSettings,
        batch: BatchShape,
    ) -> u32 {
        if adapter == AdapterClass::Gpu {
            // No loop limiter: the whole solve in one dispatch.
            return batch.max_iterations.clamp(1, u32::MAX as u64) as u32;
        }
        // Local updates per sweep: the contacts', and the unilateral rows'
        // (cheaper; counted as contacts).
        let m = batch.max_rows as u64;
        let nc = batch.max_local_updates as u64;
        let lanes = lanes_per_problem(batch) as u64;
        // Rows of c one invocation computes, and loop iterations of one
        // (G + R)λ product over them, unrolled by 4.
        let rows = match decomposition {
            Decomposition::Invocation => m,
            Decomposition::Workgroup => m.div_ceil(LANES as u64),
            Decomposition::Lane => {
                3 * (batch.max_contacts as u64).div_ceil(lanes) + m.div_ceil(lanes)
            }
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
        let local = 8 + 4 * facets + search;
        let (fixed, per_iteration) = match decomposition {
            Decomposition::Invocation => (3 * mv + 4 * nc, mv + nc * local),
            // Lane 0 makes every local update; each lane updates its rows
            // of c after each contact (3 columns) and reduces the residuals.
            Decomposition::Workgroup => (
                3 * mv + tri(m as usize) as u64 / LANES as u64 + 2 * nc + 64,
                mv + nc * (local + 4 * rows + 2) + 2 * LANES as u64,
            ),
            // A lane makes the local updates of its own contacts, updates
            // its own rows of c after each local update of its problem (3
            // columns each), and takes part in the reductions (its
            // problem's lanes, the workgroup's problems); every lane runs
            // the block test of the whole problem when it starts.
            Decomposition::Lane => {
                let problems = LC_LANES as u64 / lanes;
                (
                    3 * mv + 2 * rows + 2 * nc + 4 * problems + 64,
                    mv + nc * (4 * rows + 2)
                        + nc.div_ceil(lanes) * local
                        + 2 * (rows + lanes)
                        + 3 * problems
                        + 16,
                )
            }
        };
        (CPU_ADAPTER_LOOP_BUDGET.saturating_sub(fixed) / per_iteration.max(1)).clamp(1, 1 << 16)
            as u32
    }

    /// Every running problem advances by `chunk` iterations per dispatch;
    /// a chunk that covers the iteration cap ends every solve in one.
    fn max_dispatches(&self, batch: BatchShape, chunk: u32) -> u64 {
        if chunk as u64 >= batch.max_iterations {
            1
        } else {
            2 + batch.max_iterations.div_ceil(chunk as u64)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(max_contacts: usize, max_rows: usize) -> BatchShape {
        BatchShape {
            max_contacts,
            max_rows,
            max_local_updates: max_contacts,
            max_iterations: 100,
        }
    }

    #[test]
    fn lanes_per_problem_gives_each_contact_a_lane_and_each_problem_its_rows() {
        // A lane per contact, rounded up to a power of two.
        assert_eq!(lanes_per_problem(shape(0, 0)), 1);
        assert_eq!(lanes_per_problem(shape(1, 3)), 1);
        assert_eq!(lanes_per_problem(shape(4, 12)), 4);
        assert_eq!(lanes_per_problem(shape(12, 36)), 16);
        assert_eq!(lanes_per_problem(shape(48, 144)), 64);
        // More contacts than lanes: every lane holds several.
        assert_eq!(lanes_per_problem(shape(300, 900)), LC_LANES);
        // Rows past a problem's share of workgroup memory (1024 rows over
        // 64 / S problems) take more lanes: 1 contact with 40 unilateral rows
        // needs 43 rows, more than the 16 of S = 1.
        assert_eq!(lanes_per_problem(shape(1, 43)), 4);
        for s in [1u32, 2, 4, 8, 16, 32, 64] {
            let rows = LC_ROWS * s as usize / LC_LANES as usize;
            assert_eq!(lanes_per_problem(shape(1, rows)), s);
            assert_eq!(LC_LANES % s, 0);
        }
    }

    #[test]
    fn lane_segments_sort_problems_by_their_lanes_and_cover_them_once() {
        let header = |nc: u32, nl: u32| GpuProblem {
            nc,
            nl,
            ..Default::default()
        };
        // Batch order: 12, 4, 1, 4, 0 (flagged), 12, 4, 1 contacts, and one
        // of 1 contact with 40 unilateral rows (4 lanes for its rows).
        let headers = [
            header(12, 0),
            header(4, 0),
            header(1, 0),
            header(4, 0),
            header(0, 0),
            header(12, 0),
            header(4, 0),
            header(1, 0),
            header(1, 40),
        ];
        let (mut sorted, mut order) = (Vec::new(), Vec::new());
        let seg = lane_segments(&headers, &[], &mut sorted, &mut order);
        // Stable by lanes: 1 lane (problems 2, 4, 7), 4 lanes (1, 3, 6, 8),
        // 16 lanes (0, 5).
        assert_eq!(order, [2, 4, 7, 1, 3, 6, 8, 0, 5]);
        for (h, &i) in sorted.iter().zip(&order) {
            assert_eq!(*h, headers[i as usize]);
        }
        assert_eq!(seg.count, 3);
        // [first workgroup, first problem, problems, lanes]: 64 problems of
        // 1 lane fit a workgroup, 16 of 4, 4 of 16.
        assert_eq!(seg.segment[0], [0, 0, 3, 1]);
        assert_eq!(seg.segment[1], [1, 3, 4, 4]);
        assert_eq!(seg.segment[2], [2, 7, 2, 16]);
        assert_eq!(seg.workgroups, 3);
        // With an order (an interleaved upload), the batch indices follow.
        let given: Vec<u32> = (0..headers.len() as u32).rev().collect();
        lane_segments(&headers, &given, &mut sorted, &mut order);
        assert_eq!(order, [6, 4, 1, 7, 5, 2, 0, 8, 3]);
        // Every power of two at once: 7 segments, within LANE_SEGMENTS.
        let all: Vec<GpuProblem> = (0..7).map(|k| header(1 << k, 0)).collect();
        let seg = lane_segments(&all, &[], &mut sorted, &mut order);
        assert_eq!(seg.count, 7);
        assert!(seg.count as usize <= LANE_SEGMENTS);
        assert_eq!(seg.workgroups, 7);
        // Many small problems: ceil(100 / 64) workgroups.
        let many = vec![header(1, 0); 100];
        assert_eq!(
            lane_segments(&many, &[], &mut sorted, &mut order).workgroups,
            2
        );
    }

    #[test]
    fn workgroup_memory_follows_the_capacity() {
        use crate::gpu::admm::{WA_CACHE, wa_cache_floats};
        // main_workgroup: λ and c of the largest problem, its triangle up to 80 rows.
        assert_eq!(wg_sizes(0), (1, 1));
        for rows in 1..1000 {
            let b = row_bucket(rows);
            assert!(
                b >= rows && (rows <= 24 || 2 * b <= 3 * rows),
                "{rows}: {b}"
            );
        }
        // (Sizes in buckets: 36 rows are sized as 48, like 33 to 48.)
        assert_eq!(wg_sizes(36), (48, tri(48)));
        assert_eq!(wg_sizes(33), wg_sizes(48));
        assert_eq!(wg_sizes(24), (24, tri(24)));
        assert_eq!(wg_sizes(3), (24, tri(24)));
        assert_eq!(
            wg_sizes(3 * WG_MAX_CONTACTS),
            (3 * WG_MAX_CONTACTS, tri(WG_G_CACHE_ROWS))
        );
        assert_eq!(wg_sizes(10_000), wg_sizes(3 * WG_MAX_CONTACTS));
        assert_eq!(wg_workgroup_bytes(10_000), WG_WORKGROUP_BYTES);
        // 12 contacts (sized as 16): 5.8 kB instead of 15.2.
        assert_eq!(
            wg_workgroup_bytes(36),
            4 * (2 * 48 + tri(48) as u64) + WG_OTHER_BYTES
        );
        assert_eq!(wg_workgroup_bytes(36), 5780);
        // ADMM's main_workgroup: the factor and G for 12 contacts (16), capped.
        assert_eq!(wa_cache_floats(36), 48 * 49);
        assert_eq!(wa_cache_floats(18), 24 * 25);
        assert_eq!(wa_cache_floats(0), 1);
        assert_eq!(wa_cache_floats(1000), WA_CACHE);
    }
}
