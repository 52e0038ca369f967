//! The benchmark drivers: [`batch`], whole batch steps of a scene on every
//! backend (`moreau bench`), [`solve`], batched contact solves on the GPU
//! against one CPU core (`moreau bench solve`), and [`env`], Gymnasium's
//! tasks as an RL loop runs them (`moreau bench env`).

pub mod batch;
pub mod env;
pub mod solve;
