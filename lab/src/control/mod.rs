//! A trot controller for quadrupeds: a gait planner of our own (timing,
//! duty factor, footholds from the desired base velocity, spline swing
//! trajectories), inverse kinematics to joint targets, an error-feedback PD
//! and an inverse-dynamics feedforward ([`Feedforward`]): each formulation
//! of [`moreau::inverse`], or the rigid-body inverse dynamics with the
//! contact impulses sensed one or two steps back (`ID(t−1)`, `ID(t−2)`),
//! as in Zapolsky and Drumwright's locomotion experiments.
//!
//! **Frames.** The planner works in the *heading frame*: origin at the
//! base, x along the base's heading (its yaw), z up. Foot targets are the
//! foot centres' positions relative to the base as they would be with the
//! base level at its nominal height; the inverse kinematics takes them as
//! positions in the base frame. A tilted or sunken base therefore makes the
//! stance legs' joint targets push it back level and up.
//!
//! **Gait** ([`Gait`]): leg `l` is in stance while its phase
//! `φ_l = frac(t/T + offset_l)` is below the duty factor `β`. In stance the
//! foot moves backwards under the hip at the desired velocity,
//! `x = x_nom + v* T_st (1/2 − s)` (`s` the stance fraction); in swing it
//! goes from where it lifted off to the next foothold, `x_nom + v* T_st/2 +
//! k (v − v*)` (Raibert's rule, `v` the measured base velocity in the
//! heading frame), along a cubic Hermite spline whose end velocities match
//! the stance's, with a `(1 − cos 2πs)/2` lift of `swing_height`.
//!
//! **Joint references**: the inverse kinematics of the targets at `t`, and
//! their rates and accelerations by central differences in time (the
//! measured velocity held). Then `τ = kp (q* − q) + kd (q̇* − q̇) + τ_ff`,
//! with `τ_ff` the feedforward torques that give the joints the
//! accelerations `q̈*` (see [`Feedforward`]).

use moreau::dynamics::{Data, crba, forward_kinematics, nonlinear_effects};
use moreau::error::SimError;
use moreau::inverse::{Formulation, InverseDynamics, InverseError, InverseSettings};
use moreau::math::{Mat3, Vec3, quat_from_slice};
use moreau::model::{JointType, Model, Shape};
use moreau::sim::{SimParams, Simulator, State};
use nalgebra::DVector;
use std::collections::VecDeque;
use std::sync::Arc;
use thiserror::Error;

