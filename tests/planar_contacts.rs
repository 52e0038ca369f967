//! A planar robot (slides along x and z, a hinge about y, as Gymnasium's
//! hopper, walker and half-cheetah are built): its contacts cannot move
//! along their second tangent, so each contact's 3×3 block of `G` is
//! singular. Every solver holds a box resting on the ground that way.

use moreau::contact::SolverKind;
use moreau::math::{Inertia, Mat3, SE3, Vec3};
use moreau::model::{JointType, Material, ModelBuilder, Shape};
use moreau::sim::{SimParams, Simulator, State};
use nalgebra::DVector;
use std::sync::Arc;

#[test]
fn every_solver_holds_a_planar_box_on_the_ground() {
    let mut b = ModelBuilder::new("planar box");
    let inertia = Inertia::new(1.0, Vec3::zeros(), Mat3::identity() * 0.01);
    let x = b
        .add_massless_body("x", 0, JointType::Prismatic(Vec3::x()), SE3::identity())
        .unwrap();
    let z = b
        .add_massless_body("z", x, JointType::Prismatic(Vec3::z()), SE3::identity())
        .unwrap();
    let body = b
        .add_body(
            "box",
            z,
            JointType::Revolute(Vec3::y()),
            SE3::identity(),
            inertia,
        )
        .unwrap();
    b.add_geometry(
        "box",
        body,
        SE3::identity(),
        Shape::Cuboid {
            half_extents: Vec3::new(0.2, 0.1, 0.1),
        },
        Material::with_friction(0.8),
    )
    .unwrap();
    let mut model = b.build().unwrap();
    model.add_ground(0.0, Material::with_friction(0.8)).unwrap();
    let model = Arc::new(model);
    for kind in SolverKind::ALL {
        let params = SimParams {
            solver: kind,
            ..Default::default()
        };
        let mut sim = Simulator::new(model.clone(), params).unwrap();
        // Resting on the ground, pushed sideways.
        let mut state = State::new(
            DVector::from_vec(vec![0.0, 0.1, 0.0]),
            DVector::from_vec(vec![0.5, 0.0, 0.0]),
        );
        let mut unconverged = 0;
        for _ in 0..500 {
            let r = sim.step(&mut state, &[0.0; 3]).unwrap();
            unconverged += usize::from(r.solver.is_some_and(|s| !s.converged));
        }
        println!(
            "{}: height {:.6} m, x {:.4} m, {unconverged} solves unconverged",
            kind.name(),
            state.q[1],
            state.q[0]
        );
        assert!(
            (state.q[1] - 0.1).abs() < 1e-3,
            "{}: sank to {}",
            kind.name(),
            state.q[1]
        );
        assert!(state.v[0].abs() < 1e-3, "{}: still sliding", kind.name());
        if kind != SolverKind::Raisim {
            assert_eq!(unconverged, 0, "{}", kind.name());
        }
    }
}
