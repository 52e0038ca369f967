// Gymnasium's v5 tasks on resident worlds, the twin of envs/gymnasium
// (`GymTask::draw_reset`, `GymTask::evaluate`): the reset draws from each
// world's Philox stream and every world's observation, reward, termination
// and info, one invocation per world, so that an environment step reads
// back one row of f32 per world and no state. Assembled after the resident
// kernel's source (its group 0: the state, the model's records, the world
// parameters) and philox.wgsl; group 2 is the task's. Generated header
// (gpu/resident/task.rs): TASK_KIND (one of the TASK_* codes), OBS_DIM,
// INFO_DIM, TASK_ROW (floats of a world's output row), TASK_FRAME_A and
// TASK_FRAME_B (the bodies of the frames read), INFO_CAP (7), TASK_EXCLUDE_POSITIONS,
// TASK_TERMINATE_UNHEALTHY, TASK_NORMAL_VELOCITIES, TASK_QPOS0 and
// TASK_QVEL0 (where qpos0 and qvel0 start in task_f32), TASK_PAIR_FRAMES
// (where the pairs' body frames start: task::pair_frames), TASK_BODY_FRAMES
// and TASK_WRENCHES (6 floats per body frame, at least 6),
// TASK_BODY_FRAME_AT and TASK_BODY_FRAME_FLOATS (the TaskBodyFrame records,
// their fields at TBF_*), TASK_TENDONS and TASK_TENDON_AT (per tendon its
// coefficients on q, then on v: task::fixed_tendons), TASK_SCALAR_INFO
// (the info's terms before Humanoid's tendon columns), TASK_INCLUDE_*
// (the observation's optional terms), the TF_* offsets of TaskFloats. The tasks read
// and write the state as MuJoCo's `qpos` and `qvel` (load_mujoco_state,
// store_mujoco_state). gym_task_forces.wgsl (or, for a model without
// contacts, an empty function) follows: task_contact_wrenches.

// first_world: the global index of this batch's world 0 (the streams are
// keyed by it); frame_skip: physics steps per environment step.
@group(2) @binding(0) var<uniform> task: TaskUniform;
// TaskFloats, then qpos0 (NQ) and qvel0 (NV).
@group(2) @binding(1) var<storage, read> task_f32: array<f32>;
// The state each world's last physics step started from (world-minor).
@group(2) @binding(2) var<storage, read> start_q: array<f32>;
@group(2) @binding(3) var<storage, read> start_v: array<f32>;
// Per world: its stream's key (2 words), its episode, unused (the host's).
@group(2) @binding(4) var<storage, read> streams: array<vec4<u32>>;
// Per world: 1 to reset (gym_reset); 1 just reset, observed without a
// step to reward (gym_evaluate).
@group(2) @binding(5) var<storage, read> reset_mask: array<u32>;
@group(2) @binding(6) var<storage, read> fresh_mask: array<u32>;
// Per world: Σ a² of its actions (Gymnasium's control costs).
@group(2) @binding(7) var<storage, read> action_sq: array<f32>;
// Per world: the position its next velocity reward starts from.
@group(2) @binding(8) var<storage, read_write> position: array<vec2<f32>>;
// Per world, TASK_ROW floats: the observation (OBS_DIM), the reward, the
// termination (0 or 1), the info (INFO_DIM).
@group(2) @binding(9) var<storage, read_write> out: array<f32>;

var<private> kq: array<f32, NQ>;
var<private> row_base: u32;
var<private> cursor: u32;
// The world's state as MuJoCo's qpos and qvel.
var<private> mq: array<f32, NQ>;
var<private> mv: array<f32, NV>;
// Per body, the centre of mass of its top-level body's subtree at the
// kinematic state (task_subtree_coms), and per body frame the contact
// wrench [torque; force] about it (task_contact_wrenches).
var<private> tcom: array<vec3<f32>, NB>;
var<private> wrench: array<f32, TASK_WRENCHES>;
// The kinematic state's velocity (as kq), the model's centre of mass there
// (dynamics::center_of_mass) and the actuators' joint forces there
// (sim::actuator_forces).
var<private> kv: array<f32, NV>;
var<private> tcenter: vec3<f32>;
var<private> tqa: array<f32, NV>;

