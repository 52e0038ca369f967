// Resident worlds, smooth dynamics (issue 33): one invocation per world
// steps it without the host, for trees of free, ball, hinge, slide and
// fixed joints: the actuators' forces from the controls, springs, the
// fluid's drag, forward kinematics, body velocities, the articulated-body
// algorithm in the world frame (armature, implicit damping, gravity), the
// free velocity, the joint-limit rows (an LCP on G = S M̃⁻¹ Sᵀ, M̃⁻¹
// applied by the articulated-body recursion again, reusing its
// factorization, solved exactly by principal pivoting), the velocity
// update and the integration q⁺ = q ⊕ v⁺ dt (SE(3) and SO(3) exponentials,
// quaternions normalized). The CPU twin is the f64 code it mirrors:
// sim (`actuator_forces`, `free_dynamics`, `active_limits`, the limit rows
// of `assemble_problem`, `velocity_update`), dynamics/kinematics.rs,
// dynamics/aba.rs (`aba_from_kinematics`), dynamics/fluid.rs,
// dynamics/integrate.rs.
//
// Generated header (src/gpu/resident/records.rs): NB (bodies, world included), NV,
// NQ, NU (≥ 1), LROWS (limit rows' capacity, ≥ 4), LROWS_SQ, DINV (floats
// of the joints' D⁻¹ blocks, Σ nv_j²), BODY_U32, BODY_F32, DOF_F32,
// ACT_WORDS, LIMIT_PIVOTS, WORKGROUP, PER_WORLD, WORLD_PARAMS.
//
// PER_WORLD: every world has its own model records (body_f32, dof_f32,
// actuators: world w's at w·size, world-major, so that one world's change
// is one contiguous upload) and parameters (world_params); else one copy
// for all and the uniform's parameters. The structure (body_u32, the
// actuators' dof and q indices) is the batch's in both.
//
// Layout: world-minor (element t of world w at t·N + w) for q, v, tau,
// ctrl, qfrc, so that neighbouring invocations read neighbouring words.

// The uniform's struct, `StepParams`, is generated (gpu/resident/layout.rs).

@group(0) @binding(0) var<uniform> params: StepParams;
// Per body (world first), BODY_U32 words: parent, joint type (0 fixed,
// 1 hinge, 2 slide, 3 free, 4 ball), q index, v index, limited (1: a hinge
// or slide with a range), the joint's dofs, the offset of its D⁻¹ block.
@group(0) @binding(1) var<storage, read> body_u32: array<u32>;
// Per body, BODY_F32 floats: joint placement rotation (9, column-major),
// translation (3), axis (3), mass (1), com (3), rotational inertia about
// the com (xx yy zz, then xy xz yz: 6), range lower, upper (2), the
// fluid's box: principal axes (9, column-major, body frame) and sides (3;
// zero: no drag).
@group(0) @binding(2) var<storage, read> body_f32: array<f32>;
@group(0) @binding(3) var<storage, read_write> q: array<f32>;
@group(0) @binding(4) var<storage, read_write> v: array<f32>;
@group(0) @binding(5) var<storage, read> tau: array<f32>;
// Per world: 0 stepping; 1 its state would have become non-finite (then
// unchanged, and the world does not step until the host clears the flag).
@group(0) @binding(6) var<storage, read_write> flags: array<u32>;
@group(0) @binding(7) var<storage, read> ctrl: array<f32>;
// Per actuator, ACT_WORDS words: dof, q index, then as f32 bits: gear,
// gain, bias (3: constant, length, velocity), control range (lo, hi),
// force range (lo, hi); an open range is ±f32::MAX.
@group(0) @binding(8) var<storage, read> actuators: array<u32>;
// Per world: 1 steps, 0 is left as it is (its inputs unread).
@group(0) @binding(9) var<storage, read> stepping: array<u32>;
// The generalized constraint forces of the last step, Sᵀλ/dt (the joint
// stops'; MuJoCo's qfrc_constraint), world-minor.
@group(0) @binding(10) var<storage, read_write> qfrc: array<f32>;
// Per dof, DOF_F32 floats: armature + dt·damping, damping, stiffness,
// spring reference, effort limit, the q index of its joint (an integer).
@group(0) @binding(11) var<storage, read> dof_f32: array<f32>;
// Each stage's output, world-minor, when params.probe.x is 1: per body its
// world rotation (9, column-major) and position (3), then v_f (NV) and
// the generalized forces the dynamics saw (NV).
@group(0) @binding(12) var<storage, read_write> stages: array<f32>;
// The limit LCP's scratch, world-minor: G + R (LROWS², stride LROWS), then
// the Cholesky factor of its active block. In device memory, not the
// thread's: NVIDIA's driver (580.159.04, H100) failed to build the kernel
// with both in private memory for Gymnasium's humanoid (34 rows).
@group(0) @binding(13) var<storage, read_write> lcp: array<f32>;
// Per world when PER_WORLD, WORLD_PARAMS floats each: dt, gravity (3),
// limit margin, Baumgarte β, compliance α, the limit solve's tolerance,
// fluid density, viscosity, wind (3). One word otherwise.
@group(0) @binding(14) var<storage, read> world_params: array<f32>;

// A spatial vector [linear; angular] (moreau's order).
struct V6 {
    l: vec3<f32>,
    a: vec3<f32>,
}

// A 6×6 matrix in 3×3 blocks [[aa, ab], [ba, bb]].
struct M6 {
    aa: mat3x3<f32>,
    ab: mat3x3<f32>,
    ba: mat3x3<f32>,
    bb: mat3x3<f32>,
}

