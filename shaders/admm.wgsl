// Batched ADMM on the contact problem, the f32 twin of
// src/contact/solvers/admm.rs (ncp-admm: de Saxce fixed point, adaptive rho by
// residual balancing, cold restart on divergence, best iterate on the cap;
// ccp-admm: fixed rho, no correction). The kernel factorizes G + R + rho I
// itself (Cholesky of the packed lower triangle) each time rho changes.
//
// Two entry points, one per decomposition, that make the same floating-point
// operations in the same order on every row, so that they return the same
// iterates:
//   main            one invocation per problem (Decomposition::Invocation);
//   main_workgroup  one workgroup of WA_LANES invocations per problem
//                   (Decomposition::Workgroup): the mat-vecs, the factor's
//                   columns and the triangular solves spread over the lanes,
//                   the factor (and G, when both fit) in workgroup memory.
//
// A solve is a state machine whose state lives in `results` and `work`, so
// that it can suspend at the end of a dispatch and resume in the next: each
// dispatch runs steps until its loop budget (params.chunk) is spent, and
// always at least one. The steps, in order:
//   FRESH    checks, projected warm start, its residuals (a solution: done)
//   POWER    one of LANCZOS_STEPS Lanczos steps for L, the largest eigenvalue of G + R
//   ATTEMPT  start of an attempt (0: warm, 1: cold restart): z, u, start eps
//   FACTOR   one column of the Cholesky factor of G + R + rho I
//   ITERATE  one ADMM iteration (and, with adaptive rho, a possible change of
//            rho, which goes back to FACTOR)
//   FINAL    best iterate if the cap was reached, residuals, done
//
// A problem's unknowns come in units: its nc contacts (3 rows each, a
// friction cone) then its nl one-dimensional rows (1 row each, in R+, R or
// a box by row_bound, no de Saxce correction: s = 0, as in admm.rs). Every per-row and per-unit function
// below takes (first, stride) and works on units first, first + stride, ...:
// (0, 1) in `main`, (lane, WA_LANES) in `main_workgroup`, where a lane owns
// its units' rows and alone writes them.
//
// Scratch per problem in `work`, element t at pr.work_offset + t·pr.stride
// (interleaved with its size class, or packed), m = 3 nc + nl rows:
// ADMM_SLOTS vectors of m (x, z_prev, u, s, tmp, best, z, c, y), then the
// factor L (m(m+1)/2, packed lower triangle by rows). z and c are copied to
// `lambda` and `cvel` at the end of each dispatch.

// WORKGROUP_SIZE, WA_LANES, ADMM_SLOTS, RHO_*, DIVERGENCE_FACTOR,
// LANCZOS_STEPS, the phases PHASE_* (after STATE_DONE), the contact modes
// MODE_* (as f32: they live among the polish's floats) and the rows' modes
// ROW_AT_LOWER, ROW_ACTIVE, ROW_AT_UPPER are generated from Rust
// (src/gpu/admm.rs, src/gpu/shader.rs, src/contact/solvers/admm.rs).

const X: u32 = 0u;
const ZPREV: u32 = 1u;
const U: u32 = 2u;
const S: u32 = 3u;
const TMP: u32 = 4u;
const BEST: u32 = 5u;
const Z: u32 = 6u;
const C: u32 = 7u;
const Y: u32 = 8u;

// Floats of workgroup memory main_workgroup keeps the factor (and G) in:
// set per pipeline by the host (src/gpu/admm.rs), 1 for `main`, which never
// touches it.
override WA_CACHE: u32 = 1u;
var<workgroup> wa_cache: array<f32, WA_CACHE>;

// Where the factor and G are read from: workgroup memory (true) or storage.
struct Cache {
    l: bool,
    g: bool,
}

fn tri(n: u32) -> u32 {
    return n * (n + 1u) / 2u;
}

// Index of row k of scratch vector v (strided like G: see vidx).
fn wk(pr: Problem, v: u32, k: u32) -> u32 {
    return pr.work_offset + (v * rows(pr) + k) * pr.stride;
}

// Index of element t of the factor's triangle in the scratch.
fn lk(pr: Problem, t: u32) -> u32 {
    return pr.work_offset + (ADMM_SLOTS * rows(pr) + t) * pr.stride;
}

fn wv(pr: Problem, v: u32, k: u32) -> f32 {
    return work[wk(pr, v, k)];
}

fn units(pr: Problem) -> u32 {
    return pr.nc + pr.nl;
}

// First row of unit u: 3u for a contact, 3 nc + (u - nc) for a unilateral row.
fn unit_row(pr: Problem, u: u32) -> u32 {
    if (u < pr.nc) {
        return 3u * u;
    }
    return 2u * pr.nc + u;
}

fn unit_len(pr: Problem, u: u32) -> u32 {
    return select(1u, 3u, u < pr.nc);
}

// Element t of G's packed triangle (gtri), from the cache when it holds G
// (after the factor).
fn g_at(pr: Problem, ca: Cache, t: u32) -> f32 {
    if (ca.g) {
        return wa_cache[tri(rows(pr)) + t];
    }
    return gtri(pr, t);
}

fn g_sym(pr: Problem, ca: Cache, i: u32, j: u32) -> f32 {
    let a = max(i, j);
    let b = min(i, j);
    return g_at(pr, ca, tri(a) + b);
}

// Element t of the factor's packed triangle (L[i][j] at t = tri(i) + j).
fn l_at(pr: Problem, ca: Cache, t: u32) -> f32 {
    if (ca.l) {
        return wa_cache[t];
    }
    return work[lk(pr, t)];
}

fn l_put(pr: Problem, ca: Cache, t: u32, v: f32) {
    if (ca.l) {
        wa_cache[t] = v;
    } else {
        work[lk(pr, t)] = v;
    }
}

// Σ_j (G + R)_ij v_j for scratch vector v, unrolled by 4, and Σ_j |(G + R)_ij v_j|.
fn row_product(pr: Problem, ca: Cache, i: u32, v: u32) -> vec2<f32> {
    let M = rows(pr);
    var s = compliance(pr, i) * wv(pr, v, i);
    var a = abs(s);
    let row = tri(i);
    var j = 0u;
    for (; j + 4u <= i + 1u; j += 4u) {
        let p = vec4<f32>(g_at(pr, ca, row + j) * wv(pr, v, j), g_at(pr, ca, row + j + 1u) * wv(pr, v, j + 1u),
            g_at(pr, ca, row + j + 2u) * wv(pr, v, j + 2u), g_at(pr, ca, row + j + 3u) * wv(pr, v, j + 3u));
        s += p.x + p.y + p.z + p.w;
        a += dot(abs(p), vec4<f32>(1.0));
    }
    for (; j <= i; j++) {
        let p = g_at(pr, ca, row + j) * wv(pr, v, j);
        s += p;
        a += abs(p);
    }
    j = i + 1u;
    for (; j + 4u <= M; j += 4u) {
        let p = vec4<f32>(g_at(pr, ca, tri(j) + i) * wv(pr, v, j), g_at(pr, ca, tri(j + 1u) + i) * wv(pr, v, j + 1u),
            g_at(pr, ca, tri(j + 2u) + i) * wv(pr, v, j + 2u), g_at(pr, ca, tri(j + 3u) + i) * wv(pr, v, j + 3u));
        s += p.x + p.y + p.z + p.w;
        a += dot(abs(p), vec4<f32>(1.0));
    }
    for (; j < M; j++) {
        let p = g_at(pr, ca, tri(j) + i) * wv(pr, v, j);
        s += p;
        a += abs(p);
    }
    return vec2<f32>(s, a);
}

fn row_times(pr: Problem, ca: Cache, i: u32, v: u32) -> f32 {
    return row_product(pr, ca, i, v).x;
}

// --- Per-unit work: units first, first + stride, ... -------------------------

// ZPREV = U = S = BEST = 0 and TMP = the warm start, then z = P_C(tmp).
fn fresh_units(pr: Problem, first: u32, stride: u32) {
    for (var u = first; u < units(pr); u += stride) {
        let r = unit_row(pr, u);
        for (var k = r; k < r + unit_len(pr, u); k++) {
            work[wk(pr, ZPREV, k)] = 0.0;
            work[wk(pr, U, k)] = 0.0;
            work[wk(pr, S, k)] = 0.0;
            work[wk(pr, TMP, k)] = lambda[vidx(pr, k)];
            work[wk(pr, BEST, k)] = 0.0;
        }
        project_unit(pr, u);
    }
}

// z = P_C(tmp) on unit u: its friction cone, or its row's set (row_bound).
fn project_unit(pr: Problem, u: u32) {
    let r = unit_row(pr, u);
    if (u < pr.nc) {
        let v = vec3<f32>(wv(pr, TMP, r), wv(pr, TMP, r + 1u), wv(pr, TMP, r + 2u));
        let p = project_cone(friction(pr, u), v);
        work[wk(pr, Z, r)] = p.x;
        work[wk(pr, Z, r + 1u)] = p.y;
        work[wk(pr, Z, r + 2u)] = p.z;
    } else {
        work[wk(pr, Z, r)] = project_row(wv(pr, TMP, r), row_bound(pr, r));
    }
}

fn project_units(pr: Problem, first: u32, stride: u32) {
    for (var u = first; u < units(pr); u += stride) {
        project_unit(pr, u);
    }
}

// dst = value on the units' rows.
fn fill_units(pr: Problem, dst: u32, value: f32, first: u32, stride: u32) {
    for (var u = first; u < units(pr); u += stride) {
        let r = unit_row(pr, u);
        for (var k = r; k < r + unit_len(pr, u); k++) {
            work[wk(pr, dst, k)] = value;
        }
    }
}

// dst = src / d on the units' rows (d = 1: a copy).
fn divide_units(pr: Problem, src: u32, dst: u32, d: f32, first: u32, stride: u32) {
    for (var u = first; u < units(pr); u += stride) {
        let r = unit_row(pr, u);
        for (var k = r; k < r + unit_len(pr, u); k++) {
            work[wk(pr, dst, k)] = wv(pr, src, k) / d;
        }
    }
}

// v *= a on the units' rows.
fn scale_units(pr: Problem, v: u32, a: f32, first: u32, stride: u32) {
    for (var u = first; u < units(pr); u += stride) {
        let r = unit_row(pr, u);
        for (var k = r; k < r + unit_len(pr, u); k++) {
            work[wk(pr, v, k)] *= a;
        }
    }
}

// Unit u of scratch vector l (an impulse): its rows of c = (G + R) l + b
// into scratch vector cv, and its residuals of (l, c) with, in place of
// their maximum (w), the largest Σ_j |(G + R)_ij l_j| + |b_i| of its rows
// (what rounding c costs: see take_floor).
fn unit_residuals(pr: Problem, ca: Cache, u: u32, l: u32, cv: u32) -> vec4<f32> {
    let r0 = unit_row(pr, u);
    var size = 0.0;
    for (var k = r0; k < r0 + unit_len(pr, u); k++) {
        let p = row_product(pr, ca, k, l);
        let b = free_velocity(pr, k);
        work[wk(pr, cv, k)] = p.x + b;
        size = max(size, p.y + abs(b));
    }
    var r: vec4<f32>;
    if (u < pr.nc) {
        let c = vec3<f32>(wv(pr, cv, r0), wv(pr, cv, r0 + 1u), wv(pr, cv, r0 + 2u));
        let z = vec3<f32>(wv(pr, l, r0), wv(pr, l, r0 + 1u), wv(pr, l, r0 + 2u));
        r = contact_residuals(params.model, params.facets, friction(pr, u), z, c);
    } else {
        r = row_residuals(wv(pr, l, r0), wv(pr, cv, r0), row_bound(pr, r0));
    }
    return vec4<f32>(r.xyz, size);
}

// The residuals' maximum, eps_abs, of (primal, dual, complementarity, ·).
fn eps_of(r: vec4<f32>) -> f32 {
    return nan_max(nan_max(r.x, r.y), r.z);
}

// c = (G + R) z + b on the units' rows, s = s(c) (de Saxce for the NCP's
// contacts, else 0); returns the units' largest (primal, dual,
// complementarity, size of c's terms): see take_floor.
fn evaluate_units(pr: Problem, ca: Cache, first: u32, stride: u32) -> vec4<f32> {
    var r = vec4<f32>(0.0);
    for (var u = first; u < units(pr); u += stride) {
        let ru = unit_residuals(pr, ca, u, Z, C);
        let r0 = unit_row(pr, u);
        if (u < pr.nc) {
            let c = vec3<f32>(wv(pr, C, r0), wv(pr, C, r0 + 1u), wv(pr, C, r0 + 2u));
            var s = vec3<f32>(0.0);
            if (params.model == MODEL_NCP) {
                s = de_saxce(friction(pr, u), c);
            }
            work[wk(pr, S, r0)] = s.x;
            work[wk(pr, S, r0 + 1u)] = s.y;
            work[wk(pr, S, r0 + 2u)] = s.z;
        } else {
            work[wk(pr, S, r0)] = 0.0;
        }
        r = nan_max4(r, ru);
    }
    return r;
}

