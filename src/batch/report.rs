//! A step's per-world outcomes, summed into its report.

use super::{World, WorldStep};
use crate::error::SimError;

/// The worlds' outcomes of a step, summed (see `BatchStepReport`).
#[derive(Default)]
pub(super) struct Tally {
    pub(super) contacts: usize,
    pub(super) max_contacts: usize,
    pub(super) worlds_solved: usize,
    pub(super) iterations: usize,
    pub(super) newton_steps: usize,
    pub(super) finished: usize,
    pub(super) max_eps_abs: f64,
    pub(super) unconverged: usize,
    pub(super) at_floor: usize,
    pub(super) fallbacks: Vec<(usize, String)>,
    pub(super) failed: Vec<(usize, SimError)>,
    pub(super) overflowed_worlds: usize,
    pub(super) dropped_contacts: usize,
}

impl Tally {
    pub(super) fn add(&mut self, w: usize, world: &World) {
        match &world.step {
            // (A resident step solves on the device: the world's simulator
            // holds no problem.)
            WorldStep::Stepping { contacts: nc } => {
                self.contacts += nc;
                self.max_contacts = self.max_contacts.max(*nc);
                if world.sim.problem().m() > 0 || world.device_rows > 0 {
                    self.worlds_solved += 1;
                    self.iterations += world.stats.iterations;
                    self.newton_steps += world.stats.newton_steps;
                    self.finished += usize::from(world.stats.polishes > 0);
                    let at_floor = world.stats.at_floor();
                    self.at_floor += usize::from(at_floor);
                    self.unconverged += usize::from(!world.stats.converged && !at_floor);
                    self.max_eps_abs = self.max_eps_abs.max(world.stats.residuals.eps_abs);
                }
            }
            WorldStep::Failed(why) => self.failed.push((w, why.clone())),
            WorldStep::Inactive => {}
        }
        if let Some(why) = &world.fallback {
            self.fallbacks.push((w, why.clone()));
        }
        self.overflowed_worlds += usize::from(world.dropped_contacts > 0);
        self.dropped_contacts += world.dropped_contacts;
    }

    pub(super) fn merge(mut self, other: Tally) -> Tally {
        self.contacts += other.contacts;
        self.max_contacts = self.max_contacts.max(other.max_contacts);
        self.worlds_solved += other.worlds_solved;
        self.iterations += other.iterations;
        self.newton_steps += other.newton_steps;
        self.finished += other.finished;
        self.unconverged += other.unconverged;
        self.at_floor += other.at_floor;
        self.max_eps_abs = self.max_eps_abs.max(other.max_eps_abs);
        self.failed.extend(other.failed);
        self.fallbacks.extend(other.fallbacks);
        self.overflowed_worlds += other.overflowed_worlds;
        self.dropped_contacts += other.dropped_contacts;
        self
    }
}
