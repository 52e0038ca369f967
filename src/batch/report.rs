//! A step's per-world outcomes, summed into its report.

use super::{World, WorldStep};
use crate::counters::BatchTimes;
use crate::error::SimError;
use crate::gpu::BatchCapacity;

/// What one batch step did.
#[derive(Clone, Debug, Default)]
pub struct BatchStepReport {
    /// Contacts over all worlds, and the most in one world.
    pub contacts: usize,
    pub max_contacts: usize,
    /// Worlds whose step solved a constraint problem (contacts or active
    /// joint limits).
    pub worlds_solved: usize,
    /// Solver iterations summed over the solves, and the largest final `ε_abs`.
    pub iterations: usize,
    pub max_eps_abs: f64,
    /// `ncp-admm`: semismooth Newton steps summed over the solves (each a
    /// dense LU of the problem), and the solves an active-set polish or
    /// Newton's steps ended ([`crate::contact::SolverStats::polishes`]): where the solve's
    /// time goes when `iterations` is 0.
    pub newton_steps: usize,
    pub finished: usize,
    /// Solves that stopped at their iteration cap, short of their
    /// tolerance and of f32's floor.
    pub unconverged: usize,
    /// f32 solves (the GPU's ADMM) that stopped short of their tolerance
    /// within [`crate::contact::criteria::FLOOR_STALL_FACTOR`] of f32's floor
    /// under `ε_abs` ([`crate::contact::SolverStats::at_floor`]): as far as f32 goes.
    pub at_floor: usize,
    /// GPU problems solved on the CPU instead (flagged by the GPU), with why.
    pub fallbacks: Vec<(usize, String)>,
    /// Whether the GPU buffers grew in this step (and to what capacity).
    pub grew: Option<BatchCapacity>,
    /// Worlds that did not step (non-finite actions, a failed step), with
    /// why; their state is unchanged.
    pub failed: Vec<(usize, SimError)>,
    /// Resident worlds (the `gpu` backend on the device) whose step found
    /// more contacts than the world has room for
    /// ([`crate::gpu::resident::contacts::MOVING_CONTACT_CAPACITY`]), and
    /// the contacts dropped over them: the deepest were kept. Over every
    /// physics step of the call (a frame skip's included).
    pub overflowed_worlds: usize,
    pub dropped_contacts: usize,
    pub times: BatchTimes,
}

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
