// Shared by every contact kernel: the batch's bindings, access to one problem's packed data, the
// problem-wide residuals, (G + R) lambda + g, the block test and the end of a
// solve. The Rust side compiles every kernel as the generated constants and
// structs (src/gpu/batched/shader.rs; Params, Problem, Contact and SolveResult from
// GpuParams, GpuProblem, GpuContact and GpuResult in src/gpu/batched/batch.rs),
// cone.wgsl, this file, then the kernel's own file.
// Contact 3-vectors are [t1, t2, n] (normal last). A problem's rows are its
// nc contacts' (3 each), then its nl one-dimensional rows (joint limits, the
// 1-D cone R+; equalities, R; dry friction, a box: row_bound); their g and R are stored three to a Contact block
// after the contacts', so that row k of either kind has its g and R at lane
// k % 3 of block contact_offset + k / 3, and its lambda and c at
// 3 contact_offset + k.

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> problems: array<Problem>;
@group(0) @binding(2) var<storage, read> delassus: array<f32>;
@group(0) @binding(3) var<storage, read> contacts: array<Contact>;
@group(0) @binding(4) var<storage, read_write> lambda: array<f32>;
@group(0) @binding(5) var<storage, read_write> cvel: array<f32>;
@group(0) @binding(6) var<storage, read_write> results: array<SolveResult>;
@group(0) @binding(7) var<storage, read_write> work: array<f32>;
// Problems still running at the end of a dispatch (the host clears it before
// the last dispatch of a round and reads it back).
@group(0) @binding(8) var<storage, read_write> running_count: atomic<u32>;


// The problem (or group of problems) a workgroup serves: the dispatch is
// two-dimensional where the count exceeds one dimension's limit.
fn group_index(wid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return wid.x + wid.y * nwg.x;
}

// Rows of the problem, m = 3 nc + nl.
fn rows(pr: Problem) -> u32 {
    return 3u * pr.nc + pr.nl;
}

// Element t of the problem's lower triangle of G (row-major, G[a][b] at
// t = a(a+1)/2 + b), packed (stride 1) or interleaved with the problems of
// its size class (stride: their number), see src/gpu/batched/batch.rs.
fn gtri(pr: Problem, t: u32) -> f32 {
    return delassus[pr.delassus_offset + t * pr.stride];
}

// Index of row k of the problem's λ and c (in `lambda` and `cvel`).
fn vidx(pr: Problem, k: u32) -> u32 {
    return pr.vector_offset + k * pr.stride;
}

// Block b of the problem's contacts (contact b, or after the contacts three
// unilateral rows).
fn block_at(pr: Problem, b: u32) -> Contact {
    return contacts[pr.contact_offset + b * pr.stride];
}

// G[i][j] from the lower triangle.
fn gsym(pr: Problem, i: u32, j: u32) -> f32 {
    let a = max(i, j);
    let b = min(i, j);
    return gtri(pr, a * (a + 1u) / 2u + b);
}

// The set of row k >= 3 nc, coded as src/gpu/batched/batch.rs `row_bound` codes it
// (ROW_UNILATERAL: R+; ROW_BILATERAL: R; ROW_CONE - i and below: a row of
// contact i's cone, which only ADMM reads (admm.wgsl, unit_extra); else
// the box [-b, b]; see project_row): stored after G's triangle where
// pr.row_bounds says so.
fn row_bound(pr: Problem, k: u32) -> f32 {
    if (pr.row_bounds == 0u) {
        return ROW_UNILATERAL;
    }
    let m = rows(pr);
    return gtri(pr, m * (m + 1u) / 2u + k - 3u * pr.nc);
}

// Whether some rows after the contacts belong to a contact's cone (coded
// ROW_CONE - i for contact i: torsional and rolling friction).
fn has_cone_rows(pr: Problem) -> bool {
    return (pr.row_bounds & ROW_BOUNDS_CONES) != 0u;
}

