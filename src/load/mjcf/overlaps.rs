//! Geometries that overlap at `qpos0`: said at load, since rigid contacts
//! cannot recover every such start (an object wedged between two surfaces,
//! a link inside another along a direction no joint moves) and
//! `SimParams::penetration_compliance` is off by default.

use crate::collision::{CollisionDetector, DEEP_PENETRATION};
use crate::dynamics::{Data, forward_kinematics};
use crate::model::Model;

/// How a warning names geometry `g`: its name, or its index and body.
pub(super) fn geom_label(model: &Model, g: usize) -> String {
    let geom = &model.geometries[g];
    if geom.name.is_empty() {
        format!("geom {g} of `{}`", model.body_name[geom.body])
    } else {
        format!("`{}`", geom.name)
    }
}

/// The warning naming the pairs of colliding geometries that overlap by
/// more than [`DEEP_PENETRATION`] at `q0` (the deepest contact of each
/// pair, the five deepest pairs listed), or `None`.
pub(super) fn warning(model: &Model, q0: &[f64]) -> Option<String> {
    let mut data = Data::new(model);
    forward_kinematics(model, &mut data, q0);
    let mut detector = CollisionDetector::new(model, 0.0);
    let mut contacts = Vec::new();
    detector.detect(model, &data, &mut contacts).ok()?;
    let mut pairs: Vec<((usize, usize), f64)> = Vec::new();
    for c in contacts.iter().filter(|c| c.distance < -DEEP_PENETRATION) {
        let key = (c.geom_a.min(c.geom_b), c.geom_a.max(c.geom_b));
        match pairs.iter_mut().find(|(k, _)| *k == key) {
            Some((_, depth)) => *depth = depth.max(-c.distance),
            None => pairs.push((key, -c.distance)),
        }
    }
    if pairs.is_empty() {
        return None;
    }
    pairs.sort_by(|a, b| b.1.total_cmp(&a.1));
    let name = |g| geom_label(model, g);
    let listed: Vec<String> = pairs
        .iter()
        .take(5)
        .map(|&((a, b), depth)| format!("{} and {} by {:.1} mm", name(a), name(b), depth * 1e3))
        .collect();
    Some(format!(
        "at qpos0 {} pair(s) of geometries overlap by more than {} mm ({}{}): rigid contacts cannot recover a start that overlaps from two sides or along a direction no joint moves (every solve then ends unconverged); a penetration compliance holds such starts in least squares (SimParams::penetration_compliance, `moreau run --penetration-compliance 1`, Python `set_world_params(w, penetration_compliance=1)`)",
        pairs.len(),
        DEEP_PENETRATION * 1e3,
        listed.join(", "),
        if pairs.len() > 5 { ", …" } else { "" },
    ))
}
