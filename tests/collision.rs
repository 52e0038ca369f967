//! Collision detection: multi-point manifolds, contact frames, filtering and
//! stable contact identities.

mod common;

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
    b.add_ground("ground", Material::default()).unwrap();
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

/// Ellipsoids against every other convex shape, by constructions whose
/// answer is known without parry: a surface point `x` of the ellipsoid
/// with its outward normal `n` (the gradient `R⁻² x`, R = diag(radii)),
/// and the other shape placed so that its support point towards `−n` sits
/// at `x + d n`. Both shapes then lie on either side of the two parallel
/// planes through those points, so their distance is `d`, along `n`.
mod ellipsoids {
    use super::*;
    use moreau::collision::Contact;
    use moreau::math::Mat3;
    use moreau::math::Rng;
    use moreau::model::Model;

    const RADII: [f64; 3] = [0.3, 0.2, 0.1];

    fn random_rotation(rng: &mut Rng) -> Mat3 {
        let axis = Vec3::new(rng.normal(), rng.normal(), rng.normal()).normalize();
        SE3::from_axis_angle(&axis, rng.range(0.0, std::f64::consts::PI)).rotation
    }

    fn ellipsoid() -> Shape {
        ellipsoid_of(RADII[0], RADII[1], RADII[2])
    }

    /// The ellipsoid's surface point with outward normal `n` (world), at `pose`.
    fn support(pose: &SE3, radii: &Vec3, n: &Vec3) -> Vec3 {
        let d = pose.rotation.transpose() * n;
        let r2d = d.component_mul(radii).component_mul(radii);
        pose.act_point(&(r2d / d.component_mul(radii).norm()))
    }

    /// The contacts between geometry `a` at `pose_a` and `b` at `pose_b`,
    /// each on its own free body (`b` on the world when `world_b`).
    fn contacts(
        a: (Shape, SE3),
        b: (Shape, SE3),
        world_b: bool,
        margin: f64,
    ) -> (Model, Vec<Contact>) {
        let mut builder = ModelBuilder::new("pair");
        let inertia = Inertia::cuboid(1.0, Vec3::repeat(0.2));
        let body_a = builder
            .add_body("a", WORLD, JointType::Free, SE3::identity(), inertia)
            .unwrap();
        let body_b = if world_b {
            WORLD
        } else {
            builder
                .add_body("b", WORLD, JointType::Free, SE3::identity(), inertia)
                .unwrap()
        };
        builder
            .add_geometry("a", body_a, a.1, a.0, Material::default())
            .unwrap();
        builder
            .add_geometry("b", body_b, b.1, b.0, Material::default())
            .unwrap();
        let model = builder.build().unwrap();
        let mut data = Data::new(&model);
        forward_kinematics(&model, &mut data, model.neutral_configuration().as_slice());
        let mut det = CollisionDetector::new(&model, margin);
        let mut out = Vec::new();
        det.detect(&model, &data, &mut out).unwrap();
        (model, out)
    }

    #[test]
    fn an_ellipsoid_meets_a_plane_at_its_lowest_point() {
        let mut rng = Rng::new(7);
        let radii = Vec3::from(RADII);
        for _ in 0..50 {
            let pose = SE3::new(
                random_rotation(&mut rng),
                Vec3::new(rng.range(-1.0, 1.0), 0.3, 0.0),
            );
            let lowest = support(&pose, &radii, &-Vec3::z());
            let lift = rng.range(-0.02, 0.04);
            let pose = SE3::new(
                pose.rotation,
                pose.translation - Vec3::z() * (lowest.z - lift),
            );
            let floor = (Shape::HalfSpace { normal: Vec3::z() }, SE3::identity());
            let (_, c) = contacts((ellipsoid(), pose), floor, true, 0.05);
            assert_eq!(c.len(), 1, "one point on a smooth surface");
            assert!(
                (c[0].distance - lift).abs() < 1e-12,
                "{} vs {lift}",
                c[0].distance
            );
            assert!((c[0].normal() - Vec3::z()).norm() < 1e-12);
            let expected = support(&pose, &radii, &-Vec3::z()) - Vec3::z() * (0.5 * lift);
            assert!((c[0].point - expected).norm() < 1e-12);
        }
        // Beyond the margin: none.
        let high = SE3::from_translation(Vec3::new(0.0, 0.0, 0.1 + 0.06));
        let floor = (Shape::HalfSpace { normal: Vec3::z() }, SE3::identity());
        assert!(
            contacts((ellipsoid(), high), floor, true, 0.05)
                .1
                .is_empty()
        );
    }

