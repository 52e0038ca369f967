//! The packed layout of a batch of contact problems, as the kernels read it.
//!
//! A batch of `N` problems with `nc_p` contacts and `nl_p` unilateral rows
//! (joint limits) each (`m_p = 3·nc_p + nl_p`, see [`ContactProblem`]) is
//! flat arrays, every problem at an offset given by its header:
//!
//! | buffer      | element            | per problem                    | offset field     |
//! |-------------|--------------------|--------------------------------|------------------|
//! | `problems`  | [`GpuProblem`]     | 1 (48 B)                       | problem index    |
//! | `delassus`  | f32                | `m(m+1)/2`: lower triangle of G, row-major packed (`G[i][j]`, `j ≤ i`, at `i(i+1)/2 + j`); then, where some row after the contacts is not unilateral, each such row's set ([`row_bound`], `nl` floats) | `delassus_offset` |
//! | `contacts`  | [`GpuContact`]     | `b = nc + ⌈nl/3⌉` blocks of 3 rows (32 B each: g, μ, R): the contacts, then the unilateral rows three to a block | `contact_offset` |
//! | `lambda`, `c` | f32              | `3b` (row `k` at `3·contact_offset + k`; warm start in, λ out; c out; the last `3b − m` unused) | `3·contact_offset` |
//! | `results`   | [`GpuResult`]      | 1 (96 B)                       | problem index    |
//! | `work` (ADMM) | f32              | `13m + m(m+1)/2 + min(m, 96)²` (x, z_prev, u, s, tmp, best, z, c, y, Cholesky factor, polish modes, unknowns, pivots, scalars, LU factor) | `work_offset` |
//!
//! Why the unilateral rows live in `contacts`, three to a block: row `k` of
//! a problem, contact row or unilateral row alike, then has its `g` and `R`
//! at lane `k mod 3` of block `contact_offset + k/3`, and its λ and c at
//! `3·contact_offset + k`, with one index computation and no new binding
//! (the kernels already use 8 storage buffers, WebGPU's default limit); the
//! cost is at most 2 unused rows (8 B of λ and c, 16 B of a block) per
//! problem with unilateral rows. A block of unilateral rows has no μ (its
//! fourth lanes are 0); what a row is, is told by `k < 3·nc`. The rows
//! after the contacts are unilateral (`ℝ₊`, joint and tendon limits)
//! unless the header's `row_bounds` says their sets follow G's triangle:
//! bilateral (`ℝ`, equality constraints) or boxes (`[−b, b]`, dry friction),
//! one f32 per row, read only where a row is projected or judged.
//!
//! Why the lower triangle rather than the dense `m × m`: G is symmetric (the
//! host refuses one that is not), the triangle halves the upload and the
//! device memory (65 536 problems of 12 contacts: 174 MB instead of 340 MB
//! for G), and the kernels, one thread per problem, read it through one
//! index computation. Why offsets rather than padding every problem to the
//! largest: batches mix 1-contact and 64-contact problems, and padding to
//! 64 contacts would cost `(192² / 2)·4` = 74 KB per problem whatever its size.
//!
//! Capacity ([`BatchCapacity`]) is fixed when a solver is created; a batch
//! over it is refused before anything is uploaded, with the excess named.
//! A problem with more contacts than `max_contacts_per_problem` (or more
//! unilateral rows than `max_unilateral_rows_per_problem`), or that
//! fails validation (NaN, negative μ or R, asymmetric G, wrong sizes), is
//! flagged and not uploaded; the rest of the batch is solved normally.

pub use super::flags::*;
use crate::contact::{ContactProblem, RowSet};
use crate::gpu::GpuError;
use bytemuck::{Pod, Zeroable};

crate::wgsl_struct! {
    /// Kernel parameters shared by the whole batch (uniform buffer).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
    pub struct GpuParams as "Params" {
        pub num_problems: u32 => "u32",
        /// 0: NCP, 1: CCP, 2: LCP (pyramid).
        pub model: u32 => "u32",
        /// LCP: facets of the friction pyramid.
        pub facets: u32 => "u32",
        /// ADMM: adapt ρ by residual balancing (1) or keep it (0).
        pub adaptive_rho: u32 => "u32",
        /// Over-relaxation ω (PGS) or α (ADMM).
        pub omega: f32 => "f32",
        /// ADMM: initial ρ; ≤ 0 picks `0.1·L`.
        pub rho: f32 => "f32",
        /// How much one dispatch may do per problem before the problem suspends
        /// (the work is split across dispatches, see [`super::GpuSolver`]): PGS,
        /// iterations; ADMM, loop iterations (its steps have unequal costs).
        pub chunk: u32 => "u32",
        /// A loop count (16) whose shortfall reveals a driver's loop limiter.
        pub canary: u32 => "u32",
        /// PGS, one lane per contact ([`super::kernel::Decomposition::Lane`]): how many
        /// of `segment` are in use; unused by the other entry points.
        pub segments: u32 => "u32",
        /// ADMM (`ncp-admm`): polish the warm start and some iterates (1) or
        /// not (0), see `shaders/admm.wgsl`.
        pub polish: u32 => "u32",
        /// ADMM (`ncp-admm`, adaptive ρ): the stall guard (1) or not (0).
        pub stall_guard: u32 => "u32",
        /// ADMM (`ncp-admm` with the polish): semismooth Newton where the
        /// polish fails (1) or not (0), see `shaders/admm.wgsl`.
        pub newton: u32 => "u32",
        /// ADMM: stop at f32's floor under `ε_abs` (1) or not (0), see
        /// `SolverSettings::f32_floor`.
        pub floor_stop: u32 => "u32",
        /// ADMM: scale ρ per row from the start where the units' diagonals
        /// span more than this (`SolverSettings::scaled_rho`; 0: one ρ).
        pub scaled_spread: f32 => "f32",
        pub pad1: u32 => "u32",
        pub pad2: u32 => "u32",
        /// The lane kernel's segments ([`super::pgs::lane_segments`]): runs of
        /// uploaded problems with the same lanes per problem, each `[first
        /// workgroup, first problem, problems, lanes per problem]`.
        pub segment: [[u32; 4]; LANE_SEGMENTS] => "array<vec4<u32>, LANE_SEGMENTS>",
    }
}