// One world's work arrays (each invocation has its own).
var<private> rot: array<mat3x3<f32>, NB>;
var<private> pos: array<vec3<f32>, NB>;
var<private> vel: array<V6, NB>;
var<private> c: array<V6, NB>;        // velocity-product acceleration
var<private> ia: array<M6, NB>;       // articulated inertia
var<private> pa: array<V6, NB>;       // articulated bias force
var<private> acc: array<V6, NB>;
var<private> s: array<V6, NV>;        // each dof's world motion column
var<private> u: array<V6, NV>;        // U = Iᴬ S
var<private> ub: array<f32, NV>;      // τ − Sᵀ pᴬ
var<private> dinv: array<f32, DINV>;  // each joint's D⁻¹ block (row-major)
var<private> ddq: array<f32, NV>;
var<private> tau_w: array<f32, NV>;
var<private> v_free: array<f32, NV>;
// A joint's D (6×6, stride 6) and its Cholesky factor.
var<private> dmat: array<f32, 36>;
// M̃⁻¹ f by the articulated-body recursion: f in, the result out.
var<private> unit_f: array<f32, NV>;
var<private> unit_p: array<V6, NB>;
var<private> unit_b: array<f32, NV>;
var<private> unit_a: array<V6, NB>;
// Per body in apply_inverse_inertia: 1 a force in its subtree, 2 moving.
var<private> unit_live: array<u32, NB>;
// The active limit rows: dof, sign (+1 lower, −1 upper), g, λ.
var<private> row_dof: array<u32, LROWS>;
var<private> row_sign: array<f32, LROWS>;
var<private> row_g: array<f32, LROWS>;
var<private> row_l: array<f32, LROWS>;
// The pivoting's active set (1: λ free, 0: λ = 0), the active rows, and
// the Cholesky factor of their block of G + R.
var<private> row_in: array<u32, LROWS>;
var<private> row_act: array<u32, LROWS>;
// Each row's identity for warm starts: 2·body + side for a limit row,
// 2·NB + dof for a dof's dry friction.
var<private> row_key: array<u32, LROWS>;
// Each row's set as the solver reads it (row_bound): ROW_UNILATERAL for a
// limit row, the box's half-width f·dt for a dof's dry friction.
var<private> row_box: array<f32, LROWS>;
// The next velocity and the generalized constraint impulse of the step.
var<private> vn: array<f32, NV>;
var<private> imp: array<f32, NV>;
// This invocation's world (for the scratch accessors below).
var<private> world: u32;

fn gm(k: u32) -> f32 {
    return lcp[k * params.nworlds + world];
}

fn set_gm(k: u32, x: f32) {
    lcp[k * params.nworlds + world] = x;
}

fn lc(k: u32) -> f32 {
    return lcp[(LROWS_SQ + k) * params.nworlds + world];
}

fn set_lc(k: u32, x: f32) {
    lcp[(LROWS_SQ + k) * params.nworlds + world] = x;
}

fn skew(x: vec3<f32>) -> mat3x3<f32> {
    return mat3x3<f32>(vec3<f32>(0.0, x.z, -x.y), vec3<f32>(-x.z, 0.0, x.x), vec3<f32>(x.y, -x.x, 0.0));
}

fn outer(x: vec3<f32>, y: vec3<f32>) -> mat3x3<f32> {
    return mat3x3<f32>(x * y.x, x * y.y, x * y.z);
}

fn v6_add(x: V6, y: V6) -> V6 {
    return V6(x.l + y.l, x.a + y.a);
}

fn v6_scale(x: V6, k: f32) -> V6 {
    return V6(x.l * k, x.a * k);
}

fn v6_dot(x: V6, y: V6) -> f32 {
    return dot(x.l, y.l) + dot(x.a, y.a);
}

fn m6_apply(m: M6, x: V6) -> V6 {
    return V6(m.aa * x.l + m.ab * x.a, m.ba * x.l + m.bb * x.a);
}

// m − x yᵀ (6×6).
fn m6_sub_outer(m: M6, x: V6, y: V6) -> M6 {
    return M6(m.aa - outer(x.l, y.l), m.ab - outer(x.l, y.a), m.ba - outer(x.a, y.l), m.bb - outer(x.a, y.a));
}

// Featherstone's crm(v) m.
fn motion_cross(x: V6, m: V6) -> V6 {
    return V6(cross(x.a, m.l) + cross(x.l, m.a), cross(x.a, m.a));
}

// Featherstone's crf(v) f.
fn force_cross(x: V6, f: V6) -> V6 {
    return V6(cross(x.a, f.l), cross(x.a, f.a) + cross(x.l, f.l));
}

const IDENTITY3 = mat3x3<f32>(vec3<f32>(1.0, 0.0, 0.0), vec3<f32>(0.0, 1.0, 0.0), vec3<f32>(0.0, 0.0, 1.0));

// Rodrigues, as math::exp3 (series near zero).
fn exp3(w: vec3<f32>) -> mat3x3<f32> {
    let t2 = dot(w, w);
    let t = sqrt(t2);
    var a: f32;
    var b: f32;
    if (t < 1e-3) {
        a = 1.0 - t2 / 6.0;
        b = 0.5 - t2 / 24.0;
    } else {
        // 1 − cos t = 2 sin²(t/2): no cancellation in f32.
        a = sin(t) / t;
        let h = sin(0.5 * t) / t;
        b = 2.0 * h * h;
    }
    let k = skew(w);
    return IDENTITY3 + k * a + (k * k) * b;
}

