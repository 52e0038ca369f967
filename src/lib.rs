//! # moreau
//!
//! A batched rigid-body contact simulator for robotics. This crate holds the
//! f64 CPU reference path: the model of articulated rigid bodies, its
//! dynamics, collision detection, the frictional contact problem and its
//! solvers, and the time-stepping loop. `ARCHITECTURE.md` maps the code:
//! the stages of a step, the layers, the CPU/GPU twin rule.
//!
//! The pipeline, module by module, in the order data flows through it:
//! [`math`] → [`model`] → [`dynamics`] → [`collision`] → [`contact`] → [`sim`]
//! → [`batch`] (with [`gpu`]) → [`envs`]; [`inverse`] solves inverse
//! dynamics with rigid contact on [`sim`]'s step; [`load`] reads robot files
//! (the model layer's readers, then the collision layer's passes);
//! [`counters`] times the stages; [`scenes`] builds the named example
//! worlds. The experiments, the benchmark drivers and the `moreau` command
//! line live in the `moreau-lab` crate of the workspace (`lab/`), which
//! depends on this one and never the other way round.

pub mod batch;
pub mod collision;
pub mod contact;
pub mod counters;
pub mod dynamics;
pub mod envs;
pub mod error;
pub mod gpu;
pub mod inverse;
pub mod load;
pub mod math;
pub mod model;
pub mod render;
pub mod scenes;
pub mod sim;

pub use error::{ModelError, ProblemError, SimError};
pub use model::{Model, ModelBuilder};
pub use sim::{SimParams, Simulator, State};