/// The most segments of the lane kernel: one per power of two of lanes
/// per problem from 1 to 64 (WGSL `LANE_SEGMENTS`).
pub const LANE_SEGMENTS: usize = 8;

crate::wgsl_struct! {
    /// One problem's header.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
    pub struct GpuProblem as "Problem" {
        /// First f32 of the lower triangle of G in `delassus`.
        pub delassus_offset: u32 => "u32",
        /// First block in `contacts` (block `b` at `contact_offset + b·stride`).
        pub contact_offset: u32 => "u32",
        /// Contacts uploaded (0 when the problem is flagged by the host).
        pub nc: u32 => "u32",
        pub max_iterations: u32 => "u32",
        /// Target `ε_abs`.
        pub tolerance: f32 => "f32",
        /// First f32 of the ADMM scratch in `work` (element `t` at
        /// `work_offset + t·stride`).
        pub work_offset: u32 => "u32",
        /// Host flags (non-zero: the kernel skips the problem).
        pub flags: u32 => "u32",
        /// `max |G_ij|`, the scale of the positive semi-definiteness test.
        pub delassus_scale: f32 => "f32",
        /// Unilateral rows uploaded, after the contacts' `3·nc` (0 when flagged).
        pub nl: u32 => "u32",
        /// Words between consecutive elements of each of the problem's arrays
        /// (G's triangle, λ and c rows, blocks, ADMM scratch): 1 as packed by
        /// [`HostBatch`]; the number of problems of its size class where the
        /// solver interleaves them ([`Layout::Interleaved`]).
        pub stride: u32 => "u32",
        /// Row 0 of its λ and c in `lambda` and `cvel` (row `k` at
        /// `vector_offset + k·stride`): `3·contact_offset` when packed.
        pub vector_offset: u32 => "u32",
        /// 0: every row after the contacts is unilateral (`ℝ₊`).
        /// [`ROW_BOUNDS_STORED`]: the rows' sets follow G's triangle in
        /// `delassus`, one f32 per row (element `m(m+1)/2 + l` of the
        /// problem's array for row `3·nc + l`), coded by [`row_bound`]; with
        /// [`ROW_BOUNDS_CONES`] too where some are rows of a contact's cone.
        pub row_bounds: u32 => "u32",
    }
}

impl GpuProblem {
    /// Rows `m = 3·nc + nl`.
    pub fn m(&self) -> usize {
        3 * self.nc as usize + self.nl as usize
    }
    /// Its floats in `delassus`: G's triangle, then the rows' sets where
    /// [`Self::row_bounds`] says they are stored.
    pub fn delassus_len(&self) -> usize {
        tri(self.m())
            + if self.row_bounds != 0 {
                self.nl as usize
            } else {
                0
            }
    }
    /// Blocks of 3 rows in `contacts` (and `3·blocks` floats of λ, c): `nc + ⌈nl/3⌉`.
    pub fn blocks(&self) -> usize {
        blocks(self.nc as usize, self.nl as usize)
    }
}

/// How the triangles of G sit in the `delassus` buffer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Layout {
    /// Problem after problem, each triangle contiguous (as [`HostBatch`]
    /// packs them): one invocation per problem reads words `m(m+1)/2`
    /// apart from its neighbour's.
    #[default]
    Packed,
    /// Structure of arrays per size class: the problems of one size `m`
    /// (in batch order) side by side, element `t` of the `j`-th of `K` at
    /// `base + j + t·K`, so that consecutive invocations read consecutive
    /// words. The same bytes; the solver rearranges them before uploading.
    Interleaved,
}

impl Layout {
    pub const ALL: [Layout; 2] = [Layout::Packed, Layout::Interleaved];

    pub fn name(self) -> &'static str {
        match self {
            Layout::Packed => "packed",
            Layout::Interleaved => "interleaved",
        }
    }
}

impl std::str::FromStr for Layout {
    type Err = String;
    /// `packed` or `interleaved`.
    fn from_str(s: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|l| l.name() == s)
            .ok_or_else(|| format!("unknown layout `{s}` (packed, interleaved)"))
    }
}

/// A unilateral row (`ℝ₊`, a joint or tendon limit) as [`row_bound`] codes it.
pub const ROW_UNILATERAL: f32 = -1.0;
/// A bilateral row (`ℝ`, an equality constraint) as [`row_bound`] codes it
/// (far from `f32::MAX`, so that WGSL's literal of it is plainly in range).
pub const ROW_BILATERAL: f32 = 1e38;

