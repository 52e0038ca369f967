//! One world of a batch: its simulator, state and inputs, where it stands
//! in the current step, and the per-world stages of a step.

use super::gradients::record_derivatives;
use crate::contact::SolverStats;
use crate::error::SimError;
use crate::sim::{Actuation, Simulator, State, StepJacobians};
use nalgebra::DVector;

/// Where a world stands in the current step.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum WorldStep {
    /// In the step, with this many contacts prepared (0 before preparation).
    Stepping { contacts: usize },
    /// Sitting out the step ([`BatchSim::step_active`]); not a failure.
    Inactive,
    /// Out of the step, with why (its state is unchanged).
    Failed(SimError),
}

impl WorldStep {
    pub(super) fn is_stepping(&self) -> bool {
        matches!(self, WorldStep::Stepping { .. })
    }

    /// Contacts of a world in the step.
    pub(super) fn contacts(&self) -> Option<usize> {
        match self {
            WorldStep::Stepping { contacts } => Some(*contacts),
            _ => None,
        }
    }
}

pub(super) struct World {
    pub(super) sim: Simulator,
    pub(super) state: State,
    /// This step's torques (nv) or, when `controls`, its controls (nu).
    pub(super) tau: Vec<f64>,
    pub(super) ctrl: Vec<f64>,
    pub(super) controls: bool,
    /// Where the world stands in this step.
    pub(super) step: WorldStep,
    /// λ of this world's problem, as f64 (GPU backend).
    pub(super) lambda: Vec<f64>,
    pub(super) stats: SolverStats,
    /// Whether the GPU flagged this world's problem (then solved on the CPU).
    pub(super) fallback: Option<String>,
    /// The step Jacobians, when asked for ([`BatchSim::step_with_jacobians`]),
    /// or the step's record for reverse mode ([`BatchSim::step_for_vjp`]).
    pub(super) jacobians: Option<StepJacobians>,
    pub(super) record: Record,
    /// The velocity the step started from (kept when recording on the GPU).
    pub(super) v0: DVector<f64>,
    /// The generalized constraint forces of the last step when it ran on
    /// the device (the host paths compute them from the world's simulator).
    pub(super) constraint_force: Option<DVector<f64>>,
    /// Rows of the last contact problem solved on the device (resident
    /// worlds with contacts; 0 otherwise).
    pub(super) device_rows: usize,
    /// Contacts the device dropped in this step for want of room (resident
    /// worlds; 0 otherwise).
    pub(super) dropped_contacts: usize,
    /// While kept ([`super::BatchSim::keep_last_start`]): `q` and `v` as
    /// the last step of the last call found them.
    pub(super) start: Option<(DVector<f64>, DVector<f64>)>,
}

impl World {
    /// Keeps the state as the step about to run finds it.
    pub(super) fn keep_start(&mut self) {
        match &mut self.start {
            Some((q, v)) => {
                q.copy_from(&self.state.q);
                v.copy_from(&self.state.v);
            }
            None => self.start = Some((self.state.q.clone(), self.state.v.clone())),
        }
    }
}

/// What a step records for its derivatives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Record {
    Nothing,
    Jacobians,
    /// For reverse mode.
    Tape,
}

/// One whole CPU step of a world that is not out of this step.
pub(super) fn step_on_cpu(world: &mut World) {
    if !world.step.is_stepping() {
        return;
    }
    let input = if world.controls {
        Actuation::Controls(&world.ctrl)
    } else {
        Actuation::Torques(&world.tau)
    };
    let stepped = match (&mut world.jacobians, input) {
        (Some(jac), Actuation::Torques(tau)) if world.record == Record::Tape => {
            world.sim.step_for_vjp(&mut world.state, tau, jac)
        }
        (Some(jac), Actuation::Torques(tau)) => {
            world.sim.step_with_jacobians(&mut world.state, tau, jac)
        }
        _ => world.sim.step_with(&mut world.state, input),
    };
    if stepped.is_err() {
        world.jacobians = None;
    }
    world.step = match stepped {
        Ok(r) => {
            if let Some(s) = r.solver {
                world.stats = s;
            }
            WorldStep::Stepping { contacts: r.nc }
        }
        Err(e) => WorldStep::Failed(e),
    };
}

/// Finishes a prepared world with the λ the GPU returned.
pub(super) fn finish_with_lambda(world: &mut World) {
    if world.step.contacts().is_none() {
        return;
    }
    let lambda: &[f64] = if world.sim.problem().m() > 0 {
        &world.lambda
    } else {
        &[]
    };
    // The derivatives at the f32 impulses, the modes read at the solve's
    // accuracy (its residual, or the tolerance it was asked for).
    let accuracy = 10.0
        * world
            .stats
            .residuals
            .eps_abs
            .max(world.sim.params.solver_settings.tolerance);
    match world.sim.finish(&mut world.state, lambda, world.stats) {
        Ok(_) => record_derivatives(world, accuracy),
        Err(e) => {
            world.jacobians = None;
            world.step = WorldStep::Failed(e);
        }
    }
}

/// Finishes a prepared world whose problem the GPU flagged, with its CPU solver.
pub(super) fn finish_on_cpu(world: &mut World) {
    match world.sim.solve_and_finish(&mut world.state) {
        Ok(r) => {
            if let Some(s) = r.solver {
                world.stats = s;
            }
            record_derivatives(world, 0.0);
        }
        Err(e) => {
            world.jacobians = None;
            world.step = WorldStep::Failed(e);
        }
    }
}
