//! Criterion benches of the dynamics algorithms and of a full step, on the
//! cube, the 12-dof quadruped (nv = 18) and a 36-dof random tree.
//!
//! `cargo bench --bench dynamics`

use criterion::{Criterion, criterion_group, criterion_main};
use moreau::Model;
use moreau::collision::CollisionDetector;
use moreau::contact::{ContactJacobian, contact_jacobian, delassus_ltdl};
use moreau::dynamics::{
    Data, Derivatives, aba, aba_derivatives, crba, forward_kinematics, ltdl_factorize, rnea,
    rnea_derivatives,
};
use moreau::scenes;
use moreau::sim::{SimParams, Simulator};
use nalgebra::{DMatrix, DVector};
use std::hint::black_box;
use std::sync::Arc;

fn tree36() -> Model {
    (0..1000)
        .map(|seed| scenes::random_tree(32, seed).unwrap())
        .find(|m| m.nv == 36)
        .expect("a 36-dof tree among the seeds")
}

fn models() -> Vec<(String, Arc<Model>, DVector<f64>)> {
    let cube = scenes::scene("cube-resting").unwrap();
    let quad = scenes::scene("quadruped").unwrap();
    let q_quad = scenes::quadruped_standing(&quad.model, scenes::quadruped_standing_height());
    let tree = Arc::new(tree36());
    let mut u = 0u64;
    let q_tree = moreau::dynamics::random_configuration(&tree, || {
        u = u.wrapping_mul(6364136223846793005).wrapping_add(1);
        (u >> 11) as f64 / (1u64 << 53) as f64
    });
    vec![
        ("cube".into(), cube.model.clone(), cube.state.q.clone()),
        (
            format!("quadruped-nv{}", quad.model.nv),
            quad.model.clone(),
            q_quad,
        ),
        (format!("tree-nv{}", tree.nv), tree, q_tree),
    ]
}

fn algorithms(c: &mut Criterion) {
    for (name, model, q) in models() {
        let mut data = Data::new(&model);
        let v = DVector::from_fn(model.nv, |i, _| 0.1 * (i as f64).sin());
        let tau = DVector::from_fn(model.nv, |i, _| 0.2 * (i as f64).cos());
        let mut g = c.benchmark_group(&name);
        g.bench_function("forward_kinematics", |b| {
            b.iter(|| forward_kinematics(&model, &mut data, black_box(q.as_slice())))
        });
        g.bench_function("rnea", |b| {
            b.iter(|| {
                rnea(
                    &model,
                    &mut data,
                    black_box(q.as_slice()),
                    v.as_slice(),
                    tau.as_slice(),
                )[0]
            })
        });
        g.bench_function("crba", |b| {
            b.iter(|| crba(&model, &mut data, black_box(q.as_slice()))[(0, 0)])
        });
        g.bench_function("aba", |b| {
            b.iter(|| {
                aba(
                    &model,
                    &mut data,
                    black_box(q.as_slice()),
                    v.as_slice(),
                    tau.as_slice(),
                )[0]
            })
        });
        let mut der = Derivatives::new(&model);
        g.bench_function("rnea_derivatives", |b| {
            b.iter(|| {
                rnea_derivatives(
                    &model,
                    &mut data,
                    &mut der,
                    black_box(q.as_slice()),
                    v.as_slice(),
                    tau.as_slice(),
                );
                der.dtau_dq[(0, 0)]
            })
        });
        g.bench_function("aba_derivatives", |b| {
            b.iter(|| {
                aba_derivatives(
                    &model,
                    &mut data,
                    &mut der,
                    black_box(q.as_slice()),
                    v.as_slice(),
                    tau.as_slice(),
                );
                der.ddq_dq[(0, 0)]
            })
        });
        // Factorization + Delassus for the contacts the model has at q (4 feet, 4 corners), or
        // 4 contacts on the deepest bodies of the tree.
        crba(&model, &mut data, q.as_slice());
        let mut contacts = Vec::new();
        CollisionDetector::new(&model, 5e-3)
            .detect(&model, &data, &mut contacts)
            .unwrap();
        if contacts.is_empty() {
            contacts = (0..4)
                .map(|k| moreau::collision::Contact {
                    geom_a: 0,
                    geom_b: 0,
                    body_a: model.nbodies - 1 - k,
                    body_b: 0,
                    point: moreau::math::Vec3::new(0.1 * k as f64, 0.0, 0.0),
                    frame: moreau::math::Mat3::identity(),
                    distance: 0.0,
                    mu: 0.5,
                    spin: [0.0; 2],
                    restitution: 0.0,
                    key: moreau::collision::ContactKey {
                        geom_a: k as u32,
                        geom_b: 0,
                        feature_a: 0,
                        feature_b: 0,
                    },
                    geometry: Default::default(),
                })
                .collect();
        }
        let mut cj = ContactJacobian::default();
        let mut gmat = DMatrix::zeros(0, 0);
        g.bench_function(format!("ltdl+delassus-{}contacts", contacts.len()), |b| {
            b.iter(|| {
                ltdl_factorize(&model, &mut data);
                contact_jacobian(&model, &data, &contacts, &mut cj);
                delassus_ltdl(&model, &data, &mut cj, &mut gmat);
                gmat[(0, 0)]
            })
        });
        g.finish();
    }
}

fn full_step(c: &mut Criterion) {
    let mut g = c.benchmark_group("step");
    for name in ["cube-resting", "quadruped"] {
        let scene = scenes::scene(name).unwrap();
        let mut sim = Simulator::new(scene.model.clone(), SimParams::default()).unwrap();
        let mut state = scene.state.clone();
        let mut tau = DVector::zeros(scene.model.nv);
        // Settle first so that the measured steps are the steady contact regime.
        for _ in 0..2000 {
            if let Some(ctrl) = &scene.controller {
                ctrl.torques(&state, tau.as_mut_slice());
            }
            sim.step(&mut state, tau.as_slice()).unwrap();
        }
        let nc = sim.contacts().len();
        let start = state.clone();
        g.bench_function(format!("{name}-{nc}contacts"), |b| {
            b.iter(|| {
                let mut s = start.clone();
                if let Some(ctrl) = &scene.controller {
                    ctrl.torques(&s, tau.as_mut_slice());
                }
                sim.step(&mut s, tau.as_slice()).unwrap().nc
            })
        });
        // The same step with its Jacobians with respect to v and τ.
        let mut jac = moreau::sim::StepJacobians::default();
        g.bench_function(format!("{name}-{nc}contacts-with-jacobians"), |b| {
            b.iter(|| {
                let mut s = start.clone();
                if let Some(ctrl) = &scene.controller {
                    ctrl.torques(&s, tau.as_mut_slice());
                }
                sim.step_with_jacobians(&mut s, tau.as_slice(), &mut jac)
                    .unwrap()
                    .nc
            })
        });
    }
    // The 36-dof tree has no geometry: its step is free dynamics and integration.
    let tree = Arc::new(tree36());
    let mut sim = Simulator::new(tree.clone(), SimParams::default()).unwrap();
    let start = moreau::sim::State::new(tree.neutral_configuration(), DVector::zeros(tree.nv));
    let tau = DVector::zeros(tree.nv);
    g.bench_function(format!("tree-nv{}-0contacts", tree.nv), |b| {
        b.iter(|| {
            let mut s = start.clone();
            sim.step(&mut s, tau.as_slice()).unwrap().nc
        })
    });
    g.finish();
}

criterion_group!(benches, algorithms, full_step);
criterion_main!(benches);