/// A row of contact `i`'s cone (`RowSet::Cone(i)`: its spin or rolling
/// row, MuJoCo's `condim` 4 and 6) as [`row_bound`] codes it:
/// `ROW_CONE − i`. The ADMM kernels project and judge it with its contact
/// (`shaders/admm.wgsl`, `unit_extra`); the PGS kernels refuse its problem
/// ([`FLAG_CONE_ROWS`]).
pub const ROW_CONE: f32 = -2.0;
/// The most contacts a problem with cone rows may have: each contact's code
/// `ROW_CONE − i` is an integer f32 holds exactly.
pub const MAX_CONE_CONTACTS: usize = 1 << 23;
/// [`GpuProblem::row_bounds`]: the rows' sets are stored after G's triangle.
pub const ROW_BOUNDS_STORED: u32 = 1;
/// [`GpuProblem::row_bounds`]: some of those rows belong to a contact's cone.
pub const ROW_BOUNDS_CONES: u32 = 2;

/// A one-dimensional row's set as the kernels read it: [`ROW_UNILATERAL`]
/// (−1), [`ROW_BILATERAL`], a box `[−b, b]` as `b` (`0 ≤ b <
/// ROW_BILATERAL`: dry friction, MJCF's `frictionloss`), or a row of
/// contact `i`'s cone as `ROW_CONE − i` (≤ −2). `None` for a box whose
/// bound f32 cannot hold below [`ROW_BILATERAL`] (NaN, negative, too
/// large), and a cone row of a contact past [`MAX_CONE_CONTACTS`].
pub fn row_bound(set: RowSet) -> Option<f32> {
    match set {
        RowSet::Unilateral => Some(ROW_UNILATERAL),
        RowSet::Bilateral => Some(ROW_BILATERAL),
        RowSet::Box(b) => {
            let x = b as f32;
            (0.0..ROW_BILATERAL).contains(&x).then_some(x)
        }
        RowSet::Cone(i) => (i < MAX_CONE_CONTACTS).then_some(ROW_CONE - i as f32),
    }
}

/// [`GpuProblem::row_bounds`] of problem `p`.
fn row_bounds_of(p: &ContactProblem) -> u32 {
    if p.all_unilateral() {
        0
    } else if p.row_sets.iter().any(|s| matches!(s, RowSet::Cone(_))) {
        ROW_BOUNDS_STORED | ROW_BOUNDS_CONES
    } else {
        ROW_BOUNDS_STORED
    }
}

/// Floats problem `p` takes in `delassus`: G's lower triangle, then one per
/// row after the contacts where some row is not unilateral.
pub fn delassus_len(p: &ContactProblem) -> usize {
    tri(p.m()) + if p.all_unilateral() { 0 } else { p.nl() }
}

/// Blocks of 3 rows a problem of `nc` contacts and `nl` unilateral rows takes in `contacts`.
#[inline]
pub fn blocks(nc: usize, nl: usize) -> usize {
    nc + nl.div_ceil(3)
}

crate::wgsl_struct! {
    /// One contact's data: free velocity `g` with `μ` in the fourth lane, and
    /// the diagonal compliance `R` (WGSL: two `vec4<f32>`). After a problem's
    /// contacts, the same record holds three unilateral rows (`g`, `R` of rows
    /// `3·nc + 3j .. 3·nc + 3j + 3`, fourth lanes 0, unused lanes 0).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
    pub struct GpuContact as "Contact" {
        /// `[g_t1, g_t2, g_n, μ]`.
        pub g_mu: [f32; 4] => "vec4<f32>",
        /// `[R_t1, R_t2, R_n, 0]`.
        pub compliance: [f32; 4] => "vec4<f32>",
    }
}

crate::wgsl_struct! {
    /// What the kernel writes back per problem; also the state of a solve that
    /// spans several dispatches (zeroed before the first).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
    pub struct GpuResult as "SolveResult" {
        pub iterations: u32 => "u32",
        /// Host flags, plus the kernel's `FLAG_NOT_PSD`, `FLAG_DIVERGED`.
        pub flags: u32 => "u32",
        pub eps_abs: f32 => "f32",
        pub primal: f32 => "f32",
        pub dual: f32 => "f32",
        pub complementarity: f32 => "f32",
        /// ADMM: final ρ.
        pub rho: f32 => "f32",
        /// ADMM: number of factorizations of `G + R + ρI`.
        pub factorizations: u32 => "u32",
        /// 0: not started, 2: done; others: running (PGS: 1; ADMM: its phase).
        pub state: u32 => "u32",
        /// ADMM: attempt (0 warm, 1 cold restart), iteration of the last ρ
        /// change, whether ρ still adapts.
        pub attempt: u32 => "u32",
        pub last_update: u32 => "u32",
        pub adapt: u32 => "u32",
        /// ADMM: `ε_abs` at the start of the attempt, best `ε_abs` so far, and
        /// the largest eigenvalue estimate of `G + R`.
        pub start_eps: f32 => "f32",
        pub best_eps: f32 => "f32",
        pub scale: f32 => "f32",
        /// ADMM: step within a phase (power iteration, factorization column).
        pub step: u32 => "u32",
        /// ADMM: ρ before the change being factorized (0: not an adaptive
        /// change; −1: ρ's per-row weights just set, [`Self::weights`]).
        pub rho_prev: f32 => "f32",
        /// ADMM (`ncp-admm` with polish): 1 when an active-set polish or
        /// Newton's steps solved the problem, else 0.
        pub polishes: u32 => "u32",
        /// ADMM: the polish's or Newton's state (phase to return to, round,
        /// unknowns; or steps, scale, halvings).
        pub polish: u32 => "u32",
        /// ADMM stall guard: the ρ before it first raised ρ (0: never), the
        /// floor it set under the residual balancing (0: none), the best
        /// `ε_abs` of the current window and the window's first iteration.
        pub guarded_from: f32 => "f32",
        pub rho_floor: f32 => "f32",
        pub window_best: f32 => "f32",
        pub window_start: u32 => "u32",
        /// ADMM (`ncp-admm`): Newton steps taken (solved or not).
        pub newton_steps: u32 => "u32",
        /// ADMM: f32's floor under `ε_abs` at the last point judged,
        /// [`F32_ROUNDOFF`](crate::contact::criteria::F32_ROUNDOFF)`·maxᵢ(Σⱼ|(G + R)ᵢⱼλⱼ| + |gᵢ|)`: what rounding
        /// `c` costs. The solve stops at `max(tolerance, floor)`, and where it
        /// stalls within [`FLOOR_STALL_FACTOR`](crate::contact::criteria::FLOOR_STALL_FACTOR)
        /// floors (0 for the PGS kernels).
        pub eps_floor: f32 => "f32",
        /// ADMM: 1 + the iteration whose iterate first came within
        /// `FLOOR_STALL_FACTOR` floors (0: none); the stall window (100)
        /// iterations later the solve ends with its best point.
        pub floor_since: u32 => "u32",
        /// ADMM: ρ's per-row weights, as `1 / ` the largest of the units'
        /// diagonals of `G + R` (each row's weight its unit's diagonal
        /// times this, floored); 0 for one ρ so far (the stall guard may
        /// still scale it), −1 for one ρ throughout
        /// (`SolverSettings::scaled_rho`).
        pub weights: f32 => "f32",
    }
}

