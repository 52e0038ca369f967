// Batched ADMM on the contact problem, the f32 twin of
// src/contact/solvers/admm.rs (ncp-admm: de Saxce fixed point, adaptive rho by
// residual balancing, cold restart on divergence, best iterate on the cap;
// ccp-admm: fixed rho, no correction). One invocation per problem; the kernel
// factorizes G + R + rho I itself (dense Cholesky, packed lower triangle, in
// `work`) each time rho changes. common.wgsl is prepended.
//
// Scratch per problem in `work`, from pr.work_offset, m = 3 nc:
//   x, z_prev, u, s, tmp, best (m each), then the factor L (m(m+1)/2).
// z is `lambda`, the velocity A z + b is `cvel`.

const WORKGROUP_SIZE: u32 = 64u;
const RHO_RATIO: f32 = 10.0;
const DIVERGENCE_FACTOR: f32 = 1e4;
const RHO_MIN_INTERVAL: u32 = 5u;
const RHO_MAX_STEP: f32 = 10.0;
// The CPU's range is [1e-6, 1e3] L; in f32 the factorization of G + rho I
// keeps about 7 - log10(L / rho) digits, so rho stays above 1e-4 L.
const RHO_RANGE_MIN: f32 = 1e-4;
const RHO_RANGE_MAX: f32 = 1e3;

const X: u32 = 0u;
const ZPREV: u32 = 1u;
const U: u32 = 2u;
const S: u32 = 3u;
const TMP: u32 = 4u;
const BEST: u32 = 5u;

fn wk(pr: Problem, v: u32, k: u32) -> u32 {
    let M = 3u * pr.nc;
    return pr.work_offset + v * M + k;
}

fn lidx(pr: Problem, i: u32, j: u32) -> u32 {
    let M = 3u * pr.nc;
    return pr.work_offset + 6u * M + i * (i + 1u) / 2u + j;
}

// z = P_C(tmp).
fn project_tmp(pr: Problem) {
    for (var i = 0u; i < pr.nc; i++) {
        let k = wk(pr, TMP, 3u * i);
        let v = vec3<f32>(work[k], work[k + 1u], work[k + 2u]);
        set_lambda(pr, i, project_cone(friction(pr, i), v));
    }
}

// c = A z + b, s = s(c), residuals; remembers z if it is the best so far.
fn evaluate(pr: Problem, best_eps: ptr<function, f32>) -> vec4<f32> {
    let M = 3u * pr.nc;
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
    let r = problem_residuals(pr);
    if (r.w < *best_eps) {
        *best_eps = r.w;
        for (var k = 0u; k < M; k++) {
            work[wk(pr, BEST, k)] = lambda[V0 + k];
        }
    }
    return r;
}

// Largest eigenvalue of A = G + R by 20 power iterations (in x, tmp).
fn largest_eigenvalue(pr: Problem) -> f32 {
    let M = 3u * pr.nc;
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
    var l = 0.0;
    for (var it = 0; it < 20; it++) {
        var nrm = 0.0;
        for (var i = 0u; i < M; i++) {
            var t = compliance(pr, i) * work[wk(pr, X, i)];
            for (var j = 0u; j < M; j++) {
                t += gsym(pr, i, j) * work[wk(pr, X, j)];
            }
            work[wk(pr, TMP, i)] = t;
            nrm += t * t;
        }
        nrm = sqrt(nrm);
        if (!(nrm > 0.0)) {
            return 0.0;
        }
        l = nrm;
        for (var i = 0u; i < M; i++) {
            work[wk(pr, X, i)] = work[wk(pr, TMP, i)] / nrm;
        }
    }
    return l;
}