// math::so3_left_jacobian: I + (1 − cos t)/t² [w]× + (t − sin t)/t³ [w]×².
fn so3_left_jacobian(w: vec3<f32>) -> mat3x3<f32> {
    let t2 = dot(w, w);
    let t = sqrt(t2);
    var a: f32;
    var b: f32;
    if (t < 1e-3) {
        a = 0.5 - t2 / 24.0;
    } else {
        let h = sin(0.5 * t) / t;
        a = 2.0 * h * h;
    }
    // (t − sin t)/t³ cancels in f32 below t ≈ 0.3: its series there.
    if (t < 0.3) {
        b = 1.0 / 6.0 - t2 / 120.0 + t2 * t2 / 5040.0;
    } else {
        b = (t - sin(t)) / (t2 * t);
    }
    let k = skew(w);
    return IDENTITY3 + k * a + (k * k) * b;
}

// The rotation of the unit quaternion (x, y, z, w) along qt (normalized
// first, as math::quat_from_slice).
fn quat_matrix(qt: vec4<f32>) -> mat3x3<f32> {
    let n = normalize(qt);
    let x = n.x;
    let y = n.y;
    let z = n.z;
    let r = n.w;
    return mat3x3<f32>(
        vec3<f32>(1.0 - 2.0 * (y * y + z * z), 2.0 * (x * y + r * z), 2.0 * (x * z - r * y)),
        vec3<f32>(2.0 * (x * y - r * z), 1.0 - 2.0 * (x * x + z * z), 2.0 * (y * z + r * x)),
        vec3<f32>(2.0 * (x * z + r * y), 2.0 * (y * z - r * x), 1.0 - 2.0 * (x * x + y * y)),
    );
}

// a ⊗ b for quaternions (x, y, z, w).
fn quat_mul(a: vec4<f32>, b: vec4<f32>) -> vec4<f32> {
    return vec4<f32>(
        a.w * b.xyz + b.w * a.xyz + cross(a.xyz, b.xyz),
        a.w * b.w - dot(a.xyz, b.xyz),
    );
}

// math::quat_exp: the unit quaternion of rotation vector w.
fn quat_exp(w: vec3<f32>) -> vec4<f32> {
    let t2 = dot(w, w);
    let t = sqrt(t2);
    var cs: f32;
    var sn: f32;
    if (t < 1e-3) {
        cs = 1.0 - t2 / 8.0;
        sn = 0.5 - t2 / 48.0;
    } else {
        cs = cos(0.5 * t);
        sn = sin(0.5 * t) / t;
    }
    return vec4<f32>(w * sn, cs);
}

fn bu(i: u32, k: u32) -> u32 {
    return body_u32[i * BODY_U32 + k];
}

fn bf(i: u32, k: u32) -> f32 {
    if (PER_WORLD) {
        return body_f32[(world * NB + i) * BODY_F32 + k];
    }
    return body_f32[i * BODY_F32 + k];
}

fn bvec(i: u32, k: u32) -> vec3<f32> {
    return vec3<f32>(bf(i, k), bf(i, k + 1u), bf(i, k + 2u));
}

fn bmat(i: u32, k: u32) -> mat3x3<f32> {
    return mat3x3<f32>(bvec(i, k), bvec(i, k + 3u), bvec(i, k + 6u));
}

fn df(k: u32, j: u32) -> f32 {
    if (PER_WORLD) {
        return dof_f32[(world * NV + k) * DOF_F32 + j];
    }
    return dof_f32[k * DOF_F32 + j];
}

fn act_u(a: u32, k: u32) -> u32 {
    if (PER_WORLD) {
        return actuators[(world * NU + a) * ACT_WORDS + k];
    }
    return actuators[a * ACT_WORDS + k];
}

fn act_f(a: u32, k: u32) -> f32 {
    return bitcast<f32>(act_u(a, k));
}

// World parameter k (see world_params), or the batch's `batch_value`.
fn wp(k: u32, batch_value: f32) -> f32 {
    if (PER_WORLD) {
        return world_params[world * WORLD_PARAMS + k];
    }
    return batch_value;
}

// The velocity a position error `e` (a violation: e < 0 for a stop or a
// contact) asks back: β e / dt, at most the bound (SimParams::recovery).
fn recovery(e: f32, beta: f32, dt: f32) -> f32 {
    let bound = wp(WP_MAX_RECOVERY, params.recovery.x);
    return clamp(beta * e / dt, -bound, bound);
}

fn all_finite(x: f32) -> bool {
    // NaN fails both comparisons; ±inf fails the bound.
    return abs(x) <= 3.4e38;
}

// Actuator a's force on its dof under control u, its joint at coordinate
// x with velocity xd (actuator_forces: control range, gain and bias on
// the geared length and speed, force range, gear).
fn actuator_joint_force(a: u32, u: f32, x: f32, xd: f32) -> f32 {
    let gear = act_f(a, ACT_GEAR);
    let uc = clamp(u, act_f(a, ACT_CTRL_RANGE), act_f(a, ACT_CTRL_RANGE + 1u));
    let length = gear * x;
    let speed = gear * xd;
    let force = act_f(a, ACT_GAIN) * uc + act_f(a, ACT_BIAS) + act_f(a, ACT_BIAS + 1u) * length + act_f(a, ACT_BIAS + 2u) * speed;
    return gear * clamp(force, act_f(a, ACT_FORCE_RANGE), act_f(a, ACT_FORCE_RANGE + 1u));
}

