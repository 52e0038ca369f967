//! MuJoCo's com-based quantities of a file's bodies, the frames of
//! [`Model::body_frames`] (one per MJCF body, world excluded, in MuJoCo's
//! body order): `cinert`, `cvel` and `cfrc_ext`, which Gymnasium's Ant and
//! Humanoid observe. Each is expressed in the body's *c-frame*: world
//! orientation, origin at the centre of mass of the subtree of its
//! top-level body (MuJoCo's `subtree_com[body_rootid]`). Frames carried by
//! the world (static bodies) take the world origin.

use super::Data;
use crate::math::{Vec3, skew};
use crate::model::{Model, WORLD};

/// Values per body of [`com_inertias`]: `[Ixx, Iyy, Izz, Ixy, Ixz, Iyz,
/// m·dx, m·dy, m·dz, m]`.
pub const COM_INERTIA: usize = 10;

/// For each model body, the centre of mass of its top-level body's subtree
/// (the world origin for the world and the bodies welded to it), after
/// [`super::forward_kinematics`].
pub fn subtree_coms(model: &Model, data: &Data, out: &mut Vec<Vec3>) {
    let n = model.nbodies;
    let mut root = vec![WORLD; n];
    let mut moment = vec![Vec3::zeros(); n];
    let mut mass = vec![0.0; n];
    for i in 1..n {
        let p = model.body_parent[i];
        root[i] = if p == WORLD { i } else { root[p] };
        let b = &data.body_inertia_world[i];
        moment[root[i]] += b.com * b.mass;
        mass[root[i]] += b.mass;
    }
    out.clear();
    out.extend((0..n).map(|i| {
        let r = root[i];
        if r == WORLD || mass[r] <= 0.0 {
            Vec3::zeros()
        } else {
            moment[r] / mass[r]
        }
    }));
}

/// `cinert`: each body frame's own inertia about its c-frame's origin, in
/// world orientation, `COM_INERTIA` values per frame, after
/// [`super::forward_kinematics`]. `coms` from [`subtree_coms`].
pub fn com_inertias(model: &Model, data: &Data, coms: &[Vec3], out: &mut Vec<f64>) {
    out.clear();
    for (_, f) in model.body_frames() {
        let own = f.inertia.unwrap_or_else(crate::math::Inertia::zero);
        let world = own.transformed(&data.world_from_body[f.body].mul(&f.body_from_frame));
        let d = world.com - coms[f.body];
        let m = world.mass;
        let i = world.rotational - skew(&d) * skew(&d) * m;
        out.extend_from_slice(&crate::math::symmetric_entries(&i));
        out.extend_from_slice(&[m * d.x, m * d.y, m * d.z, m]);
    }
}

/// `cvel`: each body frame's spatial velocity `[ω; v]` (world orientation),
/// `v` that of the point of the body at its c-frame's origin; 6 values per
/// frame, after [`super::forward_velocity`].
pub fn com_velocities(model: &Model, data: &Data, coms: &[Vec3], out: &mut Vec<f64>) {
    out.clear();
    for (_, f) in model.body_frames() {
        let twist = &data.body_velocity[f.body];
        let (v0, w) = (twist.fixed_rows::<3>(0), twist.fixed_rows::<3>(3));
        let v = v0 + w.cross(&coms[f.body]);
        out.extend_from_slice(&[w[0], w[1], w[2], v.x, v.y, v.z]);
    }
}

/// `cfrc_ext`: the external wrench `[torque; force]` on each body frame's
/// own body, about its c-frame's origin (world orientation), summed from
/// `forces`: `(frame, world point, world force)` with `frame` an index into
/// [`Model::frames`] (forces on frames that are not body frames are
/// dropped); 6 values per body frame.
pub fn com_wrenches(
    model: &Model,
    coms: &[Vec3],
    forces: impl IntoIterator<Item = (usize, Vec3, Vec3)>,
    out: &mut Vec<f64>,
) {
    // Position of each frame among the body frames.
    let mut slot = vec![usize::MAX; model.frames.len()];
    let mut k = 0;
    for (f, _) in model.body_frames() {
        slot[f] = k;
        k += 1;
    }
    out.clear();
    out.resize(6 * k, 0.0);
    for (f, point, force) in forces {
        let Some(&s) = slot.get(f) else { continue };
        if s == usize::MAX {
            continue;
        }
        let torque = (point - coms[model.frames[f].body]).cross(&force);
        for a in 0..3 {
            out[6 * s + a] += torque[a];
            out[6 * s + 3 + a] += force[a];
        }
    }
}
