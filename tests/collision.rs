//! Collision detection: multi-point manifolds, contact frames, filtering and
//! stable contact identities.

use moreau::collision::CollisionDetector;
use moreau::dynamics::{Data, forward_kinematics};
use moreau::math::{Inertia, SE3, Vec3};
use moreau::model::{JointType, Material, ModelBuilder, Shape, WORLD};
use moreau::scenes;

#[test]
fn box_resting_flat_on_a_plane_yields_its_four_corners() {
    let scene = scenes::scene("cube-resting").unwrap();
    let model = &scene.model;
    let mut data = Data::new(model);
    forward_kinematics(model, &mut data, scene.state.q.as_slice());
    let mut det = CollisionDetector::new(model, 5e-3);
    let mut contacts = Vec::new();
    det.detect(model, &data, &mut contacts).unwrap();
    assert_eq!(contacts.len(), 4);
    let mut corners: Vec<(i32, i32)> = contacts
        .iter()
        .map(|c| {
            assert!(
                (c.normal() - Vec3::z()).norm() < 1e-12,
                "normal from ground to cube"
            );
            assert!(c.distance.abs() < 1e-12);
            assert!(c.point.z.abs() < 1e-12);
            assert!((c.mu - 0.3).abs() < 1e-12);
            assert_eq!(
                model.geometries[c.geom_b].body, WORLD,
                "the world geometry is `b`"
            );
            (
                (c.point.x / 0.1).round() as i32,
                (c.point.y / 0.1).round() as i32,
            )
        })
        .collect();
    corners.sort();
    assert_eq!(corners, vec![(-1, -1), (-1, 1), (1, -1), (1, 1)]);
    // Identities are distinct and stable under a small motion.
    let keys: Vec<_> = contacts.iter().map(|c| c.key).collect();
    let mut q = scene.state.q.clone();
    q[0] += 1e-3;
    q[2] -= 1e-4;
    forward_kinematics(model, &mut data, q.as_slice());
    det.detect(model, &data, &mut contacts).unwrap();
    let mut moved: Vec<_> = contacts.iter().map(|c| c.key).collect();
    let mut sorted = keys.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), 4, "four distinct identities");
    moved.sort();
    assert_eq!(moved, sorted, "same features after a small motion");
    assert!(contacts.iter().all(|c| (c.distance + 1e-4).abs() < 1e-12));
}

#[test]
fn filters_skip_same_body_parent_child_excluded_and_masked_pairs() {
    let mut b = ModelBuilder::new("filters");
    b.add_geometry(
        "ground",
        WORLD,
        SE3::identity(),
        Shape::HalfSpace { normal: Vec3::z() },
        Material::default(),
    )
    .unwrap();
    let inertia = Inertia::cuboid(1.0, Vec3::repeat(0.2));
    let a = b
        .add_body("a", WORLD, JointType::Free, SE3::identity(), inertia)
        .unwrap();
    let child = b
        .add_body(
            "child",
            a,
            JointType::Revolute(Vec3::x()),
            SE3::identity(),
            inertia,
        )
        .unwrap();
    let c = b
        .add_body("c", WORLD, JointType::Free, SE3::identity(), inertia)
        .unwrap();
    let d = b
        .add_body("d", WORLD, JointType::Free, SE3::identity(), inertia)
        .unwrap();
    let ball = Shape::Ball { radius: 0.5 };
    // Everything overlaps everything at the origin.
    b.add_geometry("a1", a, SE3::identity(), ball.clone(), Material::default())
        .unwrap();
    b.add_geometry("a2", a, SE3::identity(), ball.clone(), Material::default())
        .unwrap();
    b.add_geometry(
        "child",
        child,
        SE3::identity(),
        ball.clone(),
        Material::default(),
    )
    .unwrap();
    b.add_geometry("c", c, SE3::identity(), ball.clone(), Material::default())
        .unwrap();
    b.add_geometry(
        "d",
        d,
        SE3::identity(),
        ball.clone(),
        Material {
            contype: 2,
            conaffinity: 2,
            ..Default::default()
        },
    )
    .unwrap();
    b.exclude_collision(c, child).unwrap();
    let model = b.build().unwrap();
    let mut data = Data::new(&model);
    forward_kinematics(&model, &mut data, model.neutral_configuration().as_slice());
    let mut det = CollisionDetector::new(&model, 0.0);
    det.broad_phase(&model, &data);
    let name = |g: usize| model.geometries[g].name.as_str();
    let mut pairs: Vec<(String, String)> = det
        .pairs
        .iter()
        .map(|&(x, y)| (name(x).to_string(), name(y).to_string()))
        .collect();
    pairs.sort();
    let expected: Vec<(String, String)> = [
        ("a1", "c"),
        ("a1", "ground"),
        ("a2", "c"),
        ("a2", "ground"),
        ("c", "ground"),
        ("child", "ground"),
    ]
    .iter()
    .map(|(x, y)| (x.to_string(), y.to_string()))
    .collect();
    // Not a1/a2 (same body), a*/child (parent-child), child/c (excluded), d/* (bits).
    assert_eq!(pairs, expected);
}
