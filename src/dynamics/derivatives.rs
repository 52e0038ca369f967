//! Analytical derivatives of the rigid-body dynamics (after Carpentier and
//! Mansard, "Analytical Derivatives of Rigid Body Dynamics Algorithms",
//! RSS 2018, whose world-frame algorithm Pinocchio's
//! `computeRNEADerivatives` / `computeABADerivatives` implement), and the
//! Jacobians of `q ⊕ v`.
//!
//! Derivatives with respect to `q` are taken in the tangent space: the
//! column `k` is `d/dε f(q ⊕ ε e_k)` at `ε = 0` (for a free or spherical
//! joint, a body-frame twist of the joint's body), as Pinocchio does.
//!
//! **RNEA.** In the world frame, moving dof `c` of the joint of body `k` (axis
//! `S_c`) moves every body of `k`'s subtree `D(k)` rigidly by the twist `S_c`:
//! their axes and inertias turn (`dS_j = S_c × S_j`,
//! `dI_j = S_c ×* I_j − I_j S_c ×`), and their velocities and accelerations
//! change by
//!
//! ```text
//! dv_j = S_c × (v_j − v_λ)
//! da_j = S_c × (a_j − a_λ) − (S_c × v_λ) × (v_j − v_λ)        (j ∈ D(k), λ = k's parent)
//! ```
//!
//! Writing each body force's change as its rigid transport `S_c ×* f_j`
//! (which no `τ_i = S_iᵀ F_i` of the subtree sees: `S_i` turns with it) plus
//! `I_j u + B_j w` with `w = v_λ × S_c`, `u = a_λ × S_c − w × v_λ` and
//! `B(v, I) w = I (w × v) + w ×* (I v) + v ×* (I w)`, the columns are, with
//! the composite inertias `Yᶜ_i = Σ_{D(i)} I_j` and `Bᶜ_i = Σ_{D(i)} B_j`:
//!
//! ```text
//! ∂τ_i/∂q_c = S_iᵀ (Yᶜ_i u + Bᶜ_i w)                      (i ∈ D(k))
//! ∂τ_i/∂q_c = S_iᵀ (S_c ×* F_k + Yᶜ_k u + Bᶜ_k w)          (i a strict ancestor of k)
//! ```
//!
//! and for the velocities, with `z = (v_λ + v_k) × S_c`,
//!
//! ```text
//! ∂τ_i/∂q̇_c = S_iᵀ (Yᶜ_i z + Bᶜ_i S_c)                     (i ∈ D(k))
//! ∂τ_i/∂q̇_c = S_iᵀ (Yᶜ_k z + Bᶜ_k S_c)                     (i a strict ancestor of k)
//! ```
//!
//! (`F_k` the force transmitted by `k`'s joint, gravity included as a base
//! acceleration); `∂τ/∂q̈ = M`. **ABA**: `q̈ = M⁻¹(τ − b)`, so
//! `∂q̈/∂(q, v) = −M⁻¹ ∂τ/∂(q, v)` at `a = q̈` and `∂q̈/∂τ = M⁻¹`, the solves
//! by the tree-sparse `LᵀDL` of `M`.

use super::{Data, aba, crba_from_kinematics, ltdl_factorize, ltdl_solve_rows_in_place};
use super::{forward_kinematics, forward_velocity, rnea_from_kinematics};
use crate::math::{
    Mat3, Mat6, Vec3, Vec6, ang, exp3, exp6, force_cross, lin, motion_cross, skew, small,
    so3_left_jacobian,
};
use crate::model::{JointType, Model};
use nalgebra::DMatrix;

