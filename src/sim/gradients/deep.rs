//! The variation of a penetration's compliance with the configuration
//! ([`crate::sim::SimParams::penetration_compliance`]): its
//! `R_N = α·s·h(φ)` moves with `φ` (the slope taken with the
//! stabilization's, in [`super::wrt_q`]) and with `s = Σ_r G_rr / 3` over
//! the contact's rows, `G_rr = J_r M̃⁻¹ J_rᵀ`, whose derivative is
//! `∂G_rr/∂q_k = 2 (∂J_r/∂q_k) w_r − w_rᵀ (∂M/∂q_k) w_r`, `w_r = M̃⁻¹ J_rᵀ`.

use super::super::Simulator;
use super::wrt_q::body_velocities;
use crate::dynamics::{
    Derivatives, forward_velocity, ltdl_solve_in_place, rnea_derivatives_from_kinematics,
};
use crate::math::Vec6;

/// A contact whose normal row carries a penetration's compliance.
pub(super) struct DeepContact {
    pub contact: usize,
    /// `λ_N R_N / (3 s)`: the normal row's `∂(R_N λ_N)/∂G_rr`.
    pub coef: f64,
    /// The bodies' velocities under each `w_r = M̃⁻¹ J_rᵀ`.
    pub velocities: [Vec<Vec6>; 3],
    /// `Σ_r w_rᵀ (∂M/∂q_k) w_r` for each dof `k`.
    pub dm: Vec<f64>,
}

impl Simulator {
    /// The contacts of the step just taken whose normal rows carry a
    /// penetration's compliance (none, at no cost, in most steps), with
    /// what `∂s/∂q` needs. `lambda` the step's impulses; the
    /// simulator's data still at the step's start, the problem's `G` dense.
    pub(super) fn deep_contacts(&self, lambda: &[f64]) -> Vec<DeepContact> {
        let params = self.params;
        let mut out = Vec::new();
        let (model, nv) = (&*self.model, self.model.nv);
        let mut workspace: Option<(crate::dynamics::Data, Derivatives, nalgebra::DMatrix<f64>)> =
            None;
        for (i, c) in self.contacts.iter().enumerate() {
            let n = 3 * i + 2;
            let scale =
                crate::sim::SimParams::penetration_scale(i, |r| self.problem.delassus[(r, r)]);
            let r_n = params.penetration_compliance_at(c.distance, scale);
            if r_n == 0.0 || scale <= 0.0 {
                continue;
            }
            let (data, der, base) = workspace.get_or_insert_with(|| {
                // RNEA at rest: τ = M a + g(q), so ∂τ/∂q at a = w less at
                // a = 0 is ∂(M w)/∂q.
                let mut data = self.data.clone();
                let zeros = vec![0.0; nv];
                forward_velocity(model, &mut data, &zeros);
                let mut der = Derivatives::new(model);
                rnea_derivatives_from_kinematics(model, &mut data, &mut der, &zeros);
                let base = der.dtau_dq.clone();
                (data, der, base)
            });
            let mut dm = vec![0.0; nv];
            let velocities = std::array::from_fn(|r| {
                let mut w = vec![0.0; nv];
                for &k in self.jacobian.contact_support(i) {
                    w[k] = self.jacobian.jacobian[(3 * i + r, k)];
                }
                ltdl_solve_in_place(&model.dof_parent, &self.data.ltdl, &mut w);
                rnea_derivatives_from_kinematics(model, data, der, &w);
                for (k, x) in dm.iter_mut().enumerate() {
                    *x += (0..nv)
                        .map(|j| w[j] * (der.dtau_dq[(j, k)] - base[(j, k)]))
                        .sum::<f64>();
                }
                let mut velocities = Vec::new();
                body_velocities(model, &self.data.dof_jacobian, &w, &mut velocities);
                velocities
            });
            out.push(DeepContact {
                contact: i,
                coef: lambda[n] * r_n / (3.0 * scale),
                velocities,
                dm,
            });
        }
        out
    }
}
