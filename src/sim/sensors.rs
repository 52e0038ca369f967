//! The model's sensors ([`crate::model::Sensor`]) evaluated as MuJoCo
//! evaluates them, in the convention of dm_control's step: position and
//! velocity sensors read the present state; acceleration and force sensors
//! (touch, accelerometer, force, torque) read the last step, at the state it
//! started from, with its acceleration `a = (v⁺ − v)/h` and its contact
//! forces `λ/h` (MuJoCo's `sensordata` after `mj_step2; mj_step1`). Without
//! a last step (before the first, or after the state was set) they read 0,
//! as MuJoCo's after `mj_resetData`.

use super::{SimError, Simulator, State, WorldContact};
use crate::dynamics::{Data, forward_kinematics, forward_velocity, rnea_from_kinematics};
use crate::math::{Mat3, SE3, Vec3, Vec6, ang, force_cross, lin, spatial};
use crate::model::{Attachment, Model, SensorKind, Subtree, Zone};
use nalgebra::{Rotation3, UnitQuaternion};

/// The last step, as the acceleration and force sensors read it.
struct StepRecord<'a> {
    /// The state the step started from.
    q: &'a [f64],
    v: &'a [f64],
    /// `(v⁺ − v)/h` (nv).
    a: &'a [f64],
    /// Its contacts with their impulses.
    contacts: &'a [WorldContact],
    dt: f64,
}

/// The values of `model`'s sensors at `(q, v)` and, for those that read a
/// step, at `step` (none: 0), into `out` (`Model::nsensordata`), in the
/// model's sensor order. `data`: a workspace of the model.
fn sensor_values(
    model: &Model,
    data: &mut Data,
    q: &[f64],
    v: &[f64],
    step: Option<&StepRecord>,
    out: &mut [f64],
) {
    debug_assert_eq!(out.len(), model.nsensordata());
    let address = model.sensor_address();
    if model.sensors.iter().any(|s| !s.kind.needs_step()) {
        forward_kinematics(model, data, q);
        forward_velocity(model, data, v);
        for (s, &k) in model.sensors.iter().zip(&address) {
            match s.kind {
                SensorKind::JointPos { index } => out[k] = q[index],
                SensorKind::JointVel { index } => out[k] = v[index],
                ref kind if !kind.needs_step() => {
                    state_sensor(model, kind, data, &mut out[k..k + kind.dim()]);
                }
                _ => {}
            }
        }
    }
    if model.sensors.iter().any(|s| s.kind.needs_step()) {
        if let Some(step) = step {
            forward_kinematics(model, data, step.q);
            forward_velocity(model, data, step.v);
            // Body accelerations with gravity as the base's (MuJoCo's `cacc`).
            rnea_from_kinematics(model, data, step.a);
        }
        for (s, &k) in model.sensors.iter().zip(&address) {
            if s.kind.needs_step() {
                let o = &mut out[k..k + s.kind.dim()];
                match step {
                    Some(step) => step_sensor(model, &s.kind, data, step, o),
                    None => o.fill(0.0),
                }
            }
        }
    }
    for (s, &k) in model.sensors.iter().zip(&address) {
        let o = &mut out[k..k + s.kind.dim()];
        if s.cutoff > 0.0 {
            match s.kind {
                SensorKind::FrameQuat { .. } | SensorKind::FrameAxis { .. } => {}
                SensorKind::Touch { .. } => o.iter_mut().for_each(|x| *x = x.min(s.cutoff)),
                // (A rangefinder's −1 too, as MuJoCo's: −cutoff below 1.)
                _ => o.iter_mut().for_each(|x| *x = x.clamp(-s.cutoff, s.cutoff)),
            }
        }
    }
}

fn placement(data: &Data, a: &Attachment) -> SE3 {
    data.world_from_body[a.body].mul(&a.body_from_frame)
}

/// `(linear velocity of the world point p, angular velocity)` of body `b`.
fn point_velocity(data: &Data, b: usize, p: &Vec3) -> (Vec3, Vec3) {
    let twist = &data.body_velocity[b];
    let w = ang(twist);
    (lin(twist) + w.cross(p), w)
}

