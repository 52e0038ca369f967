//! Tooling on top of the simulator: the seed study's experiments, tables
//! and plots ([`study`]), and the benchmark drivers ([`mod@bench`]) behind
//! `moreau compare`, `moreau bench` and `moreau bench solve`. The core
//! (everything outside `tools`) never calls into it.

pub mod bench;
pub mod study;
