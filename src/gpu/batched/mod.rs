//! The batched solves of host-prepared problems: the packed batch layout
//! (`batch`, its flags and its output), the kernel trait (`kernel`), the
//! kernels (`pgs`, `admm`) and their registry, the sources they are
//! compiled from (`shader`), the solver that uploads, dispatches and reads
//! back (`solver`; its resident mode solves the problems resident worlds
//! write in place), and the f32 CPU twin (`cpu_f32`). See [`crate::gpu`].

pub mod admm;
pub mod batch;
pub mod cpu_f32;
mod flags;
pub mod kernel;
mod output;
pub mod pgs;
pub mod registry;
pub mod shader;
mod solver;

pub use output::{BatchOutput, ProblemOutput};
pub use solver::{GpuSolver, Submission, check_capacity};
