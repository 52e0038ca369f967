// Contacts of resident worlds (issue 34), appended to resident.wgsl when
// the model has pairs that can collide (src/gpu/resident/contacts.rs).
// `step` calls prepare_contacts after the free velocity and the joint-limit
// rows: collision (balls, capsules, boxes and cylinders against half-spaces
// fixed on the world: the support feature's vertices within the margin, as
// collision::CollisionDetector; balls and capsules against each other, boxes
// against balls and boxes: parry's manifolds), the rows of J (contacts' 3 in their frame
// [t1, t2, n], then the limits'), the columns of X = M̃⁻¹Jᵀ by the
// articulated-body recursion, G = J X (its lower triangle), g = J v_f plus
// the stabilization of sim::assemble_problem, R = α diag(G), the warm
// start by contact identity; it writes them where the contact kernel reads
// a problem (common.wgsl's layout, interleaved: element t of world w's
// arrays at w + t·N). The solver kernel runs; then `finish` makes
// v⁺ = v_f + X λ, the generalized constraint force Jᵀλ/dt and q⁺ = q ⊕ v⁺ dt,
// and remembers λ (world frame) and ρ for the next step's warm start.
//
// Generated header (contacts.rs): NPAIRS, CMAX, SLOTS, MROWS, PAIR_U32,
// PAIR_F32, STATE_DONE, FLAG_LOOP_LIMIT, WORLD_* (a world's flag values),
// CW_* (sections of the contact scratch), HAS_* (whether the model has
// pairs of each kind: the others' code folds away, and lavapipe compiles
// a model's kernel faster); the structs Problem, Contact and SolveResult,
// generated from their Rust twins (src/gpu/batched/batch.rs) as the solver
// kernels' are.

// Per pair, PAIR_U32 words: body of a, kind (1, 2, 3, 7, 8: a ball,
// capsule, box, cylinder or convex hull against a half-space on the world;
// 4: two balls or capsules; 5: a box and a ball; 6: two boxes), first
// warm-start slot, body of b, where a's hull starts in pair_f32 (after the
// pair records: its face count, then per face its normal (3), vertex
// count (≤ 4) and vertex indices (4), then its points (3 each)).
@group(1) @binding(0) var<storage, read> pair_u32: array<u32>;
// Per pair, PAIR_F32 floats: a's collider in its body's frame (rotation
// column-major 9, translation 3), border radius, half extents (3), the
// half-space's normal (3) and offset, friction, restitution, 0, 0; then
// b's collider, radius and half extents as a's (24 to 39).
@group(1) @binding(1) var<storage, read> pair_f32: array<f32>;
@group(1) @binding(2) var<storage, read_write> problems: array<Problem>;
@group(1) @binding(3) var<storage, read_write> delassus: array<f32>;
@group(1) @binding(4) var<storage, read_write> blocks: array<Contact>;
@group(1) @binding(5) var<storage, read_write> lambda: array<f32>;
@group(1) @binding(6) var<storage, read_write> results: array<SolveResult>;
// Each world's contact scratch, world-minor (sections CW_*).
@group(1) @binding(7) var<storage, read_write> cwork: array<f32>;


// A warm start that is not there (all_finite rejects it; no NaN, which a
// shader compiler may fold away).
const NO_WARM: f32 = 3.4028235e38;

fn cw(k: u32) -> f32 {
    return cwork[k * params.nworlds + world];
}

fn set_cw(k: u32, x: f32) {
    cwork[k * params.nworlds + world] = x;
}

// Contact i of the step, in the scratch (world-minor, not the thread's
// private memory: a humanoid has room for 45), CONTACT_FLOATS floats, its
// fields at CR_* (ContactRecord, src/gpu/resident/layout.rs). The host
// reads them back (contact forces).
fn crec(i: u32, k: u32) -> u32 {
    return CW_CONTACT + CONTACT_FLOATS * i + k;
}

fn c_slot(i: u32) -> u32 {
    return bitcast<u32>(cw(crec(i, CR_SLOT)));
}

fn c_normal(i: u32) -> vec3<f32> {
    return vec3<f32>(cw(crec(i, CR_NORMAL)), cw(crec(i, CR_NORMAL + 1u)), cw(crec(i, CR_NORMAL + 2u)));
}