    #[test]
    fn an_ellipsoid_meets_balls_boxes_capsules_cylinders_hulls_and_ellipsoids_at_their_distance() {
        let mut rng = Rng::new(11);
        let radii = Vec3::from(RADII);
        let cube: Vec<Vec3> = (0..8)
            .map(|k| {
                Vec3::new(
                    [-1.0, 1.0][k & 1],
                    [-1.0, 1.0][(k >> 1) & 1],
                    [-1.0, 1.0][k >> 2],
                ) * 0.1
            })
            .collect();
        // (shape, its support point towards a local direction)
        type Support = Box<dyn Fn(&Vec3) -> Vec3>;
        let others: Vec<(&str, Shape, Support)> = vec![
            (
                "ball",
                Shape::Ball { radius: 0.15 },
                Box::new(|d: &Vec3| d.normalize() * 0.15),
            ),
            (
                "box",
                Shape::Cuboid {
                    half_extents: Vec3::new(0.5, 0.5, 0.05),
                },
                // A face's centre, wherever the direction is within the
                // face's cone (the box's z face is placed facing the ellipsoid).
                Box::new(|d: &Vec3| Vec3::new(0.0, 0.0, 0.05 * d.z.signum())),
            ),
            (
                "capsule",
                Shape::Capsule {
                    half_length: 0.2,
                    radius: 0.05,
                },
                Box::new(|d: &Vec3| Vec3::new(0.0, 0.0, 0.2 * d.z.signum()) + d.normalize() * 0.05),
            ),
            (
                // Side on: the support towards the ellipsoid is a whole
                // segment of the side (here its middle).
                "capsule side",
                Shape::Capsule {
                    half_length: 0.2,
                    radius: 0.05,
                },
                Box::new(|d: &Vec3| d.normalize() * 0.05),
            ),
            (
                "cylinder",
                Shape::Cylinder {
                    half_length: 0.2,
                    radius: 0.1,
                },
                Box::new(|d: &Vec3| {
                    let rim = Vec3::new(d.x, d.y, 0.0).normalize() * 0.1;
                    rim + Vec3::new(0.0, 0.0, 0.2 * d.z.signum())
                }),
            ),
            (
                "ellipsoid",
                Shape::Ellipsoid {
                    radii: Vec3::new(0.05, 0.25, 0.15),
                },
                Box::new(|d: &Vec3| {
                    let r = Vec3::new(0.05, 0.25, 0.15);
                    d.component_mul(&r).component_mul(&r) / d.component_mul(&r).norm()
                }),
            ),
            (
                "hull",
                Shape::ConvexMesh {
                    points: cube.clone(),
                },
                Box::new(|d: &Vec3| Vec3::new(0.0, 0.0, 0.1 * d.z.signum())),
            ),
        ];
        for (name, shape, support_other) in &others {
            // Exact to rounding where both surfaces are smooth (the polish
            // after GJK or EPA) or one is flat and they are apart (GJK;
            // overlapping, EPA within 1e-9 m and 1e-6); against a capsule's side, a
            // segment whose support jumps, GJK's answer stands: measured
            // within nanometres and 1e-4 rad (MuJoCo's own `ccd_tolerance`
            // is 1e-6).
            let (tol_d, tol_n) = match *name {
                "capsule side" => (1e-7, 1e-3),
                // Overlapping a flat face, parry's EPA answers.
                "box" | "hull" => (1e-9, 1e-6),
                _ => (1e-12, 1e-8),
            };
            let (mut worst, mut worst_n) = (0.0f64, 0.0f64);
            for trial in 0..30 {
                let pose_e = SE3::new(random_rotation(&mut rng), Vec3::zeros());
                let n = Vec3::new(rng.normal(), rng.normal(), rng.normal()).normalize();
                let x = support(&pose_e, &radii, &n);
                // Apart, or overlapping (odd trials).
                let d = if trial % 2 == 0 {
                    rng.range(0.002, 0.03)
                } else {
                    -rng.range(0.001, 0.02)
                };
                // The other's rotation: random, or for the flat-faced ones
                // with its +z face turned against n (so that its support
                // towards −n is that face's centre).
                let rot = if matches!(*name, "ball" | "ellipsoid" | "capsule" | "cylinder") {
                    random_rotation(&mut rng)
                } else if *name == "capsule side" {
                    // The capsule's axis (local z) across n.
                    let other = Vec3::new(rng.normal(), rng.normal(), rng.normal());
                    let z = n.cross(&other).normalize();
                    let x = z.cross(&n);
                    Mat3::from_columns(&[x, z.cross(&x), z])
                } else {
                    // z turned onto n, spun about it: the face whose outward
                    // normal is local −z faces the ellipsoid.
                    let spin = SE3::from_axis_angle(&Vec3::z(), rng.range(0.0, 6.0)).rotation;
                    let axis = Vec3::z().cross(&n);
                    let turn = if axis.norm() < 1e-9 {
                        Mat3::identity()
                    } else {
                        SE3::from_axis_angle(&axis.normalize(), n.z.clamp(-1.0, 1.0).acos())
                            .rotation
                    };
                    turn * spin
                };
                let local = rot.transpose() * -n;
                let y = support_other(&local);
                let pose_o = SE3::new(rot, x + n * d - rot * y);
                let (model, c) =
                    contacts((ellipsoid(), pose_e), (shape.clone(), pose_o), false, 0.05);
                let what = format!("{name}, trial {trial}");
                assert!(!c.is_empty(), "{what}: no contact at distance {d}");
                let best = c.iter().map(|c| c.distance).fold(f64::INFINITY, f64::min);
                worst = worst.max((best - d).abs());
                assert!(
                    (best - d).abs() < tol_d,
                    "{what}: distance {best} against {d}"
                );
                for k in &c {
                    // The normal is along n (from b, the other shape, to a,
                    // the ellipsoid: −n).
                    let sign = if model.geometries[k.geom_a].name == "a" {
                        -1.0
                    } else {
                        1.0
                    };
                    worst_n = worst_n.max((k.normal() * sign - n).norm());
                    assert!(
                        (k.normal() * sign - n).norm() < tol_n,
                        "{what}: normal {:?} against {n:?}",
                        k.normal()
                    );
                }
            }
            eprintln!(
                "ellipsoid against {name}: worst distance error {worst:.1e}, normal {worst_n:.1e} over 30 placements"
            );
        }
    }

