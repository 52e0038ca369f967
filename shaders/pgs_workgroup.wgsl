// The PGS kernel, part 2 of 3 (after pgs.wgsl; src/gpu/batched/pgs.rs assembles them).

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
// are set per pipeline by the host from the capacity (src/gpu/batched/pgs.rs
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
        r = nan_max4(r, ri);
    }
    // The unilateral rows, row j on lane j mod LANES.
    for (var k = 3u * pr.nc + lane; k < M; k += LANES) {
        let l = wg_lambda[k];
        let c = wg_c[k];
        if (!(is_finite(l) && is_finite(c))) {
            bad = 1u;
        }
        let ri = row_residuals(l, c, row_bound(pr, k));
        r = nan_max4(r, ri);
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
    let index = group_index(wid, nwg);
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
        var refuse = pgs_refusal(pr);
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
        finish(index, it, cut_flags(flags), res, 0.0, 0u);
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