fn tf(k: u32) -> f32 {
    return task_f32[k];
}

// mq[t] and mv[t] for a fixed t that a task on fewer coordinates never
// reaches (an index in a literal would not validate there).
fn mq_at(t: u32) -> f32 {
    return mq[min(t, NQ - 1u)];
}

fn mv_at(t: u32) -> f32 {
    return mv[min(t, NV - 1u)];
}

fn push(x: f32) {
    out[row_base + cursor] = x;
    cursor += 1u;
}

fn open_within(x: f32, lo: f32, hi: f32) -> bool {
    return lo < x && x < hi;
}

// Where body i's joint keeps a quaternion in q, if it does (NQ if not):
// JointType::quaternion_offset.
fn quaternion_at(i: u32) -> u32 {
    switch bu(i, BU_JOINT) {
        case JOINT_FREE: {
            return bu(i, BU_IQ) + 3u;
        }
        case JOINT_BALL: {
            return bu(i, BU_IQ);
        }
        default: {
            return NQ;
        }
    }
}

// The rotation of the free joint whose quaternion is at q[k ..] of `world`.
fn joint_rotation(k: u32) -> mat3x3<f32> {
    let n = params.nworlds;
    let w = world;
    return quat_matrix(vec4<f32>(q[k * n + w], q[(k + 1u) * n + w], q[(k + 2u) * n + w], q[(k + 3u) * n + w]));
}

// mq, mv ← `world`'s state as MuJoCo's qpos and qvel (Model::mujoco_qpos,
// Model::mujoco_qvel: quaternions (w, x, y, z), a free joint's linear
// velocity in the world frame).
fn load_mujoco_state() {
    let n = params.nworlds;
    let w = world;
    for (var t = 0u; t < NQ; t++) {
        mq[t] = q[t * n + w];
    }
    for (var t = 0u; t < NV; t++) {
        mv[t] = v[t * n + w];
    }
    for (var i = 1u; i < NB; i++) {
        let k = quaternion_at(i);
        if (k == NQ) {
            continue;
        }
        mq[k] = q[(k + 3u) * n + w];
        for (var a = 0u; a < 3u; a++) {
            mq[k + 1u + a] = q[(k + a) * n + w];
        }
        if (bu(i, BU_JOINT) == JOINT_FREE) {
            let iv = bu(i, BU_IV);
            let lin = joint_rotation(k) * vec3<f32>(mv[iv], mv[iv + 1u], mv[iv + 2u]);
            mv[iv] = lin.x;
            mv[iv + 1u] = lin.y;
            mv[iv + 2u] = lin.z;
        }
    }
}

// `world`'s state ← mq, mv as MuJoCo's qpos and qvel (Model::q_from_mujoco,
// Model::v_from_mujoco).
fn store_mujoco_state() {
    let n = params.nworlds;
    let w = world;
    for (var t = 0u; t < NQ; t++) {
        q[t * n + w] = mq[t];
    }
    for (var t = 0u; t < NV; t++) {
        v[t * n + w] = mv[t];
    }
    for (var i = 1u; i < NB; i++) {
        let k = quaternion_at(i);
        if (k == NQ) {
            continue;
        }
        for (var a = 0u; a < 3u; a++) {
            q[(k + a) * n + w] = mq[k + 1u + a];
        }
        q[(k + 3u) * n + w] = mq[k];
        if (bu(i, BU_JOINT) == JOINT_FREE) {
            let iv = bu(i, BU_IV);
            let lin = transpose(joint_rotation(k)) * vec3<f32>(mv[iv], mv[iv + 1u], mv[iv + 2u]);
            v[iv * n + w] = lin.x;
            v[(iv + 1u) * n + w] = lin.y;
            v[(iv + 2u) * n + w] = lin.z;
        }
    }
}