fn put(out: &mut [f64], x: &Vec3) {
    out.copy_from_slice(x.as_slice());
}

/// A sensor of the present state (after the kinematics at `(q, v)`).
fn state_sensor(model: &Model, kind: &SensorKind, data: &Data, out: &mut [f64]) {
    // (world placement, linear and angular velocity) of a frame.
    let frame = |a: &Attachment| {
        let x = placement(data, a);
        let (v, w) = point_velocity(data, a.body, &x.translation);
        (x, v, w)
    };
    match kind {
        SensorKind::Velocimeter(site) => {
            let (x, v, _) = frame(site);
            put(out, &(x.rotation.transpose() * v));
        }
        SensorKind::Gyro(site) => {
            let (x, _, w) = frame(site);
            put(out, &(x.rotation.transpose() * w));
        }
        SensorKind::FramePos { object, reference } => {
            let x = placement(data, object);
            let p = match reference {
                Some(r) => placement(data, r).act_inv_point(&x.translation),
                None => x.translation,
            };
            put(out, &p);
        }
        SensorKind::FrameQuat { object, reference } => {
            let mut r = placement(data, object).rotation;
            if let Some(f) = reference {
                r = placement(data, f).rotation.transpose() * r;
            }
            let mut quat =
                UnitQuaternion::from_rotation_matrix(&Rotation3::from_matrix_unchecked(r));
            if quat.w < 0.0 {
                quat = UnitQuaternion::new_unchecked(-quat.into_inner());
            }
            out.copy_from_slice(&[quat.w, quat.i, quat.j, quat.k]);
        }
        SensorKind::FrameAxis {
            axis,
            object,
            reference,
        } => {
            let mut r: Mat3 = placement(data, object).rotation;
            if let Some(f) = reference {
                r = placement(data, f).rotation.transpose() * r;
            }
            put(out, &r.column(*axis).into_owned());
        }
        SensorKind::FrameLinVel { object, reference } => {
            let (x, v, _) = frame(object);
            let out_v = match reference {
                Some(r) => {
                    let (xr, vr, wr) = frame(r);
                    let rel = x.translation - xr.translation;
                    xr.rotation.transpose() * (v - vr - wr.cross(&rel))
                }
                None => v,
            };
            put(out, &out_v);
        }
        SensorKind::FrameAngVel { object, reference } => {
            let (_, _, w) = frame(object);
            let out_w = match reference {
                Some(r) => {
                    let (xr, _, wr) = frame(r);
                    xr.rotation.transpose() * (w - wr)
                }
                None => w,
            };
            put(out, &out_w);
        }
        SensorKind::SubtreeCom(t) => put(out, &subtree_motion(model, data, t).0),
        SensorKind::SubtreeLinVel(t) => put(out, &subtree_motion(model, data, t).1),
        SensorKind::SubtreeAngMom(t) => put(out, &subtree_motion(model, data, t).2),
        SensorKind::Rangefinder { site, exclude } => {
            let x = placement(data, site);
            let (origin, dir) = (x.translation, x.rotation.column(2).into_owned());
            let nearest = (model.ray_targets.iter())
                .filter(|t| t.frame != *exclude)
                .filter_map(|t| t.cast(&data.world_from_body[t.body], &origin, &dir))
                .fold(f64::INFINITY, f64::min);
            out[0] = if nearest.is_finite() { nearest } else { -1.0 };
        }
        // (The joint sensors are read from q and v by the caller.)
        _ => unreachable!("a sensor of the step or of the joints"),
    }
}

/// A subtree's centre of mass, its velocity and the angular momentum about it.
fn subtree_motion(model: &Model, data: &Data, t: &Subtree) -> (Vec3, Vec3, Vec3) {
    let parts: Vec<_> = t
        .parts(model)
        .map(|(b, own)| {
            let i = own.transformed(&data.world_from_body[b]);
            let (v, w) = point_velocity(data, b, &i.com);
            (i, v, w)
        })
        .collect();
    let mass: f64 = parts.iter().map(|(i, _, _)| i.mass).sum();
    if mass <= 0.0 {
        return (Vec3::zeros(), Vec3::zeros(), Vec3::zeros());
    }
    let com = parts.iter().map(|(i, _, _)| i.com * i.mass).sum::<Vec3>() / mass;
    let vcom = parts.iter().map(|(i, v, _)| v * i.mass).sum::<Vec3>() / mass;
    let momentum = parts
        .iter()
        .map(|(i, v, w)| i.rotational * w + (i.com - com).cross(&((v - vcom) * i.mass)))
        .sum();
    (com, vcom, momentum)
}

