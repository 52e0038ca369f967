//! The derivative with respect to `q` at fixed impulses (see the parent
//! module's doc): `X = ∂v⁺/∂q` and `C = ∂c/∂q`, from the motion columns'
//! derivatives and the contacts' variations.

use super::super::{SimParams, Simulator};
use super::{StepJacobians, small};
use crate::math::{Vec3, Vec6, ang, force_cross, lin, motion_cross, spatial};
use crate::model::Model;
use nalgebra::{DMatrix, DVector};

impl Simulator {
    /// With constraints: writes `X = ∂v⁺/∂q` at fixed λ into `out.dv_dq`,
    /// `M̃⁻¹ (∂(Jᵀλ)/∂q − dt (∂τ/∂q + K))` (the derivatives' `dtau_dq`
    /// holding `∂τ/∂q + K`), and `C = ∂c/∂q` at fixed λ into
    /// `out.wrt_q_work.dc` (see the module doc). Every contact's geometry
    /// is known (checked by the caller).
    pub(super) fn constrained_wrt_q(&self, v0: &DVector<f64>, out: &mut StepJacobians) {
        let model = &*self.model;
        let (nv, nb, dt, params) = (model.nv, model.nbodies, self.params.dt, self.params);
        let data = &self.data;
        let s = &data.dof_jacobian;
        let j = &self.jacobian.jacobian;
        let lambda = &self.solution.lambda;
        let (nc, m) = (self.contacts.len(), self.problem.m());
        let w = &mut out.wrt_q_work;
        w.supports.clear();
        w.supports.resize(nb * nv, false);
        for b in 1..nb {
            for k in model.support_dofs(b) {
                w.supports[b * nv + k] = true;
            }
        }
        body_velocities(model, s, self.v_next.as_slice(), &mut w.vel_next);
        body_velocities(model, s, v0.as_slice(), &mut w.vel_prev);
        // The contacts' world forces, the wrenches on the bodies' subtrees,
        // and the stabilization's slope in φ.
        w.wrench.clear();
        w.wrench.resize(nb, Vec6::zeros());
        w.force.clear();
        w.slope.clear();
        if w.dphi.shape() != (self.contacts.len(), nv) {
            w.dphi = DMatrix::zeros(self.contacts.len(), nv);
        }
        w.dphi.fill(0.0);
        let impact_rows = &out.impacts;
        for (i, c) in self.contacts.iter().enumerate() {
            let f = c.frame * Vec3::new(lambda[3 * i], lambda[3 * i + 1], lambda[3 * i + 2]);
            let wrench = spatial(&f, &c.point.cross(&f));
            w.wrench[c.body_a] += wrench;
            w.wrench[c.body_b] -= wrench;
            w.force.push(f);
            let impact = impact_rows.iter().any(|&(row, _)| row == 3 * i + 2);
            // A penetration's compliance R_N(φ) λ_N varies with φ too.
            let n = 3 * i + 2;
            let scale = SimParams::penetration_scale(i, |r| self.problem.delassus[(r, r)]);
            w.slope.push(if c.distance < 0.0 {
                params.recovery_slope(c.distance)
                    + lambda[n] * params.penetration_compliance_slope(c.distance, scale)
            } else if impact {
                0.0
            } else {
                1.0 / dt
            });
        }
        subtree_sums(model, &mut w.wrench);
        if w.djtl.shape() != (nv, nv) {
            w.djtl = DMatrix::zeros(nv, nv);
        }
        if w.dc.shape() != (m, nv) {
            w.dc = DMatrix::zeros(m, nv);
        }
        w.dc.fill(0.0);
        // ∂(Jᵀλ)_j/∂q_k = S_j·δW_sub(j) + (S_k × S_j)·W_sub(j) where k
        // supports j's body (W_sub(j) the contact wrench on the subtree of
        // j's body, δW_sub(j) its change), = S_j·(δW_sub(j) − S_k ×*
        // W_sub(j)) since (a ×)ᵀ = −(a ×*). The transport term per pair
        // (j, k) here; each contact's δW below, on the dofs supporting its
        // bodies.
        w.djtl.fill(0.0);
        for (jj, sj) in s.iter().enumerate().take(nv) {
            let wb = &w.wrench[model.dof_body[jj]];
            for k in model.support_dofs(model.dof_body[jj]) {
                w.djtl[(jj, k)] = -sj.dot(&force_cross(&s[k], wb));
            }
        }
        let mut diagonal = self.diagonal_variation(lambda.as_slice());
        let zero = Vec6::zeros();
        for k in 0..nv {
            let parent = model.body_parent[model.dof_body[k]];
            for (i, c) in self.contacts.iter().enumerate() {
                let (on_a, on_b) = (w.supports[c.body_a * nv + k], w.supports[c.body_b * nv + k]);
                if !on_a && !on_b {
                    continue;
                }
                let (xi_a, xi_b) = (
                    if on_a { &s[k] } else { &zero },
                    if on_b { &s[k] } else { &zero },
                );
                let var = c
                    .variation(xi_a, xi_b)
                    .expect("contact geometries checked by the caller");
                // ∂(J u)/∂q_k for u = v⁺ (all rows) and u = v (the
                // restitution term of the normal row).
                let dvel = |vel: &[Vec6]| -> (Vec3, Vec3) {
                    let mut rel = Vec3::zeros();
                    let mut drel = Vec3::zeros();
                    for (body, sign, on) in [(c.body_a, 1.0, on_a), (c.body_b, -1.0, on_b)] {
                        let v = &vel[body];
                        rel += (lin(v) + ang(v).cross(&c.point)) * sign;
                        // ∂V_body/∂q_k = S_k × (V_body − V_parent(k)).
                        let mut d = ang(v).cross(&var.point) * sign;
                        if on {
                            let dv = motion_cross(&s[k], &(v - vel[parent]));
                            d += (lin(&dv) + ang(&dv).cross(&c.point)) * sign;
                        }
                        drel += d;
                    }
                    (rel, drel)
                };
                let (rel, drel) = dvel(&w.vel_next);
                for r in 0..3 {
                    w.dc[(3 * i + r, k)] +=
                        var.frame.column(r).dot(&rel) + c.frame.column(r).dot(&drel);
                }
                w.dc[(3 * i + 2, k)] += w.slope[i] * var.distance;
                // The compliances' G_rr: 2 (∂J_r/∂q_k) w_r for each of the
                // contact's rows r that one depends on.
                for r in 0..3 {
                    if let Some(s) = diagonal.slot.get(3 * i + r).copied().flatten() {
                        let (rel, drel) = dvel(&diagonal.velocities[s]);
                        diagonal.dg[(s, k)] +=
                            2.0 * (var.frame.column(r).dot(&rel) + c.frame.column(r).dot(&drel));
                    }
                }
                w.dphi[(i, k)] = var.distance;
                if let Some(&(_, e)) = impact_rows.iter().find(|&&(row, _)| row == 3 * i + 2) {
                    let (rel, drel) = dvel(&w.vel_prev);
                    w.dc[(3 * i + 2, k)] +=
                        e * (var.frame.column(2).dot(&rel) + c.frame.column(2).dot(&drel));
                }
                // The wrench's change: δf = δR λ, δ(p × f) = δp × f + p × δf.
                let l = Vec3::new(lambda[3 * i], lambda[3 * i + 1], lambda[3 * i + 2]);
                let df = var.frame * l;
                let dw = spatial(&df, &(var.point.cross(&w.force[i]) + c.point.cross(&df)));
                for (body, sign) in [(c.body_a, 1.0), (c.body_b, -1.0)] {
                    for jj in model.support_dofs(body) {
                        w.djtl[(jj, k)] += sign * s[jj].dot(&dw);
                    }
                }
            }
        }
        self.add_diagonal_variation(&diagonal, lambda.as_slice(), &mut w.dc);
        // X = M̃⁻¹ (∂(Jᵀλ)/∂q − dt (∂τ/∂q + K)).
        let der = out.derivatives.as_ref().expect("built by the caller");
        for (x, &y) in w.djtl.as_mut_slice().iter_mut().zip(der.dtau_dq.as_slice()) {
            *x -= dt * y;
        }
        small::gemm(&mut out.dv_dq, 1.0, &der.ddq_dtau, &w.djtl, 0.0);
        // C = ∂J/∂q v⁺ + ∂s/∂q + e ∂J_N/∂q v (above) + J X.
        small::gemm(&mut w.dc, 1.0, j, &out.dv_dq, 1.0);
        for (l, limit) in self.limits.iter().enumerate() {
            let d = limit.distance;
            let slope = if d >= 0.0 {
                1.0 / dt
            } else {
                params.recovery_slope(d)
            };
            // The distance to the stop is ±(q − stop).
            w.dc[(3 * nc + l, limit.dof)] += slope * limit.sign();
        }
    }