/// Why a controller could not be built or could not act.
#[derive(Debug, Error)]
pub enum ControlError {
    #[error("{0}")]
    Model(String),
    #[error("inverse dynamics: {0}")]
    Inverse(#[from] InverseError),
    #[error("{0}")]
    Sim(#[from] SimError),
    #[error("unknown feedforward `{0}`; feedforwards: {1}")]
    UnknownFeedforward(String, String),
}

/// One leg: three revolute joints from the base to a spherical foot.
#[derive(Clone, Debug)]
pub struct Leg {
    pub name: String,
    /// The leg's joints' indices into `q` and into `v`, hip to knee.
    pub q: [usize; 3],
    pub v: [usize; 3],
    /// The bodies those joints move.
    pub bodies: [usize; 3],
    /// The foot: its geometry, its body, its sphere's centre in that body,
    /// its radius.
    pub foot_geom: usize,
    pub foot_body: usize,
    pub foot_offset: Vec3,
    pub foot_radius: f64,
    /// The foot centre in the base frame in the standing posture.
    pub nominal: Vec3,
}

/// A quadruped: a free-floating base and four [`Leg`]s, with its standing
/// posture.
#[derive(Clone, Debug)]
pub struct Quadruped {
    pub model: Arc<Model>,
    pub legs: [Leg; 4],
    /// The standing configuration, base at the origin, level.
    pub q_stand: DVector<f64>,
    /// The base's height above flat ground when standing.
    pub standing_height: f64,
}

impl Quadruped {
    /// Finds the legs from their feet: `feet` names four spherical foot
    /// geometries, ordered front-left, front-right, hind-left, hind-right;
    /// each must hang from the free-floating base by three revolute joints.
    /// `q_stand`: the standing posture's joint angles (the base part is
    /// ignored).
    pub fn new(
        model: Arc<Model>,
        feet: [&str; 4],
        q_stand: &DVector<f64>,
    ) -> Result<Self, ControlError> {
        let bad = |s: String| ControlError::Model(s);
        if q_stand.len() != model.nq {
            return Err(bad(format!(
                "q_stand has length {}, the model's nq is {}",
                q_stand.len(),
                model.nq
            )));
        }
        if model.nbodies < 2 || model.joint_type[1] != JointType::Free {
            return Err(bad(
                "a quadruped's first body must be its free-floating base".into(),
            ));
        }
        let mut q = q_stand.clone();
        q.as_mut_slice()[..7].copy_from_slice(&[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]);
        let mut data = Data::new(&model);
        forward_kinematics(&model, &mut data, q.as_slice());
        let mut legs = Vec::with_capacity(4);
        for foot in feet {
            let foot_geom = model
                .geometries
                .iter()
                .position(|g| g.name == foot)
                .ok_or_else(|| bad(format!("no geometry named `{foot}`")))?;
            let g = &model.geometries[foot_geom];
            // A sphere, or a convex mesh taken as the sphere about its
            // vertices' centroid through their mean distance (the rounded
            // feet of robot files).
            let (centre, radius) = match &g.shape {
                Shape::Ball { radius } => (Vec3::zeros(), *radius),
                Shape::ConvexMesh { points } => {
                    let c = points.iter().sum::<Vec3>() / points.len() as f64;
                    let r =
                        points.iter().map(|p| (p - c).norm()).sum::<f64>() / points.len() as f64;
                    (c, r)
                }
                other => {
                    return Err(bad(format!(
                        "foot `{foot}` is a {}, not a sphere or a rounded mesh",
                        other.name()
                    )));
                }
            };
            let mut chain = Vec::new();
            let mut b = g.body;
            while b > 1 {
                match model.joint_type[b] {
                    JointType::Revolute(_) => chain.push(b),
                    JointType::Fixed => {}
                    other => {
                        return Err(bad(format!(
                            "foot `{foot}`: joint of body `{}` is {other:?}, not revolute",
                            model.body_name[b]
                        )));
                    }
                }
                b = model.body_parent[b];
            }
            if b != 1 || chain.len() != 3 {
                return Err(bad(format!(
                    "foot `{foot}` must hang from the base by 3 revolute joints, found {} (reaching body {b})",
                    chain.len()
                )));
            }
            chain.reverse();
            let bodies = [chain[0], chain[1], chain[2]];
            let foot_offset = g.body_from_geom.act_point(&centre);
            let nominal = data.world_from_body[g.body].act_point(&foot_offset);
            legs.push(Leg {
                name: foot.to_string(),
                q: bodies.map(|b| model.joint_idx_q[b]),
                v: bodies.map(|b| model.joint_idx_v[b]),
                bodies,
                foot_geom,
                foot_body: g.body,
                foot_offset,
                foot_radius: radius,
                nominal,
            });
        }
        let standing_height = legs
            .iter()
            .map(|l| l.foot_radius - l.nominal.z)
            .fold(f64::NEG_INFINITY, f64::max);
        let legs: [Leg; 4] = legs.try_into().expect("four feet");
        Ok(Quadruped {
            model,
            legs,
            q_stand: q,
            standing_height,
        })
    }

    /// Solo-12 as example-robot-data describes it (`solo12.urdf`, loaded
    /// with a free base): its feet are the `*_FOOT` meshes, its standing
    /// posture the SRDF's (hips ±0.1, front knees bent back, hind knees
    /// forward).
    pub fn solo12(model: Arc<Model>) -> Result<Self, ControlError> {
        let mut q = model.neutral_configuration();
        for b in 1..model.nbodies {
            let name = &model.joint_name[b];
            let (front, left) = (name.starts_with('F'), name.get(1..2) == Some("L"));
            let angle = match name.get(3..) {
                Some("HAA") => Some(if left { 0.1 } else { -0.1 }),
                Some("HFE") => Some(if front { 0.8 } else { -0.8 }),
                Some("KFE") => Some(if front { -1.6 } else { 1.6 }),
                _ => None,
            };
            if let Some(x) = angle {
                q[model.joint_idx_q[b]] = x;
            }
        }
        let feet = [
            "FL_FOOT/collision0",
            "FR_FOOT/collision0",
            "HL_FOOT/collision0",
            "HR_FOOT/collision0",
        ];
        Self::new(model, feet, &q)
    }

    /// The built-in quadruped ([`moreau::scenes::quadruped_model`]).
    pub fn builtin() -> Result<Self, ControlError> {
        let model = Arc::new(
            moreau::scenes::quadruped_model().map_err(|e| ControlError::Model(e.to_string()))?,
        );
        let q = moreau::scenes::quadruped_standing(&model, 0.0);
        Self::new(model, ["FL_foot", "FR_foot", "HL_foot", "HR_foot"], &q)
    }

    /// The same robot on another model (a terrain under it, say): the
    /// model must have the same bodies and joints.
    pub fn on(&self, model: Arc<Model>) -> Result<Self, ControlError> {
        if model.nq != self.model.nq || model.body_name != self.model.body_name {
            return Err(ControlError::Model(
                "the new model's bodies differ from the robot's".into(),
            ));
        }
        Ok(Quadruped {
            model,
            ..self.clone()
        })
    }

    /// Inverse kinematics of one leg: the joint angles that put the foot
    /// centre at `target` (base frame), by damped Newton steps from the
    /// angles in `q` (a configuration with the base at the origin, level),
    /// written back into `q`. Returns the distance left (m).
    pub fn leg_ik(&self, data: &mut Data, q: &mut DVector<f64>, leg: usize, target: &Vec3) -> f64 {
        let l = &self.legs[leg];
        let mut err = f64::INFINITY;
        for _ in 0..30 {
            forward_kinematics(&self.model, data, q.as_slice());
            let p = data.world_from_body[l.foot_body].act_point(&l.foot_offset);
            let e = target - p;
            err = e.norm();
            if err < 1e-12 {
                break;
            }
            // ∂p/∂θ_k = a_k × (p − o_k), the joint's axis and origin.
            let mut jac = Mat3::zeros();
            for (k, &b) in l.bodies.iter().enumerate() {
                let JointType::Revolute(axis) = self.model.joint_type[b] else {
                    unreachable!("legs have revolute joints")
                };
                let pose = &data.world_from_body[b];
                jac.set_column(k, &(pose.rotation * axis).cross(&(p - pose.translation)));
            }
            let damping = 1e-8;
            let step = (jac.transpose() * jac + Mat3::identity() * damping)
                .try_inverse()
                .map(|inv| inv * jac.transpose() * e)
                .unwrap_or_else(Vec3::zeros);
            // Limit a step to 0.3 rad, for targets out of reach.
            let scale = (0.3 / step.amax()).min(1.0);
            for k in 0..3 {
                q[l.q[k]] += scale * step[k];
            }
        }
        err
    }
}

/// Gait timing: period, duty factor, each leg's phase offset, swing height.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Gait {
    pub period: f64,
    pub duty: f64,
    pub offsets: [f64; 4],
    pub swing_height: f64,
}

impl Gait {
    /// A trot: diagonal pairs (front-left with hind-right, front-right with
    /// hind-left) half a period apart, 0.36 s, duty factor 0.6, 5 cm swing.
    pub fn trot() -> Self {
        Gait {
            period: 0.36,
            duty: 0.6,
            offsets: [0.0, 0.5, 0.5, 0.0],
            swing_height: 0.05,
        }
    }
    /// Whether leg `leg` is in stance at `t`, and the fraction of that
    /// stance or swing gone by.
    pub fn phase(&self, leg: usize, t: f64) -> (bool, f64) {
        let phi = (t / self.period + self.offsets[leg]).rem_euclid(1.0);
        if phi < self.duty {
            (true, phi / self.duty)
        } else {
            (false, (phi - self.duty) / (1.0 - self.duty))
        }
    }
}

/// Where the feedforward torques come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Feedforward {
    /// None: the PD alone.
    None,
    /// An inverse-dynamics formulation ([`moreau::inverse`]) at the state.
    Inverse(Formulation),
    /// The rigid-body inverse dynamics `[M a + b − Jᵀλ/dt]_a` with the
    /// generalized contact impulse `Jᵀλ` the simulator applied `lag` steps
    /// back (1 or 2), the base's acceleration from its own rows.
    Sensed { lag: usize },
}

