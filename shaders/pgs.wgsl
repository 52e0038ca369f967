// Batched projected Gauss-Seidel, the f32 twin of src/contact/solvers/pgs.rs
// (NCP, CCP and LCP-pyramid variants by params.model) and of
// src/contact/solvers/raisim.rs (RaiSim and RaiSim+DS: the same sweep with
// RaiSim's exact per-contact step, relaxed). One invocation solves one
// problem (see shaders/README.md for why). The constants in capitals that
// this file uses and does not declare (WORKGROUP_SIZE, LANES, RAISIM_*, ...)
// are generated from Rust (src/gpu/batched/pgs.rs, src/gpu/batched/shader.rs).

// The "horizontal" step of NcpPgs / LcpPgs: normal step, then the tangential
// step with the tangential velocity corrected for the normal change,
// projected onto the disk (NCP) or the polygon (LCP) of radius mu lambda_N.
fn horizontal_step(w: mat3x3<f32>, mu: f32, omega: f32, l: vec3<f32>, c: vec3<f32>) -> vec3<f32> {
    var ln = l.z;
    if (w[2][2] > 0.0) {
        ln = max(l.z - omega * c.z / w[2][2], 0.0);
    }
    let dn = ln - l.z;
    let ct = vec2<f32>(c.x + w[0][2] * dn, c.y + w[1][2] * dn);
    let sigma = tangent_sigma(w);
    var lt = l.xy;
    if (sigma > 0.0) {
        lt = l.xy - omega * ct / sigma;
    }
    let r = mu * ln;
    if (params.model == MODEL_LCP) {
        lt = pyramid_project(params.facets, r, lt);
    } else {
        let norm = length(lt);
        if (norm > r) {
            var s = 0.0;
            if (norm > 0.0) {
                s = r / norm;
            }
            lt = lt * s;
        }
    }
    return vec3<f32>(lt, ln);
}

// --- RaiSim's per-contact step (raisim.rs): take-off, stiction, or the
// minimum of E(λ) = ½ λᵀWλ + c̃ᵀλ on the ellipse ∂K ∩ {(Wλ + c_f)_N = 0},
// by a downhill march on the polar angle and Illinois regula falsi.

const PI: f32 = 3.141592653589793;

struct EllipsePoint {
    l: vec3<f32>,
    dl: vec3<f32>,
    ok: bool,
}

fn ellipse_point(w: mat3x3<f32>, cf: vec3<f32>, mu: f32, theta: f32) -> EllipsePoint {
    let sn = sin(theta);
    let cs = cos(theta);
    let u = vec3<f32>(mu * cs, mu * sn, 1.0);
    let du = vec3<f32>(-mu * sn, mu * cs, 0.0);
    let a = w[2];
    let au = dot(a, u);
    if (!(au > 0.0)) {
        return EllipsePoint(vec3<f32>(0.0), vec3<f32>(0.0), false);
    }
    let s = -cf.z / au;
    let ds = -s * dot(a, du) / au;
    return EllipsePoint(u * s, u * ds + du * s, true);
}

// dE/dθ in x, validity in y (1: on the valid arc).
fn ellipse_slope(w: mat3x3<f32>, cf: vec3<f32>, ct: vec3<f32>, mu: f32, theta: f32) -> vec2<f32> {
    let p = ellipse_point(w, cf, mu, theta);
    if (!p.ok) {
        return vec2<f32>(0.0, 0.0);
    }
    return vec2<f32>(dot(w * p.l + ct, p.dl), 1.0);
}