// Column a of a joint's motion subspace in its body frame
// (JointType::motion_column).
fn local_column(jtype: u32, axis: vec3<f32>, a: u32) -> V6 {
    let zero3 = vec3<f32>(0.0);
    let k = a % 3u;
    let e = vec3<f32>(f32(k == 0u), f32(k == 1u), f32(k == 2u));
    switch jtype {
        case JOINT_HINGE: {
            return V6(zero3, axis);
        }
        case JOINT_SLIDE: {
            return V6(axis, zero3);
        }
        case JOINT_FREE: {
            if (a < 3u) {
                return V6(e, zero3);
            }
            return V6(zero3, e);
        }
        default: {
            return V6(zero3, e);
        }
    }
}

// dinv[off ..] ← D⁻¹ of the joint's n×n block in dmat (stride 6), by
// Cholesky (a non-positive pivot gives NaN, which flags the world, as the
// CPU poisons a failed factorization).
fn invert_joint_block(n: u32, off: u32) {
    for (var i = 0u; i < n; i++) {
        for (var j = 0u; j <= i; j++) {
            var x = dmat[i * 6u + j];
            for (var t = 0u; t < j; t++) {
                x -= dmat[i * 6u + t] * dmat[j * 6u + t];
            }
            if (i == j) {
                dmat[i * 6u + i] = sqrt(x);
            } else {
                dmat[i * 6u + j] = x / dmat[j * 6u + j];
            }
        }
    }
    var y: array<f32, 6>;
    for (var col = 0u; col < n; col++) {
        for (var i = 0u; i < n; i++) {
            var x = f32(i == col);
            for (var t = 0u; t < i; t++) {
                x -= dmat[i * 6u + t] * y[t];
            }
            y[i] = x / dmat[i * 6u + i];
        }
        for (var ii = 0u; ii < n; ii++) {
            let i = n - 1u - ii;
            var x = y[i];
            for (var t = i + 1u; t < n; t++) {
                x -= dmat[t * 6u + i] * y[t];
            }
            y[i] = x / dmat[i * 6u + i];
        }
        for (var i = 0u; i < n; i++) {
            dinv[off + i * n + col] = y[i];
        }
    }
}

// unit_f ← M̃⁻¹ unit_f: the articulated-body recursion with no velocity,
// no gravity and the joint forces unit_f, reusing the factorization of
// the step's backward pass (U, D⁻¹). Bodies whose subtree has no force
// and whose parent does not move are skipped (unit_live): a contact's
// column moves only its bodies' subtrees' roots and what hangs on them,
// which keeps a scene of many free bodies (six boxes, 108 rows) within
// lavapipe's loop limit.
fn apply_inverse_inertia() {
    let zero3 = vec3<f32>(0.0);
    for (var i = 0u; i < NB; i++) {
        unit_p[i] = V6(zero3, zero3);
        unit_live[i] = 0u;
    }
    for (var i = NB - 1u; i >= 1u; i--) {
        let parent = bu(i, BU_PARENT);
        let iv = bu(i, BU_IV);
        let nj = bu(i, BU_NV);
        let off = bu(i, BU_DINV);
        var live = unit_live[i];
        for (var a = 0u; a < nj; a++) {
            if (unit_f[iv + a] != 0.0) {
                live = 1u;
            }
        }
        unit_live[i] = live;
        if (live != 0u) {
            var p = unit_p[i];
            for (var a = 0u; a < nj; a++) {
                unit_b[iv + a] = unit_f[iv + a] - v6_dot(s[iv + a], unit_p[i]);
            }
            for (var a = 0u; a < nj; a++) {
                var x = 0.0;
                for (var b = 0u; b < nj; b++) {
                    x += dinv[off + a * nj + b] * unit_b[iv + b];
                }
                p = v6_add(p, v6_scale(u[iv + a], x));
            }
            if (parent != 0u) {
                unit_p[parent] = v6_add(unit_p[parent], p);
                unit_live[parent] = 1u;
            }
        }
        if (i == 1u) {
            break;
        }
    }
    // Forward: a body moves if its subtree has a force or its parent moves
    // (unit_live 2 marks the moving ones; the world does not).
    unit_a[0] = V6(zero3, zero3);
    for (var i = 1u; i < NB; i++) {
        let iv = bu(i, BU_IV);
        let nj = bu(i, BU_NV);
        let off = bu(i, BU_DINV);
        let parent = bu(i, BU_PARENT);
        if (unit_live[i] == 0u && unit_live[parent] != 2u) {
            for (var k = 0u; k < nj; k++) {
                unit_f[iv + k] = 0.0;
            }
            unit_a[i] = V6(zero3, zero3);
            continue;
        }
        // (A body skipped on the way back has no force: its unit_b is 0.)
        let forced = unit_live[i] == 1u;
        unit_live[i] = 2u;
        var a = unit_a[parent];
        var r: array<f32, 6>;
        for (var k = 0u; k < nj; k++) {
            r[k] = select(0.0, unit_b[iv + k], forced) - v6_dot(u[iv + k], a);
        }
        for (var k = 0u; k < nj; k++) {
            var x = 0.0;
            for (var b = 0u; b < nj; b++) {
                x += dinv[off + k * nj + b] * r[b];
            }
            unit_f[iv + k] = x;
        }
        for (var k = 0u; k < nj; k++) {
            a = v6_add(a, v6_scale(s[iv + k], unit_f[iv + k]));
        }
        unit_a[i] = a;
    }
}