// f32's floor under eps_abs at the point judged (z, or a finisher's
// candidate), from the units' maxima e: rounding c_i = Σ_j (G + R)_ij z_j +
// b_i costs about F32_ROUNDOFF times the size of its terms, and residuals of
// c below that are rounding. A solve stops at max(tolerance, floor)
// (reach), and where it stalls within FLOOR_STALL_FACTOR floors
// (iteration_evaluated). Records the floor in st; returns the residuals
// with eps_abs as w.
fn take_floor(st: ptr<function, SolveResult>, e: vec4<f32>) -> vec4<f32> {
    // (Not finite: no floor, rather than one that passes anything.)
    (*st).eps_floor = select(0.0, F32_ROUNDOFF * e.w, is_finite(e.w));
    return vec4<f32>(e.xyz, eps_of(e));
}

// The residual at which the solve stops: its tolerance, or f32's floor
// at the last point judged where that is larger.
fn reach(pr: Problem, st: SolveResult) -> f32 {
    if (params.floor_stop == 0u) {
        return pr.tolerance;
    }
    return max(pr.tolerance, st.eps_floor);
}

// u = -(c + s) / rho on the units' rows (the dual of a fresh attempt).
fn dual_start_units(pr: Problem, rho: f32, first: u32, stride: u32) {
    for (var u = first; u < units(pr); u += stride) {
        let r = unit_row(pr, u);
        for (var k = r; k < r + unit_len(pr, u); k++) {
            work[wk(pr, U, k)] = -(wv(pr, C, k) + wv(pr, S, k)) / rho;
        }
    }
}

// The power iteration's start vector (not normalized).
fn power_start_units(pr: Problem, first: u32, stride: u32) {
    for (var u = first; u < units(pr); u += stride) {
        let r = unit_row(pr, u);
        for (var i = r; i < r + unit_len(pr, u); i++) {
            work[wk(pr, X, i)] = 1.0 + 0.5 * f32((i * 7919u) % 13u) / 13.0;
        }
    }
}

// tmp = (G + R) x on the units' rows.
fn power_units(pr: Problem, ca: Cache, first: u32, stride: u32) {
    for (var u = first; u < units(pr); u += stride) {
        let r = unit_row(pr, u);
        for (var i = r; i < r + unit_len(pr, u); i++) {
            work[wk(pr, TMP, i)] = row_times(pr, ca, i, X);
        }
    }
}

// Σ v_k² over all rows in order (one invocation).
fn squared_norm(pr: Problem, v: u32) -> f32 {
    var n = 0.0;
    for (var k = 0u; k < rows(pr); k++) {
        let t = wv(pr, v, k);
        n += t * t;
    }
    return n;
}

// The right-hand side of the x-update, x = -(b + s) + rho (z - u).
fn rhs_units(pr: Problem, rho: f32, first: u32, stride: u32) {
    for (var u = first; u < units(pr); u += stride) {
        let r = unit_row(pr, u);
        for (var k = r; k < r + unit_len(pr, u); k++) {
            work[wk(pr, X, k)] = -(free_velocity(pr, k) + wv(pr, S, k)) + rho * (wv(pr, Z, k) - wv(pr, U, k));
        }
    }
}

// z_prev = z, tmp = alpha x + (1 - alpha) z + u, z = P_C(tmp), u = tmp - z
// (u + x̂ − z⁺ with tmp = x̂ + u).
fn relax_project_units(pr: Problem, alpha: f32, first: u32, stride: u32) {
    for (var u = first; u < units(pr); u += stride) {
        let r = unit_row(pr, u);
        let n = unit_len(pr, u);
        for (var k = r; k < r + n; k++) {
            let zk = wv(pr, Z, k);
            work[wk(pr, ZPREV, k)] = zk;
            work[wk(pr, TMP, k)] = alpha * wv(pr, X, k) + (1.0 - alpha) * zk + wv(pr, U, k);
        }
        project_unit(pr, u);
        for (var k = r; k < r + n; k++) {
            work[wk(pr, U, k)] = wv(pr, TMP, k) - wv(pr, Z, k);
        }
    }
}

// The maxima residual balancing needs over the units' rows:
// (|x − z|, |z − z_prev|, |z|, |x|) and (|b|, |u|, 0, 0).
struct Balance {
    a: vec4<f32>,
    b: vec4<f32>,
}

fn balance_units(pr: Problem, first: u32, stride: u32) -> Balance {
    var a = vec4<f32>(0.0);
    var b = vec4<f32>(0.0);
    for (var u = first; u < units(pr); u += stride) {
        let r = unit_row(pr, u);
        for (var k = r; k < r + unit_len(pr, u); k++) {
            let zk = wv(pr, Z, k);
            let xk = wv(pr, X, k);
            a = vec4<f32>(nan_max(a.x, abs(xk - zk)), nan_max(a.y, abs(zk - wv(pr, ZPREV, k))), nan_max(a.z, abs(zk)), nan_max(a.w, abs(xk)));
            b = vec4<f32>(nan_max(b.x, abs(free_velocity(pr, k))), nan_max(b.y, abs(wv(pr, U, k))), 0.0, 0.0);
        }
    }
    return Balance(a, b);
}

// lambda = z and cvel = c on the units' rows.
fn store_units(pr: Problem, first: u32, stride: u32) {
    for (var u = first; u < units(pr); u += stride) {
        let r = unit_row(pr, u);
        for (var k = r; k < r + unit_len(pr, u); k++) {
            lambda[vidx(pr, k)] = wv(pr, Z, k);
            cvel[vidx(pr, k)] = wv(pr, C, k);
        }
    }
}

// --- The factor: column j (left-looking), in two passes ---------------------

// Pass 1: L[i][j] = (G + R + rho I)_ij − Σ_{k<j} L_ik L_jk on the units'
// rows i >= j (row j holds the pivot's square until pass 2).
fn factor_units(pr: Problem, ca: Cache, j: u32, rho: f32, first: u32, stride: u32) {
    let b = tri(j);
    for (var u = first; u < units(pr); u += stride) {
        let r = unit_row(pr, u);
        for (var i = max(r, j); i < r + unit_len(pr, u); i++) {
            let a = tri(i);
            var s = 0.0;
            var k = 0u;
            for (; k + 4u <= j; k += 4u) {
                s += l_at(pr, ca, a + k) * l_at(pr, ca, b + k) + l_at(pr, ca, a + k + 1u) * l_at(pr, ca, b + k + 1u)
                    + l_at(pr, ca, a + k + 2u) * l_at(pr, ca, b + k + 2u) + l_at(pr, ca, a + k + 3u) * l_at(pr, ca, b + k + 3u);
            }
            for (; k < j; k++) {
                s += l_at(pr, ca, a + k) * l_at(pr, ca, b + k);
            }
            var g = g_sym(pr, ca, i, j);
            if (i == j) {
                g += compliance(pr, j) + rho;
            }
            l_put(pr, ca, a + j, g - s);
        }
    }
}

// Pass 2, with ljj = sqrt of the pivot: L[j][j] = ljj, L[i][j] /= ljj below.
fn factor_scale_units(pr: Problem, ca: Cache, j: u32, ljj: f32, first: u32, stride: u32) {
    for (var u = first; u < units(pr); u += stride) {
        let r = unit_row(pr, u);
        for (var i = max(r, j); i < r + unit_len(pr, u); i++) {
            let t = tri(i) + j;
            if (i == j) {
                l_put(pr, ca, t, ljj);
            } else {
                l_put(pr, ca, t, l_at(pr, ca, t) / ljj);
            }
        }
    }
}

// Whether a pivot factorizes.
fn pivot_ok(d: f32) -> bool {
    return d > 0.0 && is_finite(d);
}

// --- x <- (L Lᵀ)⁻¹ x, by columns, one unit (diagonal block) at a time ------
//
// Forward, unit v with rows r..r+n: its block's y (from x, final once the
// units before v are done) is computed by every invocation alike; its owner
// stores it in Y; the rows i >= r + n subtract L[i][r..r+n] y, column by
// column. Backward, units in reverse: the block's z from y, stored in X by
// its owner; rows i < r subtract L[r..r+n][i] z, last column first. Every
// row sees the same subtractions in the same order as in one invocation.

// The forward block of unit v: y in .xyz (n of them).
fn forward_block(pr: Problem, ca: Cache, r: u32, n: u32) -> vec3<f32> {
    var y = vec3<f32>(0.0);
    y.x = wv(pr, X, r) / l_at(pr, ca, tri(r) + r);
    if (n == 3u) {
        let a1 = tri(r + 1u);
        let a2 = tri(r + 2u);
        y.y = (wv(pr, X, r + 1u) - l_at(pr, ca, a1 + r) * y.x) / l_at(pr, ca, a1 + r + 1u);
        y.z = ((wv(pr, X, r + 2u) - l_at(pr, ca, a2 + r) * y.x) - l_at(pr, ca, a2 + r + 1u) * y.y) / l_at(pr, ca, a2 + r + 2u);
    }
    return y;
}

// x_i -= L[i][r..r+n] y, column by column.
fn forward_row(pr: Problem, ca: Cache, i: u32, r: u32, n: u32, y: vec3<f32>) {
    let a = tri(i) + r;
    var x = wv(pr, X, i) - l_at(pr, ca, a) * y.x;
    if (n == 3u) {
        x = (x - l_at(pr, ca, a + 1u) * y.y) - l_at(pr, ca, a + 2u) * y.z;
    }
    work[wk(pr, X, i)] = x;
}

fn forward_unit(pr: Problem, ca: Cache, v: u32, owner: bool, first: u32, stride: u32) {
    let r = unit_row(pr, v);
    let n = unit_len(pr, v);
    let y = forward_block(pr, ca, r, n);
    if (owner) {
        work[wk(pr, Y, r)] = y.x;
        if (n == 3u) {
            work[wk(pr, Y, r + 1u)] = y.y;
            work[wk(pr, Y, r + 2u)] = y.z;
        }
    }
    // The units after v (those of this invocation).
    var u = first;
    if (v + 1u > first) {
        u = first + ((v + 1u - first + stride - 1u) / stride) * stride;
    }
    for (; u < units(pr); u += stride) {
        let r0 = unit_row(pr, u);
        forward_row(pr, ca, r0, r, n, y);
        if (u < pr.nc) {
            forward_row(pr, ca, r0 + 1u, r, n, y);
            forward_row(pr, ca, r0 + 2u, r, n, y);
        }
    }
}

// The backward block of unit v: z in .xyz (n of them).
fn backward_block(pr: Problem, ca: Cache, r: u32, n: u32) -> vec3<f32> {
    var z = vec3<f32>(0.0);
    if (n == 3u) {
        let a1 = tri(r + 1u);
        let a2 = tri(r + 2u);
        z.z = wv(pr, Y, r + 2u) / l_at(pr, ca, a2 + r + 2u);
        z.y = (wv(pr, Y, r + 1u) - l_at(pr, ca, a2 + r + 1u) * z.z) / l_at(pr, ca, a1 + r + 1u);
        z.x = ((wv(pr, Y, r) - l_at(pr, ca, a2 + r) * z.z) - l_at(pr, ca, a1 + r) * z.y) / l_at(pr, ca, tri(r) + r);
    } else {
        z.x = wv(pr, Y, r) / l_at(pr, ca, tri(r) + r);
    }
    return z;
}

// y_i -= L[r..r+n][i] z, last column first.
fn backward_row(pr: Problem, ca: Cache, i: u32, r: u32, n: u32, z: vec3<f32>) {
    var y = wv(pr, Y, i);
    if (n == 3u) {
        y = (y - l_at(pr, ca, tri(r + 2u) + i) * z.z) - l_at(pr, ca, tri(r + 1u) + i) * z.y;
    }
    work[wk(pr, Y, i)] = y - l_at(pr, ca, tri(r) + i) * z.x;
}

fn backward_unit(pr: Problem, ca: Cache, v: u32, owner: bool, first: u32, stride: u32) {
    let r = unit_row(pr, v);
    let n = unit_len(pr, v);
    let z = backward_block(pr, ca, r, n);
    if (owner) {
        work[wk(pr, X, r)] = z.x;
        if (n == 3u) {
            work[wk(pr, X, r + 1u)] = z.y;
            work[wk(pr, X, r + 2u)] = z.z;
        }
    }
    // The units before v (those of this invocation).
    for (var u = first; u < v; u += stride) {
        let r0 = unit_row(pr, u);
        backward_row(pr, ca, r0, r, n, z);
        if (u < pr.nc) {
            backward_row(pr, ca, r0 + 1u, r, n, z);
            backward_row(pr, ca, r0 + 2u, r, n, z);
        }
    }
}