// L Lᵀ = G + R + rho I; false on a non-positive pivot.
fn factorize(pr: Problem, rho: f32) -> bool {
    let M = 3u * pr.nc;
    for (var j = 0u; j < M; j++) {
        var d = gsym(pr, j, j) + compliance(pr, j) + rho;
        for (var k = 0u; k < j; k++) {
            let l = work[lidx(pr, j, k)];
            d -= l * l;
        }
        if (!(d > 0.0) || !is_finite(d)) {
            return false;
        }
        let ljj = sqrt(d);
        work[lidx(pr, j, j)] = ljj;
        for (var i = j + 1u; i < M; i++) {
            var s = gsym(pr, i, j);
            for (var k = 0u; k < j; k++) {
                s -= work[lidx(pr, i, k)] * work[lidx(pr, j, k)];
            }
            work[lidx(pr, i, j)] = s / ljj;
        }
    }
    return true;
}

// x <- (L Lᵀ)⁻¹ x.
fn cholesky_solve(pr: Problem) {
    let M = 3u * pr.nc;
    for (var i = 0u; i < M; i++) {
        var s = work[wk(pr, X, i)];
        for (var k = 0u; k < i; k++) {
            s -= work[lidx(pr, i, k)] * work[wk(pr, X, k)];
        }
        work[wk(pr, X, i)] = s / work[lidx(pr, i, i)];
    }
    for (var ii = 0u; ii < M; ii++) {
        let i = M - 1u - ii;
        var s = work[wk(pr, X, i)];
        for (var k = i + 1u; k < M; k++) {
            s -= work[lidx(pr, k, i)] * work[wk(pr, X, k)];
        }
        work[wk(pr, X, i)] = s / work[lidx(pr, i, i)];
    }
}

fn inf_norm_lambda(pr: Problem) -> f32 {
    let M = 3u * pr.nc;
    let V0 = 3u * pr.contact_offset;
    var a = 0.0;
    for (var k = 0u; k < M; k++) {
        a = nan_max(a, abs(lambda[V0 + k]));
    }
    return a;
}

fn inf_norm_work(pr: Problem, v: u32) -> f32 {
    let M = 3u * pr.nc;
    var a = 0.0;
    for (var k = 0u; k < M; k++) {
        a = nan_max(a, abs(work[wk(pr, v, k)]));
    }
    return a;
}