impl Feedforward {
    pub const ALL: [Feedforward; 7] = [
        Feedforward::None,
        Feedforward::Inverse(Formulation::NoSlip),
        Feedforward::Inverse(Formulation::Coulomb),
        Feedforward::Inverse(Formulation::TwoStage),
        Feedforward::Inverse(Formulation::Ncp),
        Feedforward::Sensed { lag: 1 },
        Feedforward::Sensed { lag: 2 },
    ];
    pub fn name(self) -> String {
        match self {
            Feedforward::None => "pd".into(),
            Feedforward::Inverse(f) => f.name().into(),
            Feedforward::Sensed { lag } => format!("id(t-{lag})"),
        }
    }
    pub fn parse(s: &str) -> Result<Self, ControlError> {
        Self::ALL
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| {
                let names: Vec<String> = Self::ALL.iter().map(|f| f.name()).collect();
                ControlError::UnknownFeedforward(s.into(), names.join(", "))
            })
    }
}

/// Gains and targets of a [`TrotController`].
#[derive(Clone, Debug)]
pub struct TrotSettings {
    pub gait: Gait,
    /// Desired base velocity in the heading frame (m/s, x forward, y left).
    pub velocity: [f64; 2],
    /// Joint PD gains (N·m/rad, N·m·s/rad).
    pub kp: f64,
    pub kd: f64,
    /// Raibert's foothold gain (s).
    pub raibert: f64,
    /// Torque limit per joint (N·m): 3, about Solo-12's motors' peak
    /// (and the RL task's limit). Without it the feedforwards' torque
    /// spikes at touchdowns kick the trot over within seconds.
    pub tau_max: f64,
    pub feedforward: Feedforward,
    /// A feedforward with a torque above this (N·m) is discarded and
    /// counted as a failure (the PD acts alone that step): an inverse
    /// dynamics asked for accelerations its contact model cannot give
    /// answers with unbounded impulses.
    pub feedforward_limit: f64,
}