/// `GpuResult::state` of a problem not started (the buffer is zeroed).
pub const STATE_FRESH: u32 = 0;
/// `GpuResult::state` of a PGS problem between dispatches (ADMM uses its phases).
pub const STATE_RUNNING: u32 = 1;
/// `GpuResult::state` of a finished problem.
pub const STATE_DONE: u32 = 2;

const _: () = assert!(std::mem::size_of::<GpuParams>() == 64 + 16 * LANE_SEGMENTS);
const _: () = assert!(std::mem::size_of::<GpuProblem>() == 48);
const _: () = assert!(std::mem::size_of::<GpuContact>() == 32);
const _: () = assert!(std::mem::size_of::<GpuResult>() == 108);

/// `m(m+1)/2`.
#[inline]
pub const fn tri(m: usize) -> usize {
    m * (m + 1) / 2
}

/// Vectors of `m` floats in a problem's ADMM scratch (x, z_prev, u, s,
/// tmp, best, z, c, y: WGSL `ADMM_SLOTS`), before the factor.
pub const ADMM_SLOTS: usize = 9;

/// Vectors of `m` floats of the finishers after the factor (the polish's
/// modes, unknowns, pivots, two scalars; Newton's `(G + R)δ`, iterate's
/// `λ` and `c`, and merit: WGSL `POLISH_SLOTS`), before the `k × k` LU
/// factor they share.
pub const POLISH_SLOTS: usize = 8;

/// The most unknowns an `ncp-admm` polish takes on (WGSL
/// `POLISH_MAX_UNKNOWNS`: 3 per sticking contact, 1 per sliding contact and
/// per active row); a larger active set is not polished. It bounds the
/// polish's factor (`k²` floats of scratch per problem: 36 kB, a third of
/// a resident humanoid's scratch at its 169 rows), one column of it and
/// one triangular solve (about `k²/4` and `k²` loop iterations, within
/// lavapipe's 65 535 per dispatch). 32 contacts sticking: a humanoid lying
/// on the ground has about 20.
pub const POLISH_MAX_UNKNOWNS: usize = 96;

/// ADMM scratch floats for a problem of `m` unknowns: the iterate's
/// vectors, the Cholesky factor, the polish's vectors and its LU factor.
#[inline]
pub fn admm_work(m: usize) -> usize {
    let k = m.min(POLISH_MAX_UNKNOWNS);
    (ADMM_SLOTS + POLISH_SLOTS) * m + tri(m) + k * k
}

/// Sizes fixed when a solver is created.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchCapacity {
    pub problems: usize,
    /// Total contacts over the batch.
    pub contacts: usize,
    /// Contacts of the largest problem; a larger one is flagged, not solved.
    pub max_contacts_per_problem: usize,
    /// Total unilateral rows over the batch, each problem's count rounded up
    /// to a multiple of 3 (they are stored three to a [`GpuContact`] block).
    pub unilateral_rows: usize,
    /// Unilateral rows of the largest problem; a problem with more is
    /// flagged, not solved.
    pub max_unilateral_rows_per_problem: usize,
    /// Total f32 of the packed lower triangles (`Σ m(m+1)/2`, `m = 3·nc +
    /// nl`) and of the rows' sets of the problems whose rows are not all
    /// unilateral (`nl` each, see [`GpuProblem::row_bounds`]).
    pub delassus_floats: usize,
}

impl BatchCapacity {
    /// Room for `problems` problems of up to `contacts_per_problem` contacts
    /// each, and no unilateral rows.
    pub fn uniform(problems: usize, contacts_per_problem: usize) -> Self {
        Self::uniform_with_rows(problems, contacts_per_problem, 0)
    }

    /// Room for `problems` problems of up to `contacts_per_problem` contacts
    /// and `unilateral_rows_per_problem` unilateral rows each.
    pub fn uniform_with_rows(
        problems: usize,
        contacts_per_problem: usize,
        unilateral_rows_per_problem: usize,
    ) -> Self {
        let nl = unilateral_rows_per_problem;
        BatchCapacity {
            problems,
            contacts: problems * contacts_per_problem,
            max_contacts_per_problem: contacts_per_problem,
            unilateral_rows: problems * 3 * nl.div_ceil(3),
            max_unilateral_rows_per_problem: nl,
            // (With room for the rows' sets, should they not be unilateral.)
            delassus_floats: problems * (tri(3 * contacts_per_problem + nl) + nl),
        }
    }

