//! The benchmark drivers: [`batch`], whole batch steps of a scene on every
//! backend (`moreau bench`), and [`solve`], batched contact solves on the
//! GPU against one CPU core (`moreau bench solve`).

pub mod batch;
pub mod solve;