impl Default for TrotSettings {
    fn default() -> Self {
        TrotSettings {
            gait: Gait::trot(),
            velocity: [0.3, 0.0],
            kp: 6.0,
            kd: 0.2,
            raibert: 0.1,
            tau_max: 3.0,
            feedforward: Feedforward::Inverse(Formulation::NoSlip),
            feedforward_limit: 20.0,
        }
    }
}

impl TrotSettings {
    /// Why these settings cannot drive a controller, if they cannot.
    pub fn check(&self) -> Result<(), ControlError> {
        let bad = |what: &str, value: String| {
            Err(ControlError::Model(format!(
                "trot settings: {what} {value}"
            )))
        };
        let g = &self.gait;
        if !(g.period.is_finite() && g.period > 0.0) {
            return bad("gait period must be positive, got", g.period.to_string());
        }
        if !(g.duty > 0.0 && g.duty < 1.0) {
            return bad("duty factor must be in (0, 1), got", g.duty.to_string());
        }
        let finite = [
            g.swing_height,
            self.velocity[0],
            self.velocity[1],
            self.kp,
            self.kd,
            self.raibert,
        ]
        .iter()
        .chain(g.offsets.iter())
        .all(|x| x.is_finite());
        if !finite {
            return bad("must all be finite:", format!("{self:?}"));
        }
        if !(self.tau_max > 0.0 && self.feedforward_limit > 0.0) {
            return bad(
                "torque limits must be positive, got",
                format!("{} and {}", self.tau_max, self.feedforward_limit),
            );
        }
        if let Feedforward::Sensed { lag } = self.feedforward
            && !(1..=2).contains(&lag)
        {
            return bad(
                "sensed feedforward lag must be 1 or 2, got",
                lag.to_string(),
            );
        }
        Ok(())
    }
}

/// The joint references at one instant: angles, rates, accelerations
/// (each 12, legs in order, hip to knee), and the foot targets.
#[derive(Clone, Debug, Default)]
pub struct Reference {
    pub q: [f64; 12],
    pub qd: [f64; 12],
    pub qdd: [f64; 12],
    pub feet: [Vec3; 4],
    pub stance: [bool; 4],
}

/// What one [`TrotController::control`] call did.
#[derive(Clone, Debug, Default)]
pub struct ControlReport {
    /// Contacts the feedforward's inverse dynamics saw (0 for the others).
    pub contacts: usize,
    /// Seconds spent in the call, and in its feedforward.
    pub seconds: f64,
    pub feedforward_seconds: f64,
    /// Whether the inverse dynamics failed (the PD acted alone).
    pub feedforward_failed: bool,
}

