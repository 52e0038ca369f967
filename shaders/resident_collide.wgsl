// Collision of resident worlds: the narrow phases of the pair kinds the
// device collides (src/gpu/resident/pairs.rs), appended with
// resident_contacts.wgsl (whose bindings, pair records and contact
// records it uses) when the model has pairs that can collide. `collide`
// dispatches on each pair's kind (PAIR_*).

// math::frame_from_normal: t1 the projection of the world axis least
// aligned with n, t2 = n × t1.
fn frame_from_normal(nrm: vec3<f32>) -> mat3x3<f32> {
    var a = vec3<f32>(0.0, 0.0, 1.0);
    if (abs(nrm.x) < 0.6) {
        a = vec3<f32>(1.0, 0.0, 0.0);
    } else if (abs(nrm.y) < 0.6) {
        a = vec3<f32>(0.0, 1.0, 0.0);
    }
    let t1 = normalize(a - nrm * dot(a, nrm));
    return mat3x3<f32>(t1, cross(nrm, t1), nrm);
}

// The velocity along `d` of the point `p` of a body moving with `m`.
fn point_velocity(m: V6, p: vec3<f32>, d: vec3<f32>) -> f32 {
    return dot(d, m.l + cross(m.a, p));
}

// Vertex k of a box's support face (parry's Cuboid::support_face: the
// face whose normal is most aligned with `dir`, its vertices in parry's
// order) and its corner's slot (bit i set: coordinate i negative).
fn box_vertex(half: vec3<f32>, dir: vec3<f32>, k: u32) -> vec4<f32> {
    let ad = abs(dir);
    var axis = 0u;
    if (ad.y > ad.x) {
        axis = 1u;
    }
    if (ad.z > max(ad.x, ad.y)) {
        axis = 2u;
    }
    var sgn = 1.0;
    if (dir[axis] < 0.0) {
        sgn = -1.0;
    }
    // The two other axes' signs: (+,+), (−,+), (−,−), (+,−) for a face
    // normal to x or y; (+,+), (+,−), (−,−), (−,+) for z.
    var s1 = 1.0;
    var s2 = 1.0;
    if (axis == 2u) {
        if (k == 2u || k == 3u) { s1 = -1.0; }
        if (k == 1u || k == 2u) { s2 = -1.0; }
    } else {
        if (k == 1u || k == 2u) { s1 = -1.0; }
        if (k == 2u || k == 3u) { s2 = -1.0; }
    }
    var v = vec3<f32>(0.0);
    switch axis {
        case 0u: { v = vec3<f32>(sgn * half.x, s1 * half.y, s2 * half.z); }
        case 1u: { v = vec3<f32>(s1 * half.x, sgn * half.y, s2 * half.z); }
        default: { v = vec3<f32>(s1 * half.x, s2 * half.y, sgn * half.z); }
    }
    let corner = u32(v.x < 0.0) | (u32(v.y < 0.0) << 1u) | (u32(v.z < 0.0) << 2u);
    return vec4<f32>(v, f32(corner));
}

// Vertex k of parry's polygonal approximation of a cylinder (radius r,
// half height h, along y) toward `dir` (Cylinder::local_support_feature):
// a segment of its side where |dir.y| < 0.5, else a square inscribed in
// the cap, turned so that vertex 0 is toward dir's azimuth (x if dir is
// along the axis). Its slot: the cap's vertex (parry's ids 1, 3, 5, 7 on
// the bottom, 11 … 17 on top, the side's ends 1 and 11) as 0 to 7.
fn cylinder_vertex(r: f32, h: f32, dir: vec3<f32>, k: u32) -> vec4<f32> {
    var az = vec2<f32>(dir.x, dir.z);
    let len = length(az);
    // (f32 rounding leaves ~1e-8 of azimuth on an axis-aligned direction.)
    az = select(vec2<f32>(1.0, 0.0), az / len, len > 1e-6);
    if (abs(dir.y) < 0.5) {
        let top = k == 1u;
        return vec4<f32>(az.x * r, select(-h, h, top), az.y * r, select(0.0, 4.0, top));
    }
    let y = select(-h, h, dir.y >= 0.0);
    var c = az;
    switch k {
        case 1u: { c = vec2<f32>(-az.y, az.x); }
        case 2u: { c = -az; }
        case 3u: { c = vec2<f32>(az.y, -az.x); }
        default: {}
    }
    return vec4<f32>(c.x * r, y, c.y * r, f32(k + select(0u, 4u, dir.y >= 0.0)));
}

