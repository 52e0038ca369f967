//! The compliance of penetrating contacts
//! ([`super::SimParams::penetration_compliance`]).

use super::Simulator;
use super::rows::row_delassus;

impl Simulator {
    /// Adds `R_N = α·G_NN·e² / (e² + D²)` to the normal row of every
    /// contact whose bodies overlap by more than `d₀` (`e = −φ − d₀`; after the problem's `G`, or
    /// its factors on the tree path, and the other compliances are set).
    pub(super) fn regularize_penetrations(&mut self) {
        let params = self.params;
        if params.penetration_compliance == 0.0 {
            return;
        }
        for (i, c) in self.contacts.iter().enumerate() {
            if -c.distance <= super::PENETRATION_COMPLIANCE_ONSET {
                continue;
            }
            let n = 3 * i + 2;
            let gnn = if self.tree {
                let j = &self.jacobian;
                let row = j
                    .contact_support(i)
                    .iter()
                    .map(|&k| (k, j.jacobian[(n, k)]));
                row_delassus(&self.model, &self.data, row, self.scratch.as_mut_slice())
            } else {
                self.problem.delassus[(n, n)]
            };
            self.problem.compliance[n] += params.penetration_compliance_at(c.distance, gnn);
        }
    }
}