/// The trot controller (see the module doc).
pub struct TrotController {
    pub robot: Quadruped,
    pub settings: TrotSettings,
    params: SimParams,
    inverse: Option<InverseDynamics>,
    data: Data,
    q_ik: DVector<f64>,
    /// Generalized contact impulses `Jᵀλ` of the last steps, newest first.
    sensed: VecDeque<DVector<f64>>,
    previous_tau: Option<DVector<f64>>,
    last: Reference,
    /// Each leg's current phase and where it started (see `update_phases`).
    phases: [(bool, f64, Vec3); 4],
    phases_set: bool,
    /// Failures of the inverse dynamics so far, and the last one's reason.
    pub feedforward_failures: usize,
    pub last_failure: Option<String>,
}

impl TrotController {
    /// `params`: the simulator's (its `dt` and contact model are those the
    /// inverse dynamics inverts).
    pub fn new(
        robot: Quadruped,
        params: SimParams,
        settings: TrotSettings,
    ) -> Result<Self, ControlError> {
        settings.check()?;
        params.validate()?;
        let inverse = match settings.feedforward {
            Feedforward::Inverse(_) => {
                Some(InverseDynamics::new(robot.model.clone(), params, None)?)
            }
            _ => None,
        };
        let data = Data::new(&robot.model);
        let q_ik = robot.q_stand.clone();
        Ok(TrotController {
            robot,
            settings,
            params,
            inverse,
            data,
            q_ik,
            sensed: VecDeque::new(),
            previous_tau: None,
            last: Reference::default(),
            phases: [(true, 0.0, Vec3::zeros()); 4],
            phases_set: false,
            feedforward_failures: 0,
            last_failure: None,
        })
    }

    /// The base's heading rotation (yaw only) and its velocity in the
    /// heading frame.
    pub fn heading(state: &State) -> (Mat3, Vec3) {
        let rot = quat_from_slice(&state.q.as_slice()[3..7])
            .to_rotation_matrix()
            .into_inner();
        let x = rot.column(0);
        let yaw = x.y.atan2(x.x);
        let heading = *nalgebra::Rotation3::from_axis_angle(&Vec3::z_axis(), yaw).matrix();
        let v_world = rot * Vec3::new(state.v[0], state.v[1], state.v[2]);
        (heading, heading.transpose() * v_world)
    }

    /// Moves each leg's phase start to `t` where its phase changed since
    /// the last call: a stance starts where the swing put the foot, a
    /// swing where the stance left it. On the first call the legs start
    /// on the nominal trajectory.
    fn update_phases(&mut self, t: f64, v: &Vec3) {
        let g = self.settings.gait;
        let t_stance = g.duty * g.period;
        let vd = Vec3::new(self.settings.velocity[0], self.settings.velocity[1], 0.0);
        for k in 0..4 {
            let (stance, frac) = g.phase(k, t);
            let nominal = self.robot.legs[k].nominal;
            if !self.phases_set {
                self.phases[k] = if stance {
                    (true, t - frac * t_stance, nominal + vd * (t_stance / 2.0))
                } else {
                    (
                        false,
                        t - frac * (g.period - t_stance),
                        nominal - vd * (t_stance / 2.0),
                    )
                };
            } else if self.phases[k].0 != stance {
                // The old phase's target at its end, where the new one starts.
                let mut end = self.target(k, t, v, !stance);
                end.z = nominal.z;
                self.phases[k] = (stance, t, end);
            }
        }
        self.phases_set = true;
    }

    /// Leg `leg`'s foot target at `t` (base frame, level base) in stance
    /// or in swing (`stance`), from the current phase's start: a target
    /// near a phase change stays on one phase's curve, so that its time
    /// differences are that curve's.
    fn target(&self, leg: usize, t: f64, v: &Vec3, stance: bool) -> Vec3 {
        let s = &self.settings;
        let g = &s.gait;
        let t_stance = g.duty * g.period;
        let t_swing = g.period - t_stance;
        let vd = Vec3::new(s.velocity[0], s.velocity[1], 0.0);
        let nominal = self.robot.legs[leg].nominal;
        let (_, t0, start) = self.phases[leg];
        if stance {
            // On the ground, the foot moves back under the hip at v*.
            start - vd * (t - t0)
        } else {
            // A swing ends at the foothold ahead (Raibert's rule).
            let frac = ((t - t0) / t_swing).clamp(0.0, 1.0);
            let mut end = nominal + vd * (t_stance / 2.0) + (v - vd) * s.raibert;
            end.z = nominal.z;
            // Cubic Hermite from start to end with end rates −v* (the
            // stance's), in units of the swing's fraction.
            let (h00, h10, h01, h11) = hermite(frac);
            let rate = -vd * t_swing;
            let mut p = start * h00 + rate * h10 + end * h01 + rate * h11;
            p.z = nominal.z + g.swing_height * 0.5 * (1.0 - (std::f64::consts::TAU * frac).cos());
            p
        }
    }