    /// The normal rows of the contacts whose `g` carried restitution at
    /// the step from `v0` (as stage 3 decided), with their coefficient.
    pub(super) fn impacts(&self, v0: &DVector<f64>, out: &mut Vec<(usize, f64)>) {
        let j = &self.jacobian.jacobian;
        let dt = self.params.dt;
        out.clear();
        for (i, c) in self.contacts.iter().enumerate() {
            let row = 3 * i + 2;
            let vn: f64 = (0..self.model.nv).map(|k| j[(row, k)] * v0[k]).sum();
            if c.restitution > 0.0
                && vn < -self.params.bounce_velocity
                && c.distance + vn * dt <= 0.0
            {
                out.push((row, c.restitution));
            }
        }
    }
}

/// Spatial velocity (world frame, at the origin) of each body under the
/// generalized velocity `u`, from the dofs' world motion columns `s`.
pub(crate) fn body_velocities(model: &Model, s: &[Vec6], u: &[f64], out: &mut Vec<Vec6>) {
    out.clear();
    out.resize(model.nbodies, Vec6::zeros());
    for b in 1..model.nbodies {
        let mut v = out[model.body_parent[b]];
        let first = model.joint_idx_v[b];
        for k in first..first + model.joint_type[b].nv() {
            v += s[k] * u[k];
        }
        out[b] = v;
    }
}

/// Replaces each body's wrench by the sum over its subtree.
fn subtree_sums(model: &Model, wrench: &mut [Vec6]) {
    for b in (1..model.nbodies).rev() {
        let w = wrench[b];
        wrench[model.body_parent[b]] += w;
    }
}
