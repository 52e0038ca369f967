// The ADMM kernel, part 4 of 4 (after admm_newton.wgsl): the state machine and the entry points.

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
    (*st).weights = scaled_weights(pr, params.scaled_spread);
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
// the factor by which to rescale u (0: none; -1: divide it by ρ's weights,
// just set by the stall guard).
fn factor_column_done(pr: Problem, st: ptr<function, SolveResult>, ok: bool) -> f32 {
    if (ok) {
        (*st).step += 1u;
        if ((*st).step == rows(pr)) {
            (*st).factorizations += 1u;
            var rescale = 0.0;
            if ((*st).rho_prev < 0.0) {
                rescale = -1.0;
                (*st).last_update = (*st).iterations;
            } else if ((*st).rho_prev > 0.0) {
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
    } else if ((*st).rho_prev < 0.0) {
        // f32 could not factorize with the weights: one ρ for good.
        (*st).factorizations += 1u;
        (*st).weights = -1.0;
        (*st).rho_prev = 0.0;
        (*st).step = 0u;
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
// and the residual balancing keeps it at least that large. The first such
// stall of a problem with one ρ whose units' diagonals span more than
// SCALED_SPREAD scales ρ per row instead (rho_prev = -1: factor_column_done
// then divides u by the weights). Returns whether it changed rho or W.
fn stall_guarded(pr: Problem, st: ptr<function, SolveResult>) -> bool {
    if (params.stall_guard == 0u || params.model != MODEL_NCP || (*st).adapt == 0u) {
        return false;
    }
    let eps = (*st).eps_abs;
    if (eps < 0.99 * (*st).window_best) {
        (*st).window_best = eps;
        (*st).window_start = (*st).iterations;
        return false;
    }
    if ((*st).iterations - (*st).window_start < STALL_WINDOW) {
        return false;
    }
    if ((*st).weights == 0.0) {
        (*st).weights = scaled_weights(pr, SCALED_SPREAD);
        if ((*st).weights > 0.0) {
            (*st).rho_prev = -1.0;
            (*st).window_best = eps;
            (*st).window_start = (*st).iterations;
            (*st).step = 0u;
            (*st).state = PHASE_FACTOR;
            return true;
        }
        (*st).weights = -1.0;
    }
    let hi = RHO_RANGE_MAX * (*st).scale;
    if (!((*st).rho < hi)) {
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

// Loop iterations a step spends on contacts' cone rows, at most: finding
// them (unit_extra: a scan of the rows per contact, a few times per step)
// and, in every problem, the wide branches' loops, which lavapipe counts
// against its loop limit even where no lane enters them (measured: without
// this, the workgroup kernel's steps on problems without cone rows were
// cut by the limit).
fn cone_scans(pr: Problem) -> u32 {
    return 16u * units(pr) + 16u + select(0u, 8u * units(pr) * (pr.nl + 4u), has_cone_rows(pr));
}

// Loop iterations of the next step of `main` (for the dispatch's budget).
fn step_cost(pr: Problem, st: SolveResult) -> u32 {
    return step_cost_rows(pr, st) + cone_scans(pr);
}

fn step_cost_rows(pr: Problem, st: SolveResult) -> u32 {
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
            dual_start_units(pr, st.rho, st.weights, 0u, 1u);
            attempt_evaluated(pr, &st, st.eps_abs);
        } else if (st.state == PHASE_FACTOR) {
            let j = st.step;
            factor_units(pr, ca, j, st.rho, st.weights, 0u, 1u);
            let d = l_at(pr, ca, tri(j) + j);
            let ok = pivot_ok(d);
            if (ok) {
                factor_scale_units(pr, ca, j, sqrt(d), 0u, 1u);
            }
            let rescale = factor_column_done(pr, &st, ok);
            if (rescale > 0.0) {
                scale_units(pr, U, rescale, 0u, 1u);
            } else if (rescale < 0.0) {
                unweight_units(pr, st.weights, 0u, 1u);
            }
        } else if (st.state == PHASE_ITERATE) {
            if (st.iterations >= pr.max_iterations) {
                st.state = PHASE_FINAL;
                continue;
            }
            st.iterations += 1u;
            rhs_units(pr, st.rho, st.weights, 0u, 1u);
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
            } else if (has_cone_rows(pr) && st.iterations % POLISH_INTERVAL == 0u && newton_due(pr, st)) {
                // (No polish of wider cones: Newton alone, as on the CPU.)
                newton_start(&st, PHASE_ITERATE);
            } else {
                let balancing = iteration_evaluated(pr, &st, st.eps_abs);
                if (st.state == PHASE_ITERATE && !stall_guarded(pr, &st) && balancing) {
                    balance(&st, balance_units(pr, st.weights, 0u, 1u));
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
        st.flags = cut_flags(st.flags);
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
    let e = evaluate_units(pr, ca, lane, WA_LANES);
    // (A contact writes its cone rows' c and s, which their own lanes read
    // next. Only there: lavapipe counts a barrier against its loop limit.)
    if (has_cone_rows(pr)) {
        storageBarrier();
    }
    let r = take_floor(st, wa_max(lane, e));
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
    return wa_step_cost_rows(pr, st) + cone_scans(pr);
}

fn wa_step_cost_rows(pr: Problem, st: SolveResult) -> u32 {
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
    let index = group_index(wid, nwg);
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
            // (A contact projects its cone rows, which other lanes own.)
            if (has_cone_rows(pr)) {
                wa_sync();
            }
            project_units(pr, lane, WA_LANES);
            wa_evaluate(pr, ca, lane, &st);
            dual_start_units(pr, st.rho, st.weights, lane, WA_LANES);
            attempt_evaluated(pr, &st, st.eps_abs);
        } else if (st.state == PHASE_FACTOR) {
            let j = st.step;
            factor_units(pr, ca, j, st.rho, st.weights, lane, WA_LANES);
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
            } else if (rescale < 0.0) {
                unweight_units(pr, st.weights, lane, WA_LANES);
            }
        } else if (st.state == PHASE_ITERATE) {
            if (st.iterations >= pr.max_iterations) {
                st.state = PHASE_FINAL;
                continue;
            }
            st.iterations += 1u;
            rhs_units(pr, st.rho, st.weights, lane, WA_LANES);
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
            } else if (has_cone_rows(pr) && st.iterations % POLISH_INTERVAL == 0u && newton_due(pr, st)) {
                // (No polish of wider cones: Newton alone, as on the CPU.)
                newton_start(&st, PHASE_ITERATE);
            } else {
                let balancing = iteration_evaluated(pr, &st, st.eps_abs);
                if (st.state == PHASE_ITERATE && !stall_guarded(pr, &st) && balancing) {
                    let b = balance_units(pr, st.weights, lane, WA_LANES);
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
        st.flags = cut_flags(st.flags);
        st.state = STATE_DONE;
    }
    report_rho(&st);
    results[index] = st;
    if (st.state != STATE_DONE) {
        atomicAdd(&running_count, 1u);
    }
}
