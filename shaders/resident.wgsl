// Resident worlds, smooth dynamics (issue 33, first slice): one invocation
// per world steps it without the host, for trees of hinge, slide and fixed
// joints: forward kinematics, body velocities, the articulated-body
// algorithm in the world frame (armature, implicit damping, springs,
// gravity), the free velocity and the integration `q⁺ = q + v⁺ dt`.
// The CPU twin is the f64 code it mirrors line for line:
// dynamics/kinematics.rs (`forward_kinematics`, `forward_velocity`),
// dynamics/aba.rs (`aba_from_kinematics`), sim (`free_dynamics`).
//
// Generated header (src/gpu/resident.rs): NB (bodies, world included), NV,
// NQ, BODY_F32 (floats per body record), WORKGROUP.
//
// Layout: world-minor (element t of world w at t·N + w) for q, v, tau, so
// that neighbouring invocations read neighbouring words.

struct Params {
    nworlds: u32,
    dt: f32,
    _pad0: u32,
    _pad1: u32,
    gravity: vec4<f32>,
}

@group(0) @binding(0) var<uniform> params: Params;
// Per body (world first): parent, joint type (0 fixed, 1 hinge, 2 slide),
// q index, v index.
@group(0) @binding(1) var<storage, read> body_u32: array<u32>;
// Per body, BODY_F32 floats: joint placement rotation (9, column-major),
// translation (3), axis (3), mass (1), com (3), rotational inertia about
// the com (xx yy zz, then xy xz yz: 6), armature + dt·damping (1),
// damping (1), stiffness (1), spring reference (1): 29 floats.
@group(0) @binding(2) var<storage, read> body_f32: array<f32>;
@group(0) @binding(3) var<storage, read_write> q: array<f32>;
@group(0) @binding(4) var<storage, read_write> v: array<f32>;
@group(0) @binding(5) var<storage, read> tau: array<f32>;
// Per world: 0 stepping; 1 its state became non-finite (then unchanged).
@group(0) @binding(6) var<storage, read_write> flags: array<u32>;

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

fn skew(x: vec3<f32>) -> mat3x3<f32> {
    return mat3x3<f32>(vec3<f32>(0.0, x.z, -x.y), vec3<f32>(-x.z, 0.0, x.x), vec3<f32>(x.y, -x.x, 0.0));
}

fn outer(x: vec3<f32>, y: vec3<f32>) -> mat3x3<f32> {
    return mat3x3<f32>(x * y.x, x * y.y, x * y.z);
}

fn v6_add(x: V6, y: V6) -> V6 {
    return V6(x.l + y.l, x.a + y.a);
}

fn v6_scale(x: V6, s: f32) -> V6 {
    return V6(x.l * s, x.a * s);
}

fn v6_dot(x: V6, y: V6) -> f32 {
    return dot(x.l, y.l) + dot(x.a, y.a);
}

fn m6_apply(m: M6, x: V6) -> V6 {
    return V6(m.aa * x.l + m.ab * x.a, m.ba * x.l + m.bb * x.a);
}

// Featherstone's crm(v) m.
fn motion_cross(x: V6, m: V6) -> V6 {
    return V6(cross(x.a, m.l) + cross(x.l, m.a), cross(x.a, m.a));
}

// Featherstone's crf(v) f.
fn force_cross(x: V6, f: V6) -> V6 {
    return V6(cross(x.a, f.l), cross(x.a, f.a) + cross(x.l, f.l));
}

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
    return mat3x3<f32>(vec3<f32>(1.0, 0.0, 0.0), vec3<f32>(0.0, 1.0, 0.0), vec3<f32>(0.0, 0.0, 1.0)) + k * a + (k * k) * b;
}

fn bf(i: u32, k: u32) -> f32 {
    return body_f32[i * BODY_F32 + k];
}

fn bvec(i: u32, k: u32) -> vec3<f32> {
    return vec3<f32>(bf(i, k), bf(i, k + 1u), bf(i, k + 2u));
}

fn all_finite(x: f32) -> bool {
    // NaN fails both comparisons; ±inf fails the bound.
    return abs(x) <= 3.4e38;
}

