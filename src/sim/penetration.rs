//! The compliance of penetrating contacts
//! ([`super::SimParams::penetration_compliance`]).

use super::rows::row_delassus;
use super::{SimParams, Simulator};

impl Simulator {
    /// Adds `R_N = α·s·e² / (e² + D²)` to the normal row of every
    /// contact whose bodies overlap by more than `d₀` (`e = −φ − d₀`, `s =
    /// tr G_c / 3`; after the problem's `G`, or
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
            let (j, w) = (&self.jacobian, self.scratch.as_mut_slice());
            let s = SimParams::penetration_scale(i, |r| {
                if self.tree {
                    let row = j
                        .contact_support(i)
                        .iter()
                        .map(|&k| (k, j.jacobian[(r, k)]));
                    row_delassus(&self.model, &self.data, row, w)
                } else {
                    self.problem.delassus[(r, r)]
                }
            });
            self.problem.compliance[3 * i + 2] += params.penetration_compliance_at(c.distance, s);
        }
    }
}