    /// The foot targets (base frame, level base) at time `t` for the
    /// measured heading-frame velocity `v`, and which feet are in stance.
    pub fn foot_targets(&self, t: f64, v: &Vec3) -> ([Vec3; 4], [bool; 4]) {
        let mut feet = [Vec3::zeros(); 4];
        let mut stance = [false; 4];
        for k in 0..4 {
            stance[k] = self.settings.gait.phase(k, t).0;
            feet[k] = self.target(k, t, v, self.phases[k].0);
        }
        (feet, stance)
    }

    /// The joint references at time `t` for the measured state.
    pub fn reference(&mut self, t: f64, state: &State) -> Reference {
        let (_, v) = Self::heading(state);
        self.update_phases(t, &v);
        let delta = 2e-3;
        let mut angles = [[0.0; 12]; 3];
        let mut out = Reference::default();
        for (n, dt) in [0.0, -delta, delta].into_iter().enumerate() {
            let (feet, stance) = self.foot_targets(t + dt, &v);
            if n == 0 {
                out.feet = feet;
                out.stance = stance;
            }
            for (k, target) in feet.iter().enumerate() {
                self.robot.leg_ik(&mut self.data, &mut self.q_ik, k, target);
                for j in 0..3 {
                    angles[n][3 * k + j] = self.q_ik[self.robot.legs[k].q[j]];
                }
            }
        }
        // Leave the IK's guess at t's solution for the next call.
        for (k, leg) in self.robot.legs.iter().enumerate() {
            for j in 0..3 {
                self.q_ik[leg.q[j]] = angles[0][3 * k + j];
            }
        }
        for i in 0..12 {
            out.q[i] = angles[0][i];
            out.qd[i] = (angles[2][i] - angles[1][i]) / (2.0 * delta);
            out.qdd[i] = (angles[2][i] - 2.0 * angles[0][i] + angles[1][i]) / (delta * delta);
        }
        out
    }

    /// The references of the last [`Self::control`] call.
    pub fn last_reference(&self) -> &Reference {
        &self.last
    }

    /// Records the step the simulator just took (its generalized contact
    /// impulse `Jᵀλ`), for the sensed feedforwards.
    pub fn observe(&mut self, sim: &Simulator) {
        let nv = self.robot.model.nv;
        let lambda = &sim.solution().lambda;
        let j = &sim.jacobian().jacobian;
        let p = if !lambda.is_empty() && j.nrows() == lambda.len() {
            j.transpose() * lambda
        } else {
            DVector::zeros(nv)
        };
        self.sensed.push_front(p);
        self.sensed.truncate(2);
    }

    /// Forgets the sensed impulses and the previous torques (a new run).
    pub fn reset(&mut self) {
        self.sensed.clear();
        self.previous_tau = None;
        self.q_ik = self.robot.q_stand.clone();
        self.phases_set = false;
    }

    /// The torques (nv, zero on the base) at `state` (its `t` drives the
    /// gait).
    pub fn control(
        &mut self,
        state: &State,
        tau: &mut [f64],
    ) -> Result<ControlReport, ControlError> {
        let start = std::time::Instant::now();
        let model = self.robot.model.clone();
        let nv = model.nv;
        moreau::sim::check_state(&model, state)?;
        if tau.len() != nv {
            return Err(SimError::DimensionMismatch {
                what: "tau",
                got: tau.len(),
                expected: nv,
            }
            .into());
        }
        let r = self.reference(state.t, state);
        tau.fill(0.0);
        let mut report = ControlReport::default();
        let ff_start = std::time::Instant::now();
        let feedforward = self.feedforward(state, &r, &mut report);
        report.feedforward_seconds = ff_start.elapsed().as_secs_f64();
        let s = &self.settings;
        for (k, leg) in self.robot.legs.iter().enumerate() {
            for j in 0..3 {
                let i = 3 * k + j;
                let (qi, vi) = (leg.q[j], leg.v[j]);
                let pd = s.kp * (r.q[i] - state.q[qi]) + s.kd * (r.qd[i] - state.v[vi]);
                let ff = feedforward.as_ref().map_or(0.0, |f| f[vi]);
                tau[vi] = (pd + ff).clamp(-s.tau_max, s.tau_max);
            }
        }
        self.previous_tau = Some(DVector::from_column_slice(&tau[..nv]));
        self.last = r;
        report.seconds = start.elapsed().as_secs_f64();
        Ok(report)
    }

