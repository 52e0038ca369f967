// Batched ADMM on the contact problem, the f32 twin of
// src/contact/solvers/admm/ (ncp-admm: de Saxce fixed point, adaptive rho by
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
// a box by row_bound, no de Saxce correction: s = 0, as in admm.rs). A
// contact's cone rows (torsional and rolling friction, contact/wide.rs) are
// rows after the contacts, each a unit of its own for the linear algebra
// and the per-row copies, but projected, judged and corrected with its
// contact by the contact's unit (unit_extra). Every per-row and per-unit function
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
// (src/gpu/batched/admm.rs, src/gpu/batched/shader.rs, src/contact/solvers/admm/mod.rs).

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
// set per pipeline by the host (src/gpu/batched/admm.rs), 1 for `main`, which never
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

// --- Contacts with rows beyond their three ---------------------------------
//
// Row k >= 3 nc whose set is coded ROW_CONE - i (row_bound) belongs to
// contact i's cone: the second-order cone over its tangential rows (t1, t2,
// then its cone rows in order) and its normal (wide.rs, as the CPU gathers
// them). The contact's unit projects them (z_prev, tmp, z, u), computes
// their c and s and judges them with its own rows, its lane alone writing
// them there; the cone row's own unit skips those steps. Its weight on rho
// is its contact's.

// Contact i's cone rows, in order: rows[0 .. n].
struct ConeExtra {
    rows: vec3<u32>,
    n: u32,
}

// Unit u's cone rows: a contact's (none in a problem without them), none
// for a row.
fn unit_extra(pr: Problem, u: u32) -> ConeExtra {
    var e = ConeExtra(vec3<u32>(0u), 0u);
    if (u >= pr.nc || !has_cone_rows(pr)) {
        return e;
    }
    let code = ROW_CONE - f32(u);
    for (var k = 3u * pr.nc; k < rows(pr); k++) {
        if (e.n < 3u && row_bound(pr, k) == code) {
            e.rows[e.n] = k;
            e.n += 1u;
        }
    }
    return e;
}

// Whether unit u is a row of a contact's cone.
fn is_cone_row(pr: Problem, u: u32) -> bool {
    return u >= pr.nc && has_cone_rows(pr) && row_bound(pr, unit_row(pr, u)) <= ROW_CONE;
}

// Row j of unit u's set (its own rows r .. r + n, then its cone rows e).
fn set_row(r: u32, n: u32, e: ConeExtra, j: u32) -> u32 {
    if (j < n) {
        return r + j;
    }
    return e.rows[j - n];
}

// ‖v_T‖ of contact unit (r, e) in scratch vector v: t1, t2, then its cone
// rows, summed in that order (Wide::tangent_norm).
fn wide_tangent(pr: Problem, v: u32, r: u32, e: ConeExtra) -> f32 {
    var tt = wv(pr, v, r) * wv(pr, v, r) + wv(pr, v, r + 1u) * wv(pr, v, r + 1u);
    for (var j = 0u; j < e.n; j++) {
        let x = wv(pr, v, e.rows[j]);
        tt += x * x;
    }
    return sqrt(tt);
}

// The distance of contact unit (r, e)'s rows of v (tangential norm t) to
// their projection (s x_T, n+) = k.
fn wide_distance(pr: Problem, v: u32, r: u32, t: f32, k: vec2<f32>) -> f32 {
    let d = (1.0 - k.x) * t;
    let dn = wv(pr, v, r + 2u) - k.y;
    return sqrt(d * d + dn * dn);
}