/// A sensor of the last step (after the kinematics at the step's start
/// and the accelerations).
fn step_sensor(model: &Model, kind: &SensorKind, data: &Data, step: &StepRecord, out: &mut [f64]) {
    match kind {
        SensorKind::Accelerometer(site) => {
            let x = placement(data, site);
            let p = x.translation;
            let (v, w) = point_velocity(data, site.body, &p);
            let acc = &data.body_acceleration[site.body];
            // The classical acceleration of the point, gravity subtracted
            // through the base's acceleration.
            let a = lin(acc) + ang(acc).cross(&p) + w.cross(&v);
            put(out, &(x.rotation.transpose() * a));
        }
        SensorKind::Touch {
            site,
            zone,
            body_frame,
        } => {
            let x = placement(data, site);
            let on = |g: usize| model.geometries[g].frame == Some(*body_frame);
            let mut total = 0.0;
            for c in step.contacts {
                let (on_a, on_b) = (on(c.geom_a), on(c.geom_b));
                let normal_force = c.impulse.dot(&c.normal) / step.dt;
                if !(on_a || on_b) || normal_force <= 0.0 {
                    continue;
                }
                // From the sensor's body towards the other (MuJoCo's ray).
                let dir = if on_b { c.normal } else { -c.normal };
                let origin = x.act_inv_point(&c.point);
                if ray_meets(zone, &origin, &(x.rotation.transpose() * dir)) {
                    total += normal_force;
                }
            }
            out[0] = total;
        }
        SensorKind::Force { site, subtree } | SensorKind::Torque { site, subtree } => {
            let x = placement(data, site);
            let f = interaction(model, data, step, subtree);
            let (force, torque_o) = (lin(&f), ang(&f));
            let v = if matches!(kind, SensorKind::Force { .. }) {
                force
            } else {
                torque_o - x.translation.cross(&force)
            };
            put(out, &(x.rotation.transpose() * v));
        }
        _ => unreachable!("a sensor of the state"),
    }
}

/// The spatial force `[f; n]` (about the world origin) that the rest of
/// the model exerts on `subtree`: what its motion needs, gravity included,
/// less its contact forces (MuJoCo's `cfrc_int`).
fn interaction(model: &Model, data: &Data, step: &StepRecord, subtree: &Subtree) -> Vec6 {
    let mut f = Vec6::zeros();
    for (b, own) in subtree.parts(model) {
        let i = own.transformed(&data.world_from_body[b]);
        let v = &data.body_velocity[b];
        f += i.apply(&data.body_acceleration[b]) + force_cross(v, &i.apply(v));
    }
    let inside = |g: usize| subtree.geometries.binary_search(&g).is_ok();
    for c in step.contacts {
        let force = c.impulse / step.dt;
        let wrench = spatial(&force, &c.point.cross(&force));
        if inside(c.geom_a) {
            f -= wrench;
        }
        if inside(c.geom_b) {
            f += wrench;
        }
    }
    f
}

