//! The variation of a penetration's compliance with the configuration
//! ([`crate::sim::SimParams::penetration_compliance`]): its
//! `R_N = α·G_NN·h(φ)` moves with `φ` (the slope taken with the
//! stabilization's, in [`super::wrt_q`]) and with `G_NN = J_N M̃⁻¹ J_Nᵀ`,
//! whose derivative is `∂G_NN/∂q_k = 2 (∂J_N/∂q_k) w − wᵀ (∂M/∂q_k) w`,
//! `w = M̃⁻¹ J_Nᵀ`.

use super::super::Simulator;
use super::wrt_q::body_velocities;
use crate::dynamics::{
    Derivatives, forward_velocity, ltdl_solve_in_place, rnea_derivatives_from_kinematics,
};
use crate::math::Vec6;

/// A contact whose normal row carries a penetration's compliance.
pub(super) struct DeepContact {
    pub contact: usize,
    /// `λ_N R_N / G_NN`: the row's `∂(R_N λ_N)/∂G_NN`.
    pub coef: f64,
    /// The bodies' velocities under `w = M̃⁻¹ J_Nᵀ`.
    pub velocities: Vec<Vec6>,
    /// `wᵀ (∂M/∂q_k) w` for each dof `k`.
    pub dm: Vec<f64>,
}

impl Simulator {
    /// The contacts of the step just taken whose normal rows carry a
    /// penetration's compliance (none, at no cost, in most steps), with
    /// what `∂G_NN/∂q` needs. `lambda` the step's impulses; the
    /// simulator's data still at the step's start, the problem's `G` dense.
    pub(super) fn deep_contacts(&self, lambda: &[f64]) -> Vec<DeepContact> {
        let params = self.params;
        let mut out = Vec::new();
        let (model, nv) = (&*self.model, self.model.nv);
        let mut workspace: Option<(crate::dynamics::Data, Derivatives, nalgebra::DMatrix<f64>)> =
            None;
        for (i, c) in self.contacts.iter().enumerate() {
            let n = 3 * i + 2;
            let gnn = self.problem.delassus[(n, n)];
            let r = params.penetration_compliance_at(c.distance, gnn);
            if r == 0.0 || gnn <= 0.0 {
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
            let mut w = vec![0.0; nv];
            for &k in self.jacobian.contact_support(i) {
                w[k] = self.jacobian.jacobian[(n, k)];
            }
            ltdl_solve_in_place(&model.dof_parent, &self.data.ltdl, &mut w);
            rnea_derivatives_from_kinematics(model, data, der, &w);
            let dm = (0..nv)
                .map(|k| {
                    (0..nv)
                        .map(|j| w[j] * (der.dtau_dq[(j, k)] - base[(j, k)]))
                        .sum()
                })
                .collect();
            let mut velocities = Vec::new();
            body_velocities(model, &self.data.dof_jacobian, &w, &mut velocities);
            out.push(DeepContact {
                contact: i,
                coef: lambda[n] * r / gnn,
                velocities,
                dm,
            });
        }
        out
    }
}