    /// Exactly the room `problems` need, solved as one batch.
    pub fn for_problems(problems: &[ContactProblem]) -> Self {
        BatchCapacity {
            problems: problems.len(),
            contacts: problems.iter().map(|p| p.nc()).sum(),
            max_contacts_per_problem: problems.iter().map(|p| p.nc()).max().unwrap_or(0),
            unilateral_rows: problems.iter().map(|p| 3 * p.nl().div_ceil(3)).sum(),
            max_unilateral_rows_per_problem: problems.iter().map(|p| p.nl()).max().unwrap_or(0),
            delassus_floats: problems.iter().map(delassus_len).sum(),
        }
    }

    /// Rows of the largest problem, `3·max_contacts_per_problem + max_unilateral_rows_per_problem`.
    pub fn max_rows_per_problem(&self) -> usize {
        3 * self.max_contacts_per_problem + self.max_unilateral_rows_per_problem
    }

    /// Blocks of the `contacts` buffer: the contacts, and the unilateral rows three to a block.
    pub fn blocks(&self) -> usize {
        self.contacts + self.unilateral_rows.div_ceil(3)
    }

    /// Scratch floats ADMM needs at most: the sum over problems of
    /// `(ADMM_SLOTS + POLISH_SLOTS)·m + m(m+1)/2 + k²` with
    /// `k = min(m, POLISH_MAX_UNKNOWNS)` (`k² ≤ m² < 2·m(m+1)/2`, and at
    /// most the largest problem's for each problem).
    pub fn admm_work_floats(&self) -> usize {
        let k = self.max_rows_per_problem().min(POLISH_MAX_UNKNOWNS);
        let factors = (2 * self.delassus_floats).min(self.problems * k * k);
        (ADMM_SLOTS + POLISH_SLOTS) * 3 * self.blocks() + self.delassus_floats + factors
    }

    /// The storage a solver binds for this capacity, with `work_floats` f32
    /// of kernel scratch: (name, bytes), in binding order from 0.
    pub fn buffer_bytes(&self, work_floats: usize) -> [(&'static str, u64); 8] {
        use std::mem::size_of;
        let p = self.problems as u64;
        let c = self.blocks() as u64;
        let f32s = |n: u64| n * size_of::<f32>() as u64;
        [
            ("params", size_of::<GpuParams>() as u64),
            ("problems", size_of::<GpuProblem>() as u64 * p),
            ("delassus", f32s(self.delassus_floats as u64)),
            ("contacts", size_of::<GpuContact>() as u64 * c),
            ("lambda", f32s(3 * c)),
            ("c", f32s(3 * c)),
            ("results", size_of::<GpuResult>() as u64 * p),
            ("work", f32s(work_floats as u64)),
        ]
    }

    /// Bytes read back after a solve: λ, c and the results.
    pub fn readback_bytes(&self) -> u64 {
        let b = self.buffer_bytes(0);
        b[4].1 + b[5].1 + b[6].1 + READBACK_TAIL_BYTES
    }
}

/// Bytes of the `running_count` atomic (binding 8), and of its readback.
pub(crate) const RUNNING_COUNTER_BYTES: u64 = std::mem::size_of::<u32>() as u64;
/// GPU timestamps one round of a solve writes at most: the beginning and
/// end of its two compute passes and of its readback copies.
pub(crate) const ROUND_TIMESTAMPS: u32 = 6;
/// What the readback holds after λ, c and the results: the running counter
/// (padded to 8 bytes) and the round's timestamps (u64 ticks).
pub(crate) const READBACK_TAIL_BYTES: u64 = 8 + 8 * ROUND_TIMESTAMPS as u64;

/// A batch packed on the host, ready to upload. Reuse it across steps
/// ([`HostBatch::clear`] keeps the allocations), so that packing does not
/// allocate once it has reached its working size.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HostBatch {
    pub(crate) problems: Vec<GpuProblem>,
    pub(crate) delassus: Vec<f32>,
    /// Blocks: each problem's contacts, then its unilateral rows three to a block.
    pub(crate) contacts: Vec<GpuContact>,
    /// Warm starts (3 per block; the unused rows of a block 0).
    pub(crate) lambda: Vec<f32>,
    /// Contacts as given by the caller (a flagged problem uploads none).
    pub(crate) declared_nc: Vec<u32>,
    /// Unilateral rows as given by the caller.
    pub(crate) declared_nl: Vec<u32>,
    /// Unilateral rows uploaded, each problem's rounded up to a multiple of 3.
    pub(crate) unilateral_rows: usize,
    /// ADMM scratch floats of the problems so far.
    pub(crate) work_floats: usize,
    /// (problems) ADMM: each problem's initial ρ (0: the solver settings'),
    /// e.g. its world's last ρ; empty when no problem has one.
    pub(crate) initial_rho: Vec<f32>,
    max_contacts_per_problem: usize,
    max_unilateral_rows_per_problem: usize,
}

/// A [`HostBatch`] rearranged by size class, as the solver uploads it
/// with [`Layout::Interleaved`] ([`HostBatch::interleave_into`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct InterleavedBatch {
    /// The headers in upload order, with interleaved offsets and strides.
    pub problems: Vec<GpuProblem>,
    pub delassus: Vec<f32>,
    pub contacts: Vec<GpuContact>,
    /// The warm starts.
    pub lambda: Vec<f32>,
    /// The batch index of each uploaded header.
    pub order: Vec<u32>,
}

