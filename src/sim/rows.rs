//! The one-dimensional rows after the joint limits (stage 2): equality
//! constraints (bilateral), dry friction on dofs and tendons (boxes) and
//! tendon limits (unilateral), each with its sparse Jacobian, set and
//! stabilization.
//!
//! - equality `e(q) = 0` ([`crate::model::Equality`]): `c = J v`, `g` gets
//!   `β e/dt` (the contacts' Baumgarte factor), so `ė = −β e/dt` after the step,
//!   at most [`super::SimParams::max_equality_recovery_speed`];
//! - `connect` and `weld` ([`crate::model::BodyEquality`]): 3 (6) such rows
//!   in world axes, the points' relative velocity (and the bodies'
//!   relative angular velocity), the bound on the position (orientation)
//!   error's recovery on its norm;
//! - dry friction `f` on a dof or a tendon: `c = J v` (the dof's velocity, the
//!   tendon's `L̇`), `|λ| ≤ f·dt`, no stabilization (MuJoCo's `frictionloss`);
//! - a tendon's length range, as a joint's: a row per side within
//!   `SimParams::limit_margin` of its stop or about to cross it, `c = ±L̇`
//!   with the joint limits' speculative and Baumgarte terms;
//! - a ball joint's cone limit (its rotation angle at most its range's
//!   upper end), the same way with `c = −θ̇`.

use crate::collision::Contact;
use crate::contact::{LimitSide, RowSet, SparseRows};
use crate::dynamics::{Data, ltdl_solve_in_place, point_velocity_column};
use crate::math::{ang, log3};
use crate::model::{Coordinate, Model, NO_DOF};

/// What a row constrains.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowKind {
    /// Equality `i` of [`Model::equalities`].
    Equality(usize),
    /// Dry friction on dof `k`.
    DofFriction(usize),
    /// Dry friction on tendon `t`.
    TendonFriction(usize),
    /// A side of tendon `t`'s range.
    TendonLimit(usize, LimitSide),
    /// Row `r` (0–2: position along world x, y, z; 3–5: orientation) of
    /// body equality `i` of [`Model::body_equalities`].
    BodyEquality(usize, usize),
    /// The cone limit of the ball joint of body `b`.
    BallLimit(usize),
    /// Row `r` of contact `i`'s cone beyond its three (0: spin about its
    /// normal, 1 and 2: rolling about `t1` and `t2`; see [`gather_cones`](ExtraRows::gather_cones)).
    ContactCone(usize, usize),
}

impl RowKind {
    /// Its slot in the warm-start memory of a model (one per possible
    /// row); `None` for a contact's cone row, kept with its contact.
    pub(crate) fn slot(self, model: &Model) -> Option<usize> {
        let (ne, nv) = (model.equalities.len(), model.nv);
        Some(match self {
            RowKind::ContactCone(..) => return None,
            RowKind::Equality(i) => i,
            RowKind::DofFriction(k) => ne + k,
            RowKind::TendonFriction(t) => ne + nv + t,
            RowKind::TendonLimit(t, side) => {
                ne + nv + model.tendons.len() + 2 * t + (side == LimitSide::Upper) as usize
            }
            RowKind::BodyEquality(i, r) => ne + nv + 3 * model.tendons.len() + 6 * i + r,
            RowKind::BallLimit(b) => {
                ne + nv + 3 * model.tendons.len() + 6 * model.body_equalities.len() + b
            }
        })
    }

    /// Slots of a model (see [`Self::slot`]).
    pub(crate) fn slots(model: &Model) -> usize {
        model.equalities.len()
            + model.nv
            + 3 * model.tendons.len()
            + 6 * model.body_equalities.len()
            + model.nbodies
    }