// The residuals of contact u with cone rows e, impulse l, velocity cv
// (criteria.rs wide_residuals; the NCP's with de Saxce's correction, the
// CCP's without).
fn wide_residuals(pr: Problem, u: u32, r: u32, e: ConeExtra, l: u32, cv: u32) -> vec4<f32> {
    let mu = friction(pr, u);
    let tl = wide_tangent(pr, l, r, e);
    let primal = wide_distance(pr, l, r, tl, soc_scale(mu, false, tl, wv(pr, l, r + 2u)));
    let tc = wide_tangent(pr, cv, r, e);
    var yn = wv(pr, cv, r + 2u);
    if (params.model != MODEL_CCP) {
        yn += mu * tc;
    }
    let k = dual_soc_scale(mu, tc, yn);
    let dn = yn - k.y;
    let dt = (1.0 - k.x) * tc;
    let dual = sqrt(dt * dt + dn * dn);
    // |<λ, y>| / |λ|, λ scaled by its largest entry first (as assemble).
    let n = 3u + e.n;
    var top = 0.0;
    for (var j = 0u; j < n; j++) {
        top = max(top, abs(wv(pr, l, set_row(r, 3u, e, j))));
    }
    var compl = 0.0;
    if (top > 0.0) {
        var dot = 0.0;
        var uu = 0.0;
        for (var j = 0u; j < n; j++) {
            let q = set_row(r, 3u, e, j);
            let x = wv(pr, l, q) / top;
            var y = wv(pr, cv, q);
            if (q == r + 2u) {
                y = yn;
            }
            dot += x * y;
            uu += x * x;
        }
        compl = abs(dot) / sqrt(uu);
    }
    return vec4<f32>(primal, dual, compl, nan_max(nan_max(primal, dual), compl));
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
        if (is_cone_row(pr, u)) {
            continue; // with its contact
        }
        let r = unit_row(pr, u);
        let n = unit_len(pr, u);
        let e = unit_extra(pr, u);
        for (var j = 0u; j < n + e.n; j++) {
            let k = set_row(r, n, e, j);
            work[wk(pr, ZPREV, k)] = 0.0;
            work[wk(pr, U, k)] = 0.0;
            work[wk(pr, S, k)] = 0.0;
            work[wk(pr, TMP, k)] = lambda[vidx(pr, k)];
            work[wk(pr, BEST, k)] = 0.0;
        }
        project_unit(pr, u, e);
    }
}

// z = P_C(tmp) on unit u: its friction cone (with its cone rows e), or its
// row's set (row_bound); nothing for a cone row (its contact projects it).
fn project_unit(pr: Problem, u: u32, e: ConeExtra) {
    let r = unit_row(pr, u);
    if (e.n > 0u) {
        let k = soc_scale(friction(pr, u), false, wide_tangent(pr, TMP, r, e), wv(pr, TMP, r + 2u));
        work[wk(pr, Z, r)] = k.x * wv(pr, TMP, r);
        work[wk(pr, Z, r + 1u)] = k.x * wv(pr, TMP, r + 1u);
        work[wk(pr, Z, r + 2u)] = k.y;
        for (var j = 0u; j < e.n; j++) {
            work[wk(pr, Z, e.rows[j])] = k.x * wv(pr, TMP, e.rows[j]);
        }
    } else if (u < pr.nc) {
        let v = vec3<f32>(wv(pr, TMP, r), wv(pr, TMP, r + 1u), wv(pr, TMP, r + 2u));
        let p = project_cone(friction(pr, u), v);
        work[wk(pr, Z, r)] = p.x;
        work[wk(pr, Z, r + 1u)] = p.y;
        work[wk(pr, Z, r + 2u)] = p.z;
    } else if (!is_cone_row(pr, u)) {
        work[wk(pr, Z, r)] = project_row(wv(pr, TMP, r), row_bound(pr, r));
    }
}