fn c_point(i: u32) -> vec3<f32> {
    return vec3<f32>(cw(crec(i, CR_POINT)), cw(crec(i, CR_POINT + 1u)), cw(crec(i, CR_POINT + 2u)));
}

fn c_pair(i: u32) -> u32 {
    return bitcast<u32>(cw(crec(i, CR_PAIR)));
}

fn c_body(i: u32) -> u32 {
    return bitcast<u32>(cw(crec(i, CR_BODY_A)));
}

fn c_body_b(i: u32) -> u32 {
    return bitcast<u32>(cw(crec(i, CR_BODY_B)));
}

fn c_g(i: u32) -> vec3<f32> {
    return vec3<f32>(cw(crec(i, CR_G)), cw(crec(i, CR_G + 1u)), cw(crec(i, CR_G + 2u)));
}

fn c_mu(i: u32) -> f32 {
    return cw(crec(i, CR_MU));
}

fn c_key(i: u32) -> u32 {
    return bitcast<u32>(cw(crec(i, CR_KEY)));
}

fn set_c_g(i: u32, g: vec3<f32>) {
    set_cw(crec(i, CR_G), g.x);
    set_cw(crec(i, CR_G + 1u), g.y);
    set_cw(crec(i, CR_G + 2u), g.z);
}

fn set_contact(i: u32, slot: u32, key: u32, pair: u32, body: u32, body_b: u32, nrm: vec3<f32>, point: vec3<f32>, phi: f32, mu: f32) {
    set_cw(crec(i, CR_SLOT), bitcast<f32>(slot));
    set_cw(crec(i, CR_NORMAL), nrm.x);
    set_cw(crec(i, CR_NORMAL + 1u), nrm.y);
    set_cw(crec(i, CR_NORMAL + 2u), nrm.z);
    set_cw(crec(i, CR_POINT), point.x);
    set_cw(crec(i, CR_POINT + 1u), point.y);
    set_cw(crec(i, CR_POINT + 2u), point.z);
    set_cw(crec(i, CR_PAIR), bitcast<f32>(pair));
    set_cw(crec(i, CR_BODY_A), bitcast<f32>(body));
    set_cw(crec(i, CR_BODY_B), bitcast<f32>(body_b));
    set_c_g(i, vec3<f32>(phi, 0.0, 0.0));
    set_cw(crec(i, CR_MU), mu);
    set_cw(crec(i, CR_KEY), bitcast<f32>(key));
    set_cw(crec(i, CR_PHI), phi);
}

fn pu(p: u32, k: u32) -> u32 {
    return pair_u32[p * PAIR_U32 + k];
}

fn pf(p: u32, k: u32) -> f32 {
    return pair_f32[p * PAIR_F32 + k];
}

fn pvec(p: u32, k: u32) -> vec3<f32> {
    return vec3<f32>(pf(p, k), pf(p, k + 1u), pf(p, k + 2u));
}

// Row k of J into `unit_f` (contacts' rows, then the limits').
fn jacobian_row(k: u32, nc: u32) {
    for (var j = 0u; j < NV; j++) {
        unit_f[j] = 0.0;
    }
    if (k >= 3u * nc) {
        let l = k - 3u * nc;
        unit_f[row_dof[l]] = row_sign[l];
        return;
    }
    let i = k / 3u;
    let f = frame_from_normal(c_normal(i));
    let d = f[k % 3u];
    let p = c_point(i);
    let pd = cross(p, d);
    // +J of a's supporting dofs, −J of b's (the common ones cancel).
    for (var side = 0u; side < 2u; side++) {
        var b = c_body(i);
        var sgn = 1.0;
        if (side == 1u) {
            b = c_body_b(i);
            sgn = -1.0;
        }
        loop {
            if (b == 0u) {
                break;
            }
            let iv = bu(b, BU_IV);
            for (var a = 0u; a < bu(b, BU_NV); a++) {
                unit_f[iv + a] += sgn * (dot(s[iv + a].l, d) + dot(s[iv + a].a, pd));
            }
            b = bu(b, BU_PARENT);
        }
    }
}

// The relative velocity along d at p of a contact's bodies moving with `m`.
fn contact_velocity(m: ptr<private, array<V6, NB>>, i: u32, p: vec3<f32>, d: vec3<f32>) -> f32 {
    return point_velocity((*m)[c_body(i)], p, d) - point_velocity((*m)[c_body_b(i)], p, d);
}

