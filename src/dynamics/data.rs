use crate::math::{Inertia, Mat6, SE3, Vec6};
use crate::model::Model;
use nalgebra::{DMatrix, DVector};

/// Preallocated workspace of the dynamics algorithms, built once per model.
/// Spatial quantities are expressed in the world frame at the world origin.
#[derive(Clone, Debug)]
pub struct Data {
    /// (nbodies) placement of each body frame in the world.
    pub world_from_body: Vec<SE3>,
    /// (nbodies) placement of each body frame in its parent's frame.
    pub parent_from_body: Vec<SE3>,
    /// (nbodies) spatial velocity.
    pub body_velocity: Vec<Vec6>,
    /// (nbodies) spatial acceleration (gravity included as a base acceleration in RNEA/ABA).
    pub body_acceleration: Vec<Vec6>,
    /// (nbodies) spatial force transmitted by the joint of each body (RNEA).
    pub body_force: Vec<Vec6>,
    /// (nbodies) velocity-product acceleration `v_i × (S_i q̇_i)`.
    pub body_bias_acceleration: Vec<Vec6>,
    /// (nbodies) body inertia expressed in the world frame.
    pub body_inertia_world: Vec<Inertia>,
    /// (nbodies) composite (CRBA) / articulated (ABA) inertia, 6×6.
    pub body_inertia_6: Vec<Mat6>,
    /// (nbodies) articulated bias force (ABA).
    pub articulated_bias: Vec<Vec6>,
    /// (nbodies) `D⁻¹ = (Sᵀ Iᴬ S)⁻¹` in the top-left `nv_j × nv_j` block (ABA).
    pub joint_d_inv: Vec<Mat6>,
    /// (nv) column `k` of the world-frame spatial Jacobian: `S_k` in the world.
    pub dof_jacobian: Vec<Vec6>,
    /// (nv) `U_k = Iᴬ S_k` (ABA).
    pub dof_u: Vec<Vec6>,
    /// (nv) `u = τ − Sᵀ pᴬ` (ABA).
    pub dof_bias: DVector<f64>,
    /// (nv) joint torques (RNEA output).
    pub tau: DVector<f64>,
    /// (nv) joint accelerations (ABA output).
    pub ddq: DVector<f64>,
    /// (nv, nv) joint-space mass matrix (CRBA output), both triangles filled.
    pub mass_matrix: DMatrix<f64>,
    /// (nv, nv) `M = Lᵀ D L`: `L` (unit lower) strictly below the diagonal, `D` on it.
    pub ltdl: DMatrix<f64>,
    /// (nv) The joint-space diagonal that [`super::crba`] and [`super::aba`]
    /// add to the bodies' inertia: [`Model::dof_armature`] (the rotors'
    /// reflected inertia, as MuJoCo's `armature`). The simulator adds
    /// `dt·damping` to it for its implicit joint damping, then restores it.
    pub dof_armature: DVector<f64>,
}

impl Data {
    pub fn new(model: &Model) -> Self {
        let (nb, nv) = (model.nbodies, model.nv);
        Data {
            world_from_body: vec![SE3::identity(); nb],
            parent_from_body: vec![SE3::identity(); nb],
            body_velocity: vec![Vec6::zeros(); nb],
            body_acceleration: vec![Vec6::zeros(); nb],
            body_force: vec![Vec6::zeros(); nb],
            body_bias_acceleration: vec![Vec6::zeros(); nb],
            body_inertia_world: vec![Inertia::zero(); nb],
            body_inertia_6: vec![Mat6::zeros(); nb],
            articulated_bias: vec![Vec6::zeros(); nb],
            joint_d_inv: vec![Mat6::zeros(); nb],
            dof_jacobian: vec![Vec6::zeros(); nv],
            dof_u: vec![Vec6::zeros(); nv],
            dof_bias: DVector::zeros(nv),
            tau: DVector::zeros(nv),
            ddq: DVector::zeros(nv),
            mass_matrix: DMatrix::zeros(nv, nv),
            ltdl: DMatrix::zeros(nv, nv),
            dof_armature: DVector::from_column_slice(&model.dof_armature),
        }
    }
}
