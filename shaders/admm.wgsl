// Batched ADMM on the contact problem, the f32 twin of
// src/contact/solvers/admm.rs (ncp-admm: de Saxce fixed point, adaptive rho by
// residual balancing, cold restart on divergence, best iterate on the cap;
// ccp-admm: fixed rho, no correction). One invocation per problem; the kernel
// factorizes G + R + rho I itself (Cholesky of the packed lower triangle, in
// `work`) each time rho changes.
//
// A solve is a state machine whose state lives in `results` and `work`, so
// that it can suspend at the end of a dispatch and resume in the next: each
// dispatch runs steps until its loop budget (params.chunk) is spent, and
// always at least one. The steps, in order:
//   FRESH    checks, projected warm start, its residuals (a solution: done)
//   POWER    one of 20 power iterations for L, the largest eigenvalue of G + R
//   ATTEMPT  start of an attempt (0: warm, 1: cold restart): z, u, start eps
//   FACTOR   one column of the Cholesky factor of G + R + rho I
//   ITERATE  one ADMM iteration (and, with adaptive rho, a possible change of
//            rho, which goes back to FACTOR)
//   FINAL    best iterate if the cap was reached, residuals, done
//
// Unilateral rows (after the contacts' 3 nc) are projected onto R+ and have
// no de Saxce correction (s = 0), as in admm.rs.
//
// Scratch per problem in `work`, from pr.work_offset, m = 3 nc + nl:
//   x, z_prev, u, s, tmp, best (m each), then the factor L (m(m+1)/2).
// z is `lambda`, the velocity A z + b is `cvel`.

// WORKGROUP_SIZE, RHO_*, DIVERGENCE_FACTOR and POWER_ITERATIONS are generated
// from Rust (src/gpu/admm.rs, src/contact/solvers/admm.rs).

const PHASE_POWER: u32 = 3u;
const PHASE_ATTEMPT: u32 = 4u;
const PHASE_FACTOR: u32 = 5u;
const PHASE_ITERATE: u32 = 6u;
const PHASE_FINAL: u32 = 7u;

const X: u32 = 0u;
const ZPREV: u32 = 1u;
const U: u32 = 2u;
const S: u32 = 3u;
const TMP: u32 = 4u;
const BEST: u32 = 5u;

fn wk(pr: Problem, v: u32, k: u32) -> u32 {
    return pr.work_offset + v * rows(pr) + k;
}

fn lidx(pr: Problem, i: u32, j: u32) -> u32 {
    return pr.work_offset + 6u * rows(pr) + i * (i + 1u) / 2u + j;
}

// z = P_C(tmp): the friction cones, then R+ for the unilateral rows.
fn project_tmp(pr: Problem) {
    for (var i = 0u; i < pr.nc; i++) {
        let k = wk(pr, TMP, 3u * i);
        let v = vec3<f32>(work[k], work[k + 1u], work[k + 2u]);
        set_lambda(pr, i, project_cone(friction(pr, i), v));
    }
    let V0 = 3u * pr.contact_offset;
    for (var k = 3u * pr.nc; k < rows(pr); k++) {
        lambda[V0 + k] = project_unilateral(work[wk(pr, TMP, k)]);
    }
}

// c = A z + b, s = s(c), residuals; remembers z if it is the best so far.
fn evaluate(pr: Problem, st: ptr<function, SolveResult>) -> vec4<f32> {
    let M = rows(pr);
    let V0 = 3u * pr.contact_offset;
    contact_velocity(pr);
    for (var i = 0u; i < pr.nc; i++) {
        var s = vec3<f32>(0.0);
        if (params.model == MODEL_NCP) {
            s = de_saxce(friction(pr, i), get_c(pr, i));
        }
        let k = wk(pr, S, 3u * i);
        work[k] = s.x;
        work[k + 1u] = s.y;
        work[k + 2u] = s.z;
    }
    for (var k = 3u * pr.nc; k < M; k++) {
        work[wk(pr, S, k)] = 0.0; // no correction on the unilateral rows
    }
    let r = problem_residuals(pr);
    if (r.w < (*st).best_eps) {
        (*st).best_eps = r.w;
        for (var k = 0u; k < M; k++) {
            work[wk(pr, BEST, k)] = lambda[V0 + k];
        }
    }
    (*st).eps_abs = r.w;
    (*st).primal = r.x;
    (*st).dual = r.y;
    (*st).complementarity = r.z;
    return r;
}