/// Workspace and results of [`rnea_derivatives`] and [`aba_derivatives`]
/// (built once per model; no allocation afterwards).
#[derive(Clone, Debug)]
pub struct Derivatives {
    /// (nv, nv) `∂τ/∂q` (tangent columns).
    pub dtau_dq: DMatrix<f64>,
    /// (nv, nv) `∂τ/∂q̇`.
    pub dtau_dv: DMatrix<f64>,
    /// (nv, nv) `∂q̈/∂q` (tangent columns).
    pub ddq_dq: DMatrix<f64>,
    /// (nv, nv) `∂q̈/∂q̇`.
    pub ddq_dv: DMatrix<f64>,
    /// (nv, nv) `∂q̈/∂τ = M⁻¹`.
    pub ddq_dtau: DMatrix<f64>,
    /// (nbodies) composite inertia `Yᶜ_i` of each body's subtree (world frame).
    composite_inertia: Vec<Mat6>,
    /// (nbodies) composite `Bᶜ_i` of each body's subtree.
    composite_b: Vec<Mat6>,
    /// (nbodies) the bodies of each body's subtree, itself first.
    subtree: Vec<Vec<usize>>,
    /// (nv) per dof `r` of body `i`: `Yᶜ_i S_r` and `Bᶜ_iᵀ S_r`.
    row_y: Vec<Vec6>,
    row_b: Vec<Vec6>,
    /// The identity, solved into `M⁻¹` (row-major).
    rows: Vec<f64>,
    /// The tree these workspaces were built for (see [`Self::fits`]).
    body_parent: Vec<usize>,
    dof_body: Vec<usize>,
}

impl Derivatives {
    pub fn new(model: &Model) -> Self {
        let (nb, nv) = (model.nbodies, model.nv);
        Derivatives {
            dtau_dq: DMatrix::zeros(nv, nv),
            dtau_dv: DMatrix::zeros(nv, nv),
            ddq_dq: DMatrix::zeros(nv, nv),
            ddq_dv: DMatrix::zeros(nv, nv),
            ddq_dtau: DMatrix::zeros(nv, nv),
            composite_inertia: vec![Mat6::zeros(); nb],
            composite_b: vec![Mat6::zeros(); nb],
            subtree: (0..nb)
                .map(|k| (k..nb).filter(|&i| supports(model, k, i)).collect())
                .collect(),
            row_y: vec![Vec6::zeros(); nv],
            row_b: vec![Vec6::zeros(); nv],
            rows: vec![0.0; nv * nv],
            body_parent: model.body_parent.clone(),
            dof_body: model.dof_body.clone(),
        }
    }

    /// Whether these workspaces were built for `model`'s tree (the same
    /// parents and dofs per body): workspaces of another tree with as many
    /// dofs would give wrong derivatives.
    pub fn fits(&self, model: &Model) -> bool {
        self.body_parent == model.body_parent && self.dof_body == model.dof_body
    }
}

/// `B(v, I) = v ×* I − I (v ×) + H(I v)`, with `H(h) w = w ×* h`: the
/// matrix of `w ↦ I (w × v) + w ×* (I v) + v ×* (I w)`. With `v ×* = −(v
/// ×)ᵀ` and `I` symmetric, `B = −P − Pᵀ + H` for `P = I (v ×)`, formed by
/// 3 × 3 blocks (`v × = [[ω×, v_lin×], [0, ω×]]`, linear first).
fn variation(v: &Vec6, inertia: &Mat6) -> Mat6 {
    let (a, l) = (skew(&ang(v)), skew(&lin(v)));
    let block = |r: usize, c: usize| -> Mat3 { inertia.fixed_view::<3, 3>(r, c).into_owned() };
    let (i11, i12, i21, i22) = (block(0, 0), block(0, 3), block(3, 0), block(3, 3));
    let p11 = i11 * a;
    let p21 = i21 * a;
    let p12 = i11 * l + i12 * a;
    let p22 = i21 * l + i22 * a;
    let h = inertia * v;
    // H(h) = [[0, −[f]×], [−[f]×, −[n]×]] (w = [w_lin; w_ang]).
    let (f, n) = (skew(&lin(&h)), skew(&ang(&h)));
    let mut b = Mat6::zeros();
    b.fixed_view_mut::<3, 3>(0, 0)
        .copy_from(&(-(p11 + p11.transpose())));
    b.fixed_view_mut::<3, 3>(0, 3)
        .copy_from(&(-(p12 + p21.transpose()) - f));
    b.fixed_view_mut::<3, 3>(3, 0)
        .copy_from(&(-(p21 + p12.transpose()) - f));
    b.fixed_view_mut::<3, 3>(3, 3)
        .copy_from(&(-(p22 + p22.transpose()) - n));
    b
}

/// Whether body `a` is `b` or one of its ancestors.
fn supports(model: &Model, a: usize, mut b: usize) -> bool {
    while b > a {
        b = model.body_parent[b];
    }
    a == b
}

