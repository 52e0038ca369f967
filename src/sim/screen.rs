//! Contacts set aside before the solve ([`crate::sim::SimParams::screen_contacts`]).
//!
//! The detector reports every pair within the contact margin (5 mm by
//! default), so that a gap closing within a step is caught before it
//! penetrates: its row asks `c_N = J_N v⁺ + φ/dt ≥ 0`. Most such contacts
//! are open and stay open (a drawer 2 mm inside its case, a finger near a
//! pad, a dog's toe capsules beside the one that touches): they end with
//! `λ = 0`, yet every one of them adds three rows to the problem, and the
//! rows of one body's many contacts make `G` singular.
//!
//! A contact whose gap the free motion alone does not close (`φ` over a
//! tenth of the margin and `J_N v_f + φ/dt > 0`) and that did not push in
//! the last step (a box resting on another that falls with it under the
//! free motion stays in) is set aside before the problem is built. After
//! the solve, each one set aside is checked at the answer's velocity: with
//! `λ = 0` it satisfies the NCP (Signorini, and Coulomb's law with the de
//! Saxcé correction, whose dual-cone condition at `λ = 0` reduces to `c_N
//! ≥ 0`) exactly when `c_N ≥ 0`. Those with `c_N` below minus the solver's
//! tolerance (another contact's impulse closes their gap) are taken back
//! and the problem solved again, warm-started from the answer; so the
//! step's answer solves the whole problem, as one with every contact
//! would, to the solver's tolerance. Only the NCP's solvers (the CCP's and
//! LCP's laws ask more of an open contact's tangential velocity), only on
//! the simulator's own solve (not the GPU's), and not in steps that are
//! differentiated (a contact set aside would hide its kinks from
//! [`super::kinks`]).

use super::gradients::wrt_q::body_velocities;
use super::{Simulator, State};
use crate::collision::Contact;
use crate::contact::Law;
use crate::math::{Vec3, Vec6, ang, lin};

/// `c_N` of contact `c` at the bodies' velocities `v`: `J_N u + φ/dt`
/// (the row's sign: body a's point velocity minus body b's, along the
/// contact's normal).
fn normal_velocity(v: &[Vec6], c: &Contact, dt: f64) -> f64 {
    let at = |b: usize| lin(&v[b]) + ang(&v[b]).cross(&c.point);
    let n: Vec3 = c.frame.column(2).into_owned();
    n.dot(&(at(c.body_a) - at(c.body_b))) + c.distance / dt
}

/// The smallest gap set aside, as a share of the contact margin (0.5 mm by
/// default). A resting contact's gap is rounding (`|φ| < 1e-9` m on the
/// piles); one whose impulse came out zero in a solve (a redundant corner
/// of a pile at a loose tolerance) would otherwise be set aside and taken
/// back step after step, each time solving twice (the built-in pyramid
/// at `--tol 1e-6`: 3.3× slower, 2026-12-07).
const MIN_GAP: f64 = 0.1;

impl Simulator {
    /// Whether this step sets contacts aside (see the module doc).
    fn screens(&self) -> bool {
        self.params.screen_contacts
            && !self.keep_all_contacts
            && self.params.solver.spec().law == Some(Law::Ncp)
    }

    /// Moves the open contacts of the step into `self.screened` (after
    /// collision and the free velocity; the others keep their order).
    pub(super) fn screen_contacts(&mut self) {
        if !self.screens() || self.contacts.is_empty() {
            return;
        }
        let (model, dt) = (&*self.model, self.params.dt);
        body_velocities(
            model,
            &self.data.dof_jacobian,
            self.v_free.as_slice(),
            &mut self.screen_body_v,
        );
        let (body_v, warm, screened) = (&self.screen_body_v, &self.warm, &mut self.screened);
        let min_gap = MIN_GAP * self.params.contact_margin;
        self.contacts.retain(|c| {
            // (A contact that pushed in the last step stays: a box resting
            // on a box falling with it opens under the free motion alone,
            // and would be taken back after every solve.)
            let pushed = warm.get(&c.key).is_some_and(|l| *l != Vec3::zeros());
            let open = !pushed && c.distance > min_gap && normal_velocity(body_v, c, dt) > 0.0;
            if open {
                screened.push(*c);
            }
            !open
        });
    }

    /// After a solve (or none, where every contact was set aside and no
    /// other row remains): takes back the contacts set aside that the
    /// answer's velocity would violate and builds the problem again with
    /// them (true: solve again), or leaves the step as it is (false).
    pub(super) fn readmit_violated(&mut self, state: &State) -> bool {
        if self.screened.is_empty() {
            return false;
        }
        if self.problem.m() > 0 {
            self.velocity_update();
        }
        let (model, dt) = (&*self.model, self.params.dt);
        let tolerance = self.params.solver_settings.tolerance;
        let velocity = if self.problem.m() > 0 {
            &self.v_next
        } else {
            &self.v_free
        };
        body_velocities(
            model,
            &self.data.dof_jacobian,
            velocity.as_slice(),
            &mut self.screen_body_v,
        );
        let before = self.contacts.len();
        let body_v = &self.screen_body_v;
        let contacts = &mut self.contacts;
        self.screened.retain(|c| {
            let violated = normal_velocity(body_v, c, dt) < -tolerance;
            if violated {
                contacts.push(*c);
            }
            !violated
        });
        if self.contacts.len() == before {
            return false;
        }
        self.taken_back += self.contacts.len() - before;
        // The rows that name contacts (their cone rows) and the problem,
        // again: the answer is the warm start of the kept ones.
        self.gather_rows(state);
        let m = 3 * self.contacts.len() + self.limits.len() + self.rows.len();
        self.tree = self.solver.solves_tree() && self.params.delassus.tree(m, self.model.nv);
        self.assemble_problem(state);
        true
    }

    /// `step` keeping every contact the detector reports (the
    /// differentiated steps).
    pub(super) fn keeping_all_contacts<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> T {
        let kept = std::mem::replace(&mut self.keep_all_contacts, true);
        let out = f(self);
        self.keep_all_contacts = kept;
        out
    }
}