// Why a PGS kernel does not solve problem pr: the host's flags, or
// FLAG_CONE_ROWS (PGS takes three-row cones only; ADMM takes wider ones).
fn pgs_refusal(pr: Problem) -> u32 {
    return pr.flags | select(0u, FLAG_CONE_ROWS, has_cone_rows(pr));
}

fn free_velocity(pr: Problem, k: u32) -> f32 {
    return block_at(pr, k / 3u).g_mu[k % 3u];
}

fn compliance(pr: Problem, k: u32) -> f32 {
    return block_at(pr, k / 3u).compliance[k % 3u];
}

fn friction(pr: Problem, i: u32) -> f32 {
    return block_at(pr, i).g_mu.w;
}

fn get_lambda(pr: Problem, i: u32) -> vec3<f32> {
    let k = 3u * i;
    return vec3<f32>(lambda[vidx(pr, k)], lambda[vidx(pr, k + 1u)], lambda[vidx(pr, k + 2u)]);
}

fn set_lambda(pr: Problem, i: u32, v: vec3<f32>) {
    let k = 3u * i;
    lambda[vidx(pr, k)] = v.x;
    lambda[vidx(pr, k + 1u)] = v.y;
    lambda[vidx(pr, k + 2u)] = v.z;
}

fn get_c(pr: Problem, i: u32) -> vec3<f32> {
    let k = 3u * i;
    return vec3<f32>(cvel[vidx(pr, k)], cvel[vidx(pr, k + 1u)], cvel[vidx(pr, k + 2u)]);
}

// The 3x3 block W_i = G_ii + R_i of contact i (symmetric).
fn block(pr: Problem, i: u32) -> mat3x3<f32> {
    let k = 3u * i;
    let r = block_at(pr, i).compliance;
    let a00 = gsym(pr, k, k) + r.x;
    let a11 = gsym(pr, k + 1u, k + 1u) + r.y;
    let a22 = gsym(pr, k + 2u, k + 2u) + r.z;
    let a01 = gsym(pr, k + 1u, k);
    let a02 = gsym(pr, k + 2u, k);
    let a12 = gsym(pr, k + 2u, k + 1u);
    return mat3x3<f32>(vec3<f32>(a00, a01, a02), vec3<f32>(a01, a11, a12), vec3<f32>(a02, a12, a22));
}

// Maximum residuals over the problem's contacts and unilateral rows, of
// lambda and cvel.
fn problem_residuals(pr: Problem) -> vec4<f32> {
    var r = vec4<f32>(0.0);
    for (var i = 0u; i < pr.nc; i++) {
        let ri = contact_residuals(params.model, params.facets, friction(pr, i), get_lambda(pr, i), get_c(pr, i));
        r = nan_max4(r, ri);
    }
    let M = rows(pr);
    for (var k = 3u * pr.nc; k < M; k++) {
        let ri = row_residuals(lambda[vidx(pr, k)], cvel[vidx(pr, k)], row_bound(pr, k));
        r = nan_max4(r, ri);
    }
    return r;
}

// cvel = (G + R) lambda + g, exactly (no accumulated updates). The inner
// loops are unrolled by 4: lavapipe counts every loop iteration against a
// per-invocation limit (see shaders/README.md).
fn contact_velocity(pr: Problem) {
    let M = rows(pr);
    for (var i = 0u; i < M; i++) {
        var s = free_velocity(pr, i) + compliance(pr, i) * lambda[vidx(pr, i)];
        let row = i * (i + 1u) / 2u;
        // Row i of the triangle (j <= i), contiguous.
        var j = 0u;
        for (; j + 4u <= i + 1u; j += 4u) {
            s += gtri(pr, row + j) * lambda[vidx(pr, j)] + gtri(pr, row + j + 1u) * lambda[vidx(pr, j + 1u)]
                + gtri(pr, row + j + 2u) * lambda[vidx(pr, j + 2u)] + gtri(pr, row + j + 3u) * lambda[vidx(pr, j + 3u)];
        }
        for (; j <= i; j++) {
            s += gtri(pr, row + j) * lambda[vidx(pr, j)];
        }
        // Column i below the diagonal (j > i).
        j = i + 1u;
        for (; j + 4u <= M; j += 4u) {
            s += gtri(pr, j * (j + 1u) / 2u + i) * lambda[vidx(pr, j)]
                + gtri(pr, (j + 1u) * (j + 2u) / 2u + i) * lambda[vidx(pr, j + 1u)]
                + gtri(pr, (j + 2u) * (j + 3u) / 2u + i) * lambda[vidx(pr, j + 2u)]
                + gtri(pr, (j + 3u) * (j + 4u) / 2u + i) * lambda[vidx(pr, j + 3u)];
        }
        for (; j < M; j++) {
            s += gtri(pr, j * (j + 1u) / 2u + i) * lambda[vidx(pr, j)];
        }
        cvel[vidx(pr, i)] = s;
    }
}

