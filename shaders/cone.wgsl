// The friction cone, its dual, de Saxce's correction, the friction pyramid,
// one contact's residuals and two 3x3 eigenvalue formulas, in f32: the WGSL
// twins of src/contact/cone.rs and src/contact/criteria.rs. Pure functions
// (no bindings): tests/wgsl.rs runs each one on grids of inputs against its
// CPU twin in f32. Contact 3-vectors are [t1, t2, n] (normal last).

const TAU: f32 = 6.283185307179586;

// Finite (neither NaN nor infinite), by bits so that no fast-math folding
// can assume it away.
fn is_finite(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x7fffffffu) < 0x7f800000u;
}

fn is_nan(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u;
}

// max that propagates NaN, so that a NaN impulse never looks converged.
fn nan_max(a: f32, b: f32) -> f32 {
    if (is_nan(a) || is_nan(b)) {
        return bitcast<f32>(0x7fc00000u);
    }
    return max(a, b);
}

// nan_max of each component.
fn nan_max4(a: vec4<f32>, b: vec4<f32>) -> vec4<f32> {
    return vec4<f32>(nan_max(a.x, b.x), nan_max(a.y, b.y), nan_max(a.z, b.z), nan_max(a.w, b.w));
}

// Largest eigenvalue of the tangential 2x2 block of w.
fn tangent_sigma(w: mat3x3<f32>) -> f32 {
    let a = w[0][0];
    let b = w[0][1];
    let d = w[1][1];
    return 0.5 * (a + d) + sqrt(0.25 * (a - d) * (a - d) + b * b);
}

// Largest eigenvalue of a symmetric 3x3 matrix (closed form, Smith 1961).
fn largest_eigenvalue3(w: mat3x3<f32>) -> f32 {
    let p1 = w[0][1] * w[0][1] + w[0][2] * w[0][2] + w[1][2] * w[1][2];
    let q = (w[0][0] + w[1][1] + w[2][2]) / 3.0;
    let d0 = w[0][0] - q;
    let d1 = w[1][1] - q;
    let d2 = w[2][2] - q;
    let p2 = d0 * d0 + d1 * d1 + d2 * d2 + 2.0 * p1;
    if (!(p2 > 0.0)) {
        return max(max(w[0][0], w[1][1]), w[2][2]);
    }
    let p = sqrt(p2 / 6.0);
    let b = (w - mat3x3<f32>(vec3<f32>(q, 0.0, 0.0), vec3<f32>(0.0, q, 0.0), vec3<f32>(0.0, 0.0, q))) * (1.0 / p);
    let r = clamp(0.5 * determinant(b), -1.0, 1.0);
    let phi = acos(r) / 3.0;
    return q + 2.0 * p * cos(phi);
}

// Projection onto the second-order cone {x : |x_T| <= a x_N}; half_space:
// a = infinity, the half-space x_N >= 0.
fn project_soc(a: f32, half_space: bool, x: vec3<f32>) -> vec3<f32> {
    let n = x.z;
    if (half_space) {
        return vec3<f32>(x.x, x.y, max(n, 0.0));
    }
    let t = length(x.xy);
    if (t <= a * n && n >= 0.0) {
        return x;
    }
    if (a * t <= -n) {
        return vec3<f32>(0.0);
    }
    var np: f32;
    if (a > 1.0) {
        np = (t + n / a) / (a + 1.0 / a);
    } else {
        np = (a * t + n) / (1.0 + a * a);
    }
    let s = a * np / t;
    return vec3<f32>(x.x * s, x.y * s, np);
}