// Contacts the step found beyond the world's room (CMAX).
var<private> dropped: u32;

// Where a new contact at signed distance d goes: the next record while
// there is room; once the CMAX records are full, the record of the
// shallowest contact if d is deeper (so the deepest CMAX are kept), else
// nowhere (CMAX). Either way one contact is dropped and counted.
fn contact_record(nc: u32, d: f32) -> u32 {
    if (nc < CMAX) {
        return nc;
    }
    dropped += 1u;
    var worst = 0u;
    var worst_d = cw(crec(0u, CR_G));
    for (var i = 1u; i < CMAX; i++) {
        let di = cw(crec(i, CR_G)); // φ, in g's first lane until the stabilization
        if (di > worst_d) {
            worst = i;
            worst_d = di;
        }
    }
    return select(CMAX, worst, d < worst_d);
}

// The contacts of the step (collision at q): fills c_* and returns nc
// (at most CMAX; `dropped` counts the others).
fn collide(margin: f32, friction_scale: f32) -> u32 {
    var nc = 0u;
    dropped = 0u;
    for (var p = 0u; p < NPAIRS; p++) {
        let body = pu(p, PU_BODY_A);
        let kind = pu(p, PU_KIND);
        let grot = rot[body] * mat3x3<f32>(pvec(p, PF_A + PG_ROTATION), pvec(p, PF_A + PG_ROTATION + 3u), pvec(p, PF_A + PG_ROTATION + 6u));
        let gpos = rot[body] * pvec(p, PF_A + PG_TRANSLATION) + pos[body];
        let border = pf(p, PF_A + PG_RADIUS);
        let half = pvec(p, PF_A + PG_HALF);
        let nrm = pvec(p, PF_NORMAL);
        let offset = pf(p, PF_OFFSET);
        if (HAS_BOX_BOX && kind == PAIR_BOX_BOX) {
            nc = collide_boxes(p, nc, grot, gpos, margin, friction_scale);
            continue;
        }
        if (HAS_MOVING && (kind == PAIR_ROUND_ROUND || kind == PAIR_BOX_BALL)) {
            nc = collide_moving(p, nc, grot, gpos, margin, friction_scale);
            continue;
        }
        let dir = transpose(grot) * (-nrm);
        var count = 1u;
        if (kind == PAIR_CAPSULE_PLANE) {
            count = 2u;
        } else if (kind == PAIR_BOX_PLANE) {
            count = 4u;
        } else if (HAS_CYLINDERS && kind == PAIR_CYLINDER_PLANE) {
            count = select(4u, 2u, abs(dir.y) < 0.5);
        }
        // A hull: its face most aligned with dir (the first of equals).
        let hull = pu(p, PU_HULL);
        var face = 0u;
        if (HAS_HULLS && kind == PAIR_HULL_PLANE) {
            let nf = u32(pair_f32[hull]);
            var best = -3.4e38;
            for (var f = 0u; f < nf; f++) {
                let at = hull + 1u + 8u * f;
                let d = dot(vec3<f32>(pair_f32[at], pair_f32[at + 1u], pair_f32[at + 2u]), dir);
                if (d > best) {
                    best = d;
                    face = at;
                }
            }
            count = u32(pair_f32[face + 3u]);
        }
        for (var k = 0u; k < count; k++) {
            var local = vec3<f32>(0.0);
            var vslot = 0u;
            if (kind == PAIR_BALL_PLANE) {
                // A ball: its centre (the border is its radius).
            } else if (kind == PAIR_CAPSULE_PLANE) {
                // capsule_z's segment: (0, 0, −h) then (0, 0, h).
                local = vec3<f32>(0.0, 0.0, select(-half.z, half.z, k == 1u));
                vslot = k;
            } else if (kind == PAIR_BOX_PLANE) {
                let bv = box_vertex(half, dir, k);
                local = bv.xyz;
                vslot = u32(bv.w);
            } else if (HAS_CYLINDERS && kind == PAIR_CYLINDER_PLANE) {
                let cv = cylinder_vertex(half.x, half.y, dir, k);
                local = cv.xyz;
                vslot = u32(cv.w);
            } else if (kind == PAIR_ELLIPSOID_PLANE) {
                // An ellipsoid's support point: radii² d / |radii d|.
                local = half * half * dir / length(half * dir);
            } else if (HAS_HULLS && kind == PAIR_HULL_PLANE) {
                vslot = u32(pair_f32[face + 4u + k]);
                let at = hull + 1u + 8u * u32(pair_f32[hull]) + 3u * vslot;
                local = vec3<f32>(pair_f32[at], pair_f32[at + 1u], pair_f32[at + 2u]);
            }
            let pw = grot * local + gpos;
            let d = dot(nrm, pw) - offset - border;
            if (d > margin) {
                continue;
            }
            // Midway between the surfaces.
            let at = contact_record(nc, d);
            if (at < CMAX) {
                set_contact(at, pu(p, PU_SLOT) + vslot, vslot, p, body, 0u, nrm, pw - nrm * (border + 0.5 * d), d, pf(p, PF_FRICTION) * friction_scale);
            }
            nc = min(nc + 1u, CMAX);
        }
    }
    return nc;
}