// Refuses (FLAG_NOT_PSD) a problem with a 3x3 diagonal block of G + R that
// has a negative principal minor, like check_blocks in pgs.rs (each k x k
// minor compared with -1e-6 scale^k: f32 rounding). The unilateral rows'
// diagonal is checked by the host (ContactProblem::validate).
fn blocks_psd(pr: Problem) -> bool {
    for (var i = 0u; i < pr.nc; i++) {
        if (!block_psd(pr, i)) {
            return false;
        }
    }
    return true;
}

// Whether contact i's block passes that test.
fn block_psd(pr: Problem, i: u32) -> bool {
    let scale = pr.delassus_scale;
    let w = block(pr, i);
    let m01 = w[0][0] * w[1][1] - w[0][1] * w[0][1];
    let m02 = w[0][0] * w[2][2] - w[0][2] * w[0][2];
    let m12 = w[1][1] * w[2][2] - w[1][2] * w[1][2];
    let e1 = -1e-6 * scale;
    let e2 = e1 * scale;
    let e3 = e2 * scale;
    return !(w[0][0] < e1 || w[1][1] < e1 || w[2][2] < e1 || m01 < e2 || m02 < e2 || m12 < e2 || determinant(w) < e3);
}

// Mesa's llvmpipe / lavapipe (22.x) counts every loop iteration of an
// invocation against a limit of 65535 and, once it is reached, leaves every
// loop after one iteration. A loop of params.canary (16) iterations, run at
// the end of a dispatch, then falls short: the dispatch's results are wrong
// and the problem is flagged FLAG_LOOP_LIMIT instead of returned as solved.
fn loop_limit_reached() -> bool {
    var k = 0u;
    loop {
        k += 1u;
        if (k >= params.canary) {
            break;
        }
    }
    return k != params.canary;
}

// The flags of a problem whose dispatch the loop limit cut (flags.rs's
// cut_flags): the verdicts made before any loop, and FLAG_LOOP_LIMIT.
fn cut_flags(flags: u32) -> u32 {
    return (flags & FLAGS_KEPT_WHEN_CUT) | FLAG_LOOP_LIMIT;
}

// Whether invocation `index` has a problem still to solve (in the batch, not done).
fn pending(index: u32) -> bool {
    return index < params.num_problems && results[index].state != STATE_DONE;
}

// Whether a solve at iteration `it` with residuals `res` ends: converged,
// nothing to solve, or at its iteration cap.
fn solve_ends(pr: Problem, res: vec4<f32>, it: u32) -> bool {
    return res.w <= pr.tolerance || rows(pr) == 0u || it >= pr.max_iterations;
}

// Marks problem `index` finished with these results.
fn finish(index: u32, iterations: u32, flags: u32, r: vec4<f32>, rho: f32, factorizations: u32) {
    var st = results[index];
    st.iterations = iterations;
    st.flags = flags;
    st.eps_abs = r.w;
    st.primal = r.x;
    st.dual = r.y;
    st.complementarity = r.z;
    st.rho = rho;
    st.factorizations = factorizations;
    st.state = STATE_DONE;
    results[index] = st;
}