// Minimizer of E along the ellipse from theta0 (ok = false: none).
fn ellipse_minimize(w: mat3x3<f32>, cf: vec3<f32>, ct: vec3<f32>, mu: f32, theta0: f32) -> EllipsePoint {
    let s0 = ellipse_slope(w, cf, ct, mu, theta0);
    if (s0.y == 0.0) {
        return EllipsePoint(vec3<f32>(0.0), vec3<f32>(0.0), false);
    }
    let d0 = s0.x;
    if (d0 == 0.0) {
        return ellipse_point(w, cf, mu, theta0);
    }
    // March downhill until the slope changes sign.
    let dir = -sign(d0);
    var lo = theta0;
    var d_lo = d0;
    var hi = theta0;
    var d_hi = d0;
    var step = 0.1;
    var travelled = 0.0;
    loop {
        if (travelled > 2.0 * PI || step < 1e-7) {
            // No sign change on a whole turn: keep the best point seen.
            return ellipse_point(w, cf, mu, lo);
        }
        let t = lo + dir * step;
        let st = ellipse_slope(w, cf, ct, mu, t);
        if (st.y == 0.0) {
            step *= 0.5;
        } else if (st.x * d0 > 0.0) {
            travelled += step;
            lo = t;
            d_lo = st.x;
            step = min(step * 1.5, RAISIM_MAX_STEP);
        } else {
            hi = t;
            d_hi = st.x;
            break;
        }
    }
    // Illinois regula falsi on [lo, hi].
    var side = 0;
    let infinity = bitcast<f32>(0x7f800000u);
    for (var k = 0; k < 100; k++) {
        if (abs(hi - lo) < RAISIM_THETA_TOLERANCE) {
            break;
        }
        var t = (lo * d_hi - hi * d_lo) / (d_hi - d_lo);
        if (!(is_finite(t) && (t - lo) * (t - hi) < 0.0)) {
            t = 0.5 * (lo + hi);
        }
        // Off the valid arc E is +∞ beyond the minimum: an "uphill" end.
        let st = ellipse_slope(w, cf, ct, mu, t);
        var d = -sign(d0) * infinity;
        if (st.y != 0.0) {
            d = st.x;
        }
        if (d == 0.0) {
            lo = t;
            break;
        }
        if (d * d_lo > 0.0) {
            lo = t;
            d_lo = d;
            if (side == -1) {
                d_hi *= 0.5;
            }
            side = -1;
        } else {
            hi = t;
            d_hi = d;
            if (side == 1) {
                d_lo *= 0.5;
            }
            side = 1;
        }
    }
    return ellipse_point(w, cf, mu, lo);
}

fn inverse3(m: mat3x3<f32>, det: f32) -> mat3x3<f32> {
    let a = m[0];
    let b = m[1];
    let c = m[2];
    // Rows of the inverse are the cross products of the columns, over det.
    return transpose(mat3x3<f32>(cross(b, c), cross(c, a), cross(a, b))) * (1.0 / det);
}

// λ* of contact with block w, impulse l, velocity c (which includes l).
fn raisim_step(w: mat3x3<f32>, mu: f32, l: vec3<f32>, c: vec3<f32>, de_saxce: bool) -> vec3<f32> {
    let cf = c - w * l;
    if (cf.z >= 0.0) {
        return vec3<f32>(0.0);
    }
    let det = determinant(w);
    if (det == 0.0 || !is_finite(det)) {
        // A singular block (a contact that cannot move): keep the impulse.
        return l;
    }
    let winv = inverse3(w, det);
    let l0 = -(winv * cf);
    if (l0.z >= 0.0 && length(l0.xy) <= mu * l0.z) {
        return l0;
    }
    if (!(mu > 0.0)) {
        return vec3<f32>(0.0, 0.0, max(-cf.z / w[2][2], 0.0));
    }
    var ct = cf;
    if (de_saxce) {
        ct.z += mu * length(c.xy);
    }
    let aim = -(winv * ct);
    var theta0 = atan2(aim.y, aim.x);
    if (!ellipse_point(w, cf, mu, theta0).ok) {
        // Start from the direction where the ray meets the plane most easily.
        theta0 = atan2(-w[2][1], -w[2][0]) + PI;
    }
    let p = ellipse_minimize(w, cf, ct, mu, theta0);
    if (p.ok && is_finite(p.l.x) && is_finite(p.l.y) && is_finite(p.l.z)) {
        return project_cone(mu, p.l);
    }
    return l;
}

// RaiSim's relaxation factor for the sweep after `it` sweeps:
// α ← γ α + (1 − γ) α_min from α₀, in closed form.
fn raisim_alpha(it: u32) -> f32 {
    return RAISIM_ALPHA_MIN + (RAISIM_ALPHA_0 - RAISIM_ALPHA_MIN) * pow(RAISIM_ALPHA_DECAY, f32(it));
}

fn is_raisim() -> bool {
    return params.model == MODEL_RAISIM || params.model == MODEL_RAISIM_DS;
}