impl InterleavedBatch {
    /// Rows of λ or c as the device holds them (`device`, interleaved)
    /// back into the batch's packed layout (`packed`, 3 floats per block),
    /// `headers` being the batch's own (packed) headers.
    pub fn gather_vectors(&self, headers: &[GpuProblem], device: &[f32], packed: &mut [f32]) {
        for (h, &i) in self.problems.iter().zip(&self.order) {
            let p = &headers[i as usize];
            let (at, stride) = (h.vector_offset as usize, h.stride as usize);
            let rows = 3 * p.blocks();
            let dst = &mut packed[3 * p.contact_offset as usize..][..rows];
            for (r, x) in dst.iter_mut().enumerate() {
                *x = device[at + r * stride];
            }
        }
    }
}

impl HostBatch {
    /// An empty batch whose problems may have up to `max_contacts_per_problem`
    /// contacts (larger ones are flagged [`FLAG_OVER_CAPACITY`]) and any
    /// number of unilateral rows (the batch's total is checked against a
    /// solver's capacity, [`Self::check_capacity`]).
    pub fn new(max_contacts_per_problem: usize) -> Self {
        HostBatch {
            max_contacts_per_problem,
            max_unilateral_rows_per_problem: usize::MAX,
            ..Default::default()
        }
    }

    /// An empty batch with `capacity`'s per-problem limits (contacts and
    /// unilateral rows; a problem over either is flagged [`FLAG_OVER_CAPACITY`]).
    pub fn for_capacity(capacity: &BatchCapacity) -> Self {
        HostBatch {
            max_contacts_per_problem: capacity.max_contacts_per_problem,
            max_unilateral_rows_per_problem: capacity.max_unilateral_rows_per_problem,
            ..Default::default()
        }
    }

    pub fn clear(&mut self) {
        self.initial_rho.clear();
        self.problems.clear();
        self.delassus.clear();
        self.contacts.clear();
        self.lambda.clear();
        self.declared_nc.clear();
        self.declared_nl.clear();
        self.unilateral_rows = 0;
        self.work_floats = 0;
    }

    pub fn len(&self) -> usize {
        self.problems.len()
    }

    /// ADMM kernels: start problem `index` from `rho` (finite, > 0; e.g. the
    /// last ρ of its world, as the CPU simulator's warm start does) instead
    /// of the solver settings' initial ρ. Other values are ignored.
    pub fn set_initial_rho(&mut self, index: usize, rho: f64) {
        if index >= self.problems.len() || !(rho.is_finite() && rho > 0.0) {
            return;
        }
        self.initial_rho.resize(self.problems.len(), 0.0);
        self.initial_rho[index] = rho as f32;
    }

    pub fn is_empty(&self) -> bool {
        self.problems.is_empty()
    }

    /// Contacts uploaded so far.
    pub fn contacts(&self) -> usize {
        self.contacts.len() - self.unilateral_rows / 3
    }

    /// Unilateral rows uploaded so far, each problem's rounded up to a multiple of 3.
    pub fn unilateral_rows(&self) -> usize {
        self.unilateral_rows
    }

    /// Blocks of 3 rows uploaded so far (contacts and unilateral rows; `λ`
    /// and `c` have 3 floats per block).
    pub fn blocks(&self) -> usize {
        self.contacts.len()
    }

    pub fn delassus_floats(&self) -> usize {
        self.delassus.len()
    }

    /// The problems' headers, packed (stride 1), in batch order.
    pub fn headers(&self) -> &[GpuProblem] {
        &self.problems
    }

    /// ADMM scratch floats of the problems so far.
    pub fn work_floats(&self) -> usize {
        self.work_floats
    }