    /// A ball whose centre is inside the ellipsoid: the contact pushes it
    /// out the nearest way, through the surface point nearest its centre.
    #[test]
    fn a_ball_centred_inside_an_ellipsoid_is_pushed_out_the_nearest_way() {
        let ball = (
            Shape::Ball { radius: 0.15 },
            SE3::from_translation(Vec3::new(0.02, 0.0, 0.05)),
        );
        let (model, c) = contacts((ellipsoid(), SE3::identity()), ball, false, 0.05);
        assert_eq!(c.len(), 1);
        let sign = if model.geometries[c[0].geom_a].name == "a" {
            -1.0
        } else {
            1.0
        };
        // Nearest surface point to (0.02, 0, 0.05): on the shortest axis's
        // side, found by the closest-point equation; depth = its distance
        // to the centre + the radius.
        let n = c[0].normal() * sign;
        assert!(n.z > 0.9, "{n:?}");
        let surface = c[0].point - n * (0.5 * c[0].distance);
        let level =
            (surface.x / 0.3).powi(2) + (surface.y / 0.2).powi(2) + (surface.z / 0.1).powi(2);
        assert!((level - 1.0).abs() < 1e-9, "{level}");
        let centre = Vec3::new(0.02, 0.0, 0.05);
        assert!(((surface - centre).norm() + 0.15 + c[0].distance).abs() < 1e-9);
    }