// The local update of contact i with impulse l and velocity c (RaiSim:
// relaxed by alpha; its correction |W (λ* − λ)| goes to *corr).
fn local_update(pr: Problem, i: u32, l: vec3<f32>, c: vec3<f32>, alpha: f32, corr: ptr<function, f32>) -> vec3<f32> {
    let w = block(pr, i);
    let mu = friction(pr, i);
    if (is_raisim()) {
        let star = raisim_step(w, mu, l, c, params.model == MODEL_RAISIM_DS);
        let d = star - l;
        *corr = length(w * d);
        // A contact that takes off has its impulse relaxed geometrically
        // towards 0; f32 cannot follow it below ~1e-38 as f64 does, so
        // impulses below RAISIM_FLUSH are set to 0 (both precisions then
        // agree that the contact is open).
        let upd = l + alpha * d;
        return select(upd, vec3<f32>(0.0), abs(upd) < vec3<f32>(RAISIM_FLUSH));
    }
    if (params.model == MODEL_CCP) {
        let s = largest_eigenvalue3(w);
        if (!(s > 0.0)) {
            return l;
        }
        return project_cone(mu, l - params.omega * c / s);
    }
    return horizontal_step(w, mu, params.omega, l, c);
}

// Maps a warm start onto the model's feasible set.
fn initial(pr: Problem, i: u32, w: vec3<f32>) -> vec3<f32> {
    let mu = friction(pr, i);
    if (params.model == MODEL_LCP) {
        let n = max(w.z, 0.0);
        return vec3<f32>(pyramid_project(params.facets, mu * n, w.xy), n);
    }
    return project_cone(mu, w);
}

// c += (G + R)[:, k] dr: the compliance on row k, then column k of the
// symmetric G (row k of the triangle, then down column k; unrolled by 4,
// see contact_velocity).
fn add_column(pr: Problem, k: u32, dr: f32, M: u32) {
    cvel[vidx(pr, k)] += compliance(pr, k) * dr;
    let row = k * (k + 1u) / 2u;
    var j = 0u;
    for (; j + 4u <= k + 1u; j += 4u) {
        cvel[vidx(pr, j)] += gtri(pr, row + j) * dr;
        cvel[vidx(pr, j + 1u)] += gtri(pr, row + j + 1u) * dr;
        cvel[vidx(pr, j + 2u)] += gtri(pr, row + j + 2u) * dr;
        cvel[vidx(pr, j + 3u)] += gtri(pr, row + j + 3u) * dr;
    }
    for (; j <= k; j++) {
        cvel[vidx(pr, j)] += gtri(pr, row + j) * dr;
    }
    j = k + 1u;
    for (; j + 4u <= M; j += 4u) {
        cvel[vidx(pr, j)] += gtri(pr, j * (j + 1u) / 2u + k) * dr;
        cvel[vidx(pr, j + 1u)] += gtri(pr, (j + 1u) * (j + 2u) / 2u + k) * dr;
        cvel[vidx(pr, j + 2u)] += gtri(pr, (j + 2u) * (j + 3u) / 2u + k) * dr;
        cvel[vidx(pr, j + 3u)] += gtri(pr, (j + 3u) * (j + 4u) / 2u + k) * dr;
    }
    for (; j < M; j++) {
        cvel[vidx(pr, j)] += gtri(pr, j * (j + 1u) / 2u + k) * dr;
    }
}

// The step of one-dimensional row k with impulse l, velocity c, diagonal w =
// (G + R)_kk and set b (row_bound), as gauss_seidel in pgs.rs: λ ← P(λ − ω
// c / w) (exact for one row with ω = 1); a row with w <= 0 cannot move.
fn row_step(w: f32, l: f32, c: f32, b: f32) -> f32 {
    if (!(w > 0.0)) {
        return l;
    }
    return project_row(l - params.omega * c / w, b);
}

