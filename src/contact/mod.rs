//! The frictional contact problem and its solvers.
//!
//! A [`ContactProblem`] is what every solver sees: the Delassus matrix
//! `G = J M⁻¹ Jᵀ`, the free contact velocity `g`, the friction coefficients, an
//! optional diagonal compliance `R` and a warm start. Solvers never read the
//! model.

pub mod cone;
pub mod criteria;
pub mod delassus;
pub mod io;
pub mod lemke;
pub mod linalg;
pub mod operator;
pub(crate) mod problem;
pub mod random;
pub mod sensitivity;
pub mod solvers;
pub mod tree;
pub mod wide;

pub use criteria::{
    ContactModel, ContactPhysics, Evaluation, PhysicsCriteria, Residuals, contact_physics,
    contact_power, contact_residuals, evaluate, model_residuals, ncp_residuals, physics,
    rows_residuals,
};
pub use delassus::{
    ContactJacobian, JointLimitRow, LimitSide, SparseRows, constraint_jacobian, contact_jacobian,
    delassus_dense, delassus_ltdl, delassus_ltdl_coupled,
};
pub use lemke::{LemkeError, LemkeSettings, LemkeSolution, lemke};
pub use operator::{Delassus, DelassusOperator};
pub use problem::{BlockCoupling, ContactProblem, CouplingWork, RowSet, block_rows};
pub use sensitivity::{ContactMode, ContactSensitivity};
pub use solvers::{
    Algorithm, ContactSolution, ContactSolver, DEFAULT_MAX_ITERATIONS, DEFAULT_TOLERANCE, Kernel,
    KernelModel, Law, SolverKind, SolverSettings, SolverSpec, SolverStats,
};
pub use tree::{TreeDelassus, TreeFactor, TreeWork};
pub use wide::{ConeRows, MAX_CONE_ROWS, Wide};