// Σ_j (G + R)_ij work[base + j], unrolled by 4.
fn row_times_work(pr: Problem, i: u32, base: u32) -> f32 {
    let M = rows(pr);
    var s = compliance(pr, i) * work[base + i];
    let row = i * (i + 1u) / 2u;
    var j = 0u;
    for (; j + 4u <= i + 1u; j += 4u) {
        s += gtri(pr, row + j) * work[base + j] + gtri(pr, row + j + 1u) * work[base + j + 1u]
            + gtri(pr, row + j + 2u) * work[base + j + 2u] + gtri(pr, row + j + 3u) * work[base + j + 3u];
    }
    for (; j <= i; j++) {
        s += gtri(pr, row + j) * work[base + j];
    }
    j = i + 1u;
    for (; j + 4u <= M; j += 4u) {
        s += gtri(pr, j * (j + 1u) / 2u + i) * work[base + j]
            + gtri(pr, (j + 1u) * (j + 2u) / 2u + i) * work[base + j + 1u]
            + gtri(pr, (j + 2u) * (j + 3u) / 2u + i) * work[base + j + 2u]
            + gtri(pr, (j + 3u) * (j + 4u) / 2u + i) * work[base + j + 3u];
    }
    for (; j < M; j++) {
        s += gtri(pr, j * (j + 1u) / 2u + i) * work[base + j];
    }
    return s;
}

// Σ_{k<n} L_ik L_jk (rows i and j of the factor), unrolled by 4.
fn factor_dot(pr: Problem, i: u32, j: u32, n: u32) -> f32 {
    let a = lidx(pr, i, 0u);
    let b = lidx(pr, j, 0u);
    var s = 0.0;
    var k = 0u;
    for (; k + 4u <= n; k += 4u) {
        s += work[a + k] * work[b + k] + work[a + k + 1u] * work[b + k + 1u]
            + work[a + k + 2u] * work[b + k + 2u] + work[a + k + 3u] * work[b + k + 3u];
    }
    for (; k < n; k++) {
        s += work[a + k] * work[b + k];
    }
    return s;
}

// Column j of L (left-looking); false on a non-positive pivot.
fn factor_column(pr: Problem, j: u32, rho: f32) -> bool {
    let M = rows(pr);
    let d = gsym(pr, j, j) + compliance(pr, j) + rho - factor_dot(pr, j, j, j);
    if (!(d > 0.0) || !is_finite(d)) {
        return false;
    }
    let ljj = sqrt(d);
    work[lidx(pr, j, j)] = ljj;
    for (var i = j + 1u; i < M; i++) {
        work[lidx(pr, i, j)] = (gsym(pr, i, j) - factor_dot(pr, i, j, j)) / ljj;
    }
    return true;
}