// --- The active-set polish (the f32 twin of src/contact/solvers/polish.rs) --
//
// With params.polish (ncp-admm), the projected warm start (after FRESH) and
// every POLISH_INTERVAL-th iterate are offered to an active-set solve: each
// contact's mode is guessed from the iterate (breaking: lambda = 0; sticking:
// c = 0; sliding: lambda = lambda_N (mu t, 1) with t fixed, c_N = 0; a
// unilateral row active: c = 0), the square system H y = -E g that the modes
// make of the NCP is solved, and the candidate lambda = B y is judged by the
// same residuals as the iterates. A candidate within the tolerance ends the
// solve; otherwise the modes are revised from it (an active-set iteration,
// the sliding directions a fixed point on -c_T) for POLISH_ROUNDS rounds,
// more while eps_abs halves, at most POLISH_MAX_ROUNDS; then the solve goes
// on where it left off (the power iteration, or the next iteration: the
// polish uses only x, z_prev, tmp, y of the ADMM scratch, which those
// rewrite). Three phases, each a step of the state machine:
//   PMODES   the unknowns of the current modes and their reference values
//   PFACTOR  one column of the LU factor (partial pivoting, left-looking)
//            of H + eps I, eps = POLISH_REGULARIZATION max_e |H_ee|
//   PSOLVE   even steps: candidate lambda = B y in x, c in tmp, judged; odd
//            steps: y += (H + eps I)^-1 (-E c) (iterative refinement against
//            H from the reference, so that along the null space of a
//            rank-deficient H the solution keeps the reference's internal
//            forces); after POLISH_SOLVES solves, the round's end.
// In f32 the regularization is larger than the CPU's (1e-6 of an f32 entry
// is ten roundings). Scratch after the factor: the modes (per contact rows 3i, 3i+1: the
// sliding direction t, row 3i+2: the mode; per one-dimensional row: ROW_*),
// the unknowns' codes (a row r < m, or m + i for contact i sliding), the
// pivots, two scalars (the regularization, the last round's eps_abs), then
// H's k x k factor by columns (k <= POLISH_MAX_UNKNOWNS; the scratch has
// min(m, POLISH_MAX_UNKNOWNS)^2 floats for it). The solve's polish state:
// st.polish packs the phase to return to (4 bits), the round (5 bits) and k
// (the rest); st.step is the factor's column or the solve's step.

const PMODE: u32 = 0u;
const PUNK: u32 = 1u;
const PPIV: u32 = 2u;
const PAUX: u32 = 3u;


// Index of row k of polish vector v (after the factor).
fn pk(pr: Problem, v: u32, k: u32) -> u32 {
    let m = rows(pr);
    return pr.work_offset + (ADMM_SLOTS * m + tri(m) + v * m + k) * pr.stride;
}

fn pv(pr: Problem, v: u32, k: u32) -> f32 {
    return work[pk(pr, v, k)];
}

// Index of H's factor at (row i, column j), k x k by columns.
fn hk(pr: Problem, n: u32, i: u32, j: u32) -> u32 {
    let m = rows(pr);
    return pr.work_offset + (ADMM_SLOTS * m + tri(m) + POLISH_SLOTS * m + j * n + i) * pr.stride;
}

fn hv(pr: Problem, n: u32, i: u32, j: u32) -> f32 {
    return work[hk(pr, n, i, j)];
}

fn polish_pack(ret: u32, round: u32, k: u32) -> u32 {
    return ret | (round << 4u) | (k << 9u);
}

// st.polish with a new round and k, its phase to return to and its
// NEWTON_AFTER kept.
fn polish_repack(st: SolveResult, round: u32, k: u32) -> u32 {
    return polish_pack(polish_ret(st), round, k) | (st.polish & NEWTON_AFTER);
}

fn polish_ret(st: SolveResult) -> u32 {
    return st.polish & 15u;
}

fn polish_round(st: SolveResult) -> u32 {
    return (st.polish >> 4u) & 31u;
}

fn polish_k(st: SolveResult) -> u32 {
    return (st.polish >> 9u) & 0x3fffffu;
}

// Whether to polish the iterate z of st's evaluation.
fn polish_due(pr: Problem, st: SolveResult) -> bool {
    let eps = st.eps_abs;
    return params.polish != 0u && params.model == MODEL_NCP && eps > reach(pr, st) && is_finite(eps);
}

// Whether iteration `it` is polished: the CPU's every POLISH_INTERVAL-th,
// and iterations 2, 5 and 10, where the CPU runs its Newton finisher from
// the guess instead (not on the device). Measured on the tests' batches
// (tests/gpu_solvers.rs): the 10 cold scene problems take 44 iterations in
// all with these (150 with the CPU's alone); polishing iteration 1 already
// finds solutions of the scenes' rank-deficient problems whose internal
// forces are 1 % away from the converged one's.
fn polish_iteration(it: u32) -> bool {
    return it % POLISH_INTERVAL == 0u || it == 2u || it == 5u || it == 10u;
}

// Starts a polish of z that returns to phase `ret` if it fails.
fn polish_start(st: ptr<function, SolveResult>, ret: u32) {
    (*st).polish = polish_pack(ret, 0u, 0u);
    (*st).step = 0u;
    (*st).state = PHASE_PMODES;
}

// The polish failed: Newton steps where it was started with NEWTON_AFTER
// (as the CPU's Finisher::Both), else back to where it was started (the
// caller starts the power iteration when that is where it goes).
fn polish_failed(pr: Problem, st: ptr<function, SolveResult>) {
    let ret = polish_ret(*st);
    if (((*st).polish & NEWTON_AFTER) != 0u && newton_due(pr, *st)) {
        newton_start(st, ret);
        return;
    }
    (*st).state = ret;
    (*st).step = 0u;
    if (ret == PHASE_POWER) {
        (*st).scale = 0.0;
    }
}

// (G + R)[a][b].
fn gr(pr: Problem, ca: Cache, a: u32, b: u32) -> f32 {
    var v = g_sym(pr, ca, a, b);
    if (a == b) {
        v += compliance(pr, a);
    }
    return v;
}

// The equation row of unknown code c: its row, or a sliding contact's normal.
fn polish_equation(m: u32, code: u32) -> u32 {
    return select(3u * (code - m) + 2u, code, code < m);
}

// H[e][j] = E (G + R) B: row e's equation against unknown j's column of B.
fn polish_entry(pr: Problem, ca: Cache, e: u32, j: u32) -> f32 {
    let m = rows(pr);
    let row = polish_equation(m, u32(pv(pr, PUNK, e)));
    let code = u32(pv(pr, PUNK, j));
    if (code < m) {
        return gr(pr, ca, row, code);
    }
    let i = code - m;
    let r = 3u * i;
    let mu = friction(pr, i);
    return mu * pv(pr, PMODE, r) * gr(pr, ca, row, r) + mu * pv(pr, PMODE, r + 1u) * gr(pr, ca, row, r + 1u) + gr(pr, ca, row, r + 2u);
}

// Round 0: each contact's mode and each row's activity guessed from z.
// Returns false when z is zero (nothing to polish).
fn polish_guess(pr: Problem) -> bool {
    let m = rows(pr);
    var scale = 0.0;
    for (var k = 0u; k < m; k++) {
        scale = max(scale, abs(wv(pr, Z, k)));
    }
    if (!(scale > 0.0)) {
        return false;
    }
    let zero = 1e-7 * scale;
    for (var i = 0u; i < pr.nc; i++) {
        let r = 3u * i;
        let l = vec3<f32>(wv(pr, Z, r), wv(pr, Z, r + 1u), wv(pr, Z, r + 2u));
        let mu = friction(pr, i);
        let lt = length(l.xy);
        var mode = MODE_SLIDING;
        var t = vec2<f32>(0.0);
        if (l.z <= zero) {
            mode = MODE_BREAKING;
        } else if (mu > 0.0 && lt < mu * l.z * (1.0 - 1e-5)) {
            mode = MODE_STICKING;
        } else if (lt > 0.0) {
            t = l.xy / lt;
        }
        work[pk(pr, PMODE, r)] = t.x;
        work[pk(pr, PMODE, r + 1u)] = t.y;
        work[pk(pr, PMODE, r + 2u)] = mode;
    }
    for (var k = 3u * pr.nc; k < m; k++) {
        let b = row_bound(pr, k);
        let z = wv(pr, Z, k);
        var mode = ROW_ACTIVE;
        if (z <= row_lower(b) + zero) {
            mode = ROW_AT_LOWER;
        } else if (z >= row_upper(b) - zero) {
            mode = ROW_AT_UPPER;
        }
        work[pk(pr, PMODE, k)] = mode;
    }
    work[pk(pr, PAUX, 1u)] = 3.4e38;
    return true;
}

// The modes revised from the candidate (x) and its velocity (tmp): a
// contact pulling becomes breaking, a breaking one penetrating sticking, a
// sticking one outside its cone sliding, a sliding one's direction against
// c_T (maximum dissipation); a row active while it pushes, else active
// where it penetrates. Returns whether anything changed.
fn polish_revise(pr: Problem) -> bool {
    let m = rows(pr);
    var changed = false;
    for (var i = 0u; i < pr.nc; i++) {
        let r = 3u * i;
        let l = vec3<f32>(wv(pr, X, r), wv(pr, X, r + 1u), wv(pr, X, r + 2u));
        let c = vec3<f32>(wv(pr, TMP, r), wv(pr, TMP, r + 1u), wv(pr, TMP, r + 2u));
        let mode = pv(pr, PMODE, r + 2u);
        let t = vec2<f32>(pv(pr, PMODE, r), pv(pr, PMODE, r + 1u));
        var new_mode = mode;
        var nt = t;
        if (mode == MODE_BREAKING) {
            if (c.z < 0.0) {
                new_mode = MODE_STICKING;
            }
        } else if (l.z < 0.0) {
            new_mode = MODE_BREAKING;
        } else if (mode == MODE_STICKING) {
            let lt = length(l.xy);
            if (lt > friction(pr, i) * l.z && lt > 0.0) {
                new_mode = MODE_SLIDING;
                nt = l.xy / lt;
            }
        } else {
            let ct = length(c.xy);
            if (ct > 0.0) {
                nt = -c.xy / ct;
            }
        }
        if (new_mode != mode || (new_mode == MODE_SLIDING && any(nt != t))) {
            changed = true;
        }
        work[pk(pr, PMODE, r)] = nt.x;
        work[pk(pr, PMODE, r + 1u)] = nt.y;
        work[pk(pr, PMODE, r + 2u)] = new_mode;
    }
    for (var k = 3u * pr.nc; k < m; k++) {
        let b = row_bound(pr, k);
        let mode = pv(pr, PMODE, k);
        let l = wv(pr, X, k);
        let c = wv(pr, TMP, k);
        var new_mode = mode;
        if (mode == ROW_ACTIVE) {
            if (l < row_lower(b)) {
                new_mode = ROW_AT_LOWER;
            } else if (l > row_upper(b)) {
                new_mode = ROW_AT_UPPER;
            }
        } else if ((mode == ROW_AT_LOWER && c < 0.0) || (mode == ROW_AT_UPPER && c > 0.0)) {
            new_mode = ROW_ACTIVE;
        }
        if (new_mode != mode) {
            changed = true;
        }
        work[pk(pr, PMODE, k)] = new_mode;
    }
    return changed;
}

// PMODES: the unknowns of the modes (codes), their values in the reference
// (z in round 0, else the last candidate x) in y, and the regularization.
// Returns k, or 0xffffffff when there are too many to polish.
fn polish_unknowns(pr: Problem, ca: Cache, reference: u32) -> u32 {
    let m = rows(pr);
    var k = 0u;
    for (var i = 0u; i < pr.nc; i++) {
        let r = 3u * i;
        let mode = pv(pr, PMODE, r + 2u);
        if (mode == MODE_STICKING) {
            for (var s = 0u; s < 3u; s++) {
                if (k < POLISH_MAX_UNKNOWNS) {
                    work[pk(pr, PUNK, k)] = f32(r + s);
                    work[wk(pr, Y, k)] = wv(pr, reference, r + s);
                }
                k += 1u;
            }
        } else if (mode == MODE_SLIDING) {
            if (k < POLISH_MAX_UNKNOWNS) {
                work[pk(pr, PUNK, k)] = f32(m + i);
                work[wk(pr, Y, k)] = max(wv(pr, reference, r + 2u), 0.0);
            }
            k += 1u;
        }
    }
    for (var r = 3u * pr.nc; r < m; r++) {
        if (pv(pr, PMODE, r) == ROW_ACTIVE) {
            if (k < POLISH_MAX_UNKNOWNS) {
                work[pk(pr, PUNK, k)] = f32(r);
                work[wk(pr, Y, k)] = wv(pr, reference, r);
            }
            k += 1u;
        }
    }
    if (k > POLISH_MAX_UNKNOWNS) {
        return 0xffffffffu;
    }
    var hmax = 0.0;
    for (var e = 0u; e < k; e++) {
        hmax = max(hmax, abs(polish_entry(pr, ca, e, e)));
    }
    work[pk(pr, PAUX, 0u)] = POLISH_REGULARIZATION * hmax;
    return k;
}