fn project_units(pr: Problem, first: u32, stride: u32) {
    for (var u = first; u < units(pr); u += stride) {
        project_unit(pr, u, unit_extra(pr, u));
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
fn unit_residuals(pr: Problem, ca: Cache, u: u32, e: ConeExtra, l: u32, cv: u32) -> vec4<f32> {
    if (is_cone_row(pr, u)) {
        return vec4<f32>(0.0); // computed and judged with its contact
    }
    let r0 = unit_row(pr, u);
    let n = unit_len(pr, u);
    var size = 0.0;
    for (var j = 0u; j < n + e.n; j++) {
        let k = set_row(r0, n, e, j);
        let p = row_product(pr, ca, k, l);
        let b = free_velocity(pr, k);
        work[wk(pr, cv, k)] = p.x + b;
        size = max(size, p.y + abs(b));
    }
    var r: vec4<f32>;
    if (e.n > 0u) {
        r = wide_residuals(pr, u, r0, e, l, cv);
    } else if (u < pr.nc) {
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
        let e = unit_extra(pr, u);
        let ru = unit_residuals(pr, ca, u, e, Z, C);
        let r0 = unit_row(pr, u);
        if (e.n > 0u) {
            // s on the normal alone; none on the cone rows (wide.rs correct_problem).
            var sn = 0.0;
            if (params.model == MODEL_NCP) {
                sn = friction(pr, u) * wide_tangent(pr, C, r0, e);
            }
            work[wk(pr, S, r0)] = 0.0;
            work[wk(pr, S, r0 + 1u)] = 0.0;
            work[wk(pr, S, r0 + 2u)] = sn;
            for (var j = 0u; j < e.n; j++) {
                work[wk(pr, S, e.rows[j])] = 0.0;
            }
        } else if (u < pr.nc) {
            let c = vec3<f32>(wv(pr, C, r0), wv(pr, C, r0 + 1u), wv(pr, C, r0 + 2u));
            var s = vec3<f32>(0.0);
            if (params.model == MODEL_NCP) {
                s = de_saxce(friction(pr, u), c);
            }
            work[wk(pr, S, r0)] = s.x;
            work[wk(pr, S, r0 + 1u)] = s.y;
            work[wk(pr, S, r0 + 2u)] = s.z;
        } else if (!is_cone_row(pr, u)) {
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

// The diagonal of G + R averaged over the rows of unit u (a contact's
// three and its cone rows, or a row alone; a cone row's is its contact's):
// ρ's weights (contact/solvers/admm/mod.rs set_weights).
fn unit_diagonal(pr: Problem, u: u32) -> f32 {
    var c = u;
    if (is_cone_row(pr, u)) {
        c = u32(ROW_CONE - row_bound(pr, unit_row(pr, u)));
    }
    let r = unit_row(pr, c);
    let n = unit_len(pr, c);
    let e = unit_extra(pr, c);
    var d = 0.0;
    for (var j = 0u; j < n + e.n; j++) {
        let k = set_row(r, n, e, j);
        d += gtri(pr, tri(k) + k) + compliance(pr, k);
    }
    return d / f32(n + e.n);
}

// ρ's weight on the rows of unit u: 1 where ws (SolveResult.weights) is 0
// (one ρ, the stall may still scale it) or -1 (one ρ for good), else the
// unit's diagonal times ws (1 / the largest), floored.
fn rho_weight(pr: Problem, ws: f32, u: u32) -> f32 {
    if (ws <= 0.0) {
        return 1.0;
    }
    return max(unit_diagonal(pr, u) * ws, WEIGHT_FLOOR);
}

// ρ's weights for this problem (SolveResult.weights): with scaled ρ
// (params.scaled_spread set) and the units' diagonals spanning more than
// `spread`, 1 / the largest; else 0 (one ρ). (`!(… > …)`: a NaN leaves
// one ρ.)
fn scaled_weights(pr: Problem, spread: f32) -> f32 {
    if (!(params.scaled_spread > 0.0)) {
        return 0.0;
    }
    var top = 0.0;
    var low = 3.4e38;
    for (var u = 0u; u < units(pr); u++) {
        let d = unit_diagonal(pr, u);
        top = nan_max(top, d);
        low = min(low, d);
    }
    if (!(top > 0.0 && is_finite(top) && top > spread * low)) {
        return 0.0;
    }
    return 1.0 / top;
}

// u = -(c + s) / (rho w) on the units' rows (the dual of a fresh attempt).
fn dual_start_units(pr: Problem, rho: f32, ws: f32, first: u32, stride: u32) {
    for (var u = first; u < units(pr); u += stride) {
        let r = unit_row(pr, u);
        let rw = rho * rho_weight(pr, ws, u);
        for (var k = r; k < r + unit_len(pr, u); k++) {
            work[wk(pr, U, k)] = -(wv(pr, C, k) + wv(pr, S, k)) / rw;
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

// u /= w on the units' rows: the scaled dual where ρ's weights were just
// set (ρW(u/W) is the dual ρu).
fn unweight_units(pr: Problem, ws: f32, first: u32, stride: u32) {
    for (var u = first; u < units(pr); u += stride) {
        let r = unit_row(pr, u);
        let w = rho_weight(pr, ws, u);
        for (var k = r; k < r + unit_len(pr, u); k++) {
            work[wk(pr, U, k)] /= w;
        }
    }
}

// The right-hand side of the x-update, x = -(b + s) + rho w (z - u).
fn rhs_units(pr: Problem, rho: f32, ws: f32, first: u32, stride: u32) {
    for (var u = first; u < units(pr); u += stride) {
        let r = unit_row(pr, u);
        let rw = rho * rho_weight(pr, ws, u);
        for (var k = r; k < r + unit_len(pr, u); k++) {
            work[wk(pr, X, k)] = -(free_velocity(pr, k) + wv(pr, S, k)) + rw * (wv(pr, Z, k) - wv(pr, U, k));
        }
    }
}

// z_prev = z, tmp = alpha x + (1 - alpha) z + u, z = P_C(tmp), u = tmp - z
// (u + x̂ − z⁺ with tmp = x̂ + u).
fn relax_project_units(pr: Problem, alpha: f32, first: u32, stride: u32) {
    for (var u = first; u < units(pr); u += stride) {
        if (is_cone_row(pr, u)) {
            continue; // with its contact
        }
        let r = unit_row(pr, u);
        let n = unit_len(pr, u);
        let e = unit_extra(pr, u);
        for (var j = 0u; j < n + e.n; j++) {
            let k = set_row(r, n, e, j);
            let zk = wv(pr, Z, k);
            work[wk(pr, ZPREV, k)] = zk;
            work[wk(pr, TMP, k)] = alpha * wv(pr, X, k) + (1.0 - alpha) * zk + wv(pr, U, k);
        }
        project_unit(pr, u, e);
        for (var j = 0u; j < n + e.n; j++) {
            let k = set_row(r, n, e, j);
            work[wk(pr, U, k)] = wv(pr, TMP, k) - wv(pr, Z, k);
        }
    }
}

// The maxima residual balancing needs over the units' rows:
// (|x − z|, w |z − z_prev|, |z|, |x|) and (|b|, w |u|, 0, 0).
struct Balance {
    a: vec4<f32>,
    b: vec4<f32>,
}

fn balance_units(pr: Problem, ws: f32, first: u32, stride: u32) -> Balance {
    var a = vec4<f32>(0.0);
    var b = vec4<f32>(0.0);
    for (var u = first; u < units(pr); u += stride) {
        let r = unit_row(pr, u);
        let w = rho_weight(pr, ws, u);
        for (var k = r; k < r + unit_len(pr, u); k++) {
            let zk = wv(pr, Z, k);
            let xk = wv(pr, X, k);
            a = vec4<f32>(nan_max(a.x, abs(xk - zk)), nan_max(a.y, w * abs(zk - wv(pr, ZPREV, k))), nan_max(a.z, abs(zk)), nan_max(a.w, abs(xk)));
            b = vec4<f32>(nan_max(b.x, abs(free_velocity(pr, k))), nan_max(b.y, w * abs(wv(pr, U, k))), 0.0, 0.0);
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

// Pass 1: L[i][j] = (G + R + rho W)_ij − Σ_{k<j} L_ik L_jk on the units'
// rows i >= j (row j holds the pivot's square until pass 2).
fn factor_units(pr: Problem, ca: Cache, j: u32, rho: f32, ws: f32, first: u32, stride: u32) {
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
                g += compliance(pr, j) + rho * rho_weight(pr, ws, u);
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