// Closest points of segments [p0, p1] and [q0, q1] (a ball's segment has
// p0 = p1): the clamped minimizer of |p(s) − q(t)|.
fn closest_segments(p0: vec3<f32>, p1: vec3<f32>, q0: vec3<f32>, q1: vec3<f32>) -> mat2x3<f32> {
    let d1 = p1 - p0;
    let d2 = q1 - q0;
    let r = p0 - q0;
    let a = dot(d1, d1);
    let e = dot(d2, d2);
    let f = dot(d2, r);
    var s = 0.0;
    var t = 0.0;
    let tiny = 1e-12;
    if (a <= tiny && e > tiny) {
        t = clamp(f / e, 0.0, 1.0);
    } else if (a > tiny) {
        let c = dot(d1, r);
        if (e <= tiny) {
            s = clamp(-c / a, 0.0, 1.0);
        } else {
            let b = dot(d1, d2);
            let denom = a * e - b * b;
            if (denom > tiny * a * e) {
                s = clamp((b * f - c * e) / denom, 0.0, 1.0);
            }
            t = (b * s + f) / e;
            if (t < 0.0) {
                t = 0.0;
                s = clamp(-c / a, 0.0, 1.0);
            } else if (t > 1.0) {
                t = 1.0;
                s = clamp((b - c) / a, 0.0, 1.0);
            }
        }
    }
    return mat2x3<f32>(p0 + d1 * s, q0 + d2 * t);
}