/// `∂τ/∂q` and `∂τ/∂q̇` of `τ = RNEA(q, v, a)` into `out.dtau_dq`,
/// `out.dtau_dv` (`∂τ/∂a` is the mass matrix, [`super::crba`]). Leaves
/// RNEA's results in `data` (`data.tau`). `q`: (nq); `v`, `a`: (nv).
pub fn rnea_derivatives(
    model: &Model,
    data: &mut Data,
    out: &mut Derivatives,
    q: &[f64],
    v: &[f64],
    a: &[f64],
) {
    forward_kinematics(model, data, q);
    forward_velocity(model, data, v);
    rnea_derivatives_from_kinematics(model, data, out, a);
}

/// [`rnea_derivatives`] where `data` already holds the kinematics at
/// `(q, v)` ([`forward_kinematics`], [`forward_velocity`]).
pub fn rnea_derivatives_from_kinematics(
    model: &Model,
    data: &mut Data,
    out: &mut Derivatives,
    a: &[f64],
) {
    rnea_from_kinematics(model, data, a);
    // Composite inertias and variations, leaves to root. (After RNEA,
    // data.body_force[i] is the force F_i transmitted by i's joint.)
    for i in (1..model.nbodies).rev() {
        let inertia = data.body_inertia_world[i].matrix();
        out.composite_b[i] = variation(&data.body_velocity[i], &inertia);
        out.composite_inertia[i] = inertia;
    }
    for i in (1..model.nbodies).rev() {
        let p = model.body_parent[i];
        if p != 0 {
            let (yi, bi) = (out.composite_inertia[i], out.composite_b[i]);
            out.composite_inertia[p] += yi;
            out.composite_b[p] += bi;
        }
    }
    // Row sides of the subtree pairs: `S_rᵀ (Yᶜ_i u + Bᶜ_i w) = yS_r·u +
    // bS_r·w` with `yS_r = Yᶜ_i S_r` (symmetric) and `bS_r = Bᶜ_iᵀ S_r`
    // (`i` dof r's body), once per dof instead of two 6 × 6 products per
    // (row body, column dof) pair.
    for r in 0..model.nv {
        let i = model.dof_body[r];
        let sr = &data.dof_jacobian[r];
        out.row_y[r] = out.composite_inertia[i] * sr;
        out.row_b[r] = out.composite_b[i].tr_mul(sr);
    }
    out.dtau_dq.fill(0.0);
    out.dtau_dv.fill(0.0);
    for k in 1..model.nbodies {
        let parent = model.body_parent[k];
        let (vp, ap) = (data.body_velocity[parent], data.body_acceleration[parent]);
        let vk = data.body_velocity[k];
        let iv = model.joint_idx_v[k];
        for c in iv..iv + model.joint_type[k].nv() {
            let s = data.dof_jacobian[c];
            let w = motion_cross(&vp, &s);
            let u = motion_cross(&ap, &s) - motion_cross(&w, &vp);
            let z = motion_cross(&(vp + vk), &s);
            // The subtree of k: its own dofs and its descendants'.
            for &i in &out.subtree[k] {
                let ivi = model.joint_idx_v[i];
                for r in ivi..ivi + model.joint_type[i].nv() {
                    let (ys, bs) = (&out.row_y[r], &out.row_b[r]);
                    out.dtau_dq[(r, c)] = ys.dot(&u) + bs.dot(&w);
                    out.dtau_dv[(r, c)] = ys.dot(&z) + bs.dot(&s);
                }
            }
            // The strict ancestors of k.
            let (y, b) = (&out.composite_inertia[k], &out.composite_b[k]);
            let fq = force_cross(&s, &data.body_force[k]) + y * u + b * w;
            let fv = y * z + b * s;
            let mut i = parent;
            while i != 0 {
                let ivi = model.joint_idx_v[i];
                for r in ivi..ivi + model.joint_type[i].nv() {
                    let sr = &data.dof_jacobian[r];
                    out.dtau_dq[(r, c)] = sr.dot(&fq);
                    out.dtau_dv[(r, c)] = sr.dot(&fv);
                }
                i = model.body_parent[i];
            }
        }
    }
}