// x <- (L Lᵀ)⁻¹ x.
fn cholesky_solve(pr: Problem) {
    let M = rows(pr);
    let x = wk(pr, X, 0u);
    for (var i = 0u; i < M; i++) {
        let a = lidx(pr, i, 0u);
        var s = work[x + i];
        var k = 0u;
        for (; k + 4u <= i; k += 4u) {
            s -= work[a + k] * work[x + k] + work[a + k + 1u] * work[x + k + 1u]
                + work[a + k + 2u] * work[x + k + 2u] + work[a + k + 3u] * work[x + k + 3u];
        }
        for (; k < i; k++) {
            s -= work[a + k] * work[x + k];
        }
        work[x + i] = s / work[a + i];
    }
    for (var ii = 0u; ii < M; ii++) {
        let i = M - 1u - ii;
        var s = work[x + i];
        var k = i + 1u;
        for (; k + 4u <= M; k += 4u) {
            s -= work[lidx(pr, k, i)] * work[x + k] + work[lidx(pr, k + 1u, i)] * work[x + k + 1u]
                + work[lidx(pr, k + 2u, i)] * work[x + k + 2u] + work[lidx(pr, k + 3u, i)] * work[x + k + 3u];
        }
        for (; k < M; k++) {
            s -= work[lidx(pr, k, i)] * work[x + k];
        }
        work[x + i] = s / work[lidx(pr, i, i)];
    }
}

fn inf_norm_lambda(pr: Problem) -> f32 {
    let V0 = 3u * pr.contact_offset;
    var a = 0.0;
    for (var k = 0u; k < rows(pr); k++) {
        a = nan_max(a, abs(lambda[V0 + k]));
    }
    return a;
}

fn inf_norm_work(pr: Problem, v: u32) -> f32 {
    var a = 0.0;
    for (var k = 0u; k < rows(pr); k++) {
        a = nan_max(a, abs(work[wk(pr, v, k)]));
    }
    return a;
}

fn inf_norm_b(pr: Problem) -> f32 {
    var a = 0.0;
    for (var k = 0u; k < rows(pr); k++) {
        a = nan_max(a, abs(free_velocity(pr, k)));
    }
    return a;
}

// Loop iterations of the next step (for the dispatch's budget).
fn step_cost(pr: Problem, st: SolveResult) -> u32 {
    let m = rows(pr);
    let mv = m * (m / 4u + 8u) + 8u;
    switch st.state {
        case 3u: { // PHASE_POWER
            return mv + 4u * m;
        }
        case 5u: { // PHASE_FACTOR
            return (m - st.step) * (st.step / 4u + 8u) + 8u;
        }
        case 6u: { // PHASE_ITERATE
            return 2u * mv + 20u * m;
        }
        default: {
            return mv + 10u * m;
        }
    }
}