// Where contact i's warm start is: the slot of its pair's that the last
// step left with the same key (the same features in contact), or SLOTS
// (none). A box–box pair's contacts take its slots in the order they are
// found, so a contact is looked for among all of them.
fn warm_slot(i: u32) -> u32 {
    let p = c_pair(i);
    let key = c_key(i);
    var first = pu(p, PU_SLOT);
    var count = 1u;
    if (pu(p, PU_KIND) == PAIR_BOX_BOX) {
        count = BOX_BOX_CONTACTS;
    } else {
        first = c_slot(i);
    }
    for (var k = first; k < first + count; k++) {
        if (bitcast<u32>(cw(CW_WKEY + k)) == key) {
            return k;
        }
    }
    return SLOTS;
}

// After the free velocity and the limit rows (row_* of `step`, nl of
// them): the world's contact problem, written for the solver.
fn prepare_contacts(w: u32, n: u32, dt: f32, nl: u32) {
    let margin = wp(WP_CONTACT_MARGIN, params.contact.x);
    let friction_scale = wp(WP_FRICTION_SCALE, params.contact.y);
    let bounce = wp(WP_BOUNCE_VELOCITY, params.contact.z);
    let beta = wp(WP_BAUMGARTE, params.limits.y);
    let alpha = wp(WP_COMPLIANCE, params.limits.z);
    let nc = collide(margin, friction_scale);
    // Summed over the steps until the host reads the state back (and
    // clears it): a frame skip's every step counts.
    set_cw(CW_STATS + 2u, bitcast<f32>(bitcast<u32>(cw(CW_STATS + 2u)) + dropped));
    // Summed over the steps until the host reads the state back (and
    // clears it): a frame skip's every step counts.

    let m = 3u * nc + nl;
    // g = J v_f + stabilization (assemble_problem), before unit_a is reused.
    for (var i = 0u; i < NB; i++) {
        unit_a[i] = V6(vec3<f32>(0.0), vec3<f32>(0.0));
    }
    for (var i = 1u; i < NB; i++) {
        let iv = bu(i, BU_IV);
        var a = unit_a[bu(i, BU_PARENT)];
        for (var k = 0u; k < bu(i, BU_NV); k++) {
            a = v6_add(a, v6_scale(s[iv + k], v_free[iv + k]));
        }
        unit_a[i] = a;
    }
    for (var i = 0u; i < nc; i++) {
        let f = frame_from_normal(c_normal(i));
        let p = c_point(i);
        let phi = c_g(i).x;
        let restitution = pf(c_pair(i), PF_RESTITUTION);
        let vn_before = contact_velocity(&vel, i, p, f[2]);
        var gn = contact_velocity(&unit_a, i, p, f[2]);
        let impact = restitution > 0.0 && vn_before < -bounce && phi + vn_before * dt <= 0.0;
        if (impact) {
            gn += restitution * vn_before + recovery(min(phi, 0.0), beta, dt);
        } else if (phi >= 0.0) {
            gn += phi / dt;
        } else {
            gn += recovery(phi, beta, dt);
        }
        set_c_g(i, vec3<f32>(contact_velocity(&unit_a, i, p, f[0]), contact_velocity(&unit_a, i, p, f[1]), gn));
    }
    // The columns: X_k = M̃⁻¹ J_kᵀ, and G's column k below the diagonal
    // from the bodies' motion under X_k (unit_a) or the limit dofs.
    var scale = 0.0;
    for (var k = 0u; k < m; k++) {
        jacobian_row(k, nc);
        for (var j = 0u; j < NV; j++) {
            set_cw(CW_J + k * NV + j, unit_f[j]);
        }
        apply_inverse_inertia();
        for (var j = 0u; j < NV; j++) {
            set_cw(CW_X + k * NV + j, unit_f[j]);
        }
        for (var a = k; a < m; a++) {
            var x = 0.0;
            if (a < 3u * nc) {
                let i = a / 3u;
                let f = frame_from_normal(c_normal(i));
                let d = f[a % 3u];
                x = contact_velocity(&unit_a, i, c_point(i), d);
            } else {
                let l = a - 3u * nc;
                x = row_sign[l] * unit_f[row_dof[l]];
            }
            delassus[(a * (a + 1u) / 2u + k) * n + w] = x;
            scale = max(scale, abs(x));
        }
    }
    // The rows' sets after G's triangle (row_bound) where some row is a
    // box (a dof's dry friction).
    var bounds = 0u;
    for (var l = 0u; l < nl; l++) {
        if (row_box[l] != ROW_UNILATERAL) {
            bounds = ROW_BOUNDS_STORED;
        }
    }
    if (bounds != 0u) {
        for (var l = 0u; l < nl; l++) {
            delassus[(m * (m + 1u) / 2u + l) * n + w] = row_box[l];
        }
    }
    // Blocks (g, μ, R = α diag G, and a penetration's α_p s e² / (e² + D²),
    // e = −φ − d₀, s = tr G_c / 3, on its normal row:
    // SimParams::penetration_compliance_at), the warm
    // start, the header.
    let alpha_p = wp(WP_PENETRATION_COMPLIANCE, params.recovery.y);
    let reset = cw(CW_RESET) != 0.0;
    let warm = params.contact.w != 0.0 && !reset;
    set_cw(CW_RESET, 0.0);
    for (var i = 0u; i < nc; i++) {
        var r = vec3<f32>(0.0);
        var pscale = 0.0;
        for (var k = 0u; k < 3u; k++) {
            let kk = 3u * i + k;
            let gkk = delassus[(kk * (kk + 1u) / 2u + kk) * n + w];
            r[k] = alpha * max(gkk, 0.0);
            pscale += gkk / 3.0;
        }
        let e = -cw(crec(i, CR_PHI)) - PENETRATION_COMPLIANCE_ONSET;
        if (e > 0.0) {
            let d2 = PENETRATION_COMPLIANCE_DEPTH * PENETRATION_COMPLIANCE_DEPTH;
            r[2] += alpha_p * max(pscale, 0.0) * e * e / (e * e + d2);
        }
        blocks[i * n + w] = Contact(vec4<f32>(c_g(i), c_mu(i)), vec4<f32>(r, 0.0));
        let slot = warm_slot(i);
        var lw = vec3<f32>(NO_WARM);
        if (slot < SLOTS) {
            lw = vec3<f32>(cw(CW_WARM + 3u * slot), cw(CW_WARM + 3u * slot + 1u), cw(CW_WARM + 3u * slot + 2u));
        }
        var l0 = vec3<f32>(0.0);
        if (warm && all_finite(lw.x) && all_finite(lw.y) && all_finite(lw.z)) {
            l0 = transpose(frame_from_normal(c_normal(i))) * lw;
        }
        for (var k = 0u; k < 3u; k++) {
            lambda[(3u * i + k) * n + w] = l0[k];
        }
    }
    let nlb = (nl + 2u) / 3u;
    for (var b = 0u; b < nlb; b++) {
        var gl = vec3<f32>(0.0);
        var rl = vec3<f32>(0.0);
        for (var k = 0u; k < 3u; k++) {
            let l = 3u * b + k;
            var l0 = 0.0;
            if (l < nl) {
                let kk = 3u * nc + l;
                gl[k] = row_g[l];
                rl[k] = alpha * max(delassus[(kk * (kk + 1u) / 2u + kk) * n + w], 0.0);
                let lw = cw(CW_LWARM + row_key[l]);
                if (warm && all_finite(lw)) {
                    l0 = lw;
                }
                set_cw(CW_LKEY + l, bitcast<f32>(row_key[l]));
            }
            lambda[(3u * (nc + b) + k) * n + w] = l0;
        }
        blocks[(nc + b) * n + w] = Contact(vec4<f32>(gl, 0.0), vec4<f32>(rl, 0.0));
    }
    for (var j = 0u; j < NV; j++) {
        set_cw(CW_VFREE + j, v_free[j]);
    }
    set_cw(CW_COUNT, bitcast<f32>(nc));
    set_cw(CW_COUNT + 1u, bitcast<f32>(nl));
    var rho = 0.0;
    if (warm && all_finite(cw(CW_RHO))) {
        rho = cw(CW_RHO);
    }
    var flags_w = 0u;
    if (loop_cut()) {
        flags[w] = WORLD_LOOP_LIMIT;
        flags_w = FLAG_LOOP_LIMIT;
    }
    // (A function's variables start zeroed: the fields not set are 0.)
    var pr: Problem;
    pr.delassus_offset = w;
    pr.contact_offset = w;
    pr.nc = nc;
    pr.max_iterations = params.solve.x;
    pr.tolerance = wp(WP_TOLERANCE, params.limits.w);
    pr.work_offset = w;
    pr.flags = flags_w;
    pr.delassus_scale = scale;
    pr.nl = nl;
    pr.stride = n;
    pr.vector_offset = w;
    pr.row_bounds = bounds;
    problems[w] = pr;
    var res: SolveResult;
    res.rho = rho;
    results[w] = res;
}