// row_l ← the solution of the active rows' equations (G + R)_AA λ_A = −g_A,
// 0 on the others; an active row whose pivot vanishes (a joint at both
// stops, rigid) is left at 0.
fn solve_active(nl: u32) {
    var k = 0u;
    for (var a = 0u; a < nl; a++) {
        row_l[a] = 0.0;
        if (row_in[a] == 1u) {
            row_act[k] = a;
            k++;
        }
    }
    // Cholesky, lower triangle of the factor lc (k × k, stride LROWS).
    for (var i = 0u; i < k; i++) {
        for (var j = 0u; j <= i; j++) {
            var x = gm(row_act[i] * LROWS + row_act[j]);
            for (var t = 0u; t < j; t++) {
                x -= lc(i * LROWS + t) * lc(j * LROWS + t);
            }
            if (i == j) {
                let scale = gm(row_act[i] * LROWS + row_act[i]);
                if (x <= 1e-6 * scale) {
                    x = 0.0;
                } else {
                    x = sqrt(x);
                }
                set_lc(i * LROWS + i, x);
            } else {
                let d = lc(j * LROWS + j);
                if (d > 0.0) {
                    set_lc(i * LROWS + j, x / d);
                } else {
                    set_lc(i * LROWS + j, 0.0);
                }
            }
        }
    }
    // L y = −g_A, then Lᵀ λ_A = y (in row_l via row_act), zero pivots skipped.
    var y: array<f32, LROWS>;
    for (var i = 0u; i < k; i++) {
        var x = -row_g[row_act[i]];
        for (var t = 0u; t < i; t++) {
            x -= lc(i * LROWS + t) * y[t];
        }
        let d = lc(i * LROWS + i);
        y[i] = select(0.0, x / d, d > 0.0);
    }
    for (var ii = 0u; ii < k; ii++) {
        let i = k - 1u - ii;
        var x = y[i];
        for (var t = i + 1u; t < k; t++) {
            x -= lc(t * LROWS + i) * row_l[row_act[t]];
        }
        let d = lc(i * LROWS + i);
        row_l[row_act[i]] = select(0.0, x / d, d > 0.0);
    }
}

// Whether invocation w has a world to step (in the batch, stepping this
// round, not flagged); if so, it becomes `world`.
fn enter_world(w: u32) -> bool {
    if (w >= params.nworlds || stepping[w] == 0u || flags[w] != 0u) {
        return false;
    }
    world = w;
    return true;
}