@compute @workgroup_size(WORKGROUP)
fn gym_reset(@builtin(global_invocation_id) gid: vec3<u32>) {
    let w = gid.x;
    let n = params.nworlds;
    if (w >= n || reset_mask[w] == 0u) {
        return;
    }
    world = w;
    let st = streams[w];
    philox_start(st.xy, task.first_world + w, st.z);
    // Drawn as MuJoCo's qpos and qvel, in their order.
    if (TASK_KIND == TASK_REACHER) {
        for (var t = 0u; t < NQ; t++) {
            mq[t] = tf(TASK_QPOS0 + t) + philox_range(-0.1, 0.1);
        }
        // The goal uniform in the disc of radius 0.2, drawn in its square
        // until inside (the chance of 64 misses is 0.22⁶⁴).
        var g = vec2<f32>(0.0);
        for (var k = 0u; k < 64u; k++) {
            g = vec2<f32>(philox_range(-0.2, 0.2), philox_range(-0.2, 0.2));
            if (length(g) < 0.2) {
                break;
            }
        }
        mq[NQ - 2u] = g.x;
        mq[NQ - 1u] = g.y;
        for (var t = 0u; t < NV; t++) {
            mv[t] = tf(TASK_QVEL0 + t) + philox_range(-0.005, 0.005);
        }
        mv[NV - 2u] = 0.0;
        mv[NV - 1u] = 0.0;
    } else {
        let s = tf(TF_RESET_NOISE_SCALE);
        for (var t = 0u; t < NQ; t++) {
            mq[t] = tf(TASK_QPOS0 + t) + philox_range(-s, s);
        }
        for (var t = 0u; t < NV; t++) {
            var noise = 0.0;
            if (TASK_NORMAL_VELOCITIES) {
                noise = s * philox_normal();
            } else {
                noise = philox_range(-s, s);
            }
            mv[t] = tf(TASK_QVEL0 + t) + noise;
        }
    }
    store_mujoco_state();
    flags[w] = 0u;
}

// The world positions of every body at the kinematic state `kq`
// (forward_kinematics: the step kernel's loop without the velocities).
fn task_kinematics() {
    rot[0] = IDENTITY3;
    pos[0] = vec3<f32>(0.0);
    for (var i = 1u; i < NB; i++) {
        let parent = bu(i, BU_PARENT);
        let iq = bu(i, BU_IQ);
        let axis = bvec(i, BF_AXIS);
        var joint_rot = IDENTITY3;
        var joint_pos = vec3<f32>(0.0);
        switch bu(i, BU_JOINT) {
            case JOINT_HINGE: {
                joint_rot = exp3(axis * kq[iq]);
            }
            case JOINT_SLIDE: {
                joint_pos = axis * kq[iq];
            }
            case JOINT_FREE: {
                joint_pos = vec3<f32>(kq[iq], kq[iq + 1u], kq[iq + 2u]);
                joint_rot = quat_matrix(vec4<f32>(kq[iq + 3u], kq[iq + 4u], kq[iq + 5u], kq[iq + 6u]));
            }
            case JOINT_BALL: {
                joint_rot = quat_matrix(vec4<f32>(kq[iq], kq[iq + 1u], kq[iq + 2u], kq[iq + 3u]));
            }
            default: {}
        }
        let placement = bmat(i, BF_ROTATION);
        rot[i] = rot[parent] * (placement * joint_rot);
        pos[i] = rot[parent] * (placement * joint_pos + bvec(i, BF_TRANSLATION)) + pos[parent];
    }
}