fn rho_cold(st: SolveResult) -> f32 {
    return 0.1 * st.scale;
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let index = gid.x;
    if (!pending(index)) {
        return;
    }
    var st = results[index];
    let pr = problems[index];
    let M = rows(pr);
    let V0 = 3u * pr.contact_offset;
    let tol = pr.tolerance;
    let corrected = params.model == MODEL_NCP;
    let alpha = params.omega;
    var budget = params.chunk;
    var first = true;
    loop {
        if (st.state == STATE_DONE) {
            break;
        }
        let cost = step_cost(pr, st);
        if (!first && cost > budget) {
            break;
        }
        first = false;
        budget -= min(cost, budget);

        if (st.state == STATE_FRESH) {
            if (pr.flags != 0u) {
                st.flags = pr.flags;
                st.state = STATE_DONE;
                break;
            }
            if (!blocks_psd(pr)) {
                st.flags = FLAG_NOT_PSD;
                st.state = STATE_DONE;
                break;
            }
            if (M == 0u) {
                st.state = STATE_DONE;
                break;
            }
            for (var k = 0u; k < M; k++) {
                work[wk(pr, ZPREV, k)] = 0.0;
                work[wk(pr, U, k)] = 0.0;
                work[wk(pr, S, k)] = 0.0;
                work[wk(pr, TMP, k)] = lambda[V0 + k];
                work[wk(pr, BEST, k)] = 0.0;
            }
            st.best_eps = 3.4e38;
            st.adapt = params.adaptive_rho;
            // A warm start that already solves the problem costs one evaluation.
            project_tmp(pr);
            let res = evaluate(pr, &st);
            if (res.w <= tol) {
                // (st.rho: the problem's initial rho from the host, or 0.)
                st.rho = select(max(params.rho, 0.0), st.rho, st.rho > 0.0);
                st.state = STATE_DONE;
                break;
            }
            // Power iteration start vector (not symmetric, so that it is
            // unlikely to be an eigenvector of a smaller eigenvalue).
            var n0 = 0.0;
            for (var i = 0u; i < M; i++) {
                let v = 1.0 + 0.5 * f32((i * 7919u) % 13u) / 13.0;
                work[wk(pr, X, i)] = v;
                n0 += v * v;
            }
            n0 = sqrt(n0);
            for (var i = 0u; i < M; i++) {
                work[wk(pr, X, i)] /= n0;
            }
            st.scale = 0.0;
            st.step = 0u;
            st.state = PHASE_POWER;
        } else if (st.state == PHASE_POWER) {
            var nrm = 0.0;
            let xb = wk(pr, X, 0u);
            for (var i = 0u; i < M; i++) {
                let t = row_times_work(pr, i, xb);
                work[wk(pr, TMP, i)] = t;
                nrm += t * t;
            }
            nrm = sqrt(nrm);
            st.step += 1u;
            if (!(nrm > 0.0)) {
                st.scale = 0.0;
                st.step = POWER_ITERATIONS;
            } else {
                st.scale = nrm;
                for (var i = 0u; i < M; i++) {
                    work[wk(pr, X, i)] = work[wk(pr, TMP, i)] / nrm;
                }
            }
            if (st.step >= POWER_ITERATIONS) {
                if (!(st.scale > 0.0)) {
                    st.scale = 1.0;
                }
                // The problem's initial rho (st.rho, set by the host and
                // untouched until here), else the batch's, else a cold one.
                let warm = st.rho;
                st.rho = rho_cold(st);
                if (warm > 0.0 && is_finite(warm)) {
                    st.rho = clamp(warm, RHO_RANGE_MIN * st.scale, RHO_RANGE_MAX * st.scale);
                } else if (params.rho > 0.0 && is_finite(params.rho)) {
                    st.rho = clamp(params.rho, RHO_RANGE_MIN * st.scale, RHO_RANGE_MAX * st.scale);
                }
                // The power iteration used tmp: restore the projected guess.
                for (var k = 0u; k < M; k++) {
                    work[wk(pr, TMP, k)] = lambda[V0 + k];
                }
                st.attempt = 0u;
                st.state = PHASE_ATTEMPT;
            }
        } else if (st.state == PHASE_ATTEMPT) {
            if (st.attempt > 0u) {
                // The warm-started run diverged: restart cold.
                st.rho = rho_cold(st);
                for (var k = 0u; k < M; k++) {
                    work[wk(pr, TMP, k)] = 0.0;
                }
            }
            project_tmp(pr);
            let res = evaluate(pr, &st);
            for (var k = 0u; k < M; k++) {
                work[wk(pr, U, k)] = -(cvel[V0 + k] + work[wk(pr, S, k)]) / st.rho;
            }
            st.start_eps = res.w;
            if (res.w <= tol) {
                st.state = STATE_DONE;
                break;
            }
            st.rho_prev = 0.0;
            st.step = 0u;
            st.last_update = st.iterations;
            st.state = PHASE_FACTOR;
        } else if (st.state == PHASE_FACTOR) {
            if (factor_column(pr, st.step, st.rho)) {
                st.step += 1u;
                if (st.step == M) {
                    st.factorizations += 1u;
                    if (st.rho_prev > 0.0) {
                        // An adaptive change of rho: rescale the scaled dual.
                        for (var k = 0u; k < M; k++) {
                            work[wk(pr, U, k)] *= st.rho_prev / st.rho;
                        }
                        st.last_update = st.iterations;
                    }
                    st.rho_prev = 0.0;
                    st.state = PHASE_ITERATE;
                }
            } else if (st.rho_prev > 0.0) {
                // f32 could not factorize at the new rho: go back to the
                // previous one (which factorized) and stop adapting.
                st.factorizations += 1u;
                st.rho = st.rho_prev;
                st.rho_prev = 0.0;
                st.adapt = 0u;
                st.step = 0u;
            } else {
                st.flags = FLAG_NOT_PSD;
                st.state = STATE_DONE;
                break;
            }
        } else if (st.state == PHASE_ITERATE) {
            if (st.iterations >= pr.max_iterations) {
                st.state = PHASE_FINAL;
                continue;
            }
            st.iterations += 1u;
            let rho = st.rho;
            for (var k = 0u; k < M; k++) {
                work[wk(pr, X, k)] = -(free_velocity(pr, k) + work[wk(pr, S, k)]) + rho * (lambda[V0 + k] - work[wk(pr, U, k)]);
            }
            cholesky_solve(pr);
            for (var k = 0u; k < M; k++) {
                let zk = lambda[V0 + k];
                work[wk(pr, ZPREV, k)] = zk;
                work[wk(pr, TMP, k)] = alpha * work[wk(pr, X, k)] + (1.0 - alpha) * zk + work[wk(pr, U, k)];
            }
            project_tmp(pr);
            for (var k = 0u; k < M; k++) {
                // u + x̂ − z⁺, with tmp = x̂ + u.
                work[wk(pr, U, k)] = work[wk(pr, TMP, k)] - lambda[V0 + k];
            }
            let res = evaluate(pr, &st);
            let eps = res.w;
            if (eps <= tol) {
                st.state = STATE_DONE;
                break;
            }
            if (corrected && (!is_finite(eps) || eps > DIVERGENCE_FACTOR * max(st.start_eps, tol))) {
                if (st.attempt == 0u) {
                    st.attempt = 1u;
                    st.state = PHASE_ATTEMPT;
                } else {
                    st.state = PHASE_FINAL;
                }
                continue;
            }
            if (st.adapt != 0u && st.iterations - st.last_update >= RHO_MIN_INTERVAL) {
                var rp = 0.0;
                var rd = 0.0;
                for (var k = 0u; k < M; k++) {
                    let zk = lambda[V0 + k];
                    rp = max(rp, abs(work[wk(pr, X, k)] - zk));
                    rd = max(rd, abs(zk - work[wk(pr, ZPREV, k)]));
                }
                rp = rp / max(max(inf_norm_lambda(pr), inf_norm_work(pr, X)), 1e-30);
                rd = rho * rd / max(max(inf_norm_b(pr), rho * inf_norm_work(pr, U)), 1e-30);
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
                    new_rho = clamp(new_rho, RHO_RANGE_MIN * st.scale, RHO_RANGE_MAX * st.scale);
                    if (new_rho != rho) {
                        st.rho_prev = rho;
                        st.rho = new_rho;
                        st.step = 0u;
                        st.state = PHASE_FACTOR;
                    }
                }
            }
        } else {
            // PHASE_FINAL (`!(a <= b)` so that a NaN final residual also falls back).
            if (is_finite(st.best_eps) && !(st.eps_abs <= st.best_eps)) {
                // Return the best iterate seen, with its own velocity and residuals.
                for (var k = 0u; k < M; k++) {
                    lambda[V0 + k] = work[wk(pr, BEST, k)];
                }
                contact_velocity(pr);
                let r = problem_residuals(pr);
                st.eps_abs = r.w;
                st.primal = r.x;
                st.dual = r.y;
                st.complementarity = r.z;
            }
            if (st.flags == 0u && !is_finite(st.eps_abs)) {
                st.flags = FLAG_DIVERGED;
            }
            st.state = STATE_DONE;
        }
    }
    if (loop_limit_reached()) {
        st.flags |= FLAG_LOOP_LIMIT;
        st.state = STATE_DONE;
    }
    results[index] = st;
    if (st.state != STATE_DONE) {
        atomicAdd(&running_count, 1u);
    }
}