    /// An ellipsoid of radii (a, b, c) rocking without slip about its
    /// x axis on the floor: the contact at the lowest point is the
    /// instantaneous centre, the centre of mass is `c` above it, and its
    /// height `√(b² sin²θ + c² cos²θ) ≈ c + (b² − c²) θ²/(2c)`, so small
    /// rocks have `ω² = g (b² − c²) / (c ((b² + c²)/5 + c²))` (the
    /// ellipsoid's `I_x = m (b² + c²)/5`): 12.13 rad/s here, a period of
    /// 0.518 s (at 0.01 rad the finite amplitude lengthens it by 0.02 %;
    /// at 0.05 rad by 0.57 %, which moreau's 0.5209 s also shows). An
    /// inscribed polytope rocks on its faces' edges, and a wrong contact
    /// point or normal changes the period or makes it slide or turn.
    #[test]
    fn a_rocking_ellipsoid_keeps_the_period_of_its_curvature() {
        use moreau::sim::{SimParams, Simulator, State};
        use nalgebra::DVector;
        let (a, b, c, g) = (0.3, 0.2, 0.1, 9.81);
        let mass = 2.0;
        let inertia = Inertia::new(
            mass,
            Vec3::zeros(),
            Mat3::from_diagonal(&Vec3::new(b * b + c * c, a * a + c * c, a * a + b * b))
                * (mass / 5.0),
        );
        let mut builder = ModelBuilder::new("rocker");
        let body = builder
            .add_body("e", WORLD, JointType::Free, SE3::identity(), inertia)
            .unwrap();
        let grip = Material {
            friction: 1.0,
            ..Material::default()
        };
        builder
            .add_geometry("e", body, SE3::identity(), ellipsoid_of(a, b, c), grip)
            .unwrap();
        builder
            .add_geometry(
                "floor",
                WORLD,
                SE3::identity(),
                Shape::HalfSpace { normal: Vec3::z() },
                grip,
            )
            .unwrap();
        let model = std::sync::Arc::new(builder.build().unwrap());
        let dt = 1e-3;
        let mut sim = Simulator::new(model.clone(), SimParams::with_dt(dt)).unwrap();
        let theta0: f64 = 0.01;
        let height = (b * b * theta0.sin().powi(2) + c * c * theta0.cos().powi(2)).sqrt();
        let (s, co) = ((0.5 * theta0).sin(), (0.5 * theta0).cos());
        let q = DVector::from_vec(vec![0.0, 0.0, height, s, 0.0, 0.0, co]);
        let mut state = State::new(q, DVector::zeros(6));
        let tau = vec![0.0; 6];
        let omega = (g * (b * b - c * c) / (c * ((b * b + c * c) / 5.0 + c * c))).sqrt();
        let period = 2.0 * std::f64::consts::PI / omega;
        // Upward zero crossings of the tilt (2 atan2(qx, qw)), interpolated.
        let mut crossings = Vec::new();
        let mut last = theta0;
        let (mut worst_depth, mut worst_yaw): (f64, f64) = (0.0, 0.0);
        for _ in 0..(4.5 * period / dt) as usize {
            let report = sim.step(&mut state, &tau).unwrap();
            assert_eq!(report.nc, 1, "one contact at t = {}", state.t);
            let q = &state.q;
            let tilt = 2.0 * q[3].atan2(q[6]);
            worst_yaw = worst_yaw.max(q[4].abs().max(q[5].abs()));
            // The centre's height against the lowest point's, at this tilt.
            let lowest = (b * b * tilt.sin().powi(2) + c * c * tilt.cos().powi(2)).sqrt();
            worst_depth = worst_depth.max(lowest - q[2]);
            if last < 0.0 && tilt >= 0.0 {
                crossings.push(state.t - dt * tilt / (tilt - last));
            }
            last = tilt;
        }
        assert!(crossings.len() >= 3, "{crossings:?}");
        let measured =
            (crossings[crossings.len() - 1] - crossings[0]) / (crossings.len() - 1) as f64;
        eprintln!(
            "rocking ellipsoid: period {measured:.4} s against {period:.4} s; deepest {worst_depth:.1e} m, off-axis rotation {worst_yaw:.1e}"
        );
        assert!(
            (measured - period).abs() < 1e-3 * period,
            "{measured} vs {period}"
        );
        assert!(worst_depth < 1e-4);
        assert!(worst_yaw < 1e-9);
    }

    fn ellipsoid_of(a: f64, b: f64, c: f64) -> Shape {
        Shape::Ellipsoid {
            radii: Vec3::new(a, b, c),
        }
    }
}

/// The broad phase (the model's pair filter applied once; the allowed
/// pairs' bounding spheres then boxes, or sweep-and-prune when most pairs
/// are allowed) drops no contact: at random configurations its contacts
/// are, in order, the narrow phase's on every allowed pair (to rounding:
/// parry's manifold keeps a direction from the pair before).
/// The scenes and a pile of 4 take the pair list (few allowed pairs per
/// geometry); a pile of 40 boxes, balls, capsules and convex meshes (their
/// world boxes their local ones turned) takes the sweep.
#[test]
fn the_broad_phase_drops_no_contact() {
    use moreau::math::Rng;
    let mut models = vec![(pile(40), 0.3), (pile(4), 0.1)];
    for name in ["pyramid", "quadruped", "arm", "cube-stack"] {
        models.push(((*scenes::scene(name).unwrap().model).clone(), 0.3));
    }
    let mut rng = Rng::new(5);
    let mut checked = 0;
    for (model, spread) in &models {
        let mut data = Data::new(model);
        let (mut fast, mut every) = (Vec::new(), Vec::new());
        for _ in 0..20 {
            // Fresh detectors: the narrow phase keeps manifolds between calls.
            let mut det = CollisionDetector::new(model, 5e-3);
            let q0 = model.neutral_configuration();
            let v: Vec<f64> = (0..model.nv).map(|_| spread * rng.normal()).collect();
            let mut q = vec![0.0; model.nq];
            moreau::dynamics::integrate(model, q0.as_slice(), &v, 1.0, &mut q);
            forward_kinematics(model, &mut data, &q);
            det.detect(model, &data, &mut fast).unwrap();
            CollisionDetector::new(model, 5e-3)
                .detect_every_allowed_pair(model, &data, &mut every)
                .unwrap();
            assert_eq!(fast.len(), every.len(), "{}", model.name);
            for (a, b) in fast.iter().zip(&every) {
                assert_eq!(a.key, b.key);
                assert!((a.distance - b.distance).abs() < 1e-12);
                assert!((a.point - b.point).norm() < 1e-12);
            }
            checked += fast.len();
        }
    }
    assert!(
        checked > 100,
        "the configurations touch: {checked} contacts"
    );
}