// tcom ← per body, the centre of mass of its top-level body's subtree
// (the origin for the world and what is welded to it), after
// task_kinematics (dynamics::subtree_coms).
fn task_subtree_coms() {
    var root: array<u32, NB>;
    var moment: array<vec3<f32>, NB>;
    var mass: array<f32, NB>;
    for (var i = 1u; i < NB; i++) {
        let parent = bu(i, BU_PARENT);
        root[i] = select(root[parent], i, parent == 0u);
        let m = bf(i, BF_MASS);
        moment[root[i]] += (rot[i] * bvec(i, BF_COM) + pos[i]) * m;
        mass[root[i]] += m;
    }
    tcom[0] = vec3<f32>(0.0);
    var total = vec3<f32>(0.0);
    var total_mass = 0.0;
    for (var i = 1u; i < NB; i++) {
        let r = root[i];
        tcom[i] = select(moment[r] / mass[r], vec3<f32>(0.0), mass[r] <= 0.0);
        if (r == i) {
            total += moment[i];
            total_mass += mass[i];
        }
    }
    tcenter = select(total / total_mass, total, total_mass <= 0.0);
}

// vel ← each body's spatial velocity at the kinematic state (kv), after
// task_kinematics (forward_velocity).
fn task_velocities() {
    vel[0] = V6(vec3<f32>(0.0), vec3<f32>(0.0));
    for (var i = 1u; i < NB; i++) {
        let jtype = bu(i, BU_JOINT);
        let iv = bu(i, BU_IV);
        let axis = bvec(i, BF_AXIS);
        var vj = V6(vec3<f32>(0.0), vec3<f32>(0.0));
        for (var a = 0u; a < bu(i, BU_NV); a++) {
            let local = local_column(jtype, axis, a);
            let sw = rot[i] * local.a;
            vj = v6_add(vj, v6_scale(V6(rot[i] * local.l + cross(pos[i], sw), sw), kv[iv + a]));
        }
        vel[i] = v6_add(vel[bu(i, BU_PARENT)], vj);
    }
}

// tqa ← the actuators' joint forces at the kinematic state under `world`'s
// last controls (the step's: control and force ranges, gear, each dof's
// effort limit).
fn task_actuator_forces() {
    let n = params.nworlds;
    for (var k = 0u; k < NV; k++) {
        tqa[k] = 0.0;
    }
    for (var a = 0u; a < params.nu; a++) {
        let dof = act_u(a, ACT_DOF);
        tqa[dof] += actuator_joint_force(a, ctrl[a * n + world], kq[act_u(a, ACT_IQ)], kv[dof]);
    }
    for (var k = 0u; k < NV; k++) {
        let e = df(k, DF_EFFORT);
        tqa[k] = clamp(tqa[k], -e, e);
    }
}

fn tbf(k: u32, field: u32) -> f32 {
    return tf(TASK_BODY_FRAME_AT + k * TASK_BODY_FRAME_FLOATS + field);
}

// Body frame k's inertia about its c-frame's origin (cinert: COM_INERTIA
// values), after task_kinematics and task_subtree_coms (com_inertias).
fn push_com_inertia(k: u32) {
    let b = u32(tbf(k, TBF_BODY));
    let m = tbf(k, TBF_MASS);
    let com = rot[b] * vec3<f32>(tbf(k, TBF_COM), tbf(k, TBF_COM + 1u), tbf(k, TBF_COM + 2u)) + pos[b];
    let xx = tbf(k, TBF_INERTIA);
    let yy = tbf(k, TBF_INERTIA + 1u);
    let zz = tbf(k, TBF_INERTIA + 2u);
    let xy = tbf(k, TBF_INERTIA + 3u);
    let xz = tbf(k, TBF_INERTIA + 4u);
    let yz = tbf(k, TBF_INERTIA + 5u);
    let own = mat3x3<f32>(vec3<f32>(xx, xy, xz), vec3<f32>(xy, yy, yz), vec3<f32>(xz, yz, zz));
    let d = com - tcom[b];
    let i = rot[b] * own * transpose(rot[b]) - skew(d) * skew(d) * m;
    push(i[0].x);
    push(i[1].y);
    push(i[2].z);
    push(i[1].x);
    push(i[2].x);
    push(i[2].y);
    push(m * d.x);
    push(m * d.y);
    push(m * d.z);
    push(m);
}