    /// The batch rearranged by size class ([`Layout::Interleaved`]) into
    /// `out` (reused). The headers come sorted by size class (classes in
    /// order of first appearance, each class's problems in batch order,
    /// problems without rows or flagged last): `out.problems[k]` is problem
    /// `out.order[k]` of the batch. Within a class of `K` problems, every
    /// array is interleaved: element `t` of the `j`-th member's triangle of
    /// G, row `r` of its λ (and of c, on the device), its block `b` and
    /// element `t` of its ADMM scratch sit at the class's base plus `j +
    /// t·K` (resp. `r·K`, `b·K`), so that consecutive invocations, which
    /// solve consecutive members, read consecutive words.
    pub fn interleave_into(&self, out: &mut InterleavedBatch) {
        out.delassus.clear();
        out.delassus.resize(self.delassus.len(), 0.0);
        out.contacts.clear();
        out.contacts
            .resize(self.contacts.len(), GpuContact::default());
        out.lambda.clear();
        out.lambda.resize(self.lambda.len(), 0.0);
        // Each class: its rows m, its members, and the first word of its
        // region in G, in the blocks and in the scratch.
        struct Class {
            m: usize,
            /// Floats of each member in `delassus` (G's triangle, its rows' sets).
            len: usize,
            count: usize,
            g: usize,
            block: usize,
            work: usize,
            placed: usize,
        }
        let mut classes: Vec<Class> = Vec::new();
        let class_of = |classes: &[Class], h: &GpuProblem| {
            let (m, len) = (h.m(), h.delassus_len());
            classes.iter().position(|c| c.m == m && c.len == len)
        };
        for h in &self.problems {
            let m = h.m();
            if m == 0 {
                continue;
            }
            match class_of(&classes, h) {
                Some(c) => classes[c].count += 1,
                None => classes.push(Class {
                    m,
                    len: h.delassus_len(),
                    count: 1,
                    g: 0,
                    block: 0,
                    work: 0,
                    placed: 0,
                }),
            }
        }
        let (mut g, mut block, mut work) = (0, 0, 0);
        for c in &mut classes {
            (c.g, c.block, c.work) = (g, block, work);
            g += c.count * c.len;
            // Every problem of m rows has ⌈m/3⌉ blocks, whatever its nc.
            block += c.count * c.m.div_ceil(3);
            work += c.count * admm_work(c.m);
        }
        // Stable sort by class; the problems without rows last.
        out.order.clear();
        out.order.extend(0..self.problems.len() as u32);
        out.order.sort_by_key(|&i| {
            let h = &self.problems[i as usize];
            (h.m() > 0)
                .then(|| class_of(&classes, h))
                .flatten()
                .unwrap_or(usize::MAX)
        });
        out.problems.clear();
        for &i in out.order.iter() {
            let mut h = self.problems[i as usize];
            let m = h.m();
            if let Some(c) = (m > 0).then(|| class_of(&classes, &h)).flatten() {
                let c = &mut classes[c];
                let (k, j) = (c.count, c.placed);
                let src = &self.delassus[h.delassus_offset as usize..][..c.len];
                for (t, &x) in src.iter().enumerate() {
                    out.delassus[c.g + j + t * k] = x;
                }
                let b0 = h.contact_offset as usize;
                for b in 0..h.blocks() {
                    out.contacts[c.block + j + b * k] = self.contacts[b0 + b];
                }
                for r in 0..3 * h.blocks() {
                    out.lambda[3 * c.block + j + r * k] = self.lambda[3 * b0 + r];
                }
                h.delassus_offset = (c.g + j) as u32;
                h.contact_offset = (c.block + j) as u32;
                h.vector_offset = (3 * c.block + j) as u32;
                h.work_offset = (c.work + j) as u32;
                h.stride = k as u32;
                c.placed += 1;
            }
            out.problems.push(h);
        }
    }

    fn flagged(
        &mut self,
        (nc, nl): (usize, usize),
        flags: u32,
        max_iterations: usize,
        tolerance: f64,
    ) -> usize {
        self.problems.push(GpuProblem {
            delassus_offset: self.delassus.len() as u32,
            contact_offset: self.contacts.len() as u32,
            nc: 0,
            max_iterations: max_iterations.min(u32::MAX as usize) as u32,
            tolerance: tolerance as f32,
            work_offset: self.work_floats as u32,
            flags,
            delassus_scale: 0.0,
            nl: 0,
            stride: 1,
            vector_offset: 3 * self.contacts.len() as u32,
            row_bounds: 0,
        });
        self.declared_nc.push(nc.min(u32::MAX as usize) as u32);
        self.declared_nl.push(nl.min(u32::MAX as usize) as u32);
        self.problems.len() - 1
    }

    fn header(
        &mut self,
        (nc, nl): (usize, usize),
        row_bounds: u32,
        max_iterations: usize,
        tolerance: f64,
    ) {
        let m = 3 * nc + nl;
        self.problems.push(GpuProblem {
            delassus_offset: self.delassus.len() as u32,
            contact_offset: self.contacts.len() as u32,
            nc: nc as u32,
            max_iterations: max_iterations.min(u32::MAX as usize) as u32,
            tolerance: tolerance as f32,
            work_offset: self.work_floats as u32,
            flags: 0,
            delassus_scale: 0.0,
            nl: nl as u32,
            stride: 1,
            vector_offset: 3 * self.contacts.len() as u32,
            row_bounds,
        });
        self.declared_nc.push(nc as u32);
        self.declared_nl.push(nl as u32);
        self.work_floats += admm_work(m);
    }

    /// Why `p` cannot be uploaded ([`FLAG_OVER_CAPACITY`], [`FLAG_INVALID`]), or 0.
    fn refusal(&self, p: &ContactProblem, tolerance: f64) -> u32 {
        if p.nc() > self.max_contacts_per_problem || p.nl() > self.max_unilateral_rows_per_problem {
            return FLAG_OVER_CAPACITY;
        }
        let bad_tol = !(tolerance.is_finite() && tolerance > 0.0);
        if p.validate().is_err() || bad_tol || !fits_f32(p) {
            return FLAG_INVALID;
        }
        0
    }

    /// Appends a problem (validated: a problem that fails
    /// [`ContactProblem::validate`] or has too many contacts or unilateral
    /// rows is flagged and not uploaded). Returns its index in the batch.
    pub fn push(&mut self, p: &ContactProblem, max_iterations: usize, tolerance: f64) -> usize {
        let flags = self.refusal(p, tolerance);
        self.append(&[(p, max_iterations, tolerance)], &[flags]);
        self.problems.len() - 1
    }

    /// Appends `problems` (each with its iteration cap and tolerance) as
    /// [`Self::push`] would one after the other, validating and converting
    /// them on all cores (rayon): the headers' offsets are laid out first,
    /// then each problem fills its own slices. Returns the first index.
    pub fn push_all(&mut self, problems: &[(&ContactProblem, usize, f64)]) -> usize {
        use rayon::prelude::*;
        let first = self.problems.len();
        let flags: Vec<u32> = problems
            .par_iter()
            .map(|(p, _, tol)| self.refusal(p, *tol))
            .collect();
        self.append(problems, &flags);
        first
    }