@compute @workgroup_size(WORKGROUP)
fn step(@builtin(global_invocation_id) gid: vec3<u32>) {
    let w = gid.x;
    let n = params.nworlds;
    if (!enter_world(w)) {
        return;
    }
    let dt = wp(WP_DT, params.dt);
    let zero3 = vec3<f32>(0.0);
    let zero6 = V6(zero3, zero3);
    let zero33 = mat3x3<f32>(zero3, zero3, zero3);
    // The applied joint forces: torques, or the actuators' forces
    // (actuator_forces: control and force ranges, gear, then each dof's
    // effort limit).
    for (var k = 0u; k < NV; k++) {
        tau_w[k] = 0.0;
    }
    if (params.controls == 0u) {
        for (var k = 0u; k < NV; k++) {
            tau_w[k] = tau[k * n + w];
        }
    } else {
        for (var a = 0u; a < params.nu; a++) {
            let dof = act_u(a, ACT_DOF);
            tau_w[dof] += actuator_joint_force(a, ctrl[a * n + w], q[act_u(a, ACT_IQ) * n + w], v[dof * n + w]);
        }
        for (var k = 0u; k < NV; k++) {
            let e = df(k, DF_EFFORT);
            tau_w[k] = clamp(tau_w[k], -e, e);
        }
    }
    // Springs (explicit) and damping (implicit: −D v here, D·dt in the
    // armature), as free_dynamics.
    for (var k = 0u; k < NV; k++) {
        let qk = q[u32(df(k, DF_IQ)) * n + w];
        tau_w[k] -= df(k, DF_STIFFNESS) * (qk - df(k, DF_SPRINGREF)) + df(k, DF_DAMPING) * v[k * n + w];
    }
    rot[0] = IDENTITY3;
    pos[0] = zero3;
    vel[0] = zero6;
    let viscosity = wp(WP_VISCOSITY, params.medium.y);
    let density = wp(WP_DENSITY, params.medium.x);
    // Forward kinematics, velocities, inertias (forward_kinematics,
    // forward_velocity, the first loop of aba_from_kinematics) and the
    // fluid's wrench.
    for (var i = 1u; i < NB; i++) {
        let parent = bu(i, BU_PARENT);
        let jtype = bu(i, BU_JOINT);
        let iq = bu(i, BU_IQ);
        let iv = bu(i, BU_IV);
        let nj = bu(i, BU_NV);
        let axis = bvec(i, BF_AXIS);
        // joint_from_body (JointType::transform).
        var joint_rot = IDENTITY3;
        var joint_pos = zero3;
        switch jtype {
            case JOINT_HINGE: {
                joint_rot = exp3(axis * q[iq * n + w]);
            }
            case JOINT_SLIDE: {
                joint_pos = axis * q[iq * n + w];
            }
            case JOINT_FREE: {
                joint_pos = vec3<f32>(q[iq * n + w], q[(iq + 1u) * n + w], q[(iq + 2u) * n + w]);
                joint_rot = quat_matrix(vec4<f32>(q[(iq + 3u) * n + w], q[(iq + 4u) * n + w], q[(iq + 5u) * n + w], q[(iq + 6u) * n + w]));
            }
            case JOINT_BALL: {
                joint_rot = quat_matrix(vec4<f32>(q[iq * n + w], q[(iq + 1u) * n + w], q[(iq + 2u) * n + w], q[(iq + 3u) * n + w]));
            }
            default: {}
        }
        // parent_from_body = placement · joint; world_from_body = parent's · that.
        let placement = bmat(i, BF_ROTATION);
        let pfb_rot = placement * joint_rot;
        let pfb_pos = placement * joint_pos + bvec(i, BF_TRANSLATION);
        rot[i] = rot[parent] * pfb_rot;
        pos[i] = rot[parent] * pfb_pos + pos[parent];
        // The motion columns in the world frame (act_motion) and the joint velocity.
        var vj = zero6;
        for (var a = 0u; a < nj; a++) {
            let local = local_column(jtype, axis, a);
            let sw = rot[i] * local.a;
            s[iv + a] = V6(rot[i] * local.l + cross(pos[i], sw), sw);
            vj = v6_add(vj, v6_scale(s[iv + a], v[(iv + a) * n + w]));
        }
        vel[i] = v6_add(vel[parent], vj);
        c[i] = motion_cross(vel[i], vj);
        // The world inertia (Inertia::transformed, write_matrix).
        let mass = bf(i, BF_MASS);
        let com = rot[i] * bvec(i, BF_COM) + pos[i];
        let r6 = bvec(i, BF_INERTIA_DIAGONAL);
        let r3 = bvec(i, BF_INERTIA_OFF_DIAGONAL);
        let inertia_body = mat3x3<f32>(vec3<f32>(r6.x, r3.x, r3.y), vec3<f32>(r3.x, r6.y, r3.z), vec3<f32>(r3.y, r3.z, r6.z));
        let rotational = rot[i] * inertia_body * transpose(rot[i]);
        let mc = skew(com) * mass;
        let m6 = M6(IDENTITY3 * mass, zero33 - mc, mc, rotational - skew(com) * mc);
        ia[i] = m6;
        pa[i] = force_cross(vel[i], m6_apply(m6, vel[i]));
        // The fluid (fluid_forces): the inertia box's drag at the centre of
        // mass, in its principal axes; an external wrench enters the bias
        // force with a minus sign.
        let sides = bvec(i, BF_FLUID_SIDES);
        if (sides.x + sides.y + sides.z > 0.0) {
            let frame = rot[i] * bmat(i, BF_FLUID_AXES);
            let lv = transpose(frame) * (vel[i].l + cross(vel[i].a, com) - vec3<f32>(wp(WP_WIND, params.wind.x), wp(WP_WIND + 1u, params.wind.y), wp(WP_WIND + 2u, params.wind.z)));
            let la = transpose(frame) * vel[i].a;
            var f = zero3;
            var t = zero3;
            if (viscosity > 0.0) {
                let d = (sides.x + sides.y + sides.z) / 3.0;
                let pi = 3.141592653589793;
                t -= la * (pi * d * d * d * viscosity);
                f -= lv * (3.0 * pi * d * viscosity);
            }
            if (density > 0.0) {
                let s4 = sides * sides * sides * sides;
                f -= 0.5 * density * vec3<f32>(sides.y * sides.z, sides.z * sides.x, sides.x * sides.y) * abs(lv) * lv;
                t -= density * sides * vec3<f32>(s4.y + s4.z, s4.z + s4.x, s4.x + s4.y) * abs(la) * la / 64.0;
            }
            let fw = frame * f;
            let tw = frame * t;
            pa[i] = V6(pa[i].l - fw, pa[i].a - (cross(com, fw) + tw));
        }
    }
    // Backward pass (aba_from_kinematics): U = Iᴬ S, D = Sᵀ U + armature,
    // Iᴬ − U D⁻¹ Uᵀ and pᴬ + Iᴬ c + U D⁻¹ (τ − Sᵀ pᴬ) passed to the parent.
    for (var i = NB - 1u; i >= 1u; i--) {
        let parent = bu(i, BU_PARENT);
        let iv = bu(i, BU_IV);
        let nj = bu(i, BU_NV);
        let off = bu(i, BU_DINV);
        var m = ia[i];
        var p = pa[i];
        if (nj == 1u) {
            // A hinge or slide: D is a scalar (the common case, kept short).
            let si = s[iv];
            let ui = m6_apply(m, si);
            let d = 1.0 / (v6_dot(si, ui) + df(iv, DF_ARMATURE));
            let b = tau_w[iv] - v6_dot(si, p);
            u[iv] = ui;
            ub[iv] = b;
            dinv[off] = d;
            if (parent != 0u) {
                m = m6_sub_outer(m, v6_scale(ui, d), ui);
                p = v6_add(p, v6_add(m6_apply(m, c[i]), v6_scale(ui, d * b)));
                let mp = ia[parent];
                ia[parent] = M6(mp.aa + m.aa, mp.ab + m.ab, mp.ba + m.ba, mp.bb + m.bb);
                pa[parent] = v6_add(pa[parent], p);
            }
            if (i == 1u) {
                break;
            }
            continue;
        }
        for (var a = 0u; a < nj; a++) {
            u[iv + a] = m6_apply(m, s[iv + a]);
            ub[iv + a] = tau_w[iv + a] - v6_dot(s[iv + a], p);
        }
        for (var a = 0u; a < nj; a++) {
            for (var b = 0u; b < nj; b++) {
                dmat[a * 6u + b] = v6_dot(s[iv + a], u[iv + b]);
            }
            dmat[a * 6u + a] += df(iv + a, DF_ARMATURE);
        }
        invert_joint_block(nj, off);
        if (parent != 0u) {
            var bias = zero6;
            for (var a = 0u; a < nj; a++) {
                var wa = zero6;
                var wu = 0.0;
                for (var b = 0u; b < nj; b++) {
                    let d = dinv[off + a * nj + b];
                    wa = v6_add(wa, v6_scale(u[iv + b], d));
                    wu += d * ub[iv + b];
                }
                m = m6_sub_outer(m, wa, u[iv + a]);
                bias = v6_add(bias, v6_scale(u[iv + a], wu));
            }
            p = v6_add(p, v6_add(m6_apply(m, c[i]), bias));
            let mp = ia[parent];
            ia[parent] = M6(mp.aa + m.aa, mp.ab + m.ab, mp.ba + m.ba, mp.bb + m.bb);
            pa[parent] = v6_add(pa[parent], p);
        }
        if (i == 1u) {
            break;
        }
    }
    // Forward pass: accelerations, and the free velocity.
    acc[0] = V6(-vec3<f32>(wp(WP_GRAVITY, params.gravity.x), wp(WP_GRAVITY + 1u, params.gravity.y), wp(WP_GRAVITY + 2u, params.gravity.z)), zero3);
    for (var i = 1u; i < NB; i++) {
        let iv = bu(i, BU_IV);
        let nj = bu(i, BU_NV);
        let off = bu(i, BU_DINV);
        var a = v6_add(acc[bu(i, BU_PARENT)], c[i]);
        if (nj == 1u) {
            let x = dinv[off] * (ub[iv] - v6_dot(u[iv], a));
            ddq[iv] = x;
            acc[i] = v6_add(a, v6_scale(s[iv], x));
            continue;
        }
        var r: array<f32, 6>;
        for (var k = 0u; k < nj; k++) {
            r[k] = ub[iv + k] - v6_dot(u[iv + k], a);
        }
        for (var k = 0u; k < nj; k++) {
            var x = 0.0;
            for (var b = 0u; b < nj; b++) {
                x += dinv[off + k * nj + b] * r[b];
            }
            ddq[iv + k] = x;
        }
        for (var k = 0u; k < nj; k++) {
            a = v6_add(a, v6_scale(s[iv + k], ddq[iv + k]));
        }
        acc[i] = a;
    }
    for (var k = 0u; k < NV; k++) {
        v_free[k] = v[k * n + w] + dt * ddq[k];
        vn[k] = v_free[k];
        imp[k] = 0.0;
    }
    if (params.probe.x == 1u) {
        for (var i = 0u; i < NB; i++) {
            for (var col = 0u; col < 3u; col++) {
                for (var row = 0u; row < 3u; row++) {
                    stages[(12u * i + 3u * col + row) * n + w] = rot[i][col][row];
                }
                stages[(12u * i + 9u + col) * n + w] = pos[i][col];
            }
        }
        for (var k = 0u; k < NV; k++) {
            stages[(12u * NB + k) * n + w] = v_free[k];
            stages[(12u * NB + NV + k) * n + w] = tau_w[k];
        }
    }
    // Joint limits (active_limits, assemble_problem): a row per stop that
    // is within the margin or would be crossed at the free velocity,
    // g = ±v_f + (d/dt if d ≥ 0, else recovery(d)), λ ≥ 0 ⟂ (G + R)λ + g ≥ 0.
    let margin = wp(WP_LIMIT_MARGIN, params.limits.x);
    let beta = wp(WP_BAUMGARTE, params.limits.y);
    var nl = 0u;
    for (var i = 1u; i < NB; i++) {
        if (bu(i, BU_LIMITED) == 0u) {
            continue;
        }
        let dof = bu(i, BU_IV);
        let qv = q[bu(i, BU_IQ) * n + w];
        for (var side = 0u; side < 2u; side++) {
            var dist = qv - bf(i, BF_RANGE);
            var sign = 1.0;
            if (side == 1u) {
                dist = bf(i, BF_RANGE + 1u) - qv;
                sign = -1.0;
            }
            if ((dist < margin || dist + dt * sign * v_free[dof] < 0.0) && nl < LROWS) {
                var stab = recovery(dist, beta, dt);
                if (dist >= 0.0) {
                    stab = dist / dt;
                }
                row_dof[nl] = dof;
                row_sign[nl] = sign;
                row_g[nl] = sign * v_free[dof] + stab;
                row_l[nl] = 0.0;
                row_key[nl] = 2u * i + side;
                row_box[nl] = ROW_UNILATERAL;
                nl++;
            }
        }
    }
    if (CONTACTS) {
        // Dry friction (rows::ExtraRows, after the limits): a row per dof
        // with frictionloss f, c = v, |λ| ≤ f·dt, no stabilization.
        for (var k = 0u; k < NV; k++) {
            let f = df(k, DF_FRICTIONLOSS);
            if (f > 0.0 && nl < LROWS) {
                row_dof[nl] = k;
                row_sign[nl] = 1.0;
                row_g[nl] = v_free[k];
                row_l[nl] = 0.0;
                row_key[nl] = 2u * NB + k;
                row_box[nl] = f * dt;
                nl++;
            }
        }
        // The limit and friction rows join the contact problem, solved by
        // the contact kernel; `finish` ends the step.
        prepare_contacts(w, n, dt, nl);
        return;
    }
    if (nl > 0u) {
        // G's columns: column a is S M̃⁻¹ (sign_a e_dof_a).
        for (var a = 0u; a < nl; a++) {
            for (var k = 0u; k < NV; k++) {
                unit_f[k] = 0.0;
            }
            unit_f[row_dof[a]] = row_sign[a];
            apply_inverse_inertia();
            for (var b = 0u; b < nl; b++) {
                set_gm(b * LROWS + a, row_sign[b] * unit_f[row_dof[b]]);
            }
        }
        // Compliance R = α diag(G).
        for (var a = 0u; a < nl; a++) {
            set_gm(a * LROWS + a, gm(a * LROWS + a) * (1.0 + wp(WP_COMPLIANCE, params.limits.z)));
        }
        // The LCP λ ≥ 0 ⟂ (G + R)λ + g ≥ 0 solved exactly by Murty's
        // least-index principal pivoting (finite for G + R positive
        // definite): start from the rows with g < 0, solve the active
        // rows' equations, move the first row that violates its sign
        // (an active λ < 0, an inactive (G+R)λ + g < 0) across, repeat.
        let tol = wp(WP_TOLERANCE, params.limits.w);
        for (var a = 0u; a < nl; a++) {
            row_in[a] = u32(row_g[a] < 0.0);
        }
        for (var pivot = 0u; pivot < LIMIT_PIVOTS; pivot++) {
            solve_active(nl);
            var flip = nl;
            for (var a = 0u; a < nl; a++) {
                var cv = row_g[a];
                for (var b = 0u; b < nl; b++) {
                    cv += gm(a * LROWS + b) * row_l[b];
                }
                let bad_in = row_in[a] == 1u && row_l[a] * gm(a * LROWS + a) < -tol;
                let bad_out = row_in[a] == 0u && cv < -tol;
                if (bad_in || bad_out) {
                    flip = a;
                    break;
                }
            }
            if (flip == nl) {
                break;
            }
            row_in[flip] = 1u - row_in[flip];
        }
        for (var a = 0u; a < nl; a++) {
            row_l[a] = max(row_l[a], 0.0);
        }
        // v⁺ = v_f + M̃⁻¹ Sᵀ λ.
        for (var k = 0u; k < NV; k++) {
            unit_f[k] = 0.0;
        }
        for (var a = 0u; a < nl; a++) {
            unit_f[row_dof[a]] += row_sign[a] * row_l[a];
        }
        for (var k = 0u; k < NV; k++) {
            imp[k] = unit_f[k];
        }
        apply_inverse_inertia();
        for (var k = 0u; k < NV; k++) {
            vn[k] += unit_f[k];
        }
    }
    commit(w, n, dt);
}

