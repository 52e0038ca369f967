// The ADMM kernel, part 3 of 4 (after admm_polish.wgsl).

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
// polish's k x k floats, k = m). A contact with cone rows (torsional and
// rolling friction) is one block over its d rows, t1, t2, its cone rows,
// then n (newton.rs's wide blocks: WideRows, WideUnit); its cone rows' own
// units are left to it. Phases, each a step of the state machine:
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

// Whether to run Newton from an iterate of residual eps (also where the
// polish is not: a problem with cone rows).
fn newton_due(pr: Problem, st: SolveResult) -> bool {
    return params.newton != 0u && finisher_due(pr, st) && rows(pr) <= POLISH_MAX_UNKNOWNS;
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

// --- Contacts with cone rows: one block of d rows -----------------------

// Contact i's rows in Newton's order: t1, t2, its cone rows, n.
struct WideRows {
    rows: array<u32, 6>,
    d: u32,
}

fn wide_rows(pr: Problem, i: u32) -> WideRows {
    return wide_rows_of(i, unit_extra(pr, i));
}

// wide_rows of contact i whose cone rows e are found.
fn wide_rows_of(i: u32, e: ConeExtra) -> WideRows {
    var w: WideRows;
    let r = 3u * i;
    w.rows[0] = r;
    w.rows[1] = r + 1u;
    for (var j = 0u; j < e.n; j++) {
        w.rows[2u + j] = e.rows[j];
    }
    w.d = 3u + e.n;
    w.rows[w.d - 1u] = r + 2u;
    return w;
}

// No contact (wide_contact_of).
const NO_WIDE: u32 = 0xffffffffu;

// The contact with cone rows that row e belongs to, or NO_WIDE.
fn wide_contact_of(pr: Problem, e: u32) -> u32 {
    if (!has_cone_rows(pr)) {
        return NO_WIDE;
    }
    var i = e / 3u;
    if (e >= 3u * pr.nc) {
        let b = row_bound(pr, e);
        if (b > ROW_CONE) {
            return NO_WIDE;
        }
        i = u32(ROW_CONE - b);
    }
    if (unit_extra(pr, i).n == 0u) {
        return NO_WIDE;
    }
    return i;
}

const WIDE_BREAKING: u32 = 0u;
const WIDE_STICKING: u32 = 1u;
const WIDE_SLIDING: u32 = 2u;
// No friction and w = 0: F_T = lambda_T.
const WIDE_FREE: u32 = 3u;

// A wide contact's piece of F: its mode, r, mu, and where it slides the
// direction t of w = lambda_T - r c_T and s = mu (lambda_N - r c_N) / |w|.
struct WideUnit {
    mode: u32,
    r: f32,
    mu: f32,
    s: f32,
    rad: f32,
    t: array<f32, 5>,
}

fn wide_unit(pr: Problem, ca: Cache, w: WideRows, i: u32, scale: f32, lv: u32, cv: u32) -> WideUnit {
    var ww = w;
    var b: WideUnit;
    var tr = 0.0;
    for (var a = 0u; a < ww.d; a++) {
        tr += gr(pr, ca, ww.rows[a], ww.rows[a]);
    }
    b.r = scale * select(1.0, f32(ww.d) / tr, tr > 0.0);
    b.mu = friction(pr, i);
    let nrow = ww.rows[ww.d - 1u];
    let rn = wv(pr, lv, nrow) - b.r * wv(pr, cv, nrow);
    if (rn <= 0.0) {
        b.mode = WIDE_BREAKING;
        return b;
    }
    var nw2 = 0.0;
    for (var a = 0u; a + 1u < ww.d; a++) {
        let x = wv(pr, lv, ww.rows[a]) - b.r * wv(pr, cv, ww.rows[a]);
        b.t[a] = x;
        nw2 += x * x;
    }
    let nw = sqrt(nw2);
    b.rad = b.mu * rn;
    if (b.rad > 0.0 && nw <= b.rad) {
        b.mode = WIDE_STICKING;
    } else if (nw > 0.0) {
        b.mode = WIDE_SLIDING;
        b.s = b.rad / nw;
        for (var a = 0u; a + 1u < ww.d; a++) {
            b.t[a] /= nw;
        }
    } else {
        b.mode = WIDE_FREE;
    }
    return b;
}

// F on the contact's row a (of d; a = d - 1 the normal) at (lv, cv).
fn wide_f(pr: Problem, w: WideRows, b: WideUnit, a: u32, lv: u32, cv: u32) -> f32 {
    var ww = w;
    var bb = b;
    let k = ww.rows[a];
    if (bb.mode == WIDE_BREAKING) {
        return wv(pr, lv, k);
    }
    if (bb.mode == WIDE_STICKING || a + 1u == ww.d) {
        return bb.r * wv(pr, cv, k);
    }
    if (bb.mode == WIDE_SLIDING) {
        return wv(pr, lv, k) - bb.rad * bb.t[a];
    }
    return wv(pr, lv, k);
}

// dF_a / dlambda_q (dc false) or dF_a / dc_q (dc true), a and q of the
// contact's d rows (newton.rs's sliding block in d dimensions).
fn wide_d(b: WideUnit, d: u32, a: u32, q: u32, dc: bool) -> f32 {
    var bb = b;
    let same = f32(a == q);
    if (bb.mode == WIDE_BREAKING) {
        return select(same, 0.0, dc);
    }
    if (bb.mode == WIDE_STICKING || a + 1u == d) {
        return select(0.0, bb.r * same, dc);
    }
    if (bb.mode == WIDE_FREE) {
        return select(same, 0.0, dc);
    }
    let ta = bb.t[a];
    if (q + 1u == d) {
        return select(-bb.mu * ta, bb.mu * bb.r * ta, dc);
    }
    let proj = same - ta * bb.t[q];
    return select(same - bb.s * proj, bb.r * bb.s * proj, dc);
}

// Where row e is among the contact's rows (d if not).
fn wide_index(w: WideRows, e: u32) -> u32 {
    var ww = w;
    for (var a = 0u; a < ww.d; a++) {
        if (ww.rows[a] == e) {
            return a;
        }
    }
    return ww.d;
}

// J[e][j] for row e of wide contact i (newton_entry).
fn wide_entry(pr: Problem, ca: Cache, scale: f32, i: u32, e: u32, j: u32) -> f32 {
    var w = wide_rows(pr, i);
    let b = wide_unit(pr, ca, w, i, scale, X, TMP);
    let a = wide_index(w, e);
    var v = 0.0;
    for (var q = 0u; q < w.d; q++) {
        let dc = wide_d(b, w.d, a, q, true);
        if (dc != 0.0) {
            v += dc * gr(pr, ca, w.rows[q], j);
        }
        if (w.rows[q] == j) {
            v += wide_d(b, w.d, a, q, false);
        }
    }
    return v;
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
    let wi = wide_contact_of(pr, e);
    if (wi != NO_WIDE) {
        return wide_entry(pr, ca, scale, wi, e, j);
    }
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
        if (is_cone_row(pr, u)) {
            continue; // with its contact
        }
        let e = unit_extra(pr, u);
        if (e.n > 0u) {
            var w = wide_rows_of(u, e);
            let b = wide_unit(pr, ca, w, u, scale, X, TMP);
            for (var a = 0u; a < w.d; a++) {
                let f = wide_f(pr, w, b, a, X, TMP);
                phi += f * f;
                if (store) {
                    work[pk(pr, PF, w.rows[a])] = f;
                }
            }
            continue;
        }
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
        if (is_cone_row(pr, u)) {
            continue; // with its contact
        }
        let e = unit_extra(pr, u);
        if (e.n > 0u) {
            var w = wide_rows_of(u, e);
            if (wide_unit(pr, ca, w, u, scale, X, TMP).mode == WIDE_BREAKING) {
                for (var a = 0u; a < w.d; a++) {
                    work[wk(pr, X, w.rows[a])] = 0.0;
                }
            }
            continue;
        }
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
        let e = unit_extra(pr, i);
        if (e.n > 0u) {
            if (!wide_direction_settled(pr, st, i, e, slow)) {
                return false;
            }
            continue;
        }
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

// newton_directions_settled for contact i with cone rows e: its
// tangential rows all together.
fn wide_direction_settled(pr: Problem, st: SolveResult, i: u32, e: ConeExtra, slow: f32) -> bool {
    let r = 3u * i;
    let nl = wide_tangent(pr, X, r, e);
    let n = wide_tangent(pr, TMP, r, e);
    let sliding = nl > 0.0 && nl >= (1.0 - SLIDING_BAND) * friction(pr, i) * wv(pr, X, r + 2u);
    if (!(n > slow && sliding)) {
        return true;
    }
    var w = wide_rows_of(i, e);
    var dd = 0.0;
    for (var a = 0u; a + 1u < w.d; a++) {
        let x = wv(pr, X, w.rows[a]) / nl + wv(pr, TMP, w.rows[a]) / n;
        dd += x * x;
    }
    return sqrt(dd) <= direction_tolerance(st, n);
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
            if (is_cone_row(pr, u)) {
                continue; // with its contact
            }
            let e = unit_extra(pr, u);
            if (e.n > 0u) {
                var w = wide_rows_of(u, e);
                let b = wide_unit(pr, ca, w, u, scale, X, TMP);
                for (var a = 0u; a < w.d; a++) {
                    var jd = 0.0;
                    for (var q = 0u; q < w.d; q++) {
                        let kq = w.rows[q];
                        jd += wide_d(b, w.d, a, q, false) * wv(pr, ZPREV, kq) + wide_d(b, w.d, a, q, true) * pv(pr, PAD, kq);
                    }
                    work[wk(pr, Y, w.rows[a])] = -pv(pr, PF, w.rows[a]) - jd;
                }
                continue;
            }
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
