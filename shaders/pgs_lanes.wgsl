// The PGS kernel, part 3 of 3 (after pgs_workgroup.wgsl).

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
            r = nan_max4(r, ri);
        }
        for (var k = 3u * pr.nc + l.t; k < M; k += l.S) {
            let lv = lc_lambda[l.base + k];
            let c = lc_c[l.base + k];
            if (!(is_finite(lv) && is_finite(c))) {
                bad = 1u;
            }
            let ri = row_residuals(lv, c, row_bound(pr, k));
            r = nan_max4(r, ri);
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
    let group = group_index(wid, nwg);
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
            var refuse = pgs_refusal(pr);
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
        finish(l.index, it, cut_flags(flags), res, 0.0, 0u);
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