fn inf_norm_b(pr: Problem) -> f32 {
    let M = 3u * pr.nc;
    var a = 0.0;
    for (var k = 0u; k < M; k++) {
        a = nan_max(a, abs(free_velocity(pr, k)));
    }
    return a;
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let index = gid.x;
    if (index >= params.num_problems) {
        return;
    }
    if (results[index].state == STATE_DONE) {
        return;
    }
    let pr = problems[index];
    let M = 3u * pr.nc;
    let V0 = 3u * pr.contact_offset;
    if (pr.flags != 0u) {
        finish(index, 0u, pr.flags, vec4<f32>(0.0), 0.0, 0u);
        return;
    }
    if (!blocks_psd(pr)) {
        finish(index, 0u, FLAG_NOT_PSD, vec4<f32>(0.0), 0.0, 0u);
        return;
    }
    if (M == 0u) {
        finish(index, 0u, 0u, vec4<f32>(0.0), 0.0, 0u);
        return;
    }
    let tol = pr.tolerance;
    let corrected = params.model == MODEL_NCP;
    let adaptive = params.adaptive_rho != 0u;
    let alpha = params.omega;
    for (var k = 0u; k < M; k++) {
        work[wk(pr, ZPREV, k)] = 0.0;
        work[wk(pr, U, k)] = 0.0;
        work[wk(pr, S, k)] = 0.0;
        work[wk(pr, TMP, k)] = lambda[V0 + k];
        work[wk(pr, BEST, k)] = 0.0;
    }
    var best_eps = 3.4e38;
    // A warm start that already solves the problem costs one evaluation.
    project_tmp(pr);
    var res = evaluate(pr, &best_eps);
    if (res.w <= tol) {
        finish(index, 0u, 0u, res, max(params.rho, 0.0), 0u);
        return;
    }
    let lmax = largest_eigenvalue(pr);
    var scale = 1.0;
    if (lmax > 0.0) {
        scale = lmax;
    }
    let rho_min = RHO_RANGE_MIN * scale;
    let rho_max = RHO_RANGE_MAX * scale;
    let rho_cold = 0.1 * scale;
    var rho = rho_cold;
    if (params.rho > 0.0 && is_finite(params.rho)) {
        rho = clamp(params.rho, rho_min, rho_max);
    }
    // The power iteration used tmp: restore the projected guess.
    for (var k = 0u; k < M; k++) {
        work[wk(pr, TMP, k)] = lambda[V0 + k];
    }
    var iterations = 0u;
    var factorizations = 0u;
    var flags = 0u;
    var converged = false;
    var attempts = 1u;
    if (corrected) {
        attempts = 2u;
    }
    var adapt = adaptive;
    for (var attempt = 0u; attempt < attempts; attempt++) {
        if (attempt > 0u) {
            rho = rho_cold;
            for (var k = 0u; k < M; k++) {
                work[wk(pr, TMP, k)] = 0.0;
            }
        }
        project_tmp(pr);
        res = evaluate(pr, &best_eps);
        for (var k = 0u; k < M; k++) {
            work[wk(pr, U, k)] = -(cvel[V0 + k] + work[wk(pr, S, k)]) / rho;
        }
        let start_eps = res.w;
        if (start_eps <= tol) {
            converged = true;
            break;
        }
        if (!factorize(pr, rho)) {
            flags = FLAG_NOT_PSD;
            break;
        }
        factorizations += 1u;
        var last_update = iterations;
        var restart = false;
        loop {
            if (iterations >= pr.max_iterations) {
                break;
            }
            iterations += 1u;
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
            res = evaluate(pr, &best_eps);
            let eps = res.w;
            if (eps <= tol) {
                converged = true;
                break;
            }
            if (corrected && (!is_finite(eps) || eps > DIVERGENCE_FACTOR * max(start_eps, tol))) {
                restart = true;
                break;
            }
            if (adapt && iterations - last_update >= RHO_MIN_INTERVAL) {
                var rp = 0.0;
                var rd = 0.0;
                for (var k = 0u; k < M; k++) {
                    let zk = lambda[V0 + k];
                    rp = max(rp, abs(work[wk(pr, X, k)] - zk));
                    rd = max(rd, abs(zk - work[wk(pr, ZPREV, k)]));
                }
                rp = rp / max(max(inf_norm_lambda(pr), inf_norm_work(pr, X)), 1e-30);
                rd = rho * rd / max(max(inf_norm_b(pr), rho * inf_norm_work(pr, U)), 1e-30);
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
                    new_rho = clamp(new_rho, rho_min, rho_max);
                    if (new_rho != rho) {
                        if (factorize(pr, new_rho)) {
                            for (var k = 0u; k < M; k++) {
                                work[wk(pr, U, k)] *= rho / new_rho;
                            }
                            rho = new_rho;
                            factorizations += 1u;
                            last_update = iterations;
                        } else {
                            // f32 could not factorize at the new rho: keep the
                            // previous one (which factorized) and stop adapting.
                            _ = factorize(pr, rho);
                            factorizations += 2u;
                            adapt = false;
                        }
                    }
                }
            }
        }
        if (!restart) {
            break;
        }
    }
    if (flags == 0u && !converged && is_finite(best_eps) && !(res.w <= best_eps)) {
        // Return the best iterate seen, with its own velocity and residuals.
        for (var k = 0u; k < M; k++) {
            lambda[V0 + k] = work[wk(pr, BEST, k)];
        }
        contact_velocity(pr);
        res = problem_residuals(pr);
    }
    if (flags == 0u && !is_finite(res.w)) {
        flags = FLAG_DIVERGED;
    }
    finish(index, iterations, flags, res, rho, factorizations);
}
