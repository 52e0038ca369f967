// The ADMM kernel, part 2 of 4 (after admm.wgsl; src/gpu/batched/admm.rs assembles them).

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
    // (Three-row cones only, as on the CPU; Newton takes wider ones.)
    return !has_cone_rows(pr) && finisher_due(pr, st);
}

// Whether a finisher may end this solve: the NCP's, with the polish on,
// short of its reach.
fn finisher_due(pr: Problem, st: SolveResult) -> bool {
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
        let ru = unit_residuals(pr, ca, u, unit_extra(pr, u), X, TMP);
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