// PFACTOR: column j of the LU factor of H + eps I (left-looking, with the
// earlier columns' row swaps applied to it, then its own pivot's swap
// applied to the earlier columns), as lu_factor in linalg.rs makes by
// right-looking steps: P (H + eps I) = L U. Returns false on a zero pivot.
// With scale > 0, the column of Newton's matrix instead (newton_entry, n = m).
fn polish_factor_column(pr: Problem, ca: Cache, n: u32, j: u32, scale: f32) -> bool {
    let eps = pv(pr, PAUX, 0u);
    for (var e = 0u; e < n; e++) {
        var h = 0.0;
        if (scale > 0.0) {
            h = newton_entry(pr, ca, scale, e, j);
        } else {
            h = polish_entry(pr, ca, e, j);
        }
        if (e == j) {
            h += eps;
        }
        work[hk(pr, n, e, j)] = h;
    }
    for (var p = 0u; p < j; p++) {
        let q = u32(pv(pr, PPIV, p));
        if (q != p) {
            let a = hv(pr, n, p, j);
            work[hk(pr, n, p, j)] = hv(pr, n, q, j);
            work[hk(pr, n, q, j)] = a;
        }
    }
    // U's rows above the diagonal (unit L), then the rest of the column.
    for (var i = 1u; i < n; i++) {
        let top = min(i, j);
        var s = hv(pr, n, i, j);
        var p = 0u;
        for (; p + 4u <= top; p += 4u) {
            s -= hv(pr, n, i, p) * hv(pr, n, p, j) + hv(pr, n, i, p + 1u) * hv(pr, n, p + 1u, j)
                + hv(pr, n, i, p + 2u) * hv(pr, n, p + 2u, j) + hv(pr, n, i, p + 3u) * hv(pr, n, p + 3u, j);
        }
        for (; p < top; p++) {
            s -= hv(pr, n, i, p) * hv(pr, n, p, j);
        }
        work[hk(pr, n, i, j)] = s;
    }
    var q = j;
    var best = abs(hv(pr, n, j, j));
    for (var i = j + 1u; i < n; i++) {
        let v = abs(hv(pr, n, i, j));
        if (v > best) {
            q = i;
            best = v;
        }
    }
    if (!(best > 0.0) || !is_finite(best)) {
        return false;
    }
    work[pk(pr, PPIV, j)] = f32(q);
    if (q != j) {
        for (var p = 0u; p <= j; p++) {
            let a = hv(pr, n, j, p);
            work[hk(pr, n, j, p)] = hv(pr, n, q, p);
            work[hk(pr, n, q, p)] = a;
        }
    }
    let d = hv(pr, n, j, j);
    for (var i = j + 1u; i < n; i++) {
        work[hk(pr, n, i, j)] = hv(pr, n, i, j) / d;
    }
    return true;
}

// PSOLVE, even steps: the candidate lambda = B y in x, c = (G + R) x + g in
// tmp (as evaluate_units makes c from z), and its eps_abs.
fn polish_candidate(pr: Problem, ca: Cache, n: u32, st: ptr<function, SolveResult>) -> f32 {
    let m = rows(pr);
    for (var k = 0u; k < m; k++) {
        work[wk(pr, X, k)] = 0.0;
    }
    // The rows fixed on a bound (0 for a unilateral row's).
    for (var k = 3u * pr.nc; k < m; k++) {
        let mode = pv(pr, PMODE, k);
        if (mode == ROW_AT_LOWER) {
            work[wk(pr, X, k)] = row_lower(row_bound(pr, k));
        } else if (mode == ROW_AT_UPPER) {
            work[wk(pr, X, k)] = row_upper(row_bound(pr, k));
        }
    }
    for (var j = 0u; j < n; j++) {
        let code = u32(pv(pr, PUNK, j));
        let y = wv(pr, Y, j);
        if (code < m) {
            work[wk(pr, X, code)] = y;
        } else {
            let i = code - m;
            let r = 3u * i;
            let mu = friction(pr, i);
            work[wk(pr, X, r)] = mu * pv(pr, PMODE, r) * y;
            work[wk(pr, X, r + 1u)] = mu * pv(pr, PMODE, r + 1u) * y;
            work[wk(pr, X, r + 2u)] = y;
        }
    }
    return judge_candidate(pr, ca, st);
}

// c of the candidate x into tmp; returns its eps_abs and records f32's floor
// at x in st (take_floor), by which it is judged.
fn judge_candidate(pr: Problem, ca: Cache, st: ptr<function, SolveResult>) -> f32 {
    var r = vec4<f32>(0.0);
    for (var u = 0u; u < units(pr); u++) {
        let ru = unit_residuals(pr, ca, u, X, TMP);
        r = nan_max4(r, ru);
    }
    return take_floor(st, r).w;
}

// How far (in radians, about) a sliding direction may be from that of -c_T
// where |c_T| = n: POLISH_DIRECTION_TOLERANCE, or as far as f32 can tell
// c_T's direction, DIRECTION_FLOORS floors (take_floor) over n, where
// that is larger. (Measured on tests/data/quadruped_random_torques_f32.json:
// with POLISH_DIRECTION_TOLERANCE alone, Newton's candidates from the
// guess were never judged settled where the CPU's were, problem 7's of
// 6.4e-7 among them, and the solves ran 400 to 1000 iterations.)
fn direction_tolerance(st: SolveResult, n: f32) -> f32 {
    return max(POLISH_DIRECTION_TOLERANCE, DIRECTION_FLOORS * st.eps_floor / n);
}

// Whether every sliding contact's direction t is that of -c_T within
// POLISH_DIRECTION_TOLERANCE (maximum dissipation). The residuals that judge
// a candidate are of second order in the direction's error (a sliding
// contact's complementarity is mu lambda_N |c_T| (1 - cos theta)): at
// f32's tolerances they pass directions 0.05 rad off, and lambda_T with them
// (measured on the quadruped's problems, tests/batch_gradients.rs). A slip
// slower than the tolerance (or f32's floor, reach) is not checked: its
// direction is rounding (a humanoid's feet at the edge of sticking kept
// every polish from settling).
fn polish_directions_settled(pr: Problem, st: SolveResult) -> bool {
    let slow = reach(pr, st);
    for (var i = 0u; i < pr.nc; i++) {
        let r = 3u * i;
        if (pv(pr, PMODE, r + 2u) != MODE_SLIDING) {
            continue;
        }
        let ct = vec2<f32>(wv(pr, TMP, r), wv(pr, TMP, r + 1u));
        let n = length(ct);
        let t = vec2<f32>(pv(pr, PMODE, r), pv(pr, PMODE, r + 1u));
        if (n > slow && length(t + ct / n) > direction_tolerance(st, n)) {
            return false;
        }
    }
    return true;
}

// v = (L U)^-1 P v in place, for scratch vector v of n rows (the factor
// of polish_factor_column).
fn lu_solve_in_place(pr: Problem, n: u32, v: u32) {
    for (var p = 0u; p < n; p++) {
        let q = u32(pv(pr, PPIV, p));
        if (q != p) {
            let a = wv(pr, v, p);
            work[wk(pr, v, p)] = wv(pr, v, q);
            work[wk(pr, v, q)] = a;
        }
    }
    for (var i = 1u; i < n; i++) {
        var s = wv(pr, v, i);
        for (var p = 0u; p < i; p++) {
            s -= hv(pr, n, i, p) * wv(pr, v, p);
        }
        work[wk(pr, v, i)] = s;
    }
    for (var ii = n; ii > 0u; ii--) {
        let i = ii - 1u;
        var s = wv(pr, v, i);
        for (var p = i + 1u; p < n; p++) {
            s -= hv(pr, n, i, p) * wv(pr, v, p);
        }
        work[wk(pr, v, i)] = s / hv(pr, n, i, i);
    }
}

// PSOLVE, odd steps: y += (L U)^-1 P (-E c), the correction in z_prev.
fn polish_refine(pr: Problem, n: u32) {
    let m = rows(pr);
    for (var e = 0u; e < n; e++) {
        work[wk(pr, ZPREV, e)] = -wv(pr, TMP, polish_equation(m, u32(pv(pr, PUNK, e))));
    }
    lu_solve_in_place(pr, n, ZPREV);
    for (var e = 0u; e < n; e++) {
        work[wk(pr, Y, e)] = wv(pr, Y, e) + wv(pr, ZPREV, e);
    }
}

// One step of the polish (one invocation does it all; in main_workgroup,
// lane 0). On success z holds the candidate, evaluated (c, s, best) and the
// solve is done.
fn polish_step(pr: Problem, ca: Cache, st: ptr<function, SolveResult>) {
    let round = polish_round(*st);
    let n = polish_k(*st);
    if ((*st).state == PHASE_PMODES) {
        if (round == 0u && !polish_guess(pr)) {
            polish_failed(pr, st);
            return;
        }
        let k = polish_unknowns(pr, ca, select(X, Z, round == 0u));
        if (k == 0xffffffffu) {
            polish_failed(pr, st);
            return;
        }
        (*st).polish = polish_repack(*st, round, k);
        (*st).step = 0u;
        (*st).state = select(PHASE_PFACTOR, PHASE_PSOLVE, k == 0u);
    } else if ((*st).state == PHASE_PFACTOR) {
        if (!polish_factor_column(pr, ca, n, (*st).step, 0.0)) {
            polish_failed(pr, st);
            return;
        }
        (*st).step += 1u;
        if ((*st).step == n) {
            (*st).step = 0u;
            (*st).state = PHASE_PSOLVE;
        }
    } else if ((*st).step % 2u == 1u) {
        polish_refine(pr, n);
        (*st).step += 1u;
    } else {
        let eps = polish_candidate(pr, ca, n, st);
        // Judged after the last refinement only: an earlier candidate can
        // meet the tolerance on c while its lambda still carries the
        // regularization's bias along H's small eigenvalues (measured: 3e-3
        // of |lambda| on the quadruped's problems, tests/batch_gradients.rs).
        let last_solve = (*st).step >= 2u * POLISH_SOLVES || n == 0u;
        let settled = polish_directions_settled(pr, *st);
        if (last_solve && eps <= reach(pr, *st) && settled) {
            divide_units(pr, X, Z, 1.0, 0u, 1u);
            if (record(st, take_floor(st, evaluate_units(pr, ca, 0u, 1u)))) {
                divide_units(pr, Z, BEST, 1.0, 0u, 1u);
            }
            (*st).polishes += 1u;
            if (polish_ret(*st) == PHASE_POWER) {
                // Before any rho was chosen: the problem's initial one, as
                // fresh_evaluated reports for a warm start that solves.
                (*st).rho = select(max(params.rho, 0.0), (*st).rho, (*st).rho > 0.0);
            }
            (*st).state = STATE_DONE;
            return;
        }
        if (!last_solve) {
            (*st).step += 1u;
            return;
        }
        // A candidate better than every iterate so far is what the solve
        // returns if it reaches its cap (as the CPU's `polished`).
        if (settled) {
            keep_if_best(pr, st, eps);
        }
        // The round's end: go on while rounds remain and eps_abs halves,
        // with the modes revised from the candidate.
        let last = pv(pr, PAUX, 1u);
        work[pk(pr, PAUX, 1u)] = eps;
        // (Within the tolerance but with sliding directions still turning:
        // on while rounds remain, whether or not eps_abs halves.)
        let turning = eps <= reach(pr, *st) && !settled;
        if ((round + 1u >= POLISH_ROUNDS && !(eps < 0.5 * last) && !turning) || round + 1u >= POLISH_MAX_ROUNDS || !polish_revise(pr)) {
            polish_failed(pr, st);
            return;
        }
        (*st).polish = polish_repack(*st, round + 1u, 0u);
        (*st).step = 0u;
        (*st).state = PHASE_PMODES;
    }
}

// Loop iterations of the next polish step (one invocation).
fn polish_step_cost(pr: Problem, st: SolveResult) -> u32 {
    let m = rows(pr);
    let n = polish_k(st);
    switch st.state {
        case PHASE_PMODES: {
            return 12u * m + 16u;
        }
        case PHASE_PFACTOR: {
            return n * (st.step / 4u + 8u) + 2u * st.step + 16u;
        }
        default: { // PHASE_PSOLVE
            if (st.step % 2u == 1u) {
                return n * (n + 4u) + 16u;
            }
            return m * (m / 4u + 8u) + 8u * m + n + 16u;
        }
    }
}

