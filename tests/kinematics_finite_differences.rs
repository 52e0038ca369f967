//! Frame Jacobians, body velocities and `q ⊕ v` against central finite
//! differences taken through `⊕` (never by adding to quaternion components),
//! and the tree-factorized Delassus matrix against the dense `J M⁻¹ Jᵀ`.

mod common;

use common::{Lcg, random_contacts, random_q};
use moreau::Model;
use moreau::contact::{ContactJacobian, contact_jacobian, delassus_dense, delassus_ltdl};
use moreau::dynamics::{
    Data, ReferenceFrame, crba, difference, forward_kinematics, forward_velocity, frame_jacobian,
    frame_placement, integrate, ltdl_factorize,
};
use moreau::math::{SE3, Vec3, exp3, log6};
use moreau::scenes::{quadruped_model, random_tree};
use nalgebra::{DMatrix, DVector};

const EPS: f64 = 1e-6;

fn models() -> Vec<Model> {
    vec![quadruped_model().unwrap(), random_tree(40, 11).unwrap()]
}

fn q_plus(model: &Model, q: &DVector<f64>, v: &DVector<f64>) -> DVector<f64> {
    let mut out = q.clone();
    integrate(model, q.as_slice(), v.as_slice(), 1.0, out.as_mut_slice());
    out
}

fn placement(model: &Model, data: &mut Data, q: &DVector<f64>, body: usize, frame: &SE3) -> SE3 {
    forward_kinematics(model, data, q.as_slice());
    frame_placement(data, body, frame)
}

#[test]
fn frame_jacobian_matches_finite_differences() {
    let mut rng = Lcg(5);
    for model in models() {
        let mut data = Data::new(&model);
        let mut worst: f64 = 0.0;
        for trial in 0..4 {
            let q = random_q(&model, &mut rng);
            let body = 1 + trial * (model.nbodies - 2) / 3;
            let frame = SE3::new(exp3(&Vec3::new(0.3, -0.2, 0.1)), Vec3::new(0.1, 0.05, -0.2));
            let m0 = placement(&model, &mut data, &q, body, &frame);
            let mut j_local = DMatrix::zeros(6, model.nv);
            let mut j_world = DMatrix::zeros(6, model.nv);
            let mut j_lwa = DMatrix::zeros(6, model.nv);
            frame_jacobian(
                &model,
                &data,
                body,
                &frame,
                ReferenceFrame::Local,
                &mut j_local,
            );
            frame_jacobian(
                &model,
                &data,
                body,
                &frame,
                ReferenceFrame::World,
                &mut j_world,
            );
            frame_jacobian(
                &model,
                &data,
                body,
                &frame,
                ReferenceFrame::LocalWorldAligned,
                &mut j_lwa,
            );
            for k in 0..model.nv {
                let mut dv = DVector::zeros(model.nv);
                dv[k] = EPS;
                let mp = placement(&model, &mut data, &q_plus(&model, &q, &dv), body, &frame);
                let mm = placement(
                    &model,
                    &mut data,
                    &q_plus(&model, &q, &(-&dv)),
                    body,
                    &frame,
                );
                let fd = (log6(&m0.inv_mul(&mp)) - log6(&m0.inv_mul(&mm))) / (2.0 * EPS);
                let col = j_local.column(k).into_owned();
                worst = worst.max((fd - &col).amax());
                // World = Ad(world_from_frame) · Local; LocalWorldAligned = rotated Local.
                let w = m0.act_motion(&nalgebra::Vector6::from_column_slice(col.as_slice()));
                assert!((w - j_world.column(k)).amax() < 1e-12);
                let rot = SE3::from_rotation(m0.rotation)
                    .act_motion(&nalgebra::Vector6::from_column_slice(col.as_slice()));
                assert!((rot - j_lwa.column(k)).amax() < 1e-12);
            }
        }
        println!(
            "{}: worst |J_local − finite difference| = {worst:.2e}",
            model.name
        );
        assert!(worst < 1e-6, "{}: {worst:e}", model.name);
    }
}