    /// Appends `problems` whose refusals (0: none) are `flags`: headers and
    /// offsets serially, the triangles, blocks and warm starts in parallel.
    fn append(&mut self, problems: &[(&ContactProblem, usize, f64)], flags: &[u32]) {
        use rayon::prelude::*;
        let h0 = self.problems.len();
        let (d0, c0) = (self.delassus.len(), self.contacts.len());
        for (&(p, max_iterations, tolerance), &f) in problems.iter().zip(flags) {
            let (nc, nl) = (p.nc(), p.nl());
            if f != 0 {
                self.flagged((nc, nl), f, max_iterations, tolerance);
                continue;
            }
            self.header((nc, nl), row_bounds_of(p), max_iterations, tolerance);
            let h = self.problems.last_mut().expect("a header was pushed");
            // The header's offsets, for the totals; the data come below.
            self.unilateral_rows += 3 * nl.div_ceil(3);
            let blocks = h.blocks();
            self.delassus
                .resize(self.delassus.len() + h.delassus_len(), 0.0);
            self.contacts
                .resize(self.contacts.len() + blocks, GpuContact::default());
        }
        self.lambda.resize(3 * self.contacts.len(), 0.0);
        // Each problem's slices, then filled on all cores.
        let mut delassus = &mut self.delassus[d0..];
        let mut contacts = &mut self.contacts[c0..];
        let mut lambda = &mut self.lambda[3 * c0..];
        let mut parts = Vec::with_capacity(problems.len());
        for (h, &(p, _, _)) in self.problems[h0..].iter_mut().zip(problems) {
            let (tri_len, blocks) = (h.delassus_len(), h.blocks());
            let (g, rest) = std::mem::take(&mut delassus).split_at_mut(tri_len);
            delassus = rest;
            let (b, rest) = std::mem::take(&mut contacts).split_at_mut(blocks);
            contacts = rest;
            let (l, rest) = std::mem::take(&mut lambda).split_at_mut(3 * blocks);
            lambda = rest;
            parts.push((h, p, g, b, l));
        }
        parts.into_par_iter().for_each(|(h, p, g, b, l)| {
            if h.flags == 0 {
                h.delassus_scale = fill(p, g, b, l);
            }
        });
    }

    /// Refuses a batch over `cap`, naming the excess.
    pub fn check_capacity(&self, cap: &BatchCapacity) -> Result<(), GpuError> {
        for (what, got, capacity) in [
            ("the number of problems", self.problems.len(), cap.problems),
            (
                "the total number of contacts",
                self.contacts(),
                cap.contacts,
            ),
            (
                "the total number of unilateral rows (each problem's rounded up to a multiple of 3)",
                self.unilateral_rows,
                cap.unilateral_rows,
            ),
            (
                "the number of Delassus floats (Σ m(m+1)/2)",
                self.delassus.len(),
                cap.delassus_floats,
            ),
        ] {
            if got > capacity {
                return Err(GpuError::CapacityExceeded {
                    what,
                    got: got as u64,
                    capacity: capacity as u64,
                });
            }
        }
        Ok(())
    }
}

/// Writes a valid problem's data in f32: the lower triangle of the
/// symmetric part of G into `tri` (row-major), its contacts' `g, μ, R` and
/// then its unilateral rows' three to a block into `blocks`, its warm start
/// into `lambda` (the unused rows of the last block 0); returns `max |G_ij|`.
fn fill(p: &ContactProblem, tri: &mut [f32], blocks: &mut [GpuContact], lambda: &mut [f32]) -> f32 {
    let (nc, m) = (p.nc(), p.m());
    let mut t = 0;
    let mut scale = 0.0f32;
    for i in 0..m {
        for j in 0..=i {
            // The symmetric part (validate accepted asymmetry up to 1e-9·max|G|).
            let v = (0.5 * (p.delassus[(i, j)] + p.delassus[(j, i)])) as f32;
            tri[t] = v;
            scale = scale.max(v.abs());
            t += 1;
        }
    }
    // The rows' sets, where the triangle is followed by them (fits_f32
    // accepted every bound).
    for (l, b) in tri[t..].iter_mut().enumerate() {
        *b = row_bound(p.row_set(l)).unwrap_or(ROW_UNILATERAL);
    }
    for (i, b) in blocks[..nc].iter_mut().enumerate() {
        let k = 3 * i;
        *b = GpuContact {
            g_mu: [
                p.g[k] as f32,
                p.g[k + 1] as f32,
                p.g[k + 2] as f32,
                p.mu[i] as f32,
            ],
            compliance: [
                p.compliance[k] as f32,
                p.compliance[k + 1] as f32,
                p.compliance[k + 2] as f32,
                0.0,
            ],
        };
    }
    // The unilateral rows, three to a block (unused lanes 0).
    for (j, b) in blocks[nc..].iter_mut().enumerate() {
        *b = GpuContact::default();
        for r in 0..3 {
            let k = 3 * nc + 3 * j + r;
            if k < m {
                b.g_mu[r] = p.g[k] as f32;
                b.compliance[r] = p.compliance[k] as f32;
            }
        }
    }
    for (l, &w) in lambda.iter_mut().zip(p.warm_start.iter()) {
        *l = w as f32;
    }
    let given = p.warm_start.len().min(lambda.len());
    lambda[given..].fill(0.0);
    scale
}

/// Whether every value of `p` fits in f32 (no overflow to infinity).
fn fits_f32(p: &ContactProblem) -> bool {
    let ok = |v: &[f64]| v.iter().all(|&x| (x as f32).is_finite());
    ok(p.delassus.as_slice())
        && ok(p.g.as_slice())
        && ok(&p.mu)
        && ok(p.compliance.as_slice())
        && ok(p.warm_start.as_slice())
        && p.row_sets.iter().all(|&set| row_bound(set).is_some())
}
