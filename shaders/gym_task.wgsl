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
// TASK_QVEL0 (where qpos0 and qvel0 start in task_f32), the TF_* offsets
// of TaskFloats. The tasks on the device have only hinge, slide and fixed
// joints: `q` is MuJoCo's `qpos` and `v` its `qvel`.

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

fn tf(k: u32) -> f32 {
    return task_f32[k];
}

fn push(x: f32) {
    out[row_base + cursor] = x;
    cursor += 1u;
}

fn open_within(x: f32, lo: f32, hi: f32) -> bool {
    return lo < x && x < hi;
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
    if (TASK_KIND == TASK_REACHER) {
        for (var t = 0u; t < NQ; t++) {
            q[t * n + w] = tf(TASK_QPOS0 + t) + philox_range(-0.1, 0.1);
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
        q[(NQ - 2u) * n + w] = g.x;
        q[(NQ - 1u) * n + w] = g.y;
        for (var t = 0u; t < NV; t++) {
            v[t * n + w] = tf(TASK_QVEL0 + t) + philox_range(-0.005, 0.005);
        }
        v[(NV - 2u) * n + w] = 0.0;
        v[(NV - 1u) * n + w] = 0.0;
    } else {
        let s = tf(TF_RESET_NOISE_SCALE);
        for (var t = 0u; t < NQ; t++) {
            q[t * n + w] = tf(TASK_QPOS0 + t) + philox_range(-s, s);
        }
        for (var t = 0u; t < NV; t++) {
            var noise = 0.0;
            if (TASK_NORMAL_VELOCITIES) {
                noise = s * philox_normal();
            } else {
                noise = philox_range(-s, s);
            }
            v[t * n + w] = tf(TASK_QVEL0 + t) + noise;
        }
    }
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
            default: {}
        }
        let placement = bmat(i, BF_ROTATION);
        rot[i] = rot[parent] * (placement * joint_rot);
        pos[i] = rot[parent] * (placement * joint_pos + bvec(i, BF_TRANSLATION)) + pos[parent];
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
    row_base = w * TASK_ROW;
    cursor = 0u;
    let q0 = q[w];
    let q1 = q[n + w];
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
                push(q[t * n + w]);
                finite = finite && all_finite(q[t * n + w]);
            }
            for (var t = 0u; t < NV; t++) {
                push(v[t * n + w]);
                finite = finite && all_finite(v[t * n + w]);
            }
            terminated = !finite || abs(q1) > 0.2;
            reward = select(1.0, 0.0, terminated);
            info[0] = reward;
        }
        case TASK_INVERTED_DOUBLE_PENDULUM: {
            push(q0);
            for (var t = 1u; t < NQ; t++) {
                push(sin(q[t * n + w]));
            }
            for (var t = 1u; t < NQ; t++) {
                push(cos(q[t * n + w]));
            }
            for (var t = 0u; t < NV; t++) {
                push(clamp(v[t * n + w], -10.0, 10.0));
            }
            push(select(clamp(qfrc[w], -10.0, 10.0), 0.0, fresh));
            task_kinematics();
            let tip = frame_position(TASK_FRAME_A, TF_FRAME_A);
            terminated = tip.z <= 1.0;
            let distance = 0.01 * tip.x * tip.x + (tip.z - 2.0) * (tip.z - 2.0);
            let v1 = v[n + w];
            let v2 = v[2u * n + w];
            let velocity = 1e-3 * v1 * v1 + 5e-3 * v2 * v2;
            let alive = select(tf(TF_HEALTHY_REWARD), 0.0, terminated);
            reward = alive - distance - velocity;
            info[0] = alive;
            info[1] = -distance;
            info[2] = -velocity;
        }
        case TASK_REACHER: {
            push(cos(q0));
            push(cos(q1));
            push(sin(q0));
            push(sin(q1));
            for (var t = 2u; t < NQ; t++) {
                push(q[t * n + w]);
            }
            push(v[w]);
            push(v[n + w]);
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
                push(q[t * n + w]);
            }
            let clipped = TASK_KIND == TASK_HOPPER || TASK_KIND == TASK_WALKER2D;
            for (var t = 0u; t < NV; t++) {
                let x = v[t * n + w];
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
                let q2 = q[2u * n + w];
                var ok = open_within(q1, tf(TF_HEALTHY_Z), tf(TF_HEALTHY_Z + 1u)) && open_within(q2, tf(TF_HEALTHY_ANGLE), tf(TF_HEALTHY_ANGLE + 1u));
                if (TASK_KIND == TASK_HOPPER) {
                    let lo = tf(TF_HEALTHY_STATE);
                    let hi = tf(TF_HEALTHY_STATE + 1u);
                    for (var t = 2u; t < NQ; t++) {
                        ok = ok && open_within(q[t * n + w], lo, hi);
                    }
                    for (var t = 0u; t < NV; t++) {
                        ok = ok && open_within(v[t * n + w], lo, hi);
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
    for (var k = 0u; k < INFO_DIM; k++) {
        out[row_base + OBS_DIM + 2u + k] = select(info[k], 0.0, fresh && !on_reset[k]);
    }
    position[w] = next_position;
}