    /// A name for messages.
    pub fn describe(self, model: &Model) -> String {
        match self {
            RowKind::Equality(i) => format!("equality `{}`", model.equalities[i].name),
            RowKind::DofFriction(k) => {
                format!(
                    "frictionloss of joint `{}`",
                    model.joint_name[model.dof_body[k]]
                )
            }
            RowKind::TendonFriction(t) => {
                format!("frictionloss of tendon `{}`", model.tendons[t].name)
            }
            RowKind::TendonLimit(t, side) => {
                format!("{side:?} limit of tendon `{}`", model.tendons[t].name).to_lowercase()
            }
            RowKind::BodyEquality(i, r) => {
                let e = &model.body_equalities[i];
                let what = ["x", "y", "z", "rotation x", "rotation y", "rotation z"][r];
                format!("{} `{}` ({what})", e.kind(), e.name)
            }
            RowKind::BallLimit(b) => format!("cone limit of ball joint `{}`", model.joint_name[b]),
            RowKind::ContactCone(i, r) => {
                let what = ["torsional", "rolling (t1)", "rolling (t2)"][r];
                format!("{what} friction of contact {i}")
            }
        }
    }
}

/// One row: its kind, set, and the velocity its `g` adds to `J v_f`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Row {
    pub kind: RowKind,
    pub set: RowSet,
    pub stabilization: f64,
    /// The constraint's violation: an equality's residual `e`, a tendon
    /// limit's distance to its stop (negative: beyond it); 0 for friction.
    pub violation: f64,
}

/// The rows of a step (reused from step to step).
#[derive(Clone, Debug, Default)]
pub struct ExtraRows {
    pub rows: Vec<Row>,
    pub jacobian: SparseRows,
    entries: Vec<(usize, f64)>,
}

/// `G_kk = J_k M⁻¹ J_kᵀ` of one constraint row given as its `(dof, entry)`
/// pairs (`M` factored in `data`; `w` (nv) scratch).
pub(crate) fn row_delassus(
    model: &Model,
    data: &Data,
    row: impl Iterator<Item = (usize, f64)> + Clone,
    w: &mut [f64],
) -> f64 {
    w.fill(0.0);
    for (dof, c) in row.clone() {
        w[dof] += c;
    }
    ltdl_solve_in_place(&model.dof_parent, &data.ltdl, w);
    row.map(|(dof, c)| c * w[dof]).sum()
}