// A pair of moving geometries (kinds 4 and 5): at most one contact, at
// index nc; returns the new count. The normal n points from b to a.
fn collide_moving(p: u32, nc: u32, grot: mat3x3<f32>, gpos: vec3<f32>, margin: f32, friction_scale: f32) -> u32 {
    let body_b = pu(p, PU_BODY_B);
    let brot = rot[body_b] * mat3x3<f32>(pvec(p, PF_B + PG_ROTATION), pvec(p, PF_B + PG_ROTATION + 3u), pvec(p, PF_B + PG_ROTATION + 6u));
    let bpos = rot[body_b] * pvec(p, PF_B + PG_TRANSLATION) + pos[body_b];
    let ra = pf(p, PF_A + PG_RADIUS);
    let rb = pf(p, PF_B + PG_RADIUS);
    // The closest points of a's and b's cores, and the direction u from
    // b's core to a's along which they separate.
    var core_a = gpos;
    var core_b = bpos;
    var u = vec3<f32>(0.0);
    var dist = 0.0;
    if (pu(p, PU_KIND) == PAIR_ROUND_ROUND) {
        let ha = grot * vec3<f32>(0.0, 0.0, pf(p, PF_A + PG_HALF + 2u));
        let hb = brot * vec3<f32>(0.0, 0.0, pf(p, PF_B + PG_HALF + 2u));
        let cp = closest_segments(gpos - ha, gpos + ha, bpos - hb, bpos + hb);
        core_a = cp[0];
        core_b = cp[1];
        let diff = core_a - core_b;
        let len = length(diff);
        // (parry's fallback for coincident cores: a's y axis.)
        u = select(-(grot * vec3<f32>(0.0, 1.0, 0.0)), diff / len, len > 0.0);
        dist = len - ra - rb;
    } else {
        // A box and a ball: the box's point closest to the ball's centre
        // (inside: on the nearest face).
        let box_is_a = ra == 0.0;
        var brot2 = grot;
        var bo = gpos;
        var half = pvec(p, PF_A + PG_HALF);
        var centre = bpos;
        var radius = rb;
        if (!box_is_a) {
            brot2 = brot;
            bo = bpos;
            half = pvec(p, PF_B + PG_HALF);
            centre = gpos;
            radius = ra;
        }
        let local = transpose(brot2) * (centre - bo);
        let inside = all(abs(local) <= half);
        var on_box = clamp(local, -half, half);
        var away = vec3<f32>(0.0); // from the box to the ball's centre
        var gap = 0.0;
        if (inside) {
            let depth = half - abs(local);
            var k = 0u;
            if (depth.y < depth.x) { k = 1u; }
            if (depth.z < min(depth.x, depth.y)) { k = 2u; }
            let sgn = select(-1.0, 1.0, local[k] >= 0.0);
            on_box[k] = sgn * half[k];
            var e = vec3<f32>(0.0);
            e[k] = sgn;
            away = brot2 * e;
            gap = -depth[k];
        } else {
            let diff = local - on_box;
            gap = length(diff);
            away = brot2 * (diff / gap);
        }
        let q_box = brot2 * on_box + bo;
        dist = gap - radius;
        if (box_is_a) {
            core_a = q_box;
            core_b = centre;
            u = -away;
        } else {
            core_a = centre;
            core_b = q_box;
            u = away;
        }
    }
    if (dist > margin) {
        return nc;
    }
    // Midway between the surfaces (a box's radius is 0).
    let at = contact_record(nc, dist);
    if (at < CMAX) {
        set_contact(at, pu(p, PU_SLOT), 0u, p, pu(p, PU_BODY_A), body_b, u, 0.5 * ((core_a - u * ra) + (core_b + u * rb)), dist, pf(p, PF_FRICTION) * friction_scale);
    }
    return min(nc + 1u, CMAX);
}

// Two boxes (kind 6): parry's cuboid–cuboid manifold, in a's frame (box
// 1) with b (box 2) at (r12, t12). Its steps: the separating axis of
// largest separation among a's face normals, b's, and the cross products
// of their edges (each of the first two as parry's
// cuboid_cuboid_find_local_separating_normal_oneway); each box's face most
// aligned with it (support_face); the vertices of either face inside the
// other's, projected along the axis, and the crossings of their edges
// (PolygonalFeature::contacts_face_face).

// parry's Cuboid::local_support_point: the corner toward d.
fn box_support(half: vec3<f32>, d: vec3<f32>) -> vec3<f32> {
    return select(-half, half, d >= vec3<f32>(0.0));
}

fn sign_of(x: f32) -> f32 {
    return select(-1.0, 1.0, x >= 0.0);
}

