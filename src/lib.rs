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
//! → [`batch`] (with [`gpu`]) → [`envs`]; [`events`] simulates the same
//! models event by event beside [`sim`]'s time stepping; [`load`] reads robot files
//! (the model layer's readers, then the collision layer's passes);
//! [`counters`] times the stages; [`scenes`] builds the named example
//! worlds; [`tools`] holds the seed study, the benchmark drivers and what
//! the command line needs, on top of the core.

pub mod batch;
pub mod collision;
pub mod contact;
pub mod control;
pub mod counters;
pub mod dynamics;
pub mod envs;
pub mod error;
pub mod events;
pub mod gpu;
pub mod inverse;
pub mod load;
pub mod math;
pub mod model;
pub mod scenes;
pub mod sim;
pub mod tools;

pub use error::{ModelError, ProblemError, SimError};
pub use model::{Model, ModelBuilder};
pub use sim::{SimParams, Simulator, State};