// --- Semismooth Newton (the f32 twin of src/contact/solvers/newton.rs) -------
//
// With params.newton (ncp-admm), where the CPU runs its Newton finisher:
// from the guess z once the attempt's first factorization has passed (G is
// PSD), and after a failed polish of every POLISH_INTERVAL-th iterate.
// Newton steps on the Alart-Curnier function F(lambda) (per contact, with
// c = (G + R) lambda + g and a scale r: F_N = lambda_N - max(0, lambda_N -
// r c_N), F_T = lambda_T - P_D(mu max(0, lambda_N - r c_N))(lambda_T - r
// c_T); per one-dimensional row F = lambda - P_S(lambda - r c), S its set): each solves
// (dF/dlambda + dF/dc (G + R)) delta = -F with an element of the
// generalized Jacobian (LU with partial pivoting of J + eps I, refined
// against J), then backtracks on ||F||^2. The iterate after each step is
// judged as the polish's candidates are (eps_abs within the tolerance, every
// sliding direction that of -c_T); at most NEWTON_STEPS steps per scale of
// r (1, then 100, each from z); where none solves, the solve goes on where
// it left off (Newton uses x, z_prev, tmp, y and the polish's scratch).
// Only problems of at most POLISH_MAX_UNKNOWNS rows (J's factor takes the
// polish's k x k floats, k = m). Phases, each a step of the state machine:
//   NSTART   lambda = z in x, its c in tmp
//   NJAC     F (PF), ||F||^2 (PPHI), eps = NEWTON_REGULARIZATION max |J_ee|
//   NFACTOR  one column of the LU factor of J + eps I
//   NSOLVE   delta in z_prev: step 0 solves, steps 1 .. NEWTON_SOLVES - 1
//            refine (the residual -F - J delta in y, J delta from (G + R)
//            delta in PAD); after the last, (G + R) delta in PAD and the
//            iterate's lambda and c in PL0 and PC0
//   NLINE    one trial of the line search, lambda + t delta with t = 2^-h:
//            rejected, h + 1; accepted, the breaking blocks set to zero, c
//            recomputed, judged, and the next step (NJAC)
// The differences from the CPU: eps is relative to J's largest diagonal
// entry (not its largest entry; a pass over J per step), c is recomputed
// exactly after each accepted step, and the scales are tried in the same
// order for every problem (the CPU starts from the last that solved).
// st.polish packs the phase to return to (4 bits), the steps taken (4
// bits), the scale's index (1 bit) and h (4 bits); st.step is the factor's
// column or the solve's step.

// Newton's vectors after the polish's: (G + R) delta, the iterate's lambda
// and c (from NJAC to NSOLVE's end, F in c's place), and ||F||^2 (row 0).
const PAD: u32 = 4u;
const PL0: u32 = 5u;
const PC0: u32 = 6u;
const PF: u32 = 6u;
const PPHI: u32 = 7u;

// st.polish of a polish after whose failure Newton runs.
const NEWTON_AFTER: u32 = 0x80000000u;

fn newton_pack(ret: u32, steps: u32, scale: u32, h: u32) -> u32 {
    return ret | (steps << 4u) | (scale << 8u) | (h << 9u);
}

fn newton_taken(st: SolveResult) -> u32 {
    return (st.polish >> 4u) & 15u;
}

fn newton_scale_index(st: SolveResult) -> u32 {
    return (st.polish >> 8u) & 1u;
}

fn newton_halvings(st: SolveResult) -> u32 {
    return (st.polish >> 9u) & 15u;
}

fn newton_scale(st: SolveResult) -> f32 {
    return select(NEWTON_SCALE_0, NEWTON_SCALE_1, newton_scale_index(st) == 1u);
}

// Whether to run Newton from an iterate of residual eps.
fn newton_due(pr: Problem, st: SolveResult) -> bool {
    return params.newton != 0u && polish_due(pr, st) && rows(pr) <= POLISH_MAX_UNKNOWNS;
}

fn newton_start(st: ptr<function, SolveResult>, ret: u32) {
    (*st).polish = newton_pack(ret, 0u, 0u, 0u);
    (*st).step = 0u;
    (*st).state = PHASE_NSTART;
}

// Newton failed at both scales: back to where it was started.
fn newton_failed(st: ptr<function, SolveResult>) {
    (*st).state = polish_ret(*st);
    (*st).step = 0u;
}

// This scale's steps failed: the next scale from z, or back.
fn newton_attempt_failed(st: ptr<function, SolveResult>) {
    if (newton_scale_index(*st) == 0u) {
        (*st).polish = newton_pack(polish_ret(*st), 0u, 1u, 0u);
        (*st).step = 0u;
        (*st).state = PHASE_NSTART;
    } else {
        newton_failed(st);
    }
}

// The unit of row k.
fn row_unit(pr: Problem, k: u32) -> u32 {
    if (k < 3u * pr.nc) {
        return k / 3u;
    }
    return k - 2u * pr.nc;
}

// r of unit u: scale over the mean diagonal entry of its block of G + R.
fn newton_r(pr: Problem, ca: Cache, u: u32, scale: f32) -> f32 {
    let k = unit_row(pr, u);
    var tr = gr(pr, ca, k, k);
    var n = 1.0;
    if (u < pr.nc) {
        tr += gr(pr, ca, k + 1u, k + 1u) + gr(pr, ca, k + 2u, k + 2u);
        n = 3.0;
    }
    return scale * select(1.0, n / tr, tr > 0.0);
}

// One unit's F and its rows of dF/dlambda (l0, l1, l2) and dF/dc (c0, c1,
// c2); a unilateral row's in the x components of f, l0 and c0.
struct NewtonUnit {
    f: vec3<f32>,
    l0: vec3<f32>,
    l1: vec3<f32>,
    l2: vec3<f32>,
    c0: vec3<f32>,
    c1: vec3<f32>,
    c2: vec3<f32>,
    r: f32,
}

// Unit u's piece of F at (lambda, c) in scratch vectors (lv, cv).
fn newton_unit(pr: Problem, ca: Cache, u: u32, scale: f32, lv: u32, cv: u32) -> NewtonUnit {
    var b: NewtonUnit;
    let r = newton_r(pr, ca, u, scale);
    b.r = r;
    let k = unit_row(pr, u);
    if (u >= pr.nc) {
        // F = lambda - P_S(lambda - r c): on a bound's piece lambda - bound,
        // else r c.
        let l = wv(pr, lv, k);
        let c = wv(pr, cv, k);
        let bound = row_bound(pr, k);
        let w = l - r * c;
        if (w <= row_lower(bound)) {
            b.f.x = l - row_lower(bound);
            b.l0.x = 1.0;
        } else if (w >= row_upper(bound)) {
            b.f.x = l - row_upper(bound);
            b.l0.x = 1.0;
        } else {
            b.f.x = r * c;
            b.c0.x = r;
        }
        return b;
    }
    let l = vec3<f32>(wv(pr, lv, k), wv(pr, lv, k + 1u), wv(pr, lv, k + 2u));
    let c = vec3<f32>(wv(pr, cv, k), wv(pr, cv, k + 1u), wv(pr, cv, k + 2u));
    let rn = l.z - r * c.z;
    if (rn <= 0.0) {
        // Breaking: F = lambda.
        b.f = l;
        b.l0 = vec3<f32>(1.0, 0.0, 0.0);
        b.l1 = vec3<f32>(0.0, 1.0, 0.0);
        b.l2 = vec3<f32>(0.0, 0.0, 1.0);
        return b;
    }
    b.c2 = vec3<f32>(0.0, 0.0, r);
    let mu = friction(pr, u);
    let w = l.xy - r * c.xy;
    let nw = length(w);
    let rad = mu * rn;
    if (rad > 0.0 && nw <= rad) {
        // Sticking: F = r c.
        b.f = r * c;
        b.c0 = vec3<f32>(r, 0.0, 0.0);
        b.c1 = vec3<f32>(0.0, r, 0.0);
    } else if (nw > 0.0) {
        // Sliding: F_T = lambda_T - rad w / |w|.
        let t = w / nw;
        let s = rad / nw;
        let p = vec3<f32>(s * (1.0 - t.x * t.x), -s * t.x * t.y, s * (1.0 - t.y * t.y));
        b.f = vec3<f32>(l.xy - rad * t, r * c.z);
        b.l0 = vec3<f32>(1.0 - p.x, -p.y, -mu * t.x);
        b.l1 = vec3<f32>(-p.y, 1.0 - p.z, -mu * t.y);
        b.c0 = vec3<f32>(r * p.x, r * p.y, mu * r * t.x);
        b.c1 = vec3<f32>(r * p.y, r * p.z, mu * r * t.y);
    } else {
        // No friction and w = 0: F_T = lambda_T.
        b.f = vec3<f32>(l.xy, r * c.z);
        b.l0 = vec3<f32>(1.0, 0.0, 0.0);
        b.l1 = vec3<f32>(0.0, 1.0, 0.0);
    }
    return b;
}

// Row s of a unit's dF/dlambda (dc false) or dF/dc (dc true).
fn newton_row(b: NewtonUnit, s: u32, dc: bool) -> vec3<f32> {
    if (dc) {
        return select(select(b.c0, b.c1, s == 1u), b.c2, s == 2u);
    }
    return select(select(b.l0, b.l1, s == 1u), b.l2, s == 2u);
}

// J[e][j] of (dF/dlambda + dF/dc (G + R)) at (x, tmp).
fn newton_entry(pr: Problem, ca: Cache, scale: f32, e: u32, j: u32) -> f32 {
    let u = row_unit(pr, e);
    let b = newton_unit(pr, ca, u, scale, X, TMP);
    let k = unit_row(pr, u);
    if (u >= pr.nc) {
        return b.c0.x * gr(pr, ca, e, j) + select(0.0, b.l0.x, j == e);
    }
    let s = e - k;
    let dc = newton_row(b, s, true);
    var v = dc.x * gr(pr, ca, k, j) + dc.y * gr(pr, ca, k + 1u, j) + dc.z * gr(pr, ca, k + 2u, j);
    if (j >= k && j < k + 3u) {
        v += newton_row(b, s, false)[j - k];
    }
    return v;
}

// ||F||^2 at (x, tmp), and F into PF where `store`.
fn newton_merit(pr: Problem, ca: Cache, scale: f32, store: bool) -> f32 {
    var phi = 0.0;
    for (var u = 0u; u < units(pr); u++) {
        let b = newton_unit(pr, ca, u, scale, X, TMP);
        let k = unit_row(pr, u);
        let n = unit_len(pr, u);
        for (var s = 0u; s < n; s++) {
            phi += b.f[s] * b.f[s];
            if (store) {
                work[pk(pr, PF, k + s)] = b.f[s];
            }
        }
    }
    return phi;
}

// The breaking blocks of x (lambda_N - r c_N <= 0) set to zero and the rows
// in a bound's piece put on the bound, as the CPU does (a tiny lambda would
// count its whole velocity in the complementarity residual).
fn newton_clean(pr: Problem, ca: Cache, scale: f32) {
    for (var u = 0u; u < units(pr); u++) {
        let k = unit_row(pr, u);
        let n = unit_len(pr, u);
        if (u >= pr.nc) {
            let b = row_bound(pr, k);
            let w = wv(pr, X, k) - newton_r(pr, ca, u, scale) * wv(pr, TMP, k);
            if (w <= row_lower(b)) {
                work[wk(pr, X, k)] = row_lower(b);
            } else if (w >= row_upper(b)) {
                work[wk(pr, X, k)] = row_upper(b);
            }
            continue;
        }
        let top = k + n - 1u;
        if (wv(pr, X, top) - newton_r(pr, ca, u, scale) * wv(pr, TMP, top) <= 0.0) {
            for (var s = 0u; s < n; s++) {
                work[wk(pr, X, k + s)] = 0.0;
            }
        }
    }
}

// Whether every sliding contact of (x, tmp) slides against c_T (within
// direction_tolerance, where |c_T| is over the tolerance), as
// polish_directions_settled judges the polish's candidates. Sliding: lambda
// on the cone's boundary, |lambda_T| within SLIDING_BAND of mu lambda_N;
// inside it a contact sticks, and the residuals judge its c_T. (Measured on
// tests/data/quadruped_random_torques_f32.json: sticking contacts with
// |c_T| of 2e-6 to 7e-6 kept Newton's candidates from the guess unsettled,
// 9.8e-6 against ADMM's 0.11 on problem 9.)
fn newton_directions_settled(pr: Problem, st: SolveResult) -> bool {
    let slow = reach(pr, st);
    for (var i = 0u; i < pr.nc; i++) {
        let r = 3u * i;
        let lt = vec2<f32>(wv(pr, X, r), wv(pr, X, r + 1u));
        let ct = vec2<f32>(wv(pr, TMP, r), wv(pr, TMP, r + 1u));
        let n = length(ct);
        let nl = length(lt);
        let sliding = nl > 0.0 && nl >= (1.0 - SLIDING_BAND) * friction(pr, i) * wv(pr, X, r + 2u);
        if (n > slow && sliding && length(lt / nl + ct / n) > direction_tolerance(st, n)) {
            return false;
        }
    }
    return true;
}