// project_soc on a point of any dimension given by its tangential norm t
// and normal n (contact/wide.rs project_soc_wide): (s, n+), the projection
// being (s x_T, n+).
fn soc_scale(a: f32, half_space: bool, t: f32, n: f32) -> vec2<f32> {
    if (half_space) {
        return vec2<f32>(1.0, max(n, 0.0));
    }
    if (t <= a * n && n >= 0.0) {
        return vec2<f32>(1.0, n);
    }
    if (a * t <= -n) {
        return vec2<f32>(0.0);
    }
    var np: f32;
    if (a > 1.0) {
        np = (t + n / a) / (a + 1.0 / a);
    } else {
        np = (a * t + n) / (1.0 + a * a);
    }
    return vec2<f32>(a * np / t, np);
}

// soc_scale for the dual cone K_mu* (project_dual_cone).
fn dual_soc_scale(mu: f32, t: f32, n: f32) -> vec2<f32> {
    if (mu > 0.0) {
        return soc_scale(1.0 / mu, false, t, n);
    }
    return soc_scale(0.0, true, t, n);
}

fn project_cone(mu: f32, x: vec3<f32>) -> vec3<f32> {
    return project_soc(mu, false, x);
}

fn project_dual_cone(mu: f32, x: vec3<f32>) -> vec3<f32> {
    if (mu > 0.0) {
        return project_soc(1.0 / mu, false, x);
    }
    return project_soc(0.0, true, x);
}

// De Saxce's correction [0, 0, mu |c_T|].
fn de_saxce(mu: f32, c: vec3<f32>) -> vec3<f32> {
    return vec3<f32>(0.0, 0.0, mu * length(c.xy));
}

// --- The friction pyramid (src/contact/cone.rs, Pyramid): facet normals at
// angles 2 pi k / F, vertices at 2 pi k / F + pi / F, inradius r.

fn pyramid_vertex(facets: u32, k: u32, r: f32) -> vec2<f32> {
    let f = f32(facets);
    let a = TAU * (f32(k) + 0.5) / f;
    let rad = r / cos(0.5 * TAU / f);
    return vec2<f32>(rad * cos(a), rad * sin(a));
}

fn pyramid_gauge(facets: u32, x: vec2<f32>) -> f32 {
    if (facets == 4u) {
        return max(abs(x.x), abs(x.y));
    }
    var g = 0.0;
    for (var k = 0u; k < facets; k++) {
        let a = TAU * f32(k) / f32(facets);
        g = max(g, cos(a) * x.x + sin(a) * x.y);
    }
    return g;
}

fn pyramid_support(facets: u32, u: vec2<f32>) -> f32 {
    if (facets == 4u) {
        return abs(u.x) + abs(u.y);
    }
    var h = -3.0e38;
    for (var k = 0u; k < facets; k++) {
        h = max(h, dot(pyramid_vertex(facets, k, 1.0), u));
    }
    return h;
}

// Projection of x onto the polygon of inradius r.
fn pyramid_project(facets: u32, r: f32, x: vec2<f32>) -> vec2<f32> {
    if (!(r > 0.0)) {
        return vec2<f32>(0.0);
    }
    if (facets == 4u) {
        return clamp(x, vec2<f32>(-r), vec2<f32>(r));
    }
    if (pyramid_gauge(facets, x) <= r) {
        return x;
    }
    var best = vec2<f32>(0.0);
    var best_d = 3.0e38;
    var prev = pyramid_vertex(facets, facets - 1u, r);
    for (var k = 0u; k < facets; k++) {
        let a = prev;
        let b = pyramid_vertex(facets, k, r);
        prev = b;
        let e = b - a;
        let t = clamp(dot(x - a, e) / dot(e, e), 0.0, 1.0);
        let p = a + t * e;
        let d = dot(x - p, x - p);
        if (d < best_d) {
            best_d = d;
            best = p;
        }
    }
    return best;
}

// --- Residuals (src/contact/criteria.rs): (primal, dual, complementarity, eps_abs).