#[test]
fn integrate_and_difference_are_inverse_and_match_velocity_kinematics() {
    let mut rng = Lcg(6);
    for model in models() {
        let mut data = Data::new(&model);
        let mut worst_fd: f64 = 0.0;
        for _ in 0..5 {
            let q = random_q(&model, &mut rng);
            let v = rng.vector(model.nv, -1.0, 1.0);
            // (q ⊕ v) ⊖ q = v
            let q1 = q_plus(&model, &q, &v);
            let mut back = DVector::zeros(model.nv);
            difference(&model, q.as_slice(), q1.as_slice(), back.as_mut_slice());
            assert!(
                (&back - &v).amax() < 1e-10,
                "{}: (q ⊕ v) ⊖ q ≠ v",
                model.name
            );
            // q ⊕ (v dt) with dt folded in or not
            let mut a = q.clone();
            integrate(&model, q.as_slice(), v.as_slice(), 0.01, a.as_mut_slice());
            let b = q_plus(&model, &q, &(&v * 0.01));
            assert!((&a - &b).amax() < 1e-14);
            // Body twists from forward_velocity equal d/dt of placements along t ↦ q ⊕ t v.
            forward_kinematics(&model, &mut data, q.as_slice());
            forward_velocity(&model, &mut data, v.as_slice());
            let twists: Vec<_> = (1..model.nbodies)
                .map(|i| data.world_from_body[i].act_inv_motion(&data.body_velocity[i]))
                .collect();
            let m0: Vec<_> = data.world_from_body.clone();
            forward_kinematics(
                &model,
                &mut data,
                q_plus(&model, &q, &(&v * EPS)).as_slice(),
            );
            let mp = data.world_from_body.clone();
            forward_kinematics(
                &model,
                &mut data,
                q_plus(&model, &q, &(&v * -EPS)).as_slice(),
            );
            let mm = data.world_from_body.clone();
            for i in 1..model.nbodies {
                let fd =
                    (log6(&m0[i].inv_mul(&mp[i])) - log6(&m0[i].inv_mul(&mm[i]))) / (2.0 * EPS);
                worst_fd = worst_fd.max((fd - twists[i - 1]).amax());
            }
        }
        println!(
            "{}: worst |body twist − d/dt placement(q ⊕ t v)| = {worst_fd:.2e}",
            model.name
        );
        assert!(worst_fd < 1e-6);
    }
}

#[test]
fn tree_delassus_equals_dense_formula() {
    let mut rng = Lcg(8);
    for model in models() {
        let mut data = Data::new(&model);
        let mut cj = ContactJacobian::default();
        let mut g = DMatrix::zeros(0, 0);
        let mut worst: f64 = 0.0;
        for nc in [1, 4, 12] {
            let q = random_q(&model, &mut rng);
            crba(&model, &mut data, q.as_slice());
            ltdl_factorize(&model, &mut data);
            let contacts = random_contacts(&model, &mut rng, nc);
            contact_jacobian(&model, &data, &contacts, &mut cj);
            delassus_ltdl(&model, &data, &mut cj, &mut g);
            let dense = delassus_dense(&data, &cj.jacobian);
            let err = (&g - &dense).amax() / dense.amax();
            worst = worst.max(err);
            // The contact Jacobian gives the relative point velocity in the contact frame.
            let v = rng.vector(model.nv, -1.0, 1.0);
            forward_velocity(&model, &mut data, v.as_slice());
            let c = &cj.jacobian * &v;
            for (i, ct) in contacts.iter().enumerate() {
                let vel = |b: usize| {
                    let s = data.body_velocity[b];
                    Vec3::new(s[0], s[1], s[2]) + Vec3::new(s[3], s[4], s[5]).cross(&ct.point)
                };
                let rel = ct.frame.transpose() * (vel(ct.body_a) - vel(ct.body_b));
                for r in 0..3 {
                    assert!((c[3 * i + r] - rel[r]).abs() < 1e-12);
                }
            }
        }
        println!(
            "{}: worst |G_tree − J M⁻¹ Jᵀ| / |G| = {worst:.2e}",
            model.name
        );
        assert!(worst < 1e-10, "{}: {worst:e}", model.name);
    }
}