// One step of Newton (one invocation does it all; in main_workgroup, lane
// 0). On success z holds the iterate, evaluated, and the solve is done.
fn newton_step(pr: Problem, ca: Cache, st: ptr<function, SolveResult>) {
    let m = rows(pr);
    let scale = newton_scale(*st);
    let state = (*st).state;
    if (state == PHASE_NSTART) {
        divide_units(pr, Z, X, 1.0, 0u, 1u);
        judge_candidate(pr, ca, st);
        (*st).state = PHASE_NJAC;
    } else if (state == PHASE_NJAC) {
        work[pk(pr, PPHI, 0u)] = newton_merit(pr, ca, scale, true);
        var jmax = 0.0;
        for (var e = 0u; e < m; e++) {
            jmax = max(jmax, abs(newton_entry(pr, ca, scale, e, e)));
        }
        work[pk(pr, PAUX, 0u)] = NEWTON_REGULARIZATION * jmax;
        (*st).step = 0u;
        (*st).state = PHASE_NFACTOR;
    } else if (state == PHASE_NFACTOR) {
        if (!polish_factor_column(pr, ca, m, (*st).step, scale)) {
            newton_attempt_failed(st);
            return;
        }
        (*st).step += 1u;
        if ((*st).step == m) {
            (*st).step = 0u;
            (*st).state = PHASE_NSOLVE;
        }
    } else if (state == PHASE_NSOLVE) {
        newton_solve(pr, ca, st, scale);
    } else {
        newton_line(pr, ca, st, scale);
    }
}

// NSOLVE: delta (z_prev) from -F (PF), then refined against J.
fn newton_solve(pr: Problem, ca: Cache, st: ptr<function, SolveResult>, scale: f32) {
    let m = rows(pr);
    if ((*st).step == 0u) {
        for (var k = 0u; k < m; k++) {
            work[wk(pr, ZPREV, k)] = -pv(pr, PF, k);
        }
        lu_solve_in_place(pr, m, ZPREV);
    } else {
        // y = -F - J delta, with J delta = dF/dlambda delta + dF/dc (G + R) delta.
        for (var k = 0u; k < m; k++) {
            work[pk(pr, PAD, k)] = row_times(pr, ca, k, ZPREV);
        }
        for (var u = 0u; u < units(pr); u++) {
            let b = newton_unit(pr, ca, u, scale, X, TMP);
            let k = unit_row(pr, u);
            if (u >= pr.nc) {
                // (A row's derivatives are the x components alone.)
                let jd = b.l0.x * wv(pr, ZPREV, k) + b.c0.x * pv(pr, PAD, k);
                work[wk(pr, Y, k)] = -pv(pr, PF, k) - jd;
                continue;
            }
            let d = vec3<f32>(wv(pr, ZPREV, k), wv(pr, ZPREV, k + 1u), wv(pr, ZPREV, k + 2u));
            let ad = vec3<f32>(pv(pr, PAD, k), pv(pr, PAD, k + 1u), pv(pr, PAD, k + 2u));
            let jd = vec3<f32>(dot(b.l0, d) + dot(b.c0, ad), dot(b.l1, d) + dot(b.c1, ad), dot(b.l2, d) + dot(b.c2, ad));
            for (var s = 0u; s < 3u; s++) {
                work[wk(pr, Y, k + s)] = -pv(pr, PF, k + s) - jd[s];
            }
        }
        lu_solve_in_place(pr, m, Y);
        for (var k = 0u; k < m; k++) {
            work[wk(pr, ZPREV, k)] = wv(pr, ZPREV, k) + wv(pr, Y, k);
        }
    }
    (*st).step += 1u;
    if ((*st).step < NEWTON_SOLVES) {
        return;
    }
    for (var k = 0u; k < m; k++) {
        if (!is_finite(wv(pr, ZPREV, k))) {
            newton_attempt_failed(st);
            return;
        }
    }
    // The line search's start: (G + R) delta, and the iterate (F's slot is
    // free from here).
    for (var k = 0u; k < m; k++) {
        work[pk(pr, PAD, k)] = row_times(pr, ca, k, ZPREV);
        work[pk(pr, PL0, k)] = wv(pr, X, k);
        work[pk(pr, PC0, k)] = wv(pr, TMP, k);
    }
    (*st).newton_steps += 1u;
    (*st).polish = newton_pack(polish_ret(*st), newton_taken(*st), newton_scale_index(*st), 0u);
    (*st).step = 0u;
    (*st).state = PHASE_NLINE;
}

// NLINE: one trial of the backtracking on ||F||^2 (sufficient decrease
// NEWTON_ARMIJO t, t down to NEWTON_MIN_STEP).
fn newton_line(pr: Problem, ca: Cache, st: ptr<function, SolveResult>, scale: f32) {
    let m = rows(pr);
    let h = newton_halvings(*st);
    let t = exp2(-f32(h));
    for (var k = 0u; k < m; k++) {
        work[wk(pr, X, k)] = pv(pr, PL0, k) + t * wv(pr, ZPREV, k);
        work[wk(pr, TMP, k)] = pv(pr, PC0, k) + t * pv(pr, PAD, k);
    }
    let phi = pv(pr, PPHI, 0u);
    let phi_t = newton_merit(pr, ca, scale, false);
    if (!(phi_t <= (1.0 - NEWTON_ARMIJO * t) * phi)) {
        if (exp2(-f32(h + 1u)) < NEWTON_MIN_STEP) {
            newton_attempt_failed(st);
        } else {
            (*st).polish = newton_pack(polish_ret(*st), newton_taken(*st), newton_scale_index(*st), h + 1u);
        }
        return;
    }
    newton_clean(pr, ca, scale);
    let eps = judge_candidate(pr, ca, st);
    let settled = newton_directions_settled(pr, *st);
    if (eps <= reach(pr, *st) && settled) {
        divide_units(pr, X, Z, 1.0, 0u, 1u);
        if (record(st, take_floor(st, evaluate_units(pr, ca, 0u, 1u)))) {
            divide_units(pr, Z, BEST, 1.0, 0u, 1u);
        }
        (*st).polishes += 1u;
        (*st).state = STATE_DONE;
        return;
    }
    if (settled) {
        keep_if_best(pr, st, eps);
    }
    let taken = newton_taken(*st) + 1u;
    if (taken >= NEWTON_STEPS) {
        newton_attempt_failed(st);
        return;
    }
    (*st).polish = newton_pack(polish_ret(*st), taken, newton_scale_index(*st), 0u);
    (*st).step = 0u;
    (*st).state = PHASE_NJAC;
}

// Loop iterations of the next Newton step (one invocation).
fn newton_step_cost(pr: Problem, st: SolveResult) -> u32 {
    let m = rows(pr);
    let mv = m * (m / 4u + 8u) + 16u;
    switch st.state {
        case PHASE_NFACTOR: {
            return m * (st.step / 4u + 8u) + 2u * st.step + 16u;
        }
        case PHASE_NSOLVE: {
            return 2u * mv + m * (m + 4u) + 8u * m;
        }
        default: { // NSTART, NJAC, NLINE
            return mv + 12u * m;
        }
    }
}

// --- The state machine's scalar logic, shared by both entry points ----------

// Whether the dispatch's loop budget covers a step of this cost (always the
// first step of a dispatch); spends it.
fn spend(budget: ptr<function, u32>, first: ptr<function, bool>, cost: u32) -> bool {
    if (!*first && cost > *budget) {
        return false;
    }
    *first = false;
    *budget -= min(cost, *budget);
    return true;
}

// FRESH's checks: a problem flagged by the host, with a block that is not
// PSD (psd: the caller's test of the blocks) or without rows is done
// (true); otherwise the solve's state is initialized (false).
fn fresh_refused(pr: Problem, st: ptr<function, SolveResult>, psd: bool) -> bool {
    if (pr.flags != 0u) {
        (*st).flags = pr.flags;
    } else if (!psd) {
        (*st).flags = FLAG_NOT_PSD;
    } else if (rows(pr) != 0u) {
        (*st).best_eps = 3.4e38;
        (*st).adapt = params.adaptive_rho;
        return false;
    }
    (*st).state = STATE_DONE;
    return true;
}

fn rho_cold(st: SolveResult) -> f32 {
    return 0.1 * st.scale;
}

fn set_residuals(st: ptr<function, SolveResult>, r: vec4<f32>) {
    (*st).eps_abs = r.w;
    (*st).primal = r.x;
    (*st).dual = r.y;
    (*st).complementarity = r.z;
}

// A finisher's candidate in x (eps: its eps_abs) that did not end the solve
// becomes BEST if it is better than every iterate so far: on its cap the
// solve returns the best point it has judged, iterate or candidate.
// (Measured on lavapipe, 14 quadruped problems under random torques that
// stall at 1e-6: a polish candidate of eps_abs 2.5e-6 was dropped and the
// cap returned an iterate of 1.9e-5.)
fn keep_if_best(pr: Problem, st: ptr<function, SolveResult>, eps: f32) {
    if (eps < (*st).best_eps) {
        divide_units(pr, X, BEST, 1.0, 0u, 1u);
        (*st).best_eps = eps;
        near_floor(st, eps);
    }
}

// Notes the first iteration whose iterate or candidate (of residual eps)
// came within FLOOR_STALL_FACTOR of f32's floor (see iteration_evaluated).
fn near_floor(st: ptr<function, SolveResult>, eps: f32) {
    if (params.floor_stop != 0u && (*st).floor_since == 0u && eps <= FLOOR_STALL_FACTOR * (*st).eps_floor) {
        (*st).floor_since = (*st).iterations + 1u;
    }
}

// Records an evaluation; true when z is the best iterate so far (to be
// copied to BEST).
fn record(st: ptr<function, SolveResult>, r: vec4<f32>) -> bool {
    set_residuals(st, r);
    if (r.w < (*st).best_eps) {
        (*st).best_eps = r.w;
        near_floor(st, r.w);
        return true;
    }
    return false;
}

// After FRESH's evaluation: done if the warm start solves the problem, else
// on to the power iteration.
fn fresh_evaluated(pr: Problem, st: ptr<function, SolveResult>, eps: f32) {
    if (eps <= reach(pr, *st)) {
        // (st.rho: the problem's initial rho from the host, or 0.)
        (*st).rho = select(max(params.rho, 0.0), (*st).rho, (*st).rho > 0.0);
        (*st).state = STATE_DONE;
        return;
    }
    (*st).scale = 0.0;
    (*st).step = 0u;
    (*st).state = PHASE_POWER;
}