// Integration (integrate): q ⊕ vn dt, committed with vn and the
// constraint force imp/dt only if finite (else the world is flagged).
fn commit(w: u32, n: u32, dt: f32) -> bool {
    var ok = true;
    // Integration (integrate): q ⊕ v⁺ dt, committed only if finite.
    for (var k = 0u; k < NV; k++) {
        ok = ok && all_finite(vn[k]);
    }
    var q_next: array<f32, NQ>;
    for (var i = 1u; i < NB; i++) {
        let jtype = bu(i, BU_JOINT);
        let iq = bu(i, BU_IQ);
        let iv = bu(i, BU_IV);
        switch jtype {
            case JOINT_HINGE, JOINT_SLIDE: {
                q_next[iq] = q[iq * n + w] + dt * vn[iv];
            }
            case JOINT_FREE: {
                // p + R · (J_l(ω dt) v dt), quaternion ⊗ exp(ω dt).
                let lin = vec3<f32>(vn[iv], vn[iv + 1u], vn[iv + 2u]) * dt;
                let ang = vec3<f32>(vn[iv + 3u], vn[iv + 4u], vn[iv + 5u]) * dt;
                let quat = vec4<f32>(q[(iq + 3u) * n + w], q[(iq + 4u) * n + w], q[(iq + 5u) * n + w], q[(iq + 6u) * n + w]);
                let p = vec3<f32>(q[iq * n + w], q[(iq + 1u) * n + w], q[(iq + 2u) * n + w]) + quat_matrix(quat) * (so3_left_jacobian(ang) * lin);
                let qn = normalize(quat_mul(normalize(quat), quat_exp(ang)));
                q_next[iq] = p.x;
                q_next[iq + 1u] = p.y;
                q_next[iq + 2u] = p.z;
                q_next[iq + 3u] = qn.x;
                q_next[iq + 4u] = qn.y;
                q_next[iq + 5u] = qn.z;
                q_next[iq + 6u] = qn.w;
            }
            case JOINT_BALL: {
                let ang = vec3<f32>(vn[iv], vn[iv + 1u], vn[iv + 2u]) * dt;
                let quat = vec4<f32>(q[iq * n + w], q[(iq + 1u) * n + w], q[(iq + 2u) * n + w], q[(iq + 3u) * n + w]);
                let qn = normalize(quat_mul(normalize(quat), quat_exp(ang)));
                q_next[iq] = qn.x;
                q_next[iq + 1u] = qn.y;
                q_next[iq + 2u] = qn.z;
                q_next[iq + 3u] = qn.w;
            }
            default: {}
        }
    }
    for (var k = 0u; k < NQ; k++) {
        ok = ok && all_finite(q_next[k]);
    }
    if (!ok) {
        flags[w] = 1u;
        return false;
    }
    for (var k = 0u; k < NV; k++) {
        v[k * n + w] = vn[k];
        qfrc[k * n + w] = imp[k] / dt;
    }
    for (var k = 0u; k < NQ; k++) {
        q[k * n + w] = q_next[k];
    }
    return true;
}