    /// The feedforward torques (nv), or `None` (PD alone, or a failed
    /// inverse dynamics, counted).
    fn feedforward(
        &mut self,
        state: &State,
        r: &Reference,
        report: &mut ControlReport,
    ) -> Option<DVector<f64>> {
        let model = self.robot.model.clone();
        let nv = model.nv;
        // The desired accelerations in v's order.
        let mut a = DVector::zeros(nv);
        for (k, leg) in self.robot.legs.iter().enumerate() {
            for j in 0..3 {
                a[leg.v[j]] = r.qdd[3 * k + j];
            }
        }
        match self.settings.feedforward {
            Feedforward::None => None,
            Feedforward::Inverse(formulation) => {
                let inverse = self.inverse.as_mut().expect("built with the controller");
                let accelerations: Vec<f64> = inverse.actuated().iter().map(|&k| a[k]).collect();
                let settings = InverseSettings {
                    formulation,
                    previous_tau: self.previous_tau.clone(),
                    consistent: true,
                    ..InverseSettings::default()
                };
                match inverse.solve(state, &accelerations, &settings) {
                    Ok(sol) if sol.tau.amax() > self.settings.feedforward_limit => {
                        report.contacts = sol.nc;
                        report.feedforward_failed = true;
                        self.feedforward_failures += 1;
                        self.last_failure = Some(format!(
                            "feedforward torque {:.3e} N·m over the limit {} N·m",
                            sol.tau.amax(),
                            self.settings.feedforward_limit
                        ));
                        None
                    }
                    Ok(sol) => {
                        report.contacts = sol.nc;
                        Some(sol.tau)
                    }
                    Err(e) => {
                        report.feedforward_failed = true;
                        self.feedforward_failures += 1;
                        self.last_failure = Some(e.to_string());
                        None
                    }
                }
            }
            Feedforward::Sensed { lag } => {
                let dt = self.params.dt;
                let p = self
                    .sensed
                    .get(lag - 1)
                    .cloned()
                    .unwrap_or_else(|| DVector::zeros(nv));
                let m = crba(&model, &mut self.data, state.q.as_slice()).clone();
                let b = nonlinear_effects(
                    &model,
                    &mut self.data,
                    state.q.as_slice(),
                    state.v.as_slice(),
                )
                .clone();
                // Base rows: M_bb a_b = p_b/dt − b_b − M_ba a_a.
                let f = &p / dt - &b;
                let m_bb = m.view((0, 0), (6, 6)).into_owned();
                let rhs = f.rows(0, 6) - m.view((0, 6), (6, nv - 6)) * a.rows(6, nv - 6);
                let a_b = nalgebra::Cholesky::new(m_bb)?.solve(&rhs);
                a.rows_mut(0, 6).copy_from(&a_b);
                let mut tau = &m * &a - f;
                tau.rows_mut(0, 6).fill(0.0);
                Some(tau)
            }
        }
    }

    /// Where the feet are (centres, base frame) in `state`.
    pub fn feet_in_base(&mut self, state: &State) -> [Vec3; 4] {
        let mut q = state.q.clone();
        q.as_mut_slice()[..7].copy_from_slice(&[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]);
        forward_kinematics(&self.robot.model, &mut self.data, q.as_slice());
        let mut out = [Vec3::zeros(); 4];
        for (k, leg) in self.robot.legs.iter().enumerate() {
            out[k] = self.data.world_from_body[leg.foot_body].act_point(&leg.foot_offset);
        }
        out
    }
}

/// The cubic Hermite basis at `s ∈ [0, 1]`.
fn hermite(s: f64) -> (f64, f64, f64, f64) {
    let (s2, s3) = (s * s, s * s * s);
    (
        2.0 * s3 - 3.0 * s2 + 1.0,
        s3 - 2.0 * s2 + s,
        -2.0 * s3 + 3.0 * s2,
        s3 - s2,
    )
}

/// The base's "up" component (its z axis along world z) and height.
pub fn base_posture(state: &State) -> (f64, f64) {
    let up = quat_from_slice(&state.q.as_slice()[3..7]) * Vec3::z();
    (up.z, state.q[2])
}