// Largest eigenvalue of the k x k symmetric tridiagonal matrix of the
// Lanczos steps (diagonal alpha in u[0..k), off-diagonal beta in
// z_prev[0..k-1)), by bisection on Sturm counts between Gershgorin's bounds
// (linalg.rs tridiagonal_largest); 0 when not finite.
fn tridiagonal_largest(pr: Problem, k: u32) -> f32 {
    var lo = 3.4e38;
    var hi = -3.4e38;
    for (var i = 0u; i < k; i++) {
        var r = 0.0;
        if (i + 1u < k) {
            r += abs(wv(pr, ZPREV, i));
        }
        if (i > 0u) {
            r += abs(wv(pr, ZPREV, i - 1u));
        }
        lo = min(lo, wv(pr, U, i) - r);
        hi = max(hi, wv(pr, U, i) + r);
    }
    if (k == 0u || !is_finite(lo) || !is_finite(hi)) {
        return 0.0;
    }
    for (var it = 0u; it < 100u; it++) {
        let mid = 0.5 * (lo + hi);
        if (!(mid > lo && mid < hi)) {
            break;
        }
        // Eigenvalues below mid: the negative LDL^T pivots of T - mid I.
        var count = 0u;
        var d = 1.0;
        for (var i = 0u; i < k; i++) {
            var bb = 0.0;
            if (i > 0u) {
                let b = wv(pr, ZPREV, i - 1u);
                bb = b * b / d;
            }
            d = wv(pr, U, i) - mid - bb;
            if (d == 0.0) {
                d = -1.1920929e-7 * (abs(mid) + 1.0);
            }
            if (d < 0.0) {
                count += 1u;
            }
        }
        if (count >= k) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    return hi;
}

// One Lanczos step of the estimate of L, the largest eigenvalue of G + R
// (linalg.rs lanczos_largest, as the CPU's ncp-admm: its Ritz value is
// exact where 20 power iterations fell 8 % short, and rho starts at 0.1 L),
// after tmp = (G + R) x, with q = x and the previous q in y: alpha_k =
// <tmp, x>, tmp -= alpha_k x + beta_(k-1) y, beta_k = |tmp|, kept in u[k]
// and z_prev[k]; then y = x, x = tmp / beta_k, or, after min(LANCZOS_STEPS,
// m) steps or a breakdown, the scale and the attempt's rho (one invocation,
// whole vectors: main_workgroup's lane 0).
fn lanczos_iterated(pr: Problem, st: ptr<function, SolveResult>) {
    let m = rows(pr);
    let k = (*st).step;
    var a = 0.0;
    for (var i = 0u; i < m; i++) {
        a += wv(pr, TMP, i) * wv(pr, X, i);
    }
    var b_prev = 0.0;
    if (k > 0u) {
        b_prev = wv(pr, ZPREV, k - 1u);
    }
    var bsq = 0.0;
    for (var i = 0u; i < m; i++) {
        var w = wv(pr, TMP, i) - a * wv(pr, X, i);
        if (k > 0u) {
            w -= b_prev * wv(pr, Y, i);
        }
        work[wk(pr, TMP, i)] = w;
        bsq += w * w;
    }
    let b = sqrt(bsq);
    work[wk(pr, U, k)] = a;
    work[wk(pr, ZPREV, k)] = b;
    (*st).step = k + 1u;
    // (f32: a beta under 1e-6 of alpha is rounding, a breakdown.)
    if ((*st).step < min(LANCZOS_STEPS, m) && b > 1e-6 * abs(a) && is_finite(b)) {
        for (var i = 0u; i < m; i++) {
            work[wk(pr, Y, i)] = wv(pr, X, i);
            work[wk(pr, X, i)] = wv(pr, TMP, i) / b;
        }
        return;
    }
    (*st).scale = tridiagonal_largest(pr, (*st).step);
    if (!((*st).scale > 0.0)) {
        (*st).scale = 1.0;
    }
    // The problem's initial rho (st.rho, set by the host and untouched
    // until here), else the batch's, else a cold one.
    let warm = (*st).rho;
    let lo = RHO_RANGE_MIN * (*st).scale;
    let hi = RHO_RANGE_MAX * (*st).scale;
    (*st).rho = rho_cold(*st);
    if (warm > 0.0 && is_finite(warm)) {
        (*st).rho = clamp(warm, lo, hi);
    } else if (params.rho > 0.0 && is_finite(params.rho)) {
        (*st).rho = clamp(params.rho, lo, hi);
    }
    (*st).attempt = 0u;
    (*st).state = PHASE_ATTEMPT;
}

// After ATTEMPT's evaluation: done if it already solves, else factorize.
fn attempt_evaluated(pr: Problem, st: ptr<function, SolveResult>, eps: f32) {
    (*st).start_eps = eps;
    if (eps <= reach(pr, *st)) {
        (*st).state = STATE_DONE;
        return;
    }
    (*st).rho_prev = 0.0;
    (*st).step = 0u;
    (*st).last_update = (*st).iterations;
    (*st).window_best = 3.4e38;
    (*st).window_start = (*st).iterations;
    (*st).rho_floor = 0.0;
    (*st).state = PHASE_FACTOR;
}

// After column st.step of the factor (ok: its pivot was positive). Returns
// the factor by which to rescale u (0: none).
fn factor_column_done(pr: Problem, st: ptr<function, SolveResult>, ok: bool) -> f32 {
    if (ok) {
        (*st).step += 1u;
        if ((*st).step == rows(pr)) {
            (*st).factorizations += 1u;
            var rescale = 0.0;
            if ((*st).rho_prev > 0.0) {
                // An adaptive change of rho: rescale the scaled dual.
                rescale = (*st).rho_prev / (*st).rho;
                (*st).last_update = (*st).iterations;
            }
            (*st).rho_prev = 0.0;
            (*st).state = PHASE_ITERATE;
            // The attempt's first factorization (before any iteration):
            // Newton from the guess, as the CPU (G has passed the check).
            if (rescale == 0.0 && (*st).iterations == (*st).window_start && newton_due(pr, *st)) {
                newton_start(st, PHASE_ITERATE);
            }
            return rescale;
        }
    } else if ((*st).rho_prev > 0.0) {
        // f32 could not factorize at the new rho: go back to the previous
        // one (which factorized) and stop adapting.
        (*st).factorizations += 1u;
        (*st).rho = (*st).rho_prev;
        (*st).rho_prev = 0.0;
        (*st).adapt = 0u;
        (*st).step = 0u;
    } else {
        (*st).flags = FLAG_NOT_PSD;
        (*st).state = STATE_DONE;
    }
    return 0.0;
}

// After an iteration's evaluation: done, restart, final, or go on; true when
// rho is to be balanced (the caller then calls `balance`).
fn iteration_evaluated(pr: Problem, st: ptr<function, SolveResult>, eps: f32) -> bool {
    if (eps <= reach(pr, *st)) {
        // (At the floor, short of the tolerance: the best point seen.)
        (*st).state = select(PHASE_FINAL, STATE_DONE, eps <= pr.tolerance);
        return false;
    }
    // STALL_WINDOW iterations after an iterate came within
    // FLOOR_STALL_FACTOR of f32's floor (take_floor) without reaching the
    // tolerance: f32 goes no further, the best point seen is the answer.
    // (Measured on tests/data/quadruped_random_torques_f32.json: ncp-admm
    // stalled at 7 to 13 floors there, to its cap, where the CPU's f64
    // converges; the floors were below the tolerance.)
    if ((*st).floor_since != 0u && (*st).iterations + 1u - (*st).floor_since >= STALL_WINDOW) {
        (*st).state = PHASE_FINAL;
        return false;
    }
    if (params.model == MODEL_NCP && (!is_finite(eps) || eps > DIVERGENCE_FACTOR * max((*st).start_eps, pr.tolerance))) {
        if ((*st).attempt == 0u) {
            (*st).attempt = 1u;
            (*st).state = PHASE_ATTEMPT;
        } else {
            (*st).state = PHASE_FINAL;
        }
        return false;
    }
    return (*st).adapt != 0u && (*st).iterations - (*st).last_update >= RHO_MIN_INTERVAL;
}

// The stall guard (ncp-admm with params.stall_guard, as admm.rs): the de
// Saxce fixed point can cycle when rho is small; without a 1 % gain of
// eps_abs over STALL_WINDOW iterations, rho grows tenfold (back to FACTOR)
// and the residual balancing keeps it at least that large. Returns whether
// it raised rho.
fn stall_guarded(st: ptr<function, SolveResult>) -> bool {
    if (params.stall_guard == 0u || params.model != MODEL_NCP || (*st).adapt == 0u) {
        return false;
    }
    let eps = (*st).eps_abs;
    if (eps < 0.99 * (*st).window_best) {
        (*st).window_best = eps;
        (*st).window_start = (*st).iterations;
        return false;
    }
    let hi = RHO_RANGE_MAX * (*st).scale;
    if ((*st).iterations - (*st).window_start < STALL_WINDOW || !((*st).rho < hi)) {
        return false;
    }
    if ((*st).guarded_from == 0.0) {
        (*st).guarded_from = (*st).rho;
    }
    (*st).rho_prev = (*st).rho;
    (*st).rho = min((*st).rho * RHO_MAX_STEP, hi);
    (*st).rho_floor = (*st).rho;
    (*st).window_best = eps;
    (*st).window_start = (*st).iterations;
    (*st).step = 0u;
    (*st).state = PHASE_FACTOR;
    return true;
}

// The rho a finished solve reports (for the next solve's warm start): the
// one before the stall guard first raised it, as admm.rs reports (a raised
// rho carried from step to step stalled the humanoid's later solves).
fn report_rho(st: ptr<function, SolveResult>) {
    if ((*st).state == STATE_DONE && (*st).guarded_from > 0.0) {
        (*st).rho = (*st).guarded_from;
    }
}

// Residual balancing of rho from the maxima m (see balance_units); a change
// goes back to FACTOR.
fn balance(st: ptr<function, SolveResult>, m: Balance) {
    let rho = (*st).rho;
    let rp = m.a.x / max(max(m.a.z, m.a.w), 1e-30);
    let rd = rho * m.a.y / max(max(m.b.x, rho * m.b.y), 1e-30);
    // A stalled z (rd = 0) with x != z calls for a larger rho.
    var ratio = 1.0;
    var big = false;
    if (rd > 0.0) {
        ratio = rp / rd;
    } else if (rp > 0.0) {
        big = true;
    }
    if (big || ratio > RHO_RATIO || ratio < 1.0 / RHO_RATIO) {
        var new_rho = rho * RHO_MAX_STEP;
        if (!big) {
            new_rho = clamp(rho * sqrt(ratio), rho / RHO_MAX_STEP, rho * RHO_MAX_STEP);
        }
        new_rho = clamp(new_rho, max(RHO_RANGE_MIN * (*st).scale, (*st).rho_floor), RHO_RANGE_MAX * (*st).scale);
        if (new_rho != rho) {
            (*st).rho_prev = rho;
            (*st).rho = new_rho;
            (*st).step = 0u;
            (*st).state = PHASE_FACTOR;
        }
    }
}

// FINAL: whether to fall back on the best iterate (`!(a <= b)` so that a NaN
// final residual also falls back).
fn final_takes_best(st: SolveResult) -> bool {
    return is_finite(st.best_eps) && !(st.eps_abs <= st.best_eps);
}

fn final_flags(st: ptr<function, SolveResult>) {
    if ((*st).flags == 0u && !is_finite((*st).eps_abs)) {
        (*st).flags = FLAG_DIVERGED;
    }
    (*st).state = STATE_DONE;
}

// A step of the polish or of Newton.
fn finisher_step(pr: Problem, ca: Cache, st: ptr<function, SolveResult>) {
    if ((*st).state >= PHASE_NSTART) {
        newton_step(pr, ca, st);
    } else {
        polish_step(pr, ca, st);
    }
}

// Loop iterations of the next step of `main` (for the dispatch's budget).
fn step_cost(pr: Problem, st: SolveResult) -> u32 {
    let m = rows(pr);
    let mv = m * (m / 4u + 8u) + 8u;
    let tri_solve = units(pr) * (units(pr) + 4u) + 8u;
    switch st.state {
        case PHASE_POWER: { // the last step's bisection: 100 Sturm counts
            return mv + 8u * m + 110u * LANCZOS_STEPS;
        }
        case PHASE_FACTOR: {
            return (m - st.step) * (st.step / 4u + 8u) + 2u * units(pr) + 8u;
        }
        case PHASE_ITERATE: {
            return mv + tri_solve + 20u * m;
        }
        case PHASE_PMODES, PHASE_PFACTOR, PHASE_PSOLVE: { // the polish's phases
            return polish_step_cost(pr, st);
        }
        case PHASE_NSTART, PHASE_NJAC, PHASE_NFACTOR, PHASE_NSOLVE, PHASE_NLINE: { // Newton's
            return newton_step_cost(pr, st);
        }
        default: {
            return mv + 10u * m + units(pr);
        }
    }
}

// --- One invocation per problem ---------------------------------------------

@compute @workgroup_size(WORKGROUP_SIZE)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let index = gid.x;
    if (!pending(index)) {
        return;
    }
    var st = results[index];
    let pr = problems[index];
    let ca = Cache(false, false);
    let alpha = params.omega;
    var budget = params.chunk;
    var first = true;
    var refused = false;
    loop {
        if (st.state == STATE_DONE) {
            break;
        }
        if (!spend(&budget, &first, step_cost(pr, st))) {
            break;
        }

        if (st.state == STATE_FRESH) {
            refused = fresh_refused(pr, &st, blocks_psd(pr));
            if (refused) {
                break;
            }
            // A warm start that already solves the problem costs one evaluation.
            fresh_units(pr, 0u, 1u);
            if (record(&st, take_floor(&st, evaluate_units(pr, ca, 0u, 1u)))) {
                divide_units(pr, Z, BEST, 1.0, 0u, 1u);
            }
            fresh_evaluated(pr, &st, st.eps_abs);
            if (st.state == PHASE_POWER) {
                if (polish_due(pr, st)) {
                    polish_start(&st, PHASE_POWER);
                } else {
                    power_start_units(pr, 0u, 1u);
                    divide_units(pr, X, X, sqrt(squared_norm(pr, X)), 0u, 1u);
                }
            }
        } else if (st.state >= PHASE_PMODES) {
            finisher_step(pr, ca, &st);
            if (st.state == PHASE_POWER) {
                power_start_units(pr, 0u, 1u);
                divide_units(pr, X, X, sqrt(squared_norm(pr, X)), 0u, 1u);
            }
        } else if (st.state == PHASE_POWER) {
            power_units(pr, ca, 0u, 1u);
            lanczos_iterated(pr, &st);
            if (st.state == PHASE_ATTEMPT) {
                divide_units(pr, Z, TMP, 1.0, 0u, 1u);
            }
        } else if (st.state == PHASE_ATTEMPT) {
            if (st.attempt > 0u) {
                // The warm-started run diverged: restart cold.
                st.rho = rho_cold(st);
                fill_units(pr, TMP, 0.0, 0u, 1u);
            }
            project_units(pr, 0u, 1u);
            if (record(&st, take_floor(&st, evaluate_units(pr, ca, 0u, 1u)))) {
                divide_units(pr, Z, BEST, 1.0, 0u, 1u);
            }
            dual_start_units(pr, st.rho, 0u, 1u);
            attempt_evaluated(pr, &st, st.eps_abs);
        } else if (st.state == PHASE_FACTOR) {
            let j = st.step;
            factor_units(pr, ca, j, st.rho, 0u, 1u);
            let d = l_at(pr, ca, tri(j) + j);
            let ok = pivot_ok(d);
            if (ok) {
                factor_scale_units(pr, ca, j, sqrt(d), 0u, 1u);
            }
            let rescale = factor_column_done(pr, &st, ok);
            if (rescale > 0.0) {
                scale_units(pr, U, rescale, 0u, 1u);
            }
        } else if (st.state == PHASE_ITERATE) {
            if (st.iterations >= pr.max_iterations) {
                st.state = PHASE_FINAL;
                continue;
            }
            st.iterations += 1u;
            rhs_units(pr, st.rho, 0u, 1u);
            for (var v = 0u; v < units(pr); v++) {
                forward_unit(pr, ca, v, true, 0u, 1u);
            }
            for (var vv = units(pr); vv > 0u; vv--) {
                backward_unit(pr, ca, vv - 1u, true, 0u, 1u);
            }
            relax_project_units(pr, alpha, 0u, 1u);
            if (record(&st, take_floor(&st, evaluate_units(pr, ca, 0u, 1u)))) {
                divide_units(pr, Z, BEST, 1.0, 0u, 1u);
            }
            if (polish_iteration(st.iterations) && polish_due(pr, st)) {
                polish_start(&st, PHASE_ITERATE);
                if (st.iterations % POLISH_INTERVAL == 0u) {
                    st.polish |= NEWTON_AFTER;
                }
            } else {
                let balancing = iteration_evaluated(pr, &st, st.eps_abs);
                if (st.state == PHASE_ITERATE && !stall_guarded(&st) && balancing) {
                    balance(&st, balance_units(pr, 0u, 1u));
                }
            }
        } else {
            // PHASE_FINAL: the best iterate seen, with its own velocity and residuals.
            if (final_takes_best(st)) {
                divide_units(pr, BEST, Z, 1.0, 0u, 1u);
                set_residuals(&st, take_floor(&st, evaluate_units(pr, ca, 0u, 1u)));
            }
            final_flags(&st);
        }
    }
    if (!refused) {
        store_units(pr, 0u, 1u);
    }
    if (loop_limit_reached()) {
        st.flags |= FLAG_LOOP_LIMIT;
        st.state = STATE_DONE;
    }
    report_rho(&st);
    results[index] = st;
    if (st.state != STATE_DONE) {
        atomicAdd(&running_count, 1u);
    }
}