/// `∂q̈/∂q`, `∂q̈/∂q̇` and `∂q̈/∂τ = M⁻¹` of `q̈ = ABA(q, v, τ)` into
/// `out`; `data.ddq` holds `q̈`, `data.mass_matrix` and `data.ltdl` the mass
/// matrix and its factorization. `q`: (nq); `v`, `tau`: (nv).
pub fn aba_derivatives(
    model: &Model,
    data: &mut Data,
    out: &mut Derivatives,
    q: &[f64],
    v: &[f64],
    tau: &[f64],
) {
    aba(model, data, q, v, tau);
    let ddq = std::mem::replace(&mut data.ddq, nalgebra::DVector::zeros(0));
    rnea_derivatives(model, data, out, q, v, ddq.as_slice());
    data.ddq = ddq;
    crba_from_kinematics(model, data);
    ltdl_factorize(model, data);
    ddq_from_rnea_derivatives(model, data, out);
}

/// [`aba_derivatives`] where `data` already holds the kinematics at
/// `(q, v)` and the factorization of the mass matrix (`data.ltdl`, with
/// `data.dof_armature`, as a step leaves them), and `ddq = ABA(q, v, τ)`
/// is known.
pub fn aba_derivatives_from_kinematics(
    model: &Model,
    data: &mut Data,
    out: &mut Derivatives,
    ddq: &[f64],
) {
    rnea_derivatives_from_kinematics(model, data, out, ddq);
    ddq_from_rnea_derivatives(model, data, out);
}

/// `M⁻¹` by the tree factorization `data.ltdl`, then `∂q̈/∂(q, v) =
/// −M⁻¹ ∂τ/∂(q, v)` as matrix products.
fn ddq_from_rnea_derivatives(model: &Model, data: &Data, out: &mut Derivatives) {
    mass_inverse(model, data, out);
    small::gemm(&mut out.ddq_dq, -1.0, &out.ddq_dtau, &out.dtau_dq, 0.0);
    small::gemm(&mut out.ddq_dv, -1.0, &out.ddq_dtau, &out.dtau_dv, 0.0);
}

/// `out.ddq_dtau = M⁻¹` by the tree factorization `data.ltdl` (as a step
/// leaves it), the identity's columns solved at once (row-major,
/// [`ltdl_solve_rows_in_place`]). For a caller that forms its own products
/// with `M⁻¹` ([`crate::sim::Simulator::step_with_jacobians`]), after
/// [`rnea_derivatives_from_kinematics`]; `out.ddq_dq` and `out.ddq_dv`
/// are left as they were.
pub fn mass_inverse(model: &Model, data: &Data, out: &mut Derivatives) {
    let nv = model.nv;
    let x = &mut out.rows;
    x.clear();
    x.resize(nv * nv, 0.0);
    for r in 0..nv {
        x[r * nv + r] = 1.0;
    }
    ltdl_solve_rows_in_place(&model.dof_parent, &data.ltdl, x, nv);
    for (c, col) in out.ddq_dtau.as_mut_slice().chunks_exact_mut(nv).enumerate() {
        for (r, v) in col.iter_mut().enumerate() {
            *v = x[r * nv + c];
        }
    }
}

/// Right Jacobian of SO(3): `exp(w + δ) ≈ exp(w) exp(J_r(w) δ)`, i.e.
/// the left one at `−w`.
pub fn so3_right_jacobian(w: &Vec3) -> Mat3 {
    so3_left_jacobian(&(-w))
}

/// Right Jacobian of SE(3) for a twist `[v; w]` (linear first):
/// `exp(ξ + δ) ≈ exp(ξ) exp(J_r(ξ) δ)`. `J_r(ξ) = J_l(−ξ)`, with the left
/// Jacobian `[[J_l(w), Q(v, w)], [0, J_l(w)]]` of Barfoot's "State
/// Estimation for Robotics" (eq. 7.86, its `Q` with `ρ = v`, `φ = w`).
pub fn se3_right_jacobian(xi: &Vec6) -> Mat6 {
    let (v, w) = (-lin(xi), -ang(xi));
    let t2 = w.norm_squared();
    let t = t2.sqrt();
    let (c1, c2, c3) = if t < 0.05 {
        (
            1.0 / 6.0 - t2 / 120.0 + t2 * t2 / 5040.0,
            1.0 / 24.0 - t2 / 720.0 + t2 * t2 / 40320.0,
            1.0 / 120.0 - t2 / 2520.0 + t2 * t2 / 120960.0,
        )
    } else {
        let (s, c) = (t.sin(), t.cos());
        (
            (t - s) / (t2 * t),
            (t2 + 2.0 * c - 2.0) / (2.0 * t2 * t2),
            (2.0 * t - 3.0 * s + t * c) / (2.0 * t2 * t2 * t),
        )
    };
    let (p, f) = (skew(&v), skew(&w));
    let q = 0.5 * p
        + c1 * (f * p + p * f + f * p * f)
        + c2 * (f * f * p + p * f * f - 3.0 * f * p * f)
        + c3 * (f * p * f * f + f * f * p * f);
    let jl = so3_left_jacobian(&w);
    let mut j = Mat6::zeros();
    j.fixed_view_mut::<3, 3>(0, 0).copy_from(&jl);
    j.fixed_view_mut::<3, 3>(0, 3).copy_from(&q);
    j.fixed_view_mut::<3, 3>(3, 3).copy_from(&jl);
    j
}

