//! # moreau-lab
//!
//! The experiments and the tooling built on the `moreau` library, and the
//! `moreau` command line (`src/bin/moreau/`, one file per command). The
//! library never depends on this crate; `ARCHITECTURE.md` says what lives
//! on which side and why.
//!
//! - [`study`]: the seed study's experiments, tables and plots (`moreau
//!   compare`);
//! - [`events`]: event-based simulation ([`events::EventSim`]) and its
//!   comparison with time stepping ([`events::compare`], `moreau compare
//!   events`);
//! - [`control`] and [`locomotion`]: the trot controller and its
//!   experiments (`moreau compare locomotion`);
//! - [`inverse_problems`]: inverse problems solved with the step Jacobians;
//! - [`ars`]: augmented random search on the library's RL tasks;
//! - [`mod@bench`]: the benchmark drivers behind `moreau bench` and `moreau
//!   bench solve`;
//! - [`video`]: rendered frames as GIF or MP4 (`moreau run --video`).

pub mod ars;
pub mod bench;
pub mod control;
pub mod events;
pub mod inverse_problems;
pub mod locomotion;
pub mod study;
pub mod video;