// --- One workgroup per problem ----------------------------------------------
//
// WA_LANES invocations share a problem; lane t owns units t, t + WA_LANES, ...
// Every invocation holds the same copy of the solve's state (`st`): it is
// read once through workgroupUniformLoad and then changed only by values
// that are themselves uniform (reduced over the workgroup and read through
// workgroupUniformLoad), so that every barrier is in uniform control flow.
// The vectors stay in `work` (storage), hence wa_sync's storage barrier
// between passes; the factor lives in wa_cache when its triangle fits
// (copied in at the start of a dispatch and back at its end), and G after it
// when both fit.

var<workgroup> wa_red: array<vec4<f32>, WA_LANES>;
var<workgroup> wa_state: SolveResult;
var<workgroup> wa_word: vec4<f32>;
var<workgroup> wa_limit: atomic<u32>;

fn wa_sync() {
    storageBarrier();
    workgroupBarrier();
}

// nan_max of v over the workgroup, uniform.
fn wa_max(lane: u32, v: vec4<f32>) -> vec4<f32> {
    wa_red[lane] = v;
    workgroupBarrier();
    for (var h = WA_LANES / 2u; h > 0u; h >>= 1u) {
        if (lane < h) {
            let a = wa_red[lane];
            let b = wa_red[lane + h];
            wa_red[lane] = nan_max4(a, b);
        }
        workgroupBarrier();
    }
    return workgroupUniformLoad(&wa_red[0]);
}

// Lane 0's v, uniform.
fn wa_lane0(lane: u32, v: f32) -> f32 {
    if (lane == 0u) {
        wa_word.x = v;
    }
    return workgroupUniformLoad(&wa_word).x;
}

// Evaluates z (after a sync) and records it, copying it to BEST if it is the
// best so far.
fn wa_evaluate(pr: Problem, ca: Cache, lane: u32, st: ptr<function, SolveResult>) {
    wa_sync();
    let r = take_floor(st, wa_max(lane, evaluate_units(pr, ca, lane, WA_LANES)));
    if (record(st, r)) {
        divide_units(pr, Z, BEST, 1.0, lane, WA_LANES);
    }
}

// The squared norm of v over all rows, summed in order by lane 0 (as `main`
// does), uniform.
fn wa_squared_norm(pr: Problem, lane: u32, v: u32) -> f32 {
    wa_sync();
    var n = 0.0;
    if (lane == 0u) {
        n = squared_norm(pr, v);
    }
    return wa_lane0(lane, n);
}

// Loop iterations of the next step of one lane of `main_workgroup`.
fn wa_step_cost(pr: Problem, st: SolveResult) -> u32 {
    let m = rows(pr);
    let own = 3u * ((units(pr) + WA_LANES - 1u) / WA_LANES);
    let mv = own * (m / 4u + 8u) + 8u;
    let reduce = 4u * WA_LANES;
    switch st.state {
        case PHASE_POWER: { // lane 0's step and the last one's bisection
            return mv + 8u * m + reduce + 110u * LANCZOS_STEPS;
        }
        case PHASE_FACTOR: {
            return own * (st.step / 4u + 8u) + reduce;
        }
        case PHASE_ITERATE: {
            return mv + 2u * units(pr) * (own + 8u) + 20u * own + 2u * reduce;
        }
        case PHASE_PMODES, PHASE_PFACTOR, PHASE_PSOLVE: { // the polish's phases (lane 0)
            return polish_step_cost(pr, st) + reduce;
        }
        case PHASE_NSTART, PHASE_NJAC, PHASE_NFACTOR, PHASE_NSOLVE, PHASE_NLINE: { // Newton's (lane 0)
            return newton_step_cost(pr, st) + reduce;
        }
        default: {
            return mv + 10u * own + m + 2u * reduce;
        }
    }
}

@compute @workgroup_size(WA_LANES)
fn main_workgroup(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lane: u32,
) {
    let index = wid.x + wid.y * nwg.x;
    if (index >= params.num_problems) {
        return;
    }
    let pr = problems[index];
    if (lane == 0u) {
        wa_state = results[index];
        atomicStore(&wa_limit, 0u);
    }
    var st = workgroupUniformLoad(&wa_state);
    if (st.state == STATE_DONE) {
        return;
    }
    let M = rows(pr);
    let T = tri(M);
    let ca = Cache(T <= WA_CACHE, 2u * T <= WA_CACHE);
    if (ca.l) {
        for (var t = lane; t < T; t += WA_LANES) {
            wa_cache[t] = work[lk(pr, t)];
        }
    }
    if (ca.g) {
        for (var t = lane; t < T; t += WA_LANES) {
            wa_cache[T + t] = gtri(pr, t);
        }
    }
    let alpha = params.omega;
    var budget = params.chunk;
    var first = true;
    var refused = false;
    loop {
        if (st.state == STATE_DONE) {
            break;
        }
        if (!spend(&budget, &first, wa_step_cost(pr, st))) {
            break;
        }
        wa_sync();

        if (st.state == STATE_FRESH) {
            // The contacts' blocks, checked in parallel.
            var bad = 0.0;
            for (var i = lane; i < pr.nc; i += WA_LANES) {
                if (!block_psd(pr, i)) {
                    bad = 1.0;
                }
            }
            bad = wa_max(lane, vec4<f32>(bad, 0.0, 0.0, 0.0)).x;
            refused = fresh_refused(pr, &st, bad == 0.0);
            if (refused) {
                break;
            }
            fresh_units(pr, lane, WA_LANES);
            wa_evaluate(pr, ca, lane, &st);
            fresh_evaluated(pr, &st, st.eps_abs);
            if (st.state == PHASE_POWER) {
                if (polish_due(pr, st)) {
                    polish_start(&st, PHASE_POWER);
                } else {
                    power_start_units(pr, lane, WA_LANES);
                    let n0 = sqrt(wa_squared_norm(pr, lane, X));
                    divide_units(pr, X, X, n0, lane, WA_LANES);
                }
            }
        } else if (st.state >= PHASE_PMODES) {
            // Lane 0 polishes or takes Newton's steps, in the order `main`
            // does; the state is then broadcast.
            if (lane == 0u) {
                finisher_step(pr, ca, &st);
                wa_state = st;
            }
            st = workgroupUniformLoad(&wa_state);
            if (st.state == PHASE_POWER) {
                wa_sync();
                power_start_units(pr, lane, WA_LANES);
                let n0 = sqrt(wa_squared_norm(pr, lane, X));
                divide_units(pr, X, X, n0, lane, WA_LANES);
            }
        } else if (st.state == PHASE_POWER) {
            power_units(pr, ca, lane, WA_LANES);
            wa_sync();
            // Lane 0 takes the step on whole vectors, in the order `main`
            // does; the state is then broadcast.
            if (lane == 0u) {
                lanczos_iterated(pr, &st);
                wa_state = st;
            }
            st = workgroupUniformLoad(&wa_state);
            wa_sync();
            if (st.state == PHASE_ATTEMPT) {
                divide_units(pr, Z, TMP, 1.0, lane, WA_LANES);
            }
        } else if (st.state == PHASE_ATTEMPT) {
            if (st.attempt > 0u) {
                st.rho = rho_cold(st);
                fill_units(pr, TMP, 0.0, lane, WA_LANES);
            }
            project_units(pr, lane, WA_LANES);
            wa_evaluate(pr, ca, lane, &st);
            dual_start_units(pr, st.rho, lane, WA_LANES);
            attempt_evaluated(pr, &st, st.eps_abs);
        } else if (st.state == PHASE_FACTOR) {
            let j = st.step;
            factor_units(pr, ca, j, st.rho, lane, WA_LANES);
            wa_sync();
            var d = 0.0;
            if (lane == 0u) {
                d = l_at(pr, ca, tri(j) + j);
            }
            d = wa_lane0(lane, d);
            let ok = pivot_ok(d);
            if (ok) {
                factor_scale_units(pr, ca, j, sqrt(d), lane, WA_LANES);
            }
            let rescale = factor_column_done(pr, &st, ok);
            if (rescale > 0.0) {
                scale_units(pr, U, rescale, lane, WA_LANES);
            }
        } else if (st.state == PHASE_ITERATE) {
            if (st.iterations >= pr.max_iterations) {
                st.state = PHASE_FINAL;
                continue;
            }
            st.iterations += 1u;
            rhs_units(pr, st.rho, lane, WA_LANES);
            let nu = units(pr);
            for (var v = 0u; v < nu; v++) {
                wa_sync();
                forward_unit(pr, ca, v, v % WA_LANES == lane, lane, WA_LANES);
            }
            for (var vv = nu; vv > 0u; vv--) {
                wa_sync();
                backward_unit(pr, ca, vv - 1u, (vv - 1u) % WA_LANES == lane, lane, WA_LANES);
            }
            wa_sync();
            relax_project_units(pr, alpha, lane, WA_LANES);
            wa_evaluate(pr, ca, lane, &st);
            if (polish_iteration(st.iterations) && polish_due(pr, st)) {
                polish_start(&st, PHASE_ITERATE);
                if (st.iterations % POLISH_INTERVAL == 0u) {
                    st.polish |= NEWTON_AFTER;
                }
            } else {
                let balancing = iteration_evaluated(pr, &st, st.eps_abs);
                if (st.state == PHASE_ITERATE && !stall_guarded(&st) && balancing) {
                    let b = balance_units(pr, lane, WA_LANES);
                    balance(&st, Balance(wa_max(lane, b.a), wa_max(lane, b.b)));
                }
            }
        } else {
            if (final_takes_best(st)) {
                divide_units(pr, BEST, Z, 1.0, lane, WA_LANES);
                wa_sync();
                set_residuals(&st, take_floor(&st, wa_max(lane, evaluate_units(pr, ca, lane, WA_LANES))));
            }
            final_flags(&st);
        }
    }
    wa_sync();
    if (!refused) {
        store_units(pr, lane, WA_LANES);
    }
    if (ca.l && st.state != STATE_DONE) {
        for (var t = lane; t < T; t += WA_LANES) {
            work[lk(pr, t)] = wa_cache[t];
        }
    }
    if (loop_limit_reached()) {
        atomicOr(&wa_limit, 1u);
    }
    workgroupBarrier();
    if (lane != 0u) {
        return;
    }
    if (atomicLoad(&wa_limit) != 0u) {
        st.flags |= FLAG_LOOP_LIMIT;
        st.state = STATE_DONE;
    }
    report_rho(&st);
    results[index] = st;
    if (st.state != STATE_DONE) {
        atomicAdd(&running_count, 1u);
    }
}