// Mesa's lavapipe (22.x) leaves every loop after one iteration once an
// invocation has made 65 535 (see common.wgsl): a canary of
// params.solve.y (16) iterations that falls short says this invocation's
// work cannot be trusted. (The trip count comes from the uniform: with a
// constant one the compiler folds the loop away, and the canary never
// fell short: the pyramid's 108 rows were cut at column 63, unflagged.)
fn loop_cut() -> bool {
    var k = 0u;
    loop {
        k += 1u;
        if (k >= params.solve.y) {
            break;
        }
    }
    return k != params.solve.y;
}

// After the solve: v⁺ = v_f + X λ, Jᵀλ/dt, q⁺, and the next warm start.
// A world whose solve failed or did not finish is flagged and left as it was.
@compute @workgroup_size(WORKGROUP)
fn finish(@builtin(global_invocation_id) gid: vec3<u32>) {
    let w = gid.x;
    let n = params.nworlds;
    if (!enter_world(w)) {
        return;
    }
    let dt = wp(WP_DT, params.dt);
    let st = results[w];
    set_cw(CW_STATS, bitcast<f32>(st.iterations));
    set_cw(CW_STATS + 1u, st.eps_abs);
    set_cw(CW_STATS + 3u, st.eps_floor);
    set_cw(CW_STATS + 4u, bitcast<f32>(st.newton_steps));
    set_cw(CW_STATS + 5u, bitcast<f32>(st.polishes));
    if (st.state != STATE_DONE) {
        flags[w] = WORLD_SOLVE_UNFINISHED;
        return;
    }
    if (st.flags != 0u) {

        flags[w] = WORLD_SOLVE_FAILED;
        return;
    }
    let nc = bitcast<u32>(cw(CW_COUNT));
    let nl = bitcast<u32>(cw(CW_COUNT + 1u));
    let m = 3u * nc + nl;
    for (var j = 0u; j < NV; j++) {
        vn[j] = cw(CW_VFREE + j);
        imp[j] = 0.0;
    }
    for (var k = 0u; k < m; k++) {
        let l = lambda[k * n + w];
        if (!all_finite(l)) {
            flags[w] = WORLD_SOLVE_FAILED;
            return;
        }
        for (var j = 0u; j < NV; j++) {
            vn[j] += cw(CW_X + k * NV + j) * l;
            imp[j] += cw(CW_J + k * NV + j) * l;
        }
    }
    if (!commit(w, n, dt)) {
        return;
    }
    for (var k = 0u; k < 3u * SLOTS; k++) {
        set_cw(CW_WARM + k, NO_WARM);
    }
    for (var k = 0u; k < SLOTS; k++) {
        set_cw(CW_WKEY + k, NO_WARM);
    }
    for (var i = 0u; i < nc; i++) {
        let slot = c_slot(i);
        let nrm = c_normal(i);
        let lw = frame_from_normal(nrm) * vec3<f32>(lambda[3u * i * n + w], lambda[(3u * i + 1u) * n + w], lambda[(3u * i + 2u) * n + w]);
        set_cw(CW_WARM + 3u * slot, lw.x);
        set_cw(CW_WARM + 3u * slot + 1u, lw.y);
        set_cw(CW_WARM + 3u * slot + 2u, lw.z);
        set_cw(CW_WKEY + slot, bitcast<f32>(c_key(i)));
    }
    for (var k = 0u; k < 2u * NB + NV; k++) {
        set_cw(CW_LWARM + k, NO_WARM);
    }
    for (var l = 0u; l < nl; l++) {
        set_cw(CW_LWARM + bitcast<u32>(cw(CW_LKEY + l)), lambda[(3u * nc + l) * n + w]);
    }
    set_cw(CW_RHO, st.rho);
}