@compute @workgroup_size(WORKGROUP)
fn step(@builtin(global_invocation_id) gid: vec3<u32>) {
    let w = gid.x;
    let n = params.nworlds;
    if (w >= n) {
        return;
    }
    let dt = params.dt;
    var rot: array<mat3x3<f32>, NB>;
    var pos: array<vec3<f32>, NB>;
    var s: array<V6, NB>;        // the joint's world motion column (zero when fixed)
    var vel: array<V6, NB>;
    var c: array<V6, NB>;        // velocity-product acceleration
    var ia: array<M6, NB>;       // articulated inertia
    var pa: array<V6, NB>;       // articulated bias force
    var u: array<V6, NB>;
    var dinv: array<f32, NB>;
    var ub: array<f32, NB>;
    var acc: array<V6, NB>;
    var ddq: array<f32, NV>;
    var tau_w: array<f32, NV>;
    let zero3 = vec3<f32>(0.0);
    let zero6 = V6(zero3, zero3);
    let zero33 = mat3x3<f32>(zero3, zero3, zero3);
    rot[0] = mat3x3<f32>(vec3<f32>(1.0, 0.0, 0.0), vec3<f32>(0.0, 1.0, 0.0), vec3<f32>(0.0, 0.0, 1.0));
    pos[0] = zero3;
    vel[0] = zero6;
    // Forward kinematics, velocities, inertias (forward_kinematics,
    // forward_velocity, the first loop of aba_from_kinematics).
    for (var i = 1u; i < NB; i++) {
        let parent = body_u32[4u * i];
        let jtype = body_u32[4u * i + 1u];
        let iq = body_u32[4u * i + 2u];
        let iv = body_u32[4u * i + 3u];
        let placement = mat3x3<f32>(bvec(i, 0u), bvec(i, 3u), bvec(i, 6u));
        let axis = bvec(i, 12u);
        var joint_rot = mat3x3<f32>(vec3<f32>(1.0, 0.0, 0.0), vec3<f32>(0.0, 1.0, 0.0), vec3<f32>(0.0, 0.0, 1.0));
        var joint_pos = zero3;
        var qv = 0.0;
        if (jtype != 0u) {
            qv = q[iq * n + w];
        }
        if (jtype == 1u) {
            joint_rot = exp3(axis * qv);
        } else if (jtype == 2u) {
            joint_pos = axis * qv;
        }
        // parent_from_body = placement · joint; world_from_body = parent's · that.
        let pfb_rot = placement * joint_rot;
        let pfb_pos = placement * joint_pos + bvec(i, 9u);
        rot[i] = rot[parent] * pfb_rot;
        pos[i] = rot[parent] * pfb_pos + pos[parent];
        // The motion column in the world frame (act_motion).
        var local = zero6;
        if (jtype == 1u) {
            local = V6(zero3, axis);
        } else if (jtype == 2u) {
            local = V6(axis, zero3);
        }
        let sw = rot[i] * local.a;
        s[i] = V6(rot[i] * local.l + cross(pos[i], sw), sw);
        var vj = zero6;
        if (jtype != 0u) {
            let vk = v[iv * n + w];
            vj = v6_scale(s[i], vk);
            // Springs (explicit) and damping (implicit: −D v here).
            tau_w[iv] = tau[iv * n + w] - bf(i, 27u) * (qv - bf(i, 28u)) - bf(i, 26u) * vk;
        }
        vel[i] = v6_add(vel[parent], vj);
        c[i] = motion_cross(vel[i], vj);
        // The world inertia (Inertia::transformed, write_matrix).
        let mass = bf(i, 15u);
        let com = rot[i] * bvec(i, 16u) + pos[i];
        let r6 = bvec(i, 19u);
        let r3 = bvec(i, 22u);
        let inertia_body = mat3x3<f32>(vec3<f32>(r6.x, r3.x, r3.y), vec3<f32>(r3.x, r6.y, r3.z), vec3<f32>(r3.y, r3.z, r6.z));
        let rotational = rot[i] * inertia_body * transpose(rot[i]);
        let mc = skew(com) * mass;
        let m6 = M6(
            mat3x3<f32>(vec3<f32>(mass, 0.0, 0.0), vec3<f32>(0.0, mass, 0.0), vec3<f32>(0.0, 0.0, mass)),
            zero33 - mc,
            mc,
            rotational - skew(com) * mc,
        );
        ia[i] = m6;
        pa[i] = force_cross(vel[i], m6_apply(m6, vel[i]));
    }
    // Backward pass (aba_from_kinematics).
    for (var i = NB - 1u; i >= 1u; i--) {
        let parent = body_u32[4u * i];
        let jtype = body_u32[4u * i + 1u];
        let iv = body_u32[4u * i + 3u];
        var m = ia[i];
        var p = pa[i];
        if (jtype != 0u) {
            let ui = m6_apply(m, s[i]);
            let d = 1.0 / (v6_dot(s[i], ui) + bf(i, 25u));
            let b = tau_w[iv] - v6_dot(s[i], p);
            u[i] = ui;
            dinv[i] = d;
            ub[i] = b;
            if (parent != 0u) {
                m = M6(
                    m.aa - outer(ui.l, ui.l) * d,
                    m.ab - outer(ui.l, ui.a) * d,
                    m.ba - outer(ui.a, ui.l) * d,
                    m.bb - outer(ui.a, ui.a) * d,
                );
                p = v6_add(p, v6_add(m6_apply(m, c[i]), v6_scale(ui, d * b)));
            }
        }
        if (parent != 0u) {
            let mp = ia[parent];
            ia[parent] = M6(mp.aa + m.aa, mp.ab + m.ab, mp.ba + m.ba, mp.bb + m.bb);
            pa[parent] = v6_add(pa[parent], p);
        }
        if (i == 1u) {
            break;
        }
    }
    // Forward pass: accelerations.
    acc[0] = V6(-params.gravity.xyz, zero3);
    for (var i = 1u; i < NB; i++) {
        let parent = body_u32[4u * i];
        let jtype = body_u32[4u * i + 1u];
        let iv = body_u32[4u * i + 3u];
        var a = v6_add(acc[parent], c[i]);
        if (jtype != 0u) {
            let x = dinv[i] * (ub[i] - v6_dot(u[i], a));
            ddq[iv] = x;
            a = v6_add(a, v6_scale(s[i], x));
        }
        acc[i] = a;
    }
    // Free velocity and integration, committed only if finite.
    var ok = true;
    var v_next: array<f32, NV>;
    var q_next: array<f32, NQ>;
    for (var k = 0u; k < NV; k++) {
        v_next[k] = v[k * n + w] + dt * ddq[k];
        ok = ok && all_finite(v_next[k]);
    }
    for (var i = 1u; i < NB; i++) {
        let jtype = body_u32[4u * i + 1u];
        if (jtype != 0u) {
            let iq = body_u32[4u * i + 2u];
            let iv = body_u32[4u * i + 3u];
            q_next[iq] = q[iq * n + w] + dt * v_next[iv];
            ok = ok && all_finite(q_next[iq]);
        }
    }
    if (!ok) {
        flags[w] = 1u;
        return;
    }
    for (var k = 0u; k < NV; k++) {
        v[k * n + w] = v_next[k];
    }
    for (var k = 0u; k < NQ; k++) {
        q[k * n + w] = q_next[k];
    }
}