/// `count` free bodies on a ground: boxes, balls, capsules and convex
/// meshes in turn.
fn pile(count: usize) -> moreau::Model {
    let mut pile = ModelBuilder::new("pile");
    pile.add_ground("ground", Material::default()).unwrap();
    for k in 0..count {
        let body = pile
            .add_body(
                &format!("b{k}"),
                WORLD,
                JointType::Free,
                SE3::identity(),
                Inertia::new(1.0, Vec3::zeros(), moreau::math::Mat3::identity() * 0.01),
            )
            .unwrap();
        let shape = match k % 4 {
            0 => Shape::Cuboid {
                half_extents: Vec3::new(0.05, 0.04, 0.03),
            },
            1 => Shape::Ball { radius: 0.04 },
            2 => Shape::Capsule {
                half_length: 0.05,
                radius: 0.02,
            },
            // A convex mesh off its own origin (its box turned, not walked).
            _ => Shape::ConvexMesh {
                points: [
                    [0.06, 0.0, 0.0],
                    [-0.02, 0.0, 0.0],
                    [0.02, 0.04, 0.0],
                    [0.02, -0.03, 0.0],
                    [0.02, 0.0, 0.05],
                    [0.03, 0.01, -0.02],
                ]
                .iter()
                .map(|p| Vec3::new(p[0] + 0.02, p[1], p[2]))
                .collect(),
            },
        };
        pile.add_geometry(
            &format!("g{k}"),
            body,
            SE3::identity(),
            shape,
            Material::default(),
        )
        .unwrap();
    }
    pile.build().unwrap()
}

/// No manifold repeats a point: robosuite's UR5e under random controls
/// presses its upper arm's hull on its base's, whose clipped faces gave
/// parry's manifold one vertex twice (a second contact with the first's
/// rows, `G` singular for nothing). Every step's contacts, pair by pair,
/// are distinct points.
#[test]
fn manifolds_hold_no_point_twice() {
    let Some(files) = common::robot_files() else {
        return;
    };
    let path = files
        .site_packages
        .join("robosuite/models/assets/robots/ur5e/robot.xml");
    let m = moreau::load::mjcf::load_mjcf(&path, &Default::default())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let model = std::sync::Arc::new(m.model.clone());
    let mut sim =
        moreau::sim::Simulator::new(model.clone(), moreau::sim::SimParams::with_dt(m.timestep))
            .unwrap();
    let mut state = moreau::sim::State::new(m.q0.clone(), nalgebra::DVector::zeros(model.nv));
    let mut rng = common::Lcg(1);
    let mut contacts = 0;
    for step in 0..1000 {
        let ctrl: Vec<f64> = (0..model.nu()).map(|_| rng.range(-1.0, 1.0)).collect();
        sim.step_controls(&mut state, &ctrl).unwrap();
        let c = sim.contacts();
        contacts += c.len();
        for (i, a) in c.iter().enumerate() {
            for b in &c[i + 1..] {
                let same_pair = (a.geom_a, a.geom_b) == (b.geom_a, b.geom_b);
                let same_point =
                    (a.point - b.point).norm() <= 1e-9 && (a.distance - b.distance).abs() <= 1e-9;
                assert!(
                    !(same_pair && same_point),
                    "step {step}: geoms {} and {} touch twice at {:?}",
                    a.geom_a,
                    a.geom_b,
                    a.point
                );
            }
        }
    }
    println!("{contacts} contacts in 1 000 steps");
    assert!(contacts > 500, "{contacts} contacts");
}
