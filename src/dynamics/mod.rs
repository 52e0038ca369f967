//! Rigid-body dynamics over `(&Model, &mut Data)`, in the world frame
//! (spatial vectors expressed at the world origin, as Pinocchio's world-frame
//! algorithms): forward kinematics, Jacobians, RNEA, CRBA, ABA, the tree-sparse
//! `LᵀDL` factorization of the mass matrix, integration on the
//! configuration manifold, and the analytical derivatives of RNEA, ABA and
//! `q ⊕ v`. None of these allocates once `Data` (and `Derivatives`) exists.

mod aba;
mod com;
mod crba;
mod data;
mod derivatives;
mod fluid;
mod integrate;
mod jacobian;
mod kinematics;
mod ltdl;
mod rnea;
pub mod wrap;

pub use aba::{aba, aba_from_kinematics};
pub use com::{COM_INERTIA, com_inertias, com_velocities, com_wrenches, subtree_coms};
pub use crba::{crba, crba_from_kinematics};
pub use data::Data;
pub use derivatives::{
    Derivatives, aba_derivatives, aba_derivatives_from_kinematics, difference_jacobian,
    integrate_jacobians, mass_inverse, rnea_derivatives, rnea_derivatives_from_kinematics,
    se3_right_jacobian, so3_right_jacobian,
};
pub use fluid::{fluid_forces, inertia_box};
pub use integrate::{
    configuration_charts, difference, integrate, normalize_configuration, quaternion_offsets,
    random_configuration,
};
pub use jacobian::{ReferenceFrame, frame_jacobian, frame_placement, point_velocity_column};
pub use kinematics::{
    center_of_mass, forward_kinematics, forward_velocity, kinetic_energy, potential_energy,
};
pub use ltdl::{
    ltdl_factorize, ltdl_factorize_in_place, ltdl_solve_in_place, ltdl_solve_l_in_place,
    ltdl_solve_lt_in_place, ltdl_solve_rows_in_place,
};
pub use rnea::{nonlinear_effects, rnea, rnea_from_kinematics};
pub use wrap::{spatial_length, wrap};