// Body frame k's velocity [ω; v] at its c-frame's origin (cvel), after
// task_velocities and task_subtree_coms (com_velocities).
fn push_com_velocity(k: u32) {
    let b = u32(tbf(k, TBF_BODY));
    let t = vel[b];
    let lin = t.l + cross(t.a, tcom[b]);
    push(t.a.x);
    push(t.a.y);
    push(t.a.z);
    push(lin.x);
    push(lin.y);
    push(lin.z);
}

// Adds force `f` at world point `p` on body frame `slot` (task::pair_frames;
// < 0: not a body frame, dropped) of body `body` to the wrenches.
fn add_wrench(slot: f32, body: u32, p: vec3<f32>, f: vec3<f32>) {
    if (slot < 0.0) {
        return;
    }
    let k = 6u * u32(slot);
    let t = cross(p - tcom[body], f);
    for (var a = 0u; a < 3u; a++) {
        wrench[k + a] += t[a];
        wrench[k + 3u + a] += f[a];
    }
}

fn frame_position(body: u32, offset: u32) -> vec3<f32> {
    return rot[body] * vec3<f32>(tf(offset), tf(offset + 1u), tf(offset + 2u)) + pos[body];
}

@compute @workgroup_size(WORKGROUP)
fn gym_evaluate(@builtin(global_invocation_id) gid: vec3<u32>) {
    let w = gid.x;
    let n = params.nworlds;
    if (w >= n) {
        return;
    }
    world = w;
    let fresh = fresh_mask[w] != 0u;
    for (var t = 0u; t < NQ; t++) {
        kq[t] = select(start_q[t * n + w], q[t * n + w], fresh);
    }
    for (var t = 0u; t < NV; t++) {
        kv[t] = select(start_v[t * n + w], v[t * n + w], fresh);
    }
    row_base = w * TASK_ROW;
    cursor = 0u;
    load_mujoco_state();
    let q0 = mq_at(0u);
    let q1 = mq_at(1u);
    let before = position[w];
    let dt = wp(WP_DT, params.dt) * f32(task.frame_skip);
    let ctrl_cost = tf(TF_CTRL_COST_WEIGHT) * action_sq[w];
    var reward = 0.0;
    var terminated = false;
    // The info's terms in the order of GymTask::info_columns (at most
    // INFO_CAP), and which of them a world just reset reports
    // (GymTask::reset_info).
    var info: array<f32, INFO_CAP>;
    var on_reset: array<bool, INFO_CAP>;
    var next_position = vec2<f32>(q0, 0.0);
    switch TASK_KIND {
        case TASK_INVERTED_PENDULUM: {
            var finite = true;
            for (var t = 0u; t < NQ; t++) {
                push(mq[t]);
                finite = finite && all_finite(mq[t]);
            }
            for (var t = 0u; t < NV; t++) {
                push(mv[t]);
                finite = finite && all_finite(mv[t]);
            }
            terminated = !finite || abs(q1) > 0.2;
            reward = select(1.0, 0.0, terminated);
            info[0] = reward;
        }
        case TASK_INVERTED_DOUBLE_PENDULUM: {
            push(q0);
            for (var t = 1u; t < NQ; t++) {
                push(sin(mq[t]));
            }
            for (var t = 1u; t < NQ; t++) {
                push(cos(mq[t]));
            }
            for (var t = 0u; t < NV; t++) {
                push(clamp(mv[t], -10.0, 10.0));
            }
            push(select(clamp(qfrc[w], -10.0, 10.0), 0.0, fresh));
            task_kinematics();
            let tip = frame_position(TASK_FRAME_A, TF_FRAME_A);
            terminated = tip.z <= 1.0;
            let distance = 0.01 * tip.x * tip.x + (tip.z - 2.0) * (tip.z - 2.0);
            let v1 = mv_at(1u);
            let v2 = mv_at(2u);
            let velocity = 1e-3 * v1 * v1 + 5e-3 * v2 * v2;
            let alive = select(tf(TF_HEALTHY_REWARD), 0.0, terminated);
            reward = alive - distance - velocity;
            info[0] = alive;
            info[1] = -distance;
            info[2] = -velocity;
        }
        case TASK_ANT, TASK_HUMANOID: {
            var finite = true;
            for (var t = 0u; t < NQ; t++) {
                finite = finite && all_finite(mq[t]);
            }
            for (var t = 0u; t < NV; t++) {
                finite = finite && all_finite(mv[t]);
            }
            let first = select(0u, 2u, TASK_EXCLUDE_POSITIONS);
            for (var t = first; t < NQ; t++) {
                push(mq[t]);
            }
            for (var t = 0u; t < NV; t++) {
                push(mv[t]);
            }
            // The body terms at the kinematic state.
            task_kinematics();
            task_subtree_coms();
            let humanoid = TASK_KIND == TASK_HUMANOID;
            if (humanoid) {
                if (TASK_INCLUDE_CINERT) {
                    for (var k = 0u; k < TASK_BODY_FRAMES; k++) {
                        push_com_inertia(k);
                    }
                }
                if (TASK_INCLUDE_CVEL) {
                    task_velocities();
                    for (var k = 0u; k < TASK_BODY_FRAMES; k++) {
                        push_com_velocity(k);
                    }
                }
                if (TASK_INCLUDE_QFRC_ACTUATOR) {
                    // (None for a world just reset.)
                    task_actuator_forces();
                    for (var k = 6u; k < NV; k++) {
                        push(select(tqa[k], 0.0, fresh));
                    }
                }
            }
            // The main body's position (Ant), or the centre of mass's.
            var main = tcenter;
            if (!humanoid) {
                main = frame_position(TASK_FRAME_A, TF_FRAME_A);
            }
            next_position = main.xy;
            // cfrc_ext: the last step's contact wrenches (none for a world
            // just reset, or one whose step failed); Ant clips them.
            for (var k = 0u; k < TASK_WRENCHES; k++) {
                wrench[k] = 0.0;
            }
            if (!fresh && flags[w] == 0u) {
                task_contact_wrenches();
            }
            var contact_sq = 0.0;
            for (var k = 0u; k < 6u * TASK_BODY_FRAMES; k++) {
                var f = wrench[k];
                if (!humanoid) {
                    f = clamp(f, tf(TF_CONTACT_FORCE_RANGE), tf(TF_CONTACT_FORCE_RANGE + 1u));
                }
                contact_sq += f * f;
                if (TASK_INCLUDE_CFRC_EXT) {
                    push(f);
                }
            }
            var contact_cost = tf(TF_CONTACT_COST_WEIGHT) * contact_sq;
            let z = mq_at(2u);
            var ok = finite && tf(TF_HEALTHY_Z) <= z && z <= tf(TF_HEALTHY_Z + 1u);
            if (humanoid) {
                contact_cost = clamp(contact_cost, tf(TF_CONTACT_COST_RANGE), tf(TF_CONTACT_COST_RANGE + 1u));
                ok = open_within(z, tf(TF_HEALTHY_Z), tf(TF_HEALTHY_Z + 1u));
                // The tendons' lengths and velocities at the kinematic
                // state, after the scalar terms (reported on reset too).
                let at = row_base + OBS_DIM + 2u + TASK_SCALAR_INFO;
                for (var t = 0u; t < TASK_TENDONS; t++) {
                    let c = TASK_TENDON_AT + t * (NQ + NV);
                    var length = 0.0;
                    for (var k = 0u; k < NQ; k++) {
                        length += tf(c + k) * kq[k];
                    }
                    var speed = 0.0;
                    for (var k = 0u; k < NV; k++) {
                        speed += tf(c + NQ + k) * kv[k];
                    }
                    out[at + t] = length;
                    out[at + TASK_TENDONS + t] = speed;
                }
            }
            let velocity = (main.xy - before) / dt;
            let forward = tf(TF_FORWARD_REWARD_WEIGHT) * velocity.x;
            let survive = select(0.0, tf(TF_HEALTHY_REWARD), ok);
            reward = forward + survive - (ctrl_cost + contact_cost);
            terminated = TASK_TERMINATE_UNHEALTHY && !ok;
            info[0] = q0;
            info[1] = q1;
            info[2] = sqrt(q0 * q0 + q1 * q1);
            on_reset[0] = true;
            on_reset[1] = true;
            on_reset[2] = true;
            info[3] = velocity.x;
            info[4] = velocity.y;
            info[5] = forward;
            info[6] = -ctrl_cost;
            info[7] = -contact_cost;
            info[8] = survive;
        }
        case TASK_REACHER: {
            push(cos(q0));
            push(cos(q1));
            push(sin(q0));
            push(sin(q1));
            for (var t = 2u; t < NQ; t++) {
                push(mq[t]);
            }
            push(mv_at(0u));
            push(mv_at(1u));
            task_kinematics();
            let d = frame_position(TASK_FRAME_A, TF_FRAME_A) - frame_position(TASK_FRAME_B, TF_FRAME_B);
            push(d.x);
            push(d.y);
            let distance = -length(d) * tf(TF_REWARD_DIST_WEIGHT);
            let control = -action_sq[w] * tf(TF_REWARD_CONTROL_WEIGHT);
            reward = distance + control;
            info[0] = distance;
            info[1] = control;
        }
        default: {
            // Swimmer, HalfCheetah, Hopper, Walker2d: planar runners.
            var first = 0u;
            if (TASK_EXCLUDE_POSITIONS) {
                first = select(1u, 2u, TASK_KIND == TASK_SWIMMER);
            }
            for (var t = first; t < NQ; t++) {
                push(mq[t]);
            }
            let clipped = TASK_KIND == TASK_HOPPER || TASK_KIND == TASK_WALKER2D;
            for (var t = 0u; t < NV; t++) {
                let x = mv[t];
                push(select(x, clamp(x, -10.0, 10.0), clipped));
            }
            let x_velocity = (q0 - before.x) / dt;
            let forward = tf(TF_FORWARD_REWARD_WEIGHT) * x_velocity;
            reward = forward - ctrl_cost;
            info[0] = q0;
            on_reset[0] = true;
            info[1] = x_velocity;
            info[2] = forward;
            info[3] = -ctrl_cost;
            if (TASK_KIND == TASK_SWIMMER) {
                next_position = vec2<f32>(q0, q1);
                info[4] = q1;
                info[5] = sqrt(q0 * q0 + q1 * q1);
                info[6] = (q1 - before.y) / dt;
                on_reset[4] = true;
                on_reset[5] = true;
            }
            if (clipped) {
                info[4] = q1 - tf(TF_Z0);
                on_reset[4] = true;
                let q2 = mq_at(2u);
                var ok = open_within(q1, tf(TF_HEALTHY_Z), tf(TF_HEALTHY_Z + 1u)) && open_within(q2, tf(TF_HEALTHY_ANGLE), tf(TF_HEALTHY_ANGLE + 1u));
                if (TASK_KIND == TASK_HOPPER) {
                    let lo = tf(TF_HEALTHY_STATE);
                    let hi = tf(TF_HEALTHY_STATE + 1u);
                    for (var t = 2u; t < NQ; t++) {
                        ok = ok && open_within(mq[t], lo, hi);
                    }
                    for (var t = 0u; t < NV; t++) {
                        ok = ok && open_within(mv[t], lo, hi);
                    }
                }
                let survive = select(0.0, tf(TF_HEALTHY_REWARD), ok);
                info[5] = survive;
                reward += survive;
                terminated = TASK_TERMINATE_UNHEALTHY && !ok;
            }
        }
    }
    if (fresh) {
        reward = 0.0;
        terminated = false;
    }
    out[row_base + OBS_DIM] = reward;
    out[row_base + OBS_DIM + 1u] = select(0.0, 1.0, terminated);
    for (var k = 0u; k < TASK_SCALAR_INFO; k++) {
        out[row_base + OBS_DIM + 2u + k] = select(info[k], 0.0, fresh && !on_reset[k]);
    }
    position[w] = next_position;
}