fn assemble(primal: f32, dual: f32, l: vec3<f32>, y: vec3<f32>) -> vec4<f32> {
    // |⟨λ, y⟩| / |λ|, with λ scaled first: in f32 |λ|² underflows for
    // |λ| < 1e-19, which would make a vanishing impulse look complementary.
    let n = max(max(abs(l.x), abs(l.y)), abs(l.z));
    var compl = 0.0;
    if (n > 0.0) {
        let u = l / n;
        compl = abs(dot(u, y)) / length(u);
    }
    return vec4<f32>(primal, dual, compl, nan_max(nan_max(primal, dual), compl));
}

// One contact's residuals under `model` (MODEL_*; the RaiSim models are
// judged as the NCP), `facets` the LCP's pyramid.
fn contact_residuals(model: u32, facets: u32, mu: f32, l: vec3<f32>, c: vec3<f32>) -> vec4<f32> {
    // (if / else rather than switch: lavapipe mis-executes a switch under divergent lanes)
    if (model == MODEL_CCP) {
        let primal = distance(l, project_cone(mu, l));
        let dual = distance(c, project_dual_cone(mu, c));
        return assemble(primal, dual, l, c);
    }
    if (model == MODEL_LCP) {
        let r = mu * max(l.z, 0.0);
        let lt = pyramid_project(facets, r, l.xy);
        let primal = max(-l.z, 0.0) + length(l.xy - lt);
        let gamma = mu * pyramid_support(facets, -c.xy);
        let y = vec3<f32>(c.x, c.y, c.z + gamma);
        let dual = max(-c.z, 0.0);
        return assemble(primal, dual, l, y);
    }
    let primal = distance(l, project_cone(mu, l));
    let y = c + de_saxce(mu, c);
    let dual = distance(y, project_dual_cone(mu, y));
    return assemble(primal, dual, l, y);
}


// --- The 1-D cone R+ of a unilateral row (a joint limit, criteria.rs
// `unilateral_residuals`): lambda >= 0 ⟂ c >= 0, self-dual, no correction,
// judged alike by every model (the contact residuals with [0, 0, lambda],
// [0, 0, c]).

fn project_unilateral(x: f32) -> f32 {
    return max(x, 0.0);
}

fn unilateral_residuals(l: f32, c: f32) -> vec4<f32> {
    return assemble(max(-l, 0.0), max(-c, 0.0), vec3<f32>(0.0, 0.0, l), vec3<f32>(0.0, 0.0, c));
}

// --- Any one-dimensional row (problem.rs `RowSet`), its set coded by b as
// src/gpu/batched/batch.rs `row_bound` codes it: b < 0 (ROW_UNILATERAL) R+; b =
// ROW_BILATERAL the line R (an equality constraint); else the box [-b, b]
// (dry friction). The law is -c ∈ N_S(λ).

fn project_row(x: f32, b: f32) -> f32 {
    if (b < 0.0) {
        return max(x, 0.0);
    }
    return clamp(x, -b, b);
}

// The set's lower and upper ends (ROW_BILATERAL standing for infinity).
fn row_lower(b: f32) -> f32 {
    return select(-b, 0.0, b < 0.0);
}

fn row_upper(b: f32) -> f32 {
    return select(b, ROW_BILATERAL, b < 0.0);
}

// criteria.rs `row_residuals`: R+ as unilateral_residuals; R: the dual
// residual |c|; the box: the primal excess max(0, |λ| - b) and the Fenchel
// gap (b |c| + λ c) / b with λ clamped into the box (0 for b = 0).
fn row_residuals(l: f32, c: f32, b: f32) -> vec4<f32> {
    if (b < 0.0) {
        return unilateral_residuals(l, c);
    }
    if (b >= ROW_BILATERAL) {
        return assemble(0.0, abs(c), vec3<f32>(0.0), vec3<f32>(0.0, 0.0, c));
    }
    let primal = max(abs(l) - b, 0.0);
    var gap = 0.0;
    if (b > 0.0) {
        let lc = clamp(l, -b, b);
        gap = max((b * abs(c) + lc * c) / b, 0.0);
    }
    return vec4<f32>(primal, 0.0, gap, nan_max(primal, gap));
}