// Box 1's face normals (xyz) and the largest separation along them (w);
// when b is apart along more than one, the direction that sums them
// (toward a's edge or corner nearest b) and the separation along it.
fn sat_faces(h1: vec3<f32>, h2: vec3<f32>, r12: mat3x3<f32>, t12: vec3<f32>) -> vec4<f32> {
    var best = -3.4e38;
    var best_dir = vec3<f32>(0.0);
    var acc = vec3<f32>(0.0);
    var apart = 0u;
    for (var i = 0u; i < 3u; i++) {
        let sgn = sign_of(t12[i]);
        var axis = vec3<f32>(0.0);
        axis[i] = sgn;
        let pt2 = r12 * box_support(h2, transpose(r12) * (-axis)) + t12;
        let sep = pt2[i] * sgn - h1[i];
        if (sep > best) {
            best = sep;
            best_dir = axis;
        }
        if (sep >= 0.0) {
            acc[i] += sgn * max(sep, 1.1920929e-7);
            apart += 1u;
        }
    }
    if (apart > 1u) {
        let d = normalize(acc);
        let pt2 = r12 * box_support(h2, transpose(r12) * (-d)) + t12;
        return vec4<f32>(d, dot(pt2 - box_support(h1, d), d));
    }
    return vec4<f32>(best_dir, best);
}

// The edges' cross products (box 1's axis i × box 2's axis j, j outer),
// oriented from 1 toward 2: the one of largest separation (w). Near-parallel
// edges, whose cross product is rounding in f32, are skipped.
fn sat_edges(h1: vec3<f32>, h2: vec3<f32>, r12: mat3x3<f32>, t12: vec3<f32>) -> vec4<f32> {
    var best = vec4<f32>(0.0, 0.0, 0.0, -3.4e38);
    for (var j = 0u; j < 3u; j++) {
        for (var i = 0u; i < 3u; i++) {
            var e = vec3<f32>(0.0);
            e[i] = 1.0;
            let axis = cross(e, r12[j]);
            let len = length(axis);
            if (len > 1e-6) {
                let d = axis / len * sign_of(dot(t12, axis));
                let pt2 = r12 * box_support(h2, transpose(r12) * (-d)) + t12;
                let sep = dot(pt2 - box_support(h1, d), d);
                if (sep > best.w) {
                    best = vec4<f32>(d, sep);
                }
            }
        }
    }
    return best;
}

// The support face's id (parry's numbering aside): its axis, + 3 if
// its normal points down that axis.
fn box_face(dir: vec3<f32>) -> u32 {
    let ad = abs(dir);
    var axis = 0u;
    if (ad.y > ad.x) {
        axis = 1u;
    }
    if (ad.z > max(ad.x, ad.y)) {
        axis = 2u;
    }
    return axis + select(0u, 3u, dir[axis] < 0.0);
}

// parry's (Pixar's) orthonormal basis of the plane normal to unit n.
fn plane_basis(n: vec3<f32>) -> mat2x3<f32> {
    let sgn = sign_of(n.z);
    let a = -1.0 / (sgn + n.z);
    let b = n.x * n.y * a;
    return mat2x3<f32>(
        vec3<f32>(1.0 + sgn * n.x * n.x * a, sgn * b, -sgn * n.x),
        vec3<f32>(b, sgn + n.y * n.y * a, -n.y),
    );
}

fn perp_dot(a: vec2<f32>, b: vec2<f32>) -> f32 {
    return a.x * b.y - a.y * b.x;
}

// Whether p is inside the convex quadrilateral q, or outside it by at most
// `tol`: on the inner side of every edge, or that close to it. (parry's
// test, exact in f64, takes the boundary as inside; in f32 a corner of the
// overlap on the other face's edge, as in a pyramid of equal boxes, would
// fall either side of it, and be missed where its edges' crossing falls
// outside the edges too.)
fn inside_quad(q: array<vec2<f32>, 4>, p: vec2<f32>, tol: f32) -> bool {
    let orient = sign_of(perp_dot(q[1] - q[0], q[2] - q[0]) + perp_dot(q[2] - q[0], q[3] - q[0]));
    for (var j = 0u; j < 4u; j++) {
        let e = q[(j + 1u) % 4u] - q[j];
        if (orient * perp_dot(e, p - q[j]) < -tol * length(e)) {
            return false;
        }
    }
    return true;
}