/// Jacobians of `q⁺ = q ⊕ v·dt` in the tangent spaces: `dq_out = ∂q⁺/∂q`,
/// `dv_out = ∂q⁺/∂v` (both `nv × nv`, block diagonal by joint). For a free
/// joint `q⁺ = q·exp(ξ)`, `ξ = v·dt`: `Ad(exp(ξ))⁻¹` and `J_r(ξ)·dt`; for a
/// spherical joint the same on SO(3); otherwise `1` and `dt`.
pub fn integrate_jacobians(
    model: &Model,
    v: &[f64],
    dt: f64,
    dq_out: &mut DMatrix<f64>,
    dv_out: &mut DMatrix<f64>,
) {
    dq_out.fill(0.0);
    dv_out.fill(0.0);
    for i in 1..model.nbodies {
        let iv = model.joint_idx_v[i];
        match model.joint_type[i] {
            JointType::Free => {
                let xi = Vec6::from_column_slice(&v[iv..iv + 6]) * dt;
                let ad_inv = exp6(&(-xi)).action_matrix();
                let jr = se3_right_jacobian(&xi) * dt;
                dq_out.view_mut((iv, iv), (6, 6)).copy_from(&ad_inv);
                dv_out.view_mut((iv, iv), (6, 6)).copy_from(&jr);
            }
            JointType::Spherical => {
                let w = Vec3::new(v[iv], v[iv + 1], v[iv + 2]) * dt;
                dq_out
                    .view_mut((iv, iv), (3, 3))
                    .copy_from(&exp3(&w).transpose());
                dv_out
                    .view_mut((iv, iv), (3, 3))
                    .copy_from(&(so3_right_jacobian(&w) * dt));
            }
            JointType::Revolute(_) | JointType::Prismatic(_) => {
                dq_out[(iv, iv)] = 1.0;
                dv_out[(iv, iv)] = dt;
            }
            JointType::Fixed => {}
        }
    }
}

/// `∂(q1 ⊖ q0)/∂q1` in the tangent space at `q1` (`nv × nv`, block
/// diagonal by joint, see [`super::difference`]): for a free joint
/// `q1 ⊖ q0 = log(X0⁻¹X1) = ξ` and `J_r(ξ)⁻¹`; for a spherical joint the
/// same on SO(3); otherwise `1`.
pub fn difference_jacobian(model: &Model, q0: &[f64], q1: &[f64], out: &mut DMatrix<f64>) {
    let nv = model.nv;
    if out.shape() != (nv, nv) {
        *out = DMatrix::zeros(nv, nv);
    }
    out.fill(0.0);
    let mut xi = vec![0.0; nv];
    super::difference(model, q0, q1, &mut xi);
    for i in 1..model.nbodies {
        let iv = model.joint_idx_v[i];
        match model.joint_type[i] {
            JointType::Free => {
                let jr = se3_right_jacobian(&Vec6::from_column_slice(&xi[iv..iv + 6]));
                let inv = jr.try_inverse().unwrap_or_else(Mat6::identity);
                out.view_mut((iv, iv), (6, 6)).copy_from(&inv);
            }
            JointType::Spherical => {
                let jr = so3_right_jacobian(&Vec3::new(xi[iv], xi[iv + 1], xi[iv + 2]));
                let inv = jr.try_inverse().unwrap_or_else(Mat3::identity);
                out.view_mut((iv, iv), (3, 3)).copy_from(&inv);
            }
            JointType::Revolute(_) | JointType::Prismatic(_) => out[(iv, iv)] = 1.0,
            JointType::Fixed => {}
        }
    }
}
