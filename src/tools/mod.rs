//! Tooling on top of the simulator: the seed study's experiments, tables
//! and plots ([`study`]), the comparison of time-stepping with event-based
//! simulation ([`events`], `moreau compare events`), the benchmark drivers
//! ([`mod@bench`]) behind `moreau compare`, `moreau bench` and `moreau
//! bench solve`, and inverse
//! problems solved with the step Jacobians ([`inverse`]). The core
//! (everything outside `tools`) never calls into it.

pub mod bench;
pub mod events;
pub mod inverse;
pub mod locomotion;
pub mod study;