// The parameters (s, t) of the crossing of the lines through segments
// [a0, a1] and [b0, b1], x = 2 if they are parallel.
fn cross_lines(a0: vec2<f32>, a1: vec2<f32>, b0: vec2<f32>, b1: vec2<f32>) -> vec3<f32> {
    let d1 = a1 - a0;
    let d2 = b1 - b0;
    let r = a0 - b0;
    let a = dot(d1, d1);
    let e = dot(d2, d2);
    let b = dot(d1, d2);
    let denom = a * e - b * b;
    if (a <= 1e-12 || e <= 1e-12 || denom <= 1e-6 * a * e) {
        return vec3<f32>(0.0, 0.0, 2.0);
    }
    let s = (b * dot(d2, r) - dot(d1, r) * e) / denom;
    return vec3<f32>(s, (b * s + dot(d2, r)) / e, 0.0);
}

// The box–box pair being collided: its index, a's pose, the world
// normal (from b to a), μ, the margin, the tolerance of its points
// (1e-5 of the larger box's largest half extent), and its contacts so far
// (points in a's frame) and their count.
struct BoxBox {
    pair: u32,
    rot_a: mat3x3<f32>,
    pos_a: vec3<f32>,
    normal: vec3<f32>,
    mu: f32,
    margin: f32,
    tol: f32,
}
var<private> bb: BoxBox;
var<private> bb_points: array<vec3<f32>, BOX_BOX_CONTACTS>;
var<private> bb_count: u32;

// One point of the manifold: p1 on a, p2 on b (a's frame), their
// separation d along the axis, the features' key. Kept if d is within the
// margin and the point is not one already found (within the tolerance: a
// corner of the overlap found both as a vertex inside and as an edges'
// crossing); the pair's first BOX_BOX_CONTACTS, the others dropped and
// counted. Returns the world's new count.
fn box_box_contact(nc: u32, p1: vec3<f32>, p2: vec3<f32>, d: f32, key: u32) -> u32 {
    if (d > bb.margin) {
        return nc;
    }
    let mid = 0.5 * (p1 + p2);
    for (var k = 0u; k < bb_count; k++) {
        if (length(bb_points[k] - mid) <= bb.tol) {
            return nc;
        }
    }
    if (bb_count >= BOX_BOX_CONTACTS) {
        dropped += 1u;
        return nc;
    }
    bb_points[bb_count] = mid;
    let p = bb.pair;
    let at = contact_record(nc, d);
    if (at < CMAX) {
        set_contact(at, pu(p, PU_SLOT) + bb_count, key, p, pu(p, PU_BODY_A), pu(p, PU_BODY_B), bb.normal, bb.rot_a * mid + bb.pos_a, d, bb.mu);
    }
    bb_count += 1u;
    return min(nc + 1u, CMAX);
}

