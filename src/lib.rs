//! # moreau
//!
//! A batched rigid-body contact simulator for robotics. This crate holds the
//! f64 CPU reference path: the model of articulated rigid bodies, its
//! dynamics, collision detection, the frictional contact problem and its
//! solvers, and the time-stepping loop. `ARCHITECTURE.md` maps the code:
//! the stages of a step, the layers, the CPU/GPU twin rule.
//!
//! The pipeline, module by module, in the order data flows through it:
//! [`math`] → [`model`] → [`dynamics`] → [`collision`] → [`contact`] → [`sim`];
//! [`scenes`] builds the named example worlds; [`study`] runs the seed
//! study's experiments on them.

pub mod batch;
pub mod collision;
pub mod contact;
pub mod counters;
pub mod dynamics;
pub mod envs;
pub mod error;
pub mod gpu;
pub mod math;
pub mod model;
pub mod scenes;
pub mod sim;
pub mod tools;

pub use error::{ModelError, ProblemError, SimError};
pub use model::{Model, ModelBuilder};
pub use sim::{SimParams, Simulator, State};
