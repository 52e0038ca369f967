// Batched projected Gauss-Seidel, the f32 twin of src/contact/solvers/pgs.rs
// (NCP, CCP and LCP-pyramid variants by params.model). One invocation solves
// one problem (see shaders/README.md for why); common.wgsl is prepended.

const WORKGROUP_SIZE: u32 = 64u;

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
        lt = pyramid_project(r, lt);
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

// The local update of contact i with impulse l and velocity c.
fn local_update(pr: Problem, i: u32, l: vec3<f32>, c: vec3<f32>) -> vec3<f32> {
    let w = block(pr, i);
    let mu = friction(pr, i);
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
        return vec3<f32>(pyramid_project(mu * n, w.xy), n);
    }
    return project_cone(mu, w);
}

// One sweep over the contacts; false if an iterate became non-finite.
fn sweep(pr: Problem) -> bool {
    let M = 3u * pr.nc;
    let V0 = 3u * pr.contact_offset;
    for (var i = 0u; i < pr.nc; i++) {
        let old = get_lambda(pr, i);
        let upd = local_update(pr, i, old, get_c(pr, i));
        let d = upd - old;
        if (all(d == vec3<f32>(0.0))) {
            continue;
        }
        set_lambda(pr, i, upd);
        for (var r = 0u; r < 3u; r++) {
            let k = 3u * i + r;
            let dr = d[r];
            if (dr == 0.0) {
                continue;
            }
            cvel[V0 + k] += compliance(pr, k) * dr;
            // Column k of the symmetric G: row k of the triangle, then down
            // column k (unrolled by 4, see contact_velocity).
            let row = pr.delassus_offset + k * (k + 1u) / 2u;
            var j = 0u;
            for (; j + 4u <= k + 1u; j += 4u) {
                cvel[V0 + j] += delassus[row + j] * dr;
                cvel[V0 + j + 1u] += delassus[row + j + 1u] * dr;
                cvel[V0 + j + 2u] += delassus[row + j + 2u] * dr;
                cvel[V0 + j + 3u] += delassus[row + j + 3u] * dr;
            }
            for (; j <= k; j++) {
                cvel[V0 + j] += delassus[row + j] * dr;
            }
            j = k + 1u;
            for (; j + 4u <= M; j += 4u) {
                cvel[V0 + j] += delassus[pr.delassus_offset + j * (j + 1u) / 2u + k] * dr;
                cvel[V0 + j + 1u] += delassus[pr.delassus_offset + (j + 1u) * (j + 2u) / 2u + k] * dr;
                cvel[V0 + j + 2u] += delassus[pr.delassus_offset + (j + 2u) * (j + 3u) / 2u + k] * dr;
                cvel[V0 + j + 3u] += delassus[pr.delassus_offset + (j + 3u) * (j + 4u) / 2u + k] * dr;
            }
            for (; j < M; j++) {
                cvel[V0 + j] += delassus[pr.delassus_offset + j * (j + 1u) / 2u + k] * dr;
            }
        }
    }
    for (var k = 0u; k < M; k++) {
        if (!is_finite(cvel[V0 + k]) || !is_finite(lambda[V0 + k])) {
            return false;
        }
    }
    return true;
}

// One chunk of a solve: at most params.chunk sweeps, then the
// problem suspends (state in `results`, lambda in place) until the next
// dispatch. The contact velocities are recomputed exactly at the start of
// each chunk and before convergence is declared, and updated incrementally
// by the sweeps in between (f32 rounding does not accumulate past a chunk).
@compute @workgroup_size(WORKGROUP_SIZE)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let index = gid.x;
    if (index >= params.num_problems) {
        return;
    }
    var st = results[index];
    if (st.state == STATE_DONE) {
        return;
    }
    let pr = problems[index];
    let M = 3u * pr.nc;
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
        st.iterations = 0u;
        st.state = STATE_RUNNING;
    }
    contact_velocity(pr);
    var it = st.iterations;
    var steps = 0u;
    var flags = 0u;
    var finished = false;
    var res = vec4<f32>(0.0);
    loop {
        res = problem_residuals(pr);
        if (res.w <= pr.tolerance && steps > 0u) {
            // Judged on the exact velocities.
            contact_velocity(pr);
            res = problem_residuals(pr);
        }
        if (res.w <= pr.tolerance || M == 0u || it >= pr.max_iterations) {
            finished = true;
            break;
        }
        if (steps >= params.chunk) {
            break;
        }
        it += 1u;
        steps += 1u;
        if (!sweep(pr)) {
            flags = FLAG_DIVERGED;
            finished = true;
            break;
        }
    }
    if (finished) {
        contact_velocity(pr);
        res = problem_residuals(pr);
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
    st.eps_abs = res.w;
    results[index] = st;
    atomicAdd(&running_count, 1u);
}