fn collide_boxes(p: u32, nc_in: u32, grot: mat3x3<f32>, gpos: vec3<f32>, margin: f32, friction_scale: f32) -> u32 {
    var nc = nc_in;
    let body_b = pu(p, PU_BODY_B);
    let brot = rot[body_b] * mat3x3<f32>(pvec(p, PF_B + PG_ROTATION), pvec(p, PF_B + PG_ROTATION + 3u), pvec(p, PF_B + PG_ROTATION + 6u));
    let bpos = rot[body_b] * pvec(p, PF_B + PG_TRANSLATION) + pos[body_b];
    let h1 = pvec(p, PF_A + PG_HALF);
    let h2 = pvec(p, PF_B + PG_HALF);
    let r12 = transpose(grot) * brot;
    let t12 = transpose(grot) * (bpos - gpos);
    let r21 = transpose(r12);
    let s1 = sat_faces(h1, h2, r12, t12);
    if (s1.w > margin) {
        return nc;
    }
    let s2 = sat_faces(h2, h1, r21, -(r21 * t12));
    if (s2.w > margin) {
        return nc;
    }
    let s3 = sat_edges(h1, h2, r12, t12);
    if (s3.w > margin) {
        return nc;
    }
    var axis = s1.xyz;
    if (s2.w > s1.w && s2.w > s3.w) {
        axis = r12 * (-s2.xyz);
    } else if (s3.w > s1.w) {
        axis = s3.xyz;
    }
    let scale = max(max(h1.x, max(h1.y, h1.z)), max(h2.x, max(h2.y, h2.z)));
    bb = BoxBox(p, grot, gpos, -(grot * axis), pf(p, PF_FRICTION) * friction_scale, margin, 1e-5 * scale);
    bb_count = 0u;
    // The two support faces, b's in a's frame, with their vertices'
    // corners (bit i: coordinate i negative) and the faces' ids.
    let dir2 = r21 * (-axis);
    let fa = box_face(axis);
    let fb = box_face(dir2);
    var v1: array<vec3<f32>, 4>;
    var v2: array<vec3<f32>, 4>;
    var c1: array<u32, 4>;
    var c2: array<u32, 4>;
    let basis = plane_basis(axis);
    var q1: array<vec2<f32>, 4>;
    var q2: array<vec2<f32>, 4>;
    for (var k = 0u; k < 4u; k++) {
        let a = box_vertex(h1, axis, k);
        let b = box_vertex(h2, dir2, k);
        v1[k] = a.xyz;
        c1[k] = u32(a.w);
        v2[k] = r12 * b.xyz + t12;
        c2[k] = u32(b.w);
        q1[k] = vec2<f32>(dot(v1[k], basis[0]), dot(v1[k], basis[1]));
        q2[k] = vec2<f32>(dot(v2[k], basis[0]), dot(v2[k], basis[1]));
    }
    // a's vertices inside b's face, onto b's face's plane along the axis.
    let n2 = cross(v2[2] - v2[1], v2[0] - v2[1]);
    let den2 = dot(n2, axis);
    if (den2 != 0.0) {
        for (var i = 0u; i < 4u; i++) {
            if (inside_quad(q2, q1[i], bb.tol)) {
                let d = dot(v2[0] - v1[i], n2) / den2;
                nc = box_box_contact(nc, v1[i], v1[i] + d * axis, d, (c1[i] << 3u) | fb);
            }
        }
    }
    // b's vertices inside a's face.
    let n1 = cross(v1[2] - v1[1], v1[0] - v1[1]);
    let den1 = -dot(n1, axis);
    if (den1 != 0.0) {
        for (var i = 0u; i < 4u; i++) {
            if (inside_quad(q1, q2[i], bb.tol)) {
                let d = dot(v1[0] - v2[i], n1) / den1;
                nc = box_box_contact(nc, v2[i] - d * axis, v2[i], d, 0x100u | (fa << 3u) | c2[i]);
            }
        }
    }
    // The crossings of their edges (edge k: vertex k to k + 1).
    for (var j = 0u; j < 4u; j++) {
        let j1 = (j + 1u) % 4u;
        for (var i = 0u; i < 4u; i++) {
            let i1 = (i + 1u) % 4u;
            let st = cross_lines(q1[i], q1[i1], q2[j], q2[j1]);
            if (st.z == 0.0 && st.x > 0.0 && st.x < 1.0 && st.y > 0.0 && st.y < 1.0) {
                let p1 = mix(v1[i], v1[i1], st.x);
                let p2 = mix(v2[j], v2[j1], st.y);
                // An edge's id: its corners, the smaller first.
                let ea = min(c1[i], c1[i1]) * 8u + max(c1[i], c1[i1]);
                let eb = min(c2[j], c2[j1]) * 8u + max(c2[j], c2[j1]);
                nc = box_box_contact(nc, p1, p2, dot(p2 - p1, axis), 0x10000u | (ea << 8u) | eb);
            }
        }
    }
    return nc;
}