// One sweep over the contacts, then the unilateral rows; returns its
// largest local correction (RaiSim: |W δλ| over the contacts, |w δλ| over
// the rows; other models: the rows' only, unused), and NaN if an iterate
// became non-finite.
fn sweep(pr: Problem, alpha: f32) -> f32 {
    var local_max = 0.0;
    let M = rows(pr);
    for (var i = 0u; i < pr.nc; i++) {
        let old = get_lambda(pr, i);
        var corr = 0.0;
        let upd = local_update(pr, i, old, get_c(pr, i), alpha, &corr);
        local_max = nan_max(local_max, corr);
        let d = upd - old;
        if (all(d == vec3<f32>(0.0))) {
            continue;
        }
        set_lambda(pr, i, upd);
        for (var r = 0u; r < 3u; r++) {
            let dr = d[r];
            if (dr == 0.0) {
                continue;
            }
            add_column(pr, 3u * i + r, dr, M);
        }
    }
    for (var k = 3u * pr.nc; k < M; k++) {
        let w = gsym(pr, k, k) + compliance(pr, k);
        if (!(w > 0.0)) {
            continue;
        }
        let old = lambda[vidx(pr, k)];
        let upd = row_step(w, old, cvel[vidx(pr, k)], row_bound(pr, k));
        let d = upd - old;
        local_max = nan_max(local_max, abs(w * d));
        if (d == 0.0) {
            continue;
        }
        lambda[vidx(pr, k)] = upd;
        add_column(pr, k, d, M);
    }
    for (var k = 0u; k < M; k++) {
        if (!is_finite(cvel[vidx(pr, k)]) || !is_finite(lambda[vidx(pr, k)])) {
            return bitcast<f32>(0x7fc00000u);
        }
    }
    if (!is_finite(local_max)) {
        return bitcast<f32>(0x7fc00000u);
    }
    return local_max;
}

// The stopping residuals: the model's, or RaiSim's last largest correction.
fn stopping_residuals(pr: Problem, local_max: f32) -> vec4<f32> {
    if (params.model == MODEL_RAISIM) {
        return vec4<f32>(0.0, local_max, 0.0, local_max);
    }
    return problem_residuals(pr);
}

// One chunk of a solve: at most params.chunk sweeps, then the
// problem suspends (state in `results`, lambda in place) until the next
// dispatch. The contact velocities are recomputed exactly at the start of
// each chunk and before convergence is declared, and updated incrementally
// by the sweeps in between (f32 rounding does not accumulate past a chunk).
@compute @workgroup_size(WORKGROUP_SIZE)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let index = gid.x;
    if (!pending(index)) {
        return;
    }
    var st = results[index];
    let pr = problems[index];
    let M = rows(pr);
    if (st.state == STATE_FRESH) {
        if (pgs_refusal(pr) != 0u) {
            finish(index, 0u, pgs_refusal(pr), vec4<f32>(0.0), 0.0, 0u);
            return;
        }
        if (!blocks_psd(pr)) {
            finish(index, 0u, FLAG_NOT_PSD, vec4<f32>(0.0), 0.0, 0u);
            return;
        }
        for (var i = 0u; i < pr.nc; i++) {
            set_lambda(pr, i, initial(pr, i, get_lambda(pr, i)));
        }
        for (var k = 3u * pr.nc; k < M; k++) {
            lambda[vidx(pr, k)] = project_row(lambda[vidx(pr, k)], row_bound(pr, k));
        }
        st.iterations = 0u;
        st.eps_abs = bitcast<f32>(0x7f800000u); // RaiSim: no correction yet
        st.state = STATE_RUNNING;
    }
    contact_velocity(pr);
    var it = st.iterations;
    var steps = 0u;
    var flags = 0u;
    var finished = false;
    // RaiSim's last correction (none yet before the first sweep).
    var local_max = st.eps_abs;
    var res = vec4<f32>(0.0);
    loop {
        res = stopping_residuals(pr, local_max);
        if (res.w <= pr.tolerance && steps > 0u && params.model != MODEL_RAISIM) {
            // Judged on the exact velocities.
            contact_velocity(pr);
            res = problem_residuals(pr);
        }
        if (solve_ends(pr, res, it)) {
            finished = true;
            break;
        }
        if (steps >= params.chunk) {
            break;
        }
        let alpha = raisim_alpha(it);
        it += 1u;
        steps += 1u;
        local_max = sweep(pr, alpha);
        if (!is_finite(local_max)) {
            flags = FLAG_DIVERGED;
            finished = true;
            break;
        }
    }
    if (finished) {
        contact_velocity(pr);
        res = stopping_residuals(pr, local_max);
    }
    if (loop_limit_reached()) {
        finish(index, it, cut_flags(flags), res, 0.0, 0u);
        return;
    }
    if (finished) {
        finish(index, it, flags, res, 0.0, 0u);
        return;
    }
    st.iterations = it;
    st.eps_abs = local_max;
    results[index] = st;
    atomicAdd(&running_count, 1u);
}