impl ExtraRows {
    /// The rows of equalities to a mocap body get the compliance
    /// `R = α·s` ([`super::SimParams::mocap_compliance`]; the larger where
    /// `compliance` (the rows' own, from the row after the limits) has one
    /// already), `s` the largest `G_kk = J_k M⁻¹ J_kᵀ` of the equality's
    /// three position rows (or three orientation rows): the same in every
    /// direction, so a direction the configuration makes singular (an arm
    /// stretched towards its target: `G_kk = 0` along it) is regularized
    /// too. `M` factored in `data`; `w` (nv) scratch.
    pub(crate) fn regularize_mocap_rows(
        &self,
        model: &Model,
        data: &Data,
        alpha: f64,
        compliance: &mut [f64],
        w: &mut [f64],
    ) {
        if alpha == 0.0 || model.mocap.is_empty() {
            return;
        }
        let rows = &self.rows;
        let mut r = 0;
        while r < rows.len() {
            let RowKind::BodyEquality(i, part) = rows[r].kind else {
                r += 1;
                continue;
            };
            // The rows of this equality's part (position or orientation),
            // consecutive.
            let end = (r..rows.len())
                .find(|&s| {
                    !matches!(rows[s].kind, RowKind::BodyEquality(j, p)
                        if j == i && p / 3 == part / 3)
                })
                .unwrap_or(rows.len());
            if model.body_equalities[i].mocap != [None, None] {
                let mut scale = 0.0f64;
                for s in r..end {
                    scale = scale.max(row_delassus(model, data, self.jacobian.row(s), w));
                }
                for c in &mut compliance[r..end] {
                    *c = c.max(alpha * scale);
                }
            }
            r = end;
        }
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The rows at configuration `q` (with `data`'s kinematics at `q`)
    /// with free velocity `v_free` (for the tendon limits' crossing test),
    /// under `params`' time step, limit margin and recovery.
    pub(crate) fn gather(
        &mut self,
        model: &Model,
        data: &Data,
        q: &[f64],
        v_free: &[f64],
        params: &super::SimParams,
        mocap_shift: &[crate::math::SE3],
    ) {
        let (dt, limit_margin) = (params.dt, params.limit_margin);
        self.rows.clear();
        self.jacobian.clear();
        for (i, eq) in model.equalities.iter().enumerate() {
            self.entries.clear();
            let y = coordinate(model, eq.first, data, q, 1.0, &mut self.entries);
            let e = match eq.second {
                None => y - eq.reference[0] - eq.polycoef[0],
                Some(x) => {
                    let start = self.entries.len();
                    let xv = coordinate(model, x, data, q, 1.0, &mut self.entries);
                    let (p, dp) = eq.polynomial(xv - eq.reference[1]);
                    for e in &mut self.entries[start..] {
                        e.1 *= -dp;
                    }
                    y - eq.reference[0] - p
                }
            };
            self.jacobian.push(self.entries.iter().copied());
            self.rows.push(Row {
                kind: RowKind::Equality(i),
                set: RowSet::Bilateral,
                stabilization: params.equality_recovery(e),
                violation: e,
            });
        }
        for (i, eq) in model.body_equalities.iter().enumerate() {
            // A side naming a mocap body: the world, carried by the mocap's
            // displacement in this world.
            let side = |body: usize, mocap: Option<usize>| match mocap {
                Some(m) => &mocap_shift[m],
                None => &data.world_from_body[body],
            };
            let (x1, x2) = (side(eq.body1, eq.mocap[0]), side(eq.body2, eq.mocap[1]));
            let (p1, p2) = (x1.act_point(&eq.point1), x2.act_point(&eq.point2));
            let mut residual = [0.0; 6];
            residual[..3].copy_from_slice((p1 - p2).as_slice());
            if let Some(rel) = &eq.rotation {
                let err = x1.rotation * rel * x2.rotation.transpose();
                let phi = log3(&err);
                residual[3..].copy_from_slice(phi.as_slice());
            }
            let mut recovery = [0.0; 6];
            for part in 0..2 {
                let e = [0, 1, 2].map(|r| residual[3 * part + r]);
                recovery[3 * part..3 * part + 3]
                    .copy_from_slice(&params.equality_recovery_vector(e));
            }
            for (r, &e) in residual.iter().enumerate().take(eq.rows()) {
                self.entries.clear();
                for (body, sign, p) in [(eq.body1, 1.0, p1), (eq.body2, -1.0, p2)] {
                    let mut k = model.body_last_dof[body];
                    while k != NO_DOF {
                        let s = &data.dof_jacobian[k];
                        let c = if r < 3 {
                            point_velocity_column(s, &p)[r]
                        } else {
                            ang(s)[r - 3]
                        };
                        self.entries.push((k, sign * c));
                        k = model.dof_parent[k];
                    }
                }
                self.jacobian.push(self.entries.iter().copied());
                self.rows.push(Row {
                    kind: RowKind::BodyEquality(i, r),
                    set: RowSet::Bilateral,
                    stabilization: recovery[r],
                    violation: e,
                });
            }
        }
        for (k, &f) in model.dof_frictionloss.iter().enumerate() {
            if f > 0.0 {
                self.jacobian.push([(k, 1.0)]);
                self.rows.push(Row {
                    kind: RowKind::DofFriction(k),
                    set: RowSet::Box(f * dt),
                    stabilization: 0.0,
                    violation: 0.0,
                });
            }
        }
        for (t, tendon) in model.tendons.iter().enumerate() {
            if tendon.frictionloss <= 0.0 && tendon.range.is_none() {
                continue;
            }
            self.entries.clear();
            let length = coordinate(
                model,
                Coordinate::Tendon(t),
                data,
                q,
                1.0,
                &mut self.entries,
            );
            if tendon.frictionloss > 0.0 {
                self.jacobian.push(self.entries.iter().copied());
                self.rows.push(Row {
                    kind: RowKind::TendonFriction(t),
                    set: RowSet::Box(tendon.frictionloss * dt),
                    stabilization: 0.0,
                    violation: 0.0,
                });
            }
            if let Some((lower, upper)) = tendon.range {
                let rate: f64 = self.entries.iter().map(|&(k, c)| c * v_free[k]).sum();
                for (side, distance, sign) in [
                    (LimitSide::Lower, length - lower, 1.0),
                    (LimitSide::Upper, upper - length, -1.0),
                ] {
                    if distance < limit_margin || distance + dt * sign * rate < 0.0 {
                        self.jacobian
                            .push(self.entries.iter().map(|&(k, c)| (k, sign * c)));
                        let stabilization = if distance >= 0.0 {
                            distance / dt
                        } else {
                            params.recovery(distance)
                        };
                        self.rows.push(Row {
                            kind: RowKind::TendonLimit(t, side),
                            set: RowSet::Unilateral,
                            stabilization,
                            violation: distance,
                        });
                    }
                }
            }
        }
        // Ball joints' cone limits (MuJoCo's `range` of a ball joint): the
        // rotation angle θ = 2 atan2(|v|, |w|) of the joint's quaternion
        // (v, w) at most the range's upper end; θ̇ = a·ω, with `a` the
        // rotation's axis and ω the joint's angular velocity (`a` is the
        // log map's fixed direction), so the row is `−a` on its dofs, with
        // the joint limits' speculative and Baumgarte terms. (At θ = 0 the
        // axis is undefined and the stop, above the margin, inactive.)
        for (body, _, (_, upper)) in model.limited_joints() {
            if !matches!(model.joint_type[body], crate::model::JointType::Spherical) {
                continue;
            }
            let k = model.joint_idx_q[body];
            let (v, w) = (crate::math::Vec3::new(q[k], q[k + 1], q[k + 2]), q[k + 3]);
            let s = v.norm();
            if s < 1e-12 {
                continue;
            }
            let axis = v * (w.signum() / s);
            let distance = upper - 2.0 * s.atan2(w.abs());
            let dof = model.joint_idx_v[body];
            let rate: f64 = -(0..3).map(|i| axis[i] * v_free[dof + i]).sum::<f64>();
            if distance < limit_margin || distance + dt * rate < 0.0 {
                self.jacobian.push((0..3).map(|i| (dof + i, -axis[i])));
                let stabilization = if distance >= 0.0 {
                    distance / dt
                } else {
                    params.recovery(distance)
                };
                self.rows.push(Row {
                    kind: RowKind::BallLimit(body),
                    set: RowSet::Unilateral,
                    stabilization,
                    violation: distance,
                });
            }
        }
    }
}

/// The unit axis of cone row `r` of a contact with frame `[t1, t2, n]`:
/// `n` (spin), `t1`, `t2` (rolling).
pub(crate) fn cone_axis(frame: &crate::math::Mat3, r: usize) -> crate::math::Vec3 {
    frame.column((r + 2) % 3).into_owned()
}

impl ExtraRows {
    /// Appends the cone rows of `contacts` (MuJoCo's `condim` 4 and 6, see
    /// [`crate::contact::wide`]): for each contact with sliding friction,
    /// its spin row `n·(ω_a − ω_b)` scaled by `μ_t/μ` where its torsional
    /// coefficient is positive, and its rolling rows `t1·(ω_a − ω_b)`,
    /// `t2·(ω_a − ω_b)` scaled by `μ_r/μ` where its rolling one is. A
    /// contact without sliding friction has none (its cone is the ray
    /// `λ_T = 0`; MuJoCo clamps `μ` to 1e-5 instead).
    pub(crate) fn gather_cones(&mut self, model: &Model, data: &Data, contacts: &[Contact]) {
        for (i, c) in contacts.iter().enumerate() {
            if !(c.mu > 0.0) || c.spin == [0.0; 2] {
                continue;
            }
            for r in 0..3 {
                let coef = c.spin[(r > 0) as usize];
                if !(coef > 0.0) {
                    continue;
                }
                let axis = cone_axis(&c.frame, r) * (coef / c.mu);
                self.entries.clear();
                for (body, sign) in [(c.body_a, 1.0), (c.body_b, -1.0)] {
                    let mut k = model.body_last_dof[body];
                    while k != NO_DOF {
                        self.entries
                            .push((k, sign * axis.dot(&ang(&data.dof_jacobian[k]))));
                        k = model.dof_parent[k];
                    }
                }
                self.jacobian.push(self.entries.iter().copied());
                self.rows.push(Row {
                    kind: RowKind::ContactCone(i, r),
                    set: RowSet::Cone(i),
                    stabilization: 0.0,
                    violation: 0.0,
                });
            }
        }
    }
}

/// The most cone rows one contact of `model` can add after the contacts
/// ([`ExtraRows::gather_cones`]): 1 where some pair has torsional friction
/// alone, 3 with rolling friction, 0 without either.
pub fn max_cone_rows_per_contact(model: &Model) -> usize {
    model
        .spin_pairs()
        .iter()
        .map(|&(a, b)| {
            let [spin, roll] = model.geometry_spin(a, b);
            usize::from(spin > 0.0) + 2 * usize::from(roll > 0.0)
        })
        .max()
        .unwrap_or(0)
}

/// The most one-dimensional rows a step of `model` can have after its
/// contacts (cone rows aside: [`max_cone_rows_per_contact`]): two per limited hinge or slide (one per stop), one per ball
/// joint's cone limit, then what [`ExtraRows::gather`] can make (each
/// equality's rows, dry friction on each dof and tendon that has it, two
/// per tendon range). The GPU batches size their problems by it.
pub fn max_rows(model: &Model) -> usize {
    use crate::model::JointType;
    let limits: usize = model
        .limited_joints()
        .map(|(b, _, _)| match model.joint_type[b] {
            JointType::Revolute(_) | JointType::Prismatic(_) => 2,
            JointType::Spherical => 1,
            _ => 0,
        })
        .sum();
    let tendons: usize = model
        .tendons
        .iter()
        .map(|t| (t.frictionloss > 0.0) as usize + 2 * t.range.is_some() as usize)
        .sum();
    limits
        + model.equalities.len()
        + model
            .body_equalities
            .iter()
            .map(|e| e.rows())
            .sum::<usize>()
        + model.dof_frictionloss.iter().filter(|&&f| f > 0.0).count()
        + tendons
}

/// The value of a coordinate at `q`, and its Jacobian row `(dof, ∂/∂v_dof)`
/// pushed onto `jac` scaled by `scale` (a dof may appear more than
/// once: the entries add up). `data` holds the kinematics at `q`
/// ([`crate::dynamics::forward_kinematics`]), which a spatial tendon's
/// path needs ([`crate::dynamics::spatial_length`]).
pub fn coordinate(
    model: &Model,
    c: Coordinate,
    data: &Data,
    q: &[f64],
    scale: f64,
    jac: &mut Vec<(usize, f64)>,
) -> f64 {
    match c {
        Coordinate::Joint(j) => {
            jac.push((model.joint_idx_v[j], scale));
            q[model.joint_idx_q[j]]
        }
        Coordinate::Tendon(t) if model.tendons[t].is_spatial() => {
            crate::dynamics::spatial_length(model, &model.tendons[t].path, data, scale, jac)
        }
        Coordinate::Tendon(t) => {
            let t = &model.tendons[t];
            jac.extend(
                t.joints
                    .iter()
                    .map(|&(j, c)| (model.joint_idx_v[j], scale * c)),
            );
            t.length(&model.joint_idx_q, q)
        }
    }
}

/// Tendon spring-dampers, explicit: `τ += Jᵀ(−k·d − b·L̇)` with `d` the
/// length's distance outside the dead band; `data` holds the kinematics at
/// `q` (spatial tendons), `scratch` is a workspace.
pub(crate) fn tendon_forces(
    model: &Model,
    data: &Data,
    q: &[f64],
    v: &[f64],
    tau: &mut [f64],
    scratch: &mut Vec<(usize, f64)>,
) {
    for (i, t) in model.tendons.iter().enumerate() {
        if t.stiffness == 0.0 && t.damping == 0.0 {
            continue;
        }
        scratch.clear();
        let length = coordinate(model, Coordinate::Tendon(i), data, q, 1.0, scratch);
        let rate: f64 = scratch.iter().map(|&(k, c)| c * v[k]).sum();
        let (lo, hi) = t.spring_length;
        let stretch = if length > hi {
            length - hi
        } else if length < lo {
            length - lo
        } else {
            0.0
        };
        let force = -t.stiffness * stretch - t.damping * rate;
        for &(k, c) in scratch.iter() {
            tau[k] += c * force;
        }
    }
}
