// Batched projected Gauss-Seidel, the f32 twin of src/contact/solvers/pgs.rs
// (NCP, CCP and LCP-pyramid variants by params.model) and of
// src/contact/solvers/raisim.rs (RaiSim and RaiSim+DS: the same sweep with
// RaiSim's exact per-contact step, relaxed). One invocation solves one
// problem (see shaders/README.md for why). The constants in capitals that
// this file uses and does not declare (WORKGROUP_SIZE, LANES, RAISIM_*, ...)
// are generated from Rust (src/gpu/pgs.rs, src/gpu/shader.rs).

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
        if (pr.flags != 0u) {
            finish(index, 0u, pr.flags, vec4<f32>(0.0), 0.0, 0u);
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
        finish(index, it, flags | FLAG_LOOP_LIMIT, res, 0.0, 0u);
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

// ---------------------------------------------------------------------------
// One workgroup per problem (`Decomposition::Workgroup`, entry point
// `main_workgroup`): the same solve, with the problem's λ and c in
// workgroup memory, its packed G too when it fits (`WG_G_CACHE`), and the
// work of a sweep spread over LANES invocations. Gauss-Seidel stays
// sequential over contacts: lane 0 makes each contact's local update, then
// every lane updates the rows of c it owns (rows j ≡ lane mod LANES) with
// that contact's column of G, in the order of `sweep` above; the residuals,
// the finiteness test and the exact recomputation of c are spread the same
// way. Every control decision is read through workgroupUniformLoad, so that
// the barriers stay in uniform control flow.

// LANES invocations per problem (generated); WG_MAX_ROWS rows of the largest
// problem (the host refuses larger capacities); WG_G_CACHE floats of G
// cached in workgroup memory (the triangle of its first rows). The last two
// are set per pipeline by the host from the capacity (src/gpu/pgs.rs
// wg_sizes); the other entry points never touch these arrays.
override WG_MAX_ROWS: u32 = 1u;
override WG_G_CACHE: u32 = 1u;

struct WgSummary {
    res: vec4<f32>,
    bad: u32,
    scalar: f32,
    word: u32,
    pad: u32,
}

var<workgroup> wg_lambda: array<f32, WG_MAX_ROWS>;
var<workgroup> wg_c: array<f32, WG_MAX_ROWS>;
var<workgroup> wg_g: array<f32, WG_G_CACHE>;
var<workgroup> wg_delta: vec4<f32>;
var<workgroup> wg_res: array<vec4<f32>, LANES>;
var<workgroup> wg_bad: array<u32, LANES>;
var<workgroup> wg_summary: WgSummary;
var<workgroup> wg_limit: atomic<u32>;

// Element (a, b), a >= b, of the problem's packed triangle.
fn wg_tri(pr: Problem, cached: bool, t: u32) -> f32 {
    if (cached) {
        return wg_g[t];
    }
    return gtri(pr, t);
}

// c_j = g_j + R_j λ_j + Σ_k G_jk λ_k, exactly (the row of contact_velocity).
fn wg_row_velocity(pr: Problem, cached: bool, i: u32, M: u32) -> f32 {
    var s = free_velocity(pr, i) + compliance(pr, i) * wg_lambda[i];
    let row = i * (i + 1u) / 2u;
    var j = 0u;
    for (; j + 4u <= i + 1u; j += 4u) {
        s += wg_tri(pr, cached, row + j) * wg_lambda[j] + wg_tri(pr, cached, row + j + 1u) * wg_lambda[j + 1u]
            + wg_tri(pr, cached, row + j + 2u) * wg_lambda[j + 2u] + wg_tri(pr, cached, row + j + 3u) * wg_lambda[j + 3u];
    }
    for (; j <= i; j++) {
        s += wg_tri(pr, cached, row + j) * wg_lambda[j];
    }
    j = i + 1u;
    for (; j + 4u <= M; j += 4u) {
        s += wg_tri(pr, cached, j * (j + 1u) / 2u + i) * wg_lambda[j]
            + wg_tri(pr, cached, (j + 1u) * (j + 2u) / 2u + i) * wg_lambda[j + 1u]
            + wg_tri(pr, cached, (j + 2u) * (j + 3u) / 2u + i) * wg_lambda[j + 2u]
            + wg_tri(pr, cached, (j + 3u) * (j + 4u) / 2u + i) * wg_lambda[j + 3u];
    }
    for (; j < M; j++) {
        s += wg_tri(pr, cached, j * (j + 1u) / 2u + i) * wg_lambda[j];
    }
    return s;
}

// c = (G + R)λ + g, exactly, rows spread over the lanes.
fn wg_velocity(pr: Problem, cached: bool, lane: u32, M: u32) {
    for (var j = lane; j < M; j += LANES) {
        wg_c[j] = wg_row_velocity(pr, cached, j, M);
    }
    workgroupBarrier();
}

// The maximum residuals over the contacts (res) and whether an iterate or
// a velocity is non-finite (bad), uniform across the workgroup.
fn wg_residuals(pr: Problem, lane: u32, M: u32) -> WgSummary {
    var r = vec4<f32>(0.0);
    var bad = 0u;
    for (var i = lane; i < pr.nc; i += LANES) {
        let k = 3u * i;
        let l = vec3<f32>(wg_lambda[k], wg_lambda[k + 1u], wg_lambda[k + 2u]);
        let c = vec3<f32>(wg_c[k], wg_c[k + 1u], wg_c[k + 2u]);
        if (!(is_finite(l.x) && is_finite(l.y) && is_finite(l.z) && is_finite(c.x) && is_finite(c.y) && is_finite(c.z))) {
            bad = 1u;
        }
        let ri = contact_residuals(params.model, params.facets, friction(pr, i), l, c);
        r = vec4<f32>(nan_max(r.x, ri.x), nan_max(r.y, ri.y), nan_max(r.z, ri.z), nan_max(r.w, ri.w));
    }
    // The unilateral rows, row j on lane j mod LANES.
    for (var k = 3u * pr.nc + lane; k < M; k += LANES) {
        let l = wg_lambda[k];
        let c = wg_c[k];
        if (!(is_finite(l) && is_finite(c))) {
            bad = 1u;
        }
        let ri = row_residuals(l, c, row_bound(pr, k));
        r = vec4<f32>(nan_max(r.x, ri.x), nan_max(r.y, ri.y), nan_max(r.z, ri.z), nan_max(r.w, ri.w));
    }
    wg_res[lane] = r;
    wg_bad[lane] = bad;
    workgroupBarrier();
    if (lane == 0u) {
        var t = wg_res[0];
        var b = wg_bad[0];
        for (var q = 1u; q < LANES; q++) {
            let u = wg_res[q];
            t = vec4<f32>(nan_max(t.x, u.x), nan_max(t.y, u.y), nan_max(t.z, u.z), nan_max(t.w, u.w));
            b = b | wg_bad[q];
        }
        wg_summary.res = t;
        wg_summary.bad = b;
    }
    return workgroupUniformLoad(&wg_summary);
}

// One sweep; returns RaiSim's largest local correction (0 otherwise),
// uniform across the workgroup.
fn wg_sweep(pr: Problem, cached: bool, lane: u32, M: u32, alpha: f32) -> f32 {
    var local_max = 0.0;
    for (var i = 0u; i < pr.nc; i++) {
        let k = 3u * i;
        if (lane == 0u) {
            let old = vec3<f32>(wg_lambda[k], wg_lambda[k + 1u], wg_lambda[k + 2u]);
            let c = vec3<f32>(wg_c[k], wg_c[k + 1u], wg_c[k + 2u]);
            var corr = 0.0;
            let upd = local_update(pr, i, old, c, alpha, &corr);
            local_max = nan_max(local_max, corr);
            wg_lambda[k] = upd.x;
            wg_lambda[k + 1u] = upd.y;
            wg_lambda[k + 2u] = upd.z;
            wg_delta = vec4<f32>(upd - old, 0.0);
        }
        workgroupBarrier();
        let d = wg_delta.xyz;
        if (any(d != vec3<f32>(0.0))) {
            // Column k..k+2 of G times d, in sweep's order: for each of the
            // three columns, the compliance on its own row, then G.
            for (var j = lane; j < M; j += LANES) {
                var s = wg_c[j];
                for (var r = 0u; r < 3u; r++) {
                    let col = k + r;
                    let dr = d[r];
                    if (dr == 0.0) {
                        continue;
                    }
                    if (j == col) {
                        s += compliance(pr, col) * dr;
                    }
                    let a = max(j, col);
                    let b = min(j, col);
                    s += wg_tri(pr, cached, a * (a + 1u) / 2u + b) * dr;
                }
                wg_c[j] = s;
            }
        }
        workgroupBarrier();
    }
    // The unilateral rows (sweep's order): lane 0 steps row k, every lane
    // updates its rows of c with column k.
    for (var k = 3u * pr.nc; k < M; k++) {
        if (lane == 0u) {
            let w = wg_tri(pr, cached, k * (k + 1u) / 2u + k) + compliance(pr, k);
            var d = 0.0;
            if (w > 0.0) {
                let old = wg_lambda[k];
                let upd = row_step(w, old, wg_c[k], row_bound(pr, k));
                d = upd - old;
                local_max = nan_max(local_max, abs(w * d));
                wg_lambda[k] = upd;
            }
            wg_delta = vec4<f32>(d, 0.0, 0.0, 0.0);
        }
        workgroupBarrier();
        let d = wg_delta.x;
        if (d != 0.0) {
            for (var j = lane; j < M; j += LANES) {
                var s = wg_c[j];
                if (j == k) {
                    s += compliance(pr, k) * d;
                }
                let a = max(j, k);
                let b = min(j, k);
                s += wg_tri(pr, cached, a * (a + 1u) / 2u + b) * d;
                wg_c[j] = s;
            }
        }
        workgroupBarrier();
    }
    if (lane == 0u) {
        wg_summary.scalar = local_max;
    }
    return workgroupUniformLoad(&wg_summary).scalar;
}

// Lane 0 writes a whole word to wg_summary; every lane reads it back.
fn wg_broadcast_u32(lane: u32, v: u32) -> u32 {
    if (lane == 0u) {
        wg_summary.word = v;
    }
    return workgroupUniformLoad(&wg_summary).word;
}

fn wg_broadcast_f32(lane: u32, v: f32) -> f32 {
    if (lane == 0u) {
        wg_summary.scalar = v;
    }
    return workgroupUniformLoad(&wg_summary).scalar;
}

// λ and c from workgroup memory back to the batch's buffers.
fn wg_store(pr: Problem, lane: u32, M: u32) {
    for (var j = lane; j < M; j += LANES) {
        lambda[vidx(pr, j)] = wg_lambda[j];
        cvel[vidx(pr, j)] = wg_c[j];
    }
}

@compute @workgroup_size(LANES)
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
    let M = rows(pr);
    let state = wg_broadcast_u32(lane, results[index].state);
    if (state == STATE_DONE) {
        return;
    }
    if (state == STATE_FRESH) {
        var refuse = pr.flags;
        if (refuse == 0u && M > WG_MAX_ROWS) {
            refuse = FLAG_OVER_CAPACITY;
        }
        if (refuse == 0u && lane == 0u && !blocks_psd(pr)) {
            refuse = FLAG_NOT_PSD;
        }
        refuse = wg_broadcast_u32(lane, refuse);
        if (refuse != 0u) {
            if (lane == 0u) {
                finish(index, 0u, refuse, vec4<f32>(0.0), 0.0, 0u);
            }
            return;
        }
    }
    let cached = M * (M + 1u) / 2u <= WG_G_CACHE;
    if (lane == 0u) {
        atomicStore(&wg_limit, 0u);
    }
    for (var j = lane; j < M; j += LANES) {
        wg_lambda[j] = lambda[vidx(pr, j)];
    }
    if (cached) {
        let n = M * (M + 1u) / 2u;
        for (var t = lane; t < n; t += LANES) {
            wg_g[t] = gtri(pr, t);
        }
    }
    workgroupBarrier();
    var it = 0u;
    // RaiSim's last correction (none yet before the first sweep).
    var local_max = bitcast<f32>(0x7f800000u);
    if (state == STATE_FRESH) {
        for (var i = lane; i < pr.nc; i += LANES) {
            let k = 3u * i;
            let w = initial(pr, i, vec3<f32>(wg_lambda[k], wg_lambda[k + 1u], wg_lambda[k + 2u]));
            wg_lambda[k] = w.x;
            wg_lambda[k + 1u] = w.y;
            wg_lambda[k + 2u] = w.z;
        }
        for (var k = 3u * pr.nc + lane; k < M; k += LANES) {
            wg_lambda[k] = project_row(wg_lambda[k], row_bound(pr, k));
        }
        workgroupBarrier();
    } else {
        it = wg_broadcast_u32(lane, results[index].iterations);
        local_max = wg_broadcast_f32(lane, results[index].eps_abs);
    }
    wg_velocity(pr, cached, lane, M);
    var steps = 0u;
    var flags = 0u;
    var finished = false;
    var res = vec4<f32>(0.0);
    loop {
        let s = wg_residuals(pr, lane, M);
        if (steps > 0u && (s.bad != 0u || !is_finite(local_max))) {
            flags = FLAG_DIVERGED;
            finished = true;
            break;
        }
        res = s.res;
        if (params.model == MODEL_RAISIM) {
            res = vec4<f32>(0.0, local_max, 0.0, local_max);
        }
        if (res.w <= pr.tolerance && steps > 0u && params.model != MODEL_RAISIM) {
            // Judged on the exact velocities.
            wg_velocity(pr, cached, lane, M);
            res = wg_residuals(pr, lane, M).res;
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
        local_max = wg_sweep(pr, cached, lane, M, alpha);
    }
    if (finished) {
        wg_velocity(pr, cached, lane, M);
        res = wg_residuals(pr, lane, M).res;
        if (params.model == MODEL_RAISIM) {
            res = vec4<f32>(0.0, local_max, 0.0, local_max);
        }
    }
    wg_store(pr, lane, M);
    if (loop_limit_reached()) {
        atomicOr(&wg_limit, 1u);
    }
    workgroupBarrier();
    if (lane != 0u) {
        return;
    }
    if (atomicLoad(&wg_limit) != 0u) {
        finish(index, it, flags | FLAG_LOOP_LIMIT, res, 0.0, 0u);
        return;
    }
    if (finished) {
        finish(index, it, flags, res, 0.0, 0u);
        return;
    }
    var st = results[index];
    st.state = STATE_RUNNING;
    st.iterations = it;
    st.eps_abs = local_max;
    results[index] = st;
    atomicAdd(&running_count, 1u);
}

// ---------------------------------------------------------------------------
// One lane per contact (`Decomposition::Lane`, entry point `main_lanes`):
// a workgroup of LC_LANES invocations holds LC_LANES / S problems side by
// side, S lanes each (a power of two chosen by the host per problem; the
// host uploads the problems sorted by S, in segments of equal S, and a
// workgroup takes the S of its segment, params.segment). Lane t of a
// problem owns its contacts
// i ≡ t (mod S) and its unilateral rows u ≡ t (mod S): their λ and c rows
// (in workgroup memory, LC_ROWS rows shared by the problems of the
// workgroup) are read and written by that lane alone, except λ, which
// every lane reads to recompute c exactly. Gauss-Seidel stays sequential
// over a problem's contacts: the owner of contact i makes its local update
// and publishes Δλ_i; after one barrier every lane adds G[:, i] Δλ_i to the
// rows of c it owns (in `sweep`'s order of operations on each row). Δλ is
// double-buffered per problem, so one barrier per local update suffices:
// the owner of the next contact reads only rows it updated itself. The
// problems of a workgroup advance in lockstep (barriers must be reached by
// every invocation); one that has finished idles until the others do or
// the chunk ends, so iteration counts are each problem's own. Control
// decisions that affect barriers are reduced over the workgroup and read
// through workgroupUniformLoad.

struct LcSlot {
    res: vec4<f32>,
    local_max: f32,
    bad: u32,
    pad0: u32,
    pad1: u32,
}

// A lane's place: its problem's slot in the workgroup, its lane within the
// problem, the lanes per problem, the first row of the slot's region in
// lc_lambda / lc_c, the problem's index, and whether it has a problem to
// solve in this dispatch.
struct Lc {
    slot: u32,
    t: u32,
    S: u32,
    base: u32,
    index: u32,
    live: u32,
}

var<workgroup> lc_lambda: array<f32, LC_ROWS>;
var<workgroup> lc_c: array<f32, LC_ROWS>;
var<workgroup> lc_delta: array<vec4<f32>, LC_DELTAS>;
var<workgroup> lc_res: array<vec4<f32>, LC_LANES>;
var<workgroup> lc_lmax: array<f32, LC_LANES>;
var<workgroup> lc_bad: array<u32, LC_LANES>;
var<workgroup> lc_slot: array<LcSlot, LC_LANES>;
var<workgroup> lc_flag: array<u32, LC_LANES>;
var<workgroup> lc_word: u32;

// c_i of the problem in the slot at `base`, exactly (as wg_row_velocity).
fn lc_row_velocity(pr: Problem, base: u32, i: u32, M: u32) -> f32 {
    var s = free_velocity(pr, i) + compliance(pr, i) * lc_lambda[base + i];
    let row = i * (i + 1u) / 2u;
    var j = 0u;
    for (; j + 4u <= i + 1u; j += 4u) {
        s += gtri(pr, row + j) * lc_lambda[base + j] + gtri(pr, row + j + 1u) * lc_lambda[base + j + 1u]
            + gtri(pr, row + j + 2u) * lc_lambda[base + j + 2u] + gtri(pr, row + j + 3u) * lc_lambda[base + j + 3u];
    }
    for (; j <= i; j++) {
        s += gtri(pr, row + j) * lc_lambda[base + j];
    }
    j = i + 1u;
    for (; j + 4u <= M; j += 4u) {
        s += gtri(pr, j * (j + 1u) / 2u + i) * lc_lambda[base + j]
            + gtri(pr, (j + 1u) * (j + 2u) / 2u + i) * lc_lambda[base + j + 1u]
            + gtri(pr, (j + 2u) * (j + 3u) / 2u + i) * lc_lambda[base + j + 2u]
            + gtri(pr, (j + 3u) * (j + 4u) / 2u + i) * lc_lambda[base + j + 3u];
    }
    for (; j < M; j++) {
        s += gtri(pr, j * (j + 1u) / 2u + i) * lc_lambda[base + j];
    }
    return s;
}

// The lane's own rows of c, exactly.
fn lc_velocity(pr: Problem, l: Lc, M: u32) {
    for (var i = l.t; i < pr.nc; i += l.S) {
        let k = 3u * i;
        lc_c[l.base + k] = lc_row_velocity(pr, l.base, k, M);
        lc_c[l.base + k + 1u] = lc_row_velocity(pr, l.base, k + 1u, M);
        lc_c[l.base + k + 2u] = lc_row_velocity(pr, l.base, k + 2u, M);
    }
    for (var k = 3u * pr.nc + l.t; k < M; k += l.S) {
        lc_c[l.base + k] = lc_row_velocity(pr, l.base, k, M);
    }
}

// c_j += (G + R)[j, k0 .. k0 + n] d, in sweep's order: for each column
// with a non-zero step, the compliance on its own row, then G.
fn lc_update_row(pr: Problem, base: u32, j: u32, k0: u32, d: vec3<f32>, n: u32) {
    var s = lc_c[base + j];
    for (var r = 0u; r < n; r++) {
        let col = k0 + r;
        let dr = d[r];
        if (dr == 0.0) {
            continue;
        }
        if (j == col) {
            s += compliance(pr, col) * dr;
        }
        s += gsym(pr, j, col) * dr;
    }
    lc_c[base + j] = s;
}

// The lane's own rows of c after the step d of columns k0 .. k0 + n.
fn lc_add_columns(pr: Problem, l: Lc, M: u32, k0: u32, d: vec3<f32>, n: u32) {
    for (var i = l.t; i < pr.nc; i += l.S) {
        let k = 3u * i;
        lc_update_row(pr, l.base, k, k0, d, n);
        lc_update_row(pr, l.base, k + 1u, k0, d, n);
        lc_update_row(pr, l.base, k + 2u, k0, d, n);
    }
    for (var k = 3u * pr.nc + l.t; k < M; k += l.S) {
        lc_update_row(pr, l.base, k, k0, d, n);
    }
}

// The largest of v over the workgroup's problems (v is read from each
// problem's lane 0), uniform.
fn lc_max_u32(l: Lc, lane: u32, v: u32) -> u32 {
    if (l.t == 0u) {
        lc_flag[l.slot] = v;
    }
    workgroupBarrier();
    if (lane == 0u) {
        var a = 0u;
        for (var q = 0u; q < LC_LANES / l.S; q++) {
            a = max(a, lc_flag[q]);
        }
        lc_word = a;
    }
    return workgroupUniformLoad(&lc_word);
}

fn lc_any(l: Lc, lane: u32, v: bool) -> bool {
    return lc_max_u32(l, lane, select(0u, 1u, v)) != 0u;
}

// The residuals of each problem (the maximum over its lanes' rows),
// whether an iterate or a velocity is non-finite, and the largest of its
// lanes' `lane_max`; every lane gets its problem's. All lanes call it.
fn lc_summarize(pr: Problem, l: Lc, lane: u32, M: u32, lane_max: f32) -> LcSlot {
    var r = vec4<f32>(0.0);
    var bad = 0u;
    if (l.live != 0u) {
        for (var i = l.t; i < pr.nc; i += l.S) {
            let k = l.base + 3u * i;
            let lv = vec3<f32>(lc_lambda[k], lc_lambda[k + 1u], lc_lambda[k + 2u]);
            let c = vec3<f32>(lc_c[k], lc_c[k + 1u], lc_c[k + 2u]);
            if (!(is_finite(lv.x) && is_finite(lv.y) && is_finite(lv.z) && is_finite(c.x) && is_finite(c.y) && is_finite(c.z))) {
                bad = 1u;
            }
            let ri = contact_residuals(params.model, params.facets, friction(pr, i), lv, c);
            r = vec4<f32>(nan_max(r.x, ri.x), nan_max(r.y, ri.y), nan_max(r.z, ri.z), nan_max(r.w, ri.w));
        }
        for (var k = 3u * pr.nc + l.t; k < M; k += l.S) {
            let lv = lc_lambda[l.base + k];
            let c = lc_c[l.base + k];
            if (!(is_finite(lv) && is_finite(c))) {
                bad = 1u;
            }
            let ri = row_residuals(lv, c, row_bound(pr, k));
            r = vec4<f32>(nan_max(r.x, ri.x), nan_max(r.y, ri.y), nan_max(r.z, ri.z), nan_max(r.w, ri.w));
        }
    }
    lc_res[lane] = r;
    lc_bad[lane] = bad;
    lc_lmax[lane] = lane_max;
    workgroupBarrier();
    if (l.t == 0u) {
        var t = lc_res[lane];
        var b = lc_bad[lane];
        var m = lc_lmax[lane];
        for (var q = 1u; q < l.S; q++) {
            let u = lc_res[lane + q];
            t = vec4<f32>(nan_max(t.x, u.x), nan_max(t.y, u.y), nan_max(t.z, u.z), nan_max(t.w, u.w));
            b = b | lc_bad[lane + q];
            m = nan_max(m, lc_lmax[lane + q]);
        }
        lc_slot[l.slot] = LcSlot(t, m, b, 0u, 0u);
    }
    workgroupBarrier();
    return lc_slot[l.slot];
}

// One sweep of every running problem of the workgroup over its contacts,
// then its unilateral rows; returns the lane's largest local correction
// (as `sweep`). nc_wg, nl_wg: the most contacts and unilateral rows of the
// workgroup's problems (uniform); parity: which Δλ buffer is next.
fn lc_sweep(pr: Problem, l: Lc, M: u32, run: bool, alpha: f32, nc_wg: u32, nl_wg: u32, parity: ptr<function, u32>) -> f32 {
    var local_max = 0.0;
    for (var i = 0u; i < nc_wg; i++) {
        let slot_d = 2u * l.slot + *parity;
        let mine = run && i < pr.nc;
        if (mine && i % l.S == l.t) {
            let k = l.base + 3u * i;
            let old = vec3<f32>(lc_lambda[k], lc_lambda[k + 1u], lc_lambda[k + 2u]);
            let c = vec3<f32>(lc_c[k], lc_c[k + 1u], lc_c[k + 2u]);
            var corr = 0.0;
            let upd = local_update(pr, i, old, c, alpha, &corr);
            local_max = nan_max(local_max, corr);
            lc_lambda[k] = upd.x;
            lc_lambda[k + 1u] = upd.y;
            lc_lambda[k + 2u] = upd.z;
            lc_delta[slot_d] = vec4<f32>(upd - old, 0.0);
        }
        workgroupBarrier();
        if (mine) {
            let d = lc_delta[slot_d].xyz;
            if (any(d != vec3<f32>(0.0))) {
                lc_add_columns(pr, l, M, 3u * i, d, 3u);
            }
        }
        *parity ^= 1u;
    }
    for (var u = 0u; u < nl_wg; u++) {
        let slot_d = 2u * l.slot + *parity;
        let mine = run && u < pr.nl;
        let k = 3u * pr.nc + u;
        if (mine && u % l.S == l.t) {
            let w = gsym(pr, k, k) + compliance(pr, k);
            var d = 0.0;
            if (w > 0.0) {
                let old = lc_lambda[l.base + k];
                let upd = row_step(w, old, lc_c[l.base + k], row_bound(pr, k));
                d = upd - old;
                local_max = nan_max(local_max, abs(w * d));
                lc_lambda[l.base + k] = upd;
            }
            lc_delta[slot_d] = vec4<f32>(d, 0.0, 0.0, 0.0);
        }
        workgroupBarrier();
        if (mine) {
            let d = lc_delta[slot_d].x;
            if (d != 0.0) {
                lc_add_columns(pr, l, M, k, vec3<f32>(d, 0.0, 0.0), 1u);
            }
        }
        *parity ^= 1u;
    }
    return local_max;
}

@compute @workgroup_size(LC_LANES)
fn main_lanes(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lane: u32,
) {
    var l: Lc;
    // This workgroup's segment: the last that starts at or before it.
    let group = wid.x + wid.y * nwg.x;
    var q = 0u;
    for (var k = 1u; k < min(params.segments, LANE_SEGMENTS); k++) {
        if (group >= params.segment[k].x) {
            q = k;
        }
    }
    let seg = params.segment[q];
    l.S = clamp(seg.w, 1u, LC_LANES);
    let P = LC_LANES / l.S;
    l.slot = lane / l.S;
    l.t = lane % l.S;
    l.base = l.slot * (LC_ROWS / P);
    l.index = seg.y + (group - min(group, seg.x)) * P + l.slot;
    let end = min(seg.y + seg.z, params.num_problems);
    l.live = 0u;
    var pr: Problem;
    var M = 0u;
    var fresh = false;
    var it = 0u;
    // RaiSim's last correction (none yet before the first sweep).
    var local_max = bitcast<f32>(0x7f800000u);
    if (l.index < end && group >= seg.x && l.slot < P) {
        pr = problems[l.index];
        M = rows(pr);
        let st = results[l.index];
        if (st.state == STATE_FRESH) {
            fresh = true;
            var refuse = pr.flags;
            if (refuse == 0u && M > LC_ROWS / P) {
                refuse = FLAG_OVER_CAPACITY;
            }
            if (refuse == 0u && !blocks_psd(pr)) {
                refuse = FLAG_NOT_PSD;
            }
            if (refuse != 0u) {
                if (l.t == 0u) {
                    finish(l.index, 0u, refuse, vec4<f32>(0.0), 0.0, 0u);
                }
            } else {
                l.live = 1u;
            }
        } else if (st.state != STATE_DONE) {
            l.live = 1u;
            it = st.iterations;
            local_max = st.eps_abs;
        }
    }
    if (l.live != 0u) {
        for (var i = l.t; i < pr.nc; i += l.S) {
            let k = 3u * i;
            var w = vec3<f32>(lambda[vidx(pr, k)], lambda[vidx(pr, k + 1u)], lambda[vidx(pr, k + 2u)]);
            if (fresh) {
                w = initial(pr, i, w);
            }
            lc_lambda[l.base + k] = w.x;
            lc_lambda[l.base + k + 1u] = w.y;
            lc_lambda[l.base + k + 2u] = w.z;
        }
        for (var k = 3u * pr.nc + l.t; k < M; k += l.S) {
            var w = lambda[vidx(pr, k)];
            if (fresh) {
                w = project_row(w, row_bound(pr, k));
            }
            lc_lambda[l.base + k] = w;
        }
    }
    let nc_wg = lc_max_u32(l, lane, select(0u, pr.nc, l.live != 0u));
    let nl_wg = lc_max_u32(l, lane, select(0u, pr.nl, l.live != 0u));
    if (l.live != 0u) {
        lc_velocity(pr, l, M);
    }
    var steps = 0u;
    var flags = 0u;
    var finished = l.live == 0u;
    var res = vec4<f32>(0.0);
    var lane_max = local_max;
    var parity = 0u;
    loop {
        let s = lc_summarize(pr, l, lane, M, lane_max);
        var recheck = false;
        if (!finished) {
            local_max = s.local_max;
            if (steps > 0u && (s.bad != 0u || !is_finite(local_max))) {
                flags = FLAG_DIVERGED;
                finished = true;
            } else {
                res = s.res;
                if (params.model == MODEL_RAISIM) {
                    res = vec4<f32>(0.0, local_max, 0.0, local_max);
                }
                // Judged on the exact velocities.
                recheck = res.w <= pr.tolerance && steps > 0u && params.model != MODEL_RAISIM;
            }
        }
        if (lc_any(l, lane, recheck)) {
            if (recheck) {
                lc_velocity(pr, l, M);
            }
            let s2 = lc_summarize(pr, l, lane, M, lane_max);
            if (recheck) {
                res = s2.res;
            }
        }
        if (!finished && solve_ends(pr, res, it)) {
            finished = true;
        }
        if (!lc_any(l, lane, !finished)) {
            break;
        }
        if (steps >= params.chunk) {
            break;
        }
        let alpha = raisim_alpha(it);
        if (!finished) {
            it += 1u;
        }
        steps += 1u;
        lane_max = lc_sweep(pr, l, M, !finished, alpha, nc_wg, nl_wg, &parity);
    }
    let ended = finished && l.live != 0u;
    if (ended) {
        lc_velocity(pr, l, M);
    }
    let s3 = lc_summarize(pr, l, lane, M, lane_max);
    if (ended) {
        res = s3.res;
        if (params.model == MODEL_RAISIM) {
            res = vec4<f32>(0.0, local_max, 0.0, local_max);
        }
    }
    let limit = lc_any(l, lane, loop_limit_reached());
    if (l.live == 0u) {
        return;
    }
    for (var i = l.t; i < pr.nc; i += l.S) {
        for (var r = 0u; r < 3u; r++) {
            let k = 3u * i + r;
            lambda[vidx(pr, k)] = lc_lambda[l.base + k];
            cvel[vidx(pr, k)] = lc_c[l.base + k];
        }
    }
    for (var k = 3u * pr.nc + l.t; k < M; k += l.S) {
        lambda[vidx(pr, k)] = lc_lambda[l.base + k];
        cvel[vidx(pr, k)] = lc_c[l.base + k];
    }
    if (l.t != 0u) {
        return;
    }
    if (limit) {
        finish(l.index, it, flags | FLAG_LOOP_LIMIT, res, 0.0, 0u);
        return;
    }
    if (finished) {
        finish(l.index, it, flags, res, 0.0, 0u);
        return;
    }
    var st = results[l.index];
    st.state = STATE_RUNNING;
    st.iterations = it;
    st.eps_abs = local_max;
    results[l.index] = st;
    atomicAdd(&running_count, 1u);
}
