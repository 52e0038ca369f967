//! The variation of the compliances that depend on the configuration
//! through the Delassus matrix's diagonal: [`crate::sim::SimParams::compliance`]
//! (`R_k = α G_kk` on every row) and a penetration's
//! ([`crate::sim::SimParams::penetration_compliance`], `R_N = α_p·s·h(φ)`
//! on a contact's normal row, `s` the mean of its rows' `G_kk`; its slope
//! in `φ` is taken with the stabilization's, in [`super::wrt_q`]). Each
//! `G_kk = J_k M̃⁻¹ J_kᵀ` varies as `∂G_kk/∂q_j = 2 (∂J_k/∂q_j) w_k −
//! w_kᵀ (∂M/∂q_j) w_k`, `w_k = M̃⁻¹ J_kᵀ`: the second term here, the first
//! (a contact row's, from the contact's variation) added by
//! [`super::wrt_q`] into [`DiagonalVariation::dg`].

use super::super::{SimParams, Simulator};
use super::wrt_q::body_velocities;
use crate::dynamics::{
    Derivatives, forward_velocity, ltdl_solve_in_place, rnea_derivatives_from_kinematics,
};
use crate::math::Vec6;
use nalgebra::DMatrix;

/// The rows whose `G_kk` the step's compliances depend on, with what
/// `∂G_kk/∂q` needs.
#[derive(Default)]
pub(super) struct DiagonalVariation {
    /// Each row's slot (`None`: not needed), by problem row.
    pub slot: Vec<Option<usize>>,
    /// The bodies' velocities under each needed contact row's `w_k`, by slot
    /// (empty for a limit row, whose `J` does not vary).
    pub velocities: Vec<Vec<Vec6>>,
    /// `∂G_kk/∂q` by slot (`slots × nv`): `− w_kᵀ (∂M/∂q_j) w_k` until the
    /// caller adds `2 (∂J_k/∂q_j) w_k`.
    pub dg: DMatrix<f64>,
    /// By contact, its normal row's `∂(R_N λ_N)/∂G_rr = λ_N R_N / (3 s)`
    /// for each of its rows `r` (0 without a penetration's compliance).
    pub penetration: Vec<f64>,
}

impl Simulator {
    /// The rows of the step just taken whose compliance varies with `G_kk`
    /// (none, at no cost, in a step without [`SimParams::compliance`] or
    /// a penetration past its onset). `lambda` the step's impulses; the
    /// simulator's data still at the step's start, the problem's `G` dense.
    pub(super) fn diagonal_variation(&self, lambda: &[f64]) -> DiagonalVariation {
        let (model, nv, nc) = (&*self.model, self.model.nv, self.contacts.len());
        let m = self.problem.m();
        let params = self.params;
        let penetration: Vec<f64> = (self.contacts.iter().enumerate())
            .map(|(i, c)| {
                let s = SimParams::penetration_scale(i, |r| self.problem.delassus[(r, r)]);
                let r_n = params.penetration_compliance_at(c.distance, s);
                if r_n > 0.0 && s > 0.0 {
                    lambda[3 * i + 2] * r_n / (3.0 * s)
                } else {
                    0.0
                }
            })
            .collect();
        let mut slot = vec![None; m];
        let mut rows = Vec::new();
        for k in 0..m {
            let deep = k < 3 * nc && penetration[k / 3] != 0.0;
            if params.compliance > 0.0 || deep {
                slot[k] = Some(rows.len());
                rows.push(k);
            }
        }
        if rows.is_empty() {
            return DiagonalVariation {
                slot,
                penetration,
                ..Default::default()
            };
        }
        // RNEA at rest: τ = M a + g(q), so ∂τ/∂q at a = w less at a = 0 is
        // ∂(M w)/∂q.
        let mut data = self.data.clone();
        let zeros = vec![0.0; nv];
        forward_velocity(model, &mut data, &zeros);
        let mut der = Derivatives::new(model);
        rnea_derivatives_from_kinematics(model, &mut data, &mut der, &zeros);
        let base = der.dtau_dq.clone();
        let mut dg = DMatrix::zeros(rows.len(), nv);
        let mut velocities = Vec::with_capacity(rows.len());
        let j = &self.jacobian;
        for (s, &k) in rows.iter().enumerate() {
            let mut w = vec![0.0; nv];
            if k < 3 * nc {
                for &dof in j.contact_support(k / 3) {
                    w[dof] = j.jacobian[(k, dof)];
                }
            } else {
                let limit = &self.limits[k - 3 * nc];
                w[limit.dof] = limit.sign();
            }
            ltdl_solve_in_place(&model.dof_parent, &self.data.ltdl, &mut w);
            rnea_derivatives_from_kinematics(model, &mut data, &mut der, &w);
            for q in 0..nv {
                dg[(s, q)] = -(0..nv)
                    .map(|a| w[a] * (der.dtau_dq[(a, q)] - base[(a, q)]))
                    .sum::<f64>();
            }
            let mut v = Vec::new();
            if k < 3 * nc {
                body_velocities(model, &self.data.dof_jacobian, &w, &mut v);
            }
            velocities.push(v);
        }
        DiagonalVariation {
            slot,
            velocities,
            dg,
            penetration,
        }
    }

    /// Adds the compliances' `∂(R λ)/∂q` through `∂G_kk/∂q` (`var`
    /// complete) to `dc` (`m × nv`).
    pub(super) fn add_diagonal_variation(
        &self,
        var: &DiagonalVariation,
        lambda: &[f64],
        dc: &mut DMatrix<f64>,
    ) {
        let alpha = self.params.compliance;
        for (k, s) in var.slot.iter().enumerate() {
            let Some(s) = *s else { continue };
            // R_k = α G_kk; a contact row's G_kk in its normal row's
            // R_N = α_p s h(φ), s = Σ_r G_rr / 3.
            let own = alpha * lambda[k];
            // (`penetration` has one entry per contact: none for limit rows.)
            let normal = var.penetration.get(k / 3).copied().unwrap_or(0.0);
            for q in 0..dc.ncols() {
                dc[(k, q)] += own * var.dg[(s, q)];
                if normal != 0.0 {
                    dc[(k / 3 * 3 + 2, q)] += normal * var.dg[(s, q)];
                }
            }
        }
    }
}