/// Whether the ray `origin + t·dir`, `t ≥ 0`, meets the solid `zone`
/// (an origin inside counts), in the zone's frame.
pub(crate) fn ray_meets(zone: &Zone, origin: &Vec3, dir: &Vec3) -> bool {
    match *zone {
        Zone::Sphere { radius } => ray_meets_unit_sphere(&(origin / radius), &(dir / radius)),
        Zone::Ellipsoid { radii } => {
            ray_meets_unit_sphere(&origin.component_div(&radii), &dir.component_div(&radii))
        }
        Zone::Box { half_sizes } => {
            let (mut lo, mut hi) = (0.0_f64, f64::INFINITY);
            for k in 0..3 {
                match slab(origin[k], dir[k], half_sizes[k]) {
                    Some((a, b)) => {
                        lo = lo.max(a);
                        hi = hi.min(b);
                    }
                    None => return false,
                }
            }
            lo <= hi
        }
        Zone::Cylinder {
            radius,
            half_length,
        } => ray_meets_cylinder(origin, dir, radius, half_length),
        Zone::Capsule {
            radius,
            half_length,
        } => {
            let cap = Vec3::new(0.0, 0.0, half_length);
            ray_meets_cylinder(origin, dir, radius, half_length)
                || ray_meets_unit_sphere(&((origin - cap) / radius), &(dir / radius))
                || ray_meets_unit_sphere(&((origin + cap) / radius), &(dir / radius))
        }
    }
}

/// `t ≥ 0` with `|o + t d| ≤ 1` exists.
fn ray_meets_unit_sphere(o: &Vec3, d: &Vec3) -> bool {
    let dd = d.norm_squared();
    let t = if dd > 0.0 {
        (-o.dot(d) / dd).max(0.0)
    } else {
        0.0
    };
    (o + d * t).norm_squared() <= 1.0
}

/// The interval of `t` where `|o + t d| ≤ h` (None: empty), unbounded when
/// the ray runs parallel inside.
fn slab(o: f64, d: f64, h: f64) -> Option<(f64, f64)> {
    if d == 0.0 {
        return (o.abs() <= h).then_some((f64::NEG_INFINITY, f64::INFINITY));
    }
    let (a, b) = ((-h - o) / d, (h - o) / d);
    Some((a.min(b), a.max(b)))
}

/// The ray meets the solid cylinder of `radius` along z, `|z| ≤ half`.
fn ray_meets_cylinder(o: &Vec3, d: &Vec3, radius: f64, half: f64) -> bool {
    let Some((z0, z1)) = slab(o.z, d.z, half) else {
        return false;
    };
    // x² + y² ≤ r² along the ray: a t² + b t + c ≤ 0.
    let a = d.x * d.x + d.y * d.y;
    let b = 2.0 * (o.x * d.x + o.y * d.y);
    let c = o.x * o.x + o.y * o.y - radius * radius;
    let (r0, r1) = if a == 0.0 {
        if c > 0.0 {
            return false;
        }
        (f64::NEG_INFINITY, f64::INFINITY)
    } else {
        let disc = b * b - 4.0 * a * c;
        if disc < 0.0 {
            return false;
        }
        let s = disc.sqrt();
        ((-b - s) / (2.0 * a), (-b + s) / (2.0 * a))
    };
    let lo = 0.0_f64.max(z0).max(r0);
    let hi = z1.min(r1);
    lo <= hi
}

/// What a step keeps for the sensors that read it: the state it started
/// from and the one it produced.
#[derive(Clone, Debug, Default)]
pub(super) struct LastStep {
    q: Vec<f64>,
    v: Vec<f64>,
    after_q: Vec<f64>,
    after_v: Vec<f64>,
    dt: f64,
    valid: bool,
}

impl LastStep {
    /// Forgets the step (a step is being prepared).
    pub(super) fn forget(&mut self) {
        self.valid = false;
    }

    /// Records the step from `before` to `(q, v)`, when `model` has a
    /// sensor that reads it.
    pub(super) fn record(&mut self, model: &Model, before: &State, q: &[f64], v: &[f64], dt: f64) {
        if !model.sensors.iter().any(|s| s.kind.needs_step()) {
            return;
        }
        let set = |to: &mut Vec<f64>, from: &[f64]| {
            to.clear();
            to.extend_from_slice(from);
        };
        set(&mut self.q, before.q.as_slice());
        set(&mut self.v, before.v.as_slice());
        set(&mut self.after_q, q);
        set(&mut self.after_v, v);
        self.dt = dt;
        self.valid = true;
    }
}

impl Simulator {
    /// The values of the model's sensors (`Model::nsensordata`, in the
    /// model's sensor order) at `state`. The acceleration and force sensors
    /// read this simulator's last step when `state` is the state that step
    /// produced, else 0 (see the module doc). Refuses a state of the wrong
    /// size or with a non-finite value.
    pub fn sensors(&mut self, state: &State) -> Result<Vec<f64>, SimError> {
        self.check_state(state)?;
        let model = self.model.clone();
        let mut out = vec![0.0; model.nsensordata()];
        if model.sensors.is_empty() {
            return Ok(out);
        }
        let last = &self.last_step;
        let produced = last.valid
            && last.after_q.as_slice() == state.q.as_slice()
            && last.after_v.as_slice() == state.v.as_slice();
        let contacts: Vec<WorldContact> = if produced {
            self.solved_contacts().collect()
        } else {
            Vec::new()
        };
        let a: Vec<f64> = if produced {
            let dv = last.after_v.iter().zip(&last.v);
            dv.map(|(after, before)| (after - before) / last.dt)
                .collect()
        } else {
            Vec::new()
        };
        let record = produced.then(|| StepRecord {
            q: &last.q,
            v: &last.v,
            a: &a,
            contacts: &contacts,
            dt: last.dt,
        });
        let data = self
            .sensor_data
            .get_or_insert_with(|| Box::new(Data::new(&model)));
        sensor_values(
            &model,
            data,
            state.q.as_slice(),
            state.v.as_slice(),
            record.as_ref(),
            &mut out,
        );
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rays_meet_the_zones_as_drawn() {
        let z = Vec3::z();
        let zones = [
            Zone::Sphere { radius: 1.0 },
            Zone::Ellipsoid {
                radii: Vec3::new(1.0, 2.0, 1.0),
            },
            Zone::Box {
                half_sizes: Vec3::new(1.0, 1.0, 1.0),
            },
            Zone::Cylinder {
                radius: 1.0,
                half_length: 1.0,
            },
            Zone::Capsule {
                radius: 1.0,
                half_length: 1.0,
            },
        ];
        for zone in &zones {
            // From inside, any direction.
            assert!(ray_meets(zone, &Vec3::new(0.1, 0.2, 0.3), &Vec3::x()));
            // From below, pointing up: meets; pointing down: misses.
            assert!(ray_meets(zone, &Vec3::new(0.0, 0.0, -5.0), &z), "{zone:?}");
            assert!(
                !ray_meets(zone, &Vec3::new(0.0, 0.0, -5.0), &-z),
                "{zone:?}"
            );
            // Beside the zone, parallel to z: misses.
            assert!(!ray_meets(zone, &Vec3::new(3.0, 0.0, -5.0), &z), "{zone:?}");
        }
        // Shapes told apart: (0.9, 0.9, 0) is in the box and the cylinder's
        // square hull only; (0, 1.5, 0) in the ellipsoid only; (0, 0, 1.8)
        // in the capsule only.
        let inside = |zone: &Zone, p: Vec3| ray_meets(zone, &p, &Vec3::new(0.0, 0.0, 0.0));
        let p = Vec3::new(0.9, 0.9, 0.0);
        assert!(inside(&zones[2], p) && !inside(&zones[0], p) && !inside(&zones[3], p));
        let p = Vec3::new(0.0, 1.5, 0.0);
        assert!(inside(&zones[1], p) && !inside(&zones[0], p) && !inside(&zones[2], p));
        let p = Vec3::new(0.0, 0.0, 1.8);
        assert!(inside(&zones[4], p) && !inside(&zones[3], p) && !inside(&zones[2], p));
        // A ray that passes just beside a sphere misses, just inside meets.
        let o = Vec3::new(1.01, 0.0, -5.0);
        assert!(!ray_meets(&zones[0], &o, &z));
        assert!(ray_meets(&zones[0], &Vec3::new(0.99, 0.0, -5.0), &z));
        // A slanted ray that enters the capsule's top cap only.
        let o = Vec3::new(1.5, 0.0, 2.5);
        let d = Vec3::new(-1.0, 0.0, -0.5);
        assert!(ray_meets(&zones[4], &o, &d) && !ray_meets(&zones[3], &o, &d));
    }
}
