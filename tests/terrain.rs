//! Terrain: height fields seen by the collision detection where their
//! definition puts them (a tilted plane's analytic distances, both axes),
//! per-cell friction deciding between sliding and sticking on a slope as
//! `μ ≶ tan θ` says, generated rough terrain, the terrain file format and
//! its errors, and the quadruped standing on rough terrain.

use moreau::collision::CollisionDetector;
use moreau::dynamics::{Data, forward_kinematics};
use moreau::math::{Inertia, SE3, Vec3};
use moreau::model::terrain::RoughTerrain;
use moreau::model::{HeightField, JointType, Material, ModelBuilder, Shape, Terrain, WORLD};
use moreau::scenes;
use moreau::sim::{SimParams, Simulator, State};
use nalgebra::{DMatrix, DVector};
use std::sync::Arc;

/// A plane `z = a x + b y` sampled as a height field (exact on its
/// triangles), with friction `mu(i, j)` per cell.
fn tilted(a: f64, b: f64, n: usize, size: f64, mu: impl Fn(usize, usize) -> f64) -> HeightField {
    let at = |k: usize| -size / 2.0 + k as f64 * size / (n - 1) as f64;
    HeightField {
        heights: DMatrix::from_fn(n, n, |i, j| a * at(i) + b * at(j)),
        size: [size, size],
        cell_friction: Some(DMatrix::from_fn(n - 1, n - 1, mu)),
    }
}

/// A free ball (radius `r`) or cube (side `side`) above a height field.
fn body_on(field: HeightField, shape: Shape) -> Arc<moreau::Model> {
    let mut b = ModelBuilder::new("on-terrain");
    b.add_geometry(
        "terrain",
        WORLD,
        SE3::identity(),
        Shape::HeightField(field),
        Material::with_friction(1.0),
    )
    .unwrap();
    let body = b
        .add_body(
            "body",
            WORLD,
            JointType::Free,
            SE3::identity(),
            Inertia::cuboid(1.0, Vec3::new(0.1, 0.1, 0.1)),
        )
        .unwrap();
    b.add_geometry(
        "body",
        body,
        SE3::identity(),
        shape,
        Material::with_friction(0.8),
    )
    .unwrap();
    Arc::new(b.build().unwrap())
}

fn at(p: Vec3) -> DVector<f64> {
    DVector::from_vec(vec![p.x, p.y, p.z, 0.0, 0.0, 0.0, 1.0])
}

/// Heights vary along x and y with different slopes: a transposed or
/// mirrored grid would put the surface elsewhere. A ball's signed distance
/// to the plane `z = a x + b y` is `(z − a x − b y)/√(1 + a² + b²) − r`,
/// and the contact's normal is the plane's.
#[test]
fn height_field_distances_and_normals_are_the_planes() {
    let (a, b, r) = (0.2, -0.1, 0.05);
    let field = tilted(a, b, 11, 4.0, |i, j| 0.1 + 0.01 * (i + 20 * j) as f64);
    let model = body_on(field.clone(), Shape::Ball { radius: r });
    let mut data = Data::new(&model);
    let mut detector = CollisionDetector::new(&model, 0.01);
    let mut contacts = Vec::new();
    let norm = (1.0 + a * a + b * b).sqrt();
    let normal = Vec3::new(-a, -b, 1.0) / norm;
    let mut checked = 0;
    for (x, y, gap) in [
        (0.31, -0.77, 0.004),
        (-1.23, 0.58, -0.002),
        (1.5, 1.1, 0.0),
        (-0.05, -1.6, 0.008),
    ] {
        assert!((field.height_at(x, y) - (a * x + b * y)).abs() < 1e-12);
        let z = a * x + b * y + (r + gap) * norm;
        forward_kinematics(&model, &mut data, at(Vec3::new(x, y, z)).as_slice());
        detector.detect(&model, &data, &mut contacts).unwrap();
        assert!(!contacts.is_empty(), "no contact at ({x}, {y})");
        for c in &contacts {
            assert!(
                (c.distance - gap).abs() < 1e-9,
                "distance {} vs {gap} at ({x}, {y})",
                c.distance
            );
            assert!(
                (c.normal() - normal).norm() < 1e-9,
                "normal {:?}",
                c.normal()
            );
            // The cell under the contact point gives the friction.
            let (i, j) = field.cell_at(c.point.x, c.point.y);
            assert_eq!(c.mu, field.friction_at_cell(i, j).unwrap());
            checked += 1;
        }
    }
    assert!(checked >= 4);
}

/// A cube on a slope of `tan θ = 0.3`: on the cells of friction 0.2 it
/// slides down, on those of 0.5 it stays where it was put (cell friction
/// replaces the cube's own 0.8).
#[test]
fn per_cell_friction_decides_sliding_on_a_slope() {
    let slope: f64 = 0.3;
    let side = 0.1;
    // Friction 0.2 where y < 0, 0.5 where y > 0 (cells along j).
    let field = tilted(slope, 0.0, 41, 4.0, |_, j| if j < 20 { 0.2 } else { 0.5 });
    let model = body_on(
        field,
        Shape::Cuboid {
            half_extents: Vec3::new(side / 2.0, side / 2.0, side / 2.0),
        },
    );
    let theta = slope.atan();
    let mut moved = Vec::new();
    for y in [-1.0, 1.0] {
        let params = SimParams::default();
        let mut sim = Simulator::new(model.clone(), params).unwrap();
        // The cube resting on the slope, tilted with it (about −y).
        let rot = nalgebra::UnitQuaternion::from_axis_angle(&-Vec3::y_axis(), theta);
        let x = 0.5;
        let centre = Vec3::new(x, y, slope * x) + rot * Vec3::new(0.0, 0.0, side / 2.0);
        let mut q = at(centre);
        q[3] = rot.i;
        q[4] = rot.j;
        q[5] = rot.k;
        q[6] = rot.w;
        let mut state = State::new(q.clone(), DVector::zeros(6));
        for _ in 0..500 {
            sim.step(&mut state, &[0.0; 6]).unwrap();
        }
        let d = ((state.q[0] - q[0]).powi(2) + (state.q[2] - q[2]).powi(2)).sqrt();
        // Sliding with μ = 0.2 for 0.5 s: ½ g (sin θ − μ cos θ) t².
        let expected = 0.5 * 9.81 * (theta.sin() - 0.2 * theta.cos()) * 0.25;
        println!("y = {y}: moved {d:.4} m along the slope (sliding would give {expected:.4} m)");
        moved.push((d, expected));
    }
    let (slide, expected) = moved[0];
    assert!(
        (slide - expected).abs() < 0.1 * expected,
        "slid {slide}, expected {expected}"
    );
    assert!(moved[1].0 < 1e-3, "stuck cube moved {}", moved[1].0);
}

#[test]
fn rough_terrain_is_bounded_seeded_and_round_trips_through_its_file() {
    let settings = RoughTerrain {
        size: [4.0, 3.0],
        resolution: 0.05,
        ..RoughTerrain::default()
    };
    let t = Terrain::rough(&settings).unwrap();
    let (lo, hi) = t.field.height_range();
    assert_eq!(lo, 0.0);
    assert!(
        hi <= settings.bump_height && hi > 0.5 * settings.bump_height,
        "heights up to {hi}"
    );
    let mu = t.field.cell_friction.as_ref().unwrap();
    assert!(mu.iter().all(|&m| (0.1..=1.5).contains(&m)));
    assert!(mu.max() - mu.min() > 0.5, "friction regions barely differ");
    assert_eq!(
        t,
        Terrain::rough(&settings).unwrap(),
        "same seed, same terrain"
    );
    let other = Terrain::rough(&RoughTerrain {
        seed: 1,
        ..settings.clone()
    })
    .unwrap();
    assert_ne!(t.field.heights, other.field.heights);
    let back = Terrain::from_text(&t.to_text()).unwrap();
    assert_eq!(back.field, t.field, "text round trip");
    assert!((t.height_at(0.3, -0.2) - t.field.height_at(0.3, -0.2)).abs() < 1e-15);
    // Bad settings and files name what is wrong.
    let e = Terrain::rough(&RoughTerrain {
        resolution: 0.0,
        ..settings.clone()
    })
    .unwrap_err();
    assert!(e.to_string().contains("resolution"), "{e}");
    let e = Terrain::rough(&RoughTerrain {
        friction: (1.0, 0.5),
        ..settings
    })
    .unwrap_err();
    assert!(e.to_string().contains("friction"), "{e}");
    let cases = [
        ("", "empty"),
        ("terrain 2 2 1 1\n0 0\n0 0\n", "line 1"),
        ("moreau-terrain 2 2 1 1\n0 0\n0\n", "line 3"),
        ("moreau-terrain 2 2 1 1\n0 0\n0 x\n", "`x` is not a number"),
        ("moreau-terrain 2 2 1 1\n0 0\n0 NaN\n", "not finite"),
        ("moreau-terrain 2 2 1 1\n0 0\n", "ends before"),
        ("moreau-terrain 2 2 1 1\n0 0\n0 0\nfriction\n-1\n", "≥ 0"),
        ("moreau-terrain 2 2 0 1\n0 0\n0 0\n", "size"),
        ("moreau-terrain 1 2 1 1\n0 0\n", "2 × 2"),
    ];
    for (text, says) in cases {
        let e = Terrain::from_text(text).unwrap_err().to_string();
        assert!(e.contains(says), "{text:?}: `{e}` should say `{says}`");
    }
    let path = std::env::temp_dir().join("moreau-terrain-missing/none.txt");
    let e = Terrain::load(&path).unwrap_err().to_string();
    assert!(e.contains("none.txt"), "{e}");
}

#[test]
fn height_fields_are_refused_on_moving_bodies_and_when_malformed() {
    let mut b = ModelBuilder::new("bad");
    let body = b
        .add_body(
            "body",
            WORLD,
            JointType::Free,
            SE3::identity(),
            Inertia::cuboid(1.0, Vec3::new(0.1, 0.1, 0.1)),
        )
        .unwrap();
    let e = b
        .add_geometry(
            "hf",
            body,
            SE3::identity(),
            Shape::HeightField(HeightField::flat([1.0, 1.0])),
            Material::default(),
        )
        .unwrap_err();
    assert!(e.to_string().contains("attach it to the world"), "{e}");
    let mut bad = HeightField::flat([1.0, 1.0]);
    bad.cell_friction = Some(DMatrix::zeros(2, 2));
    let e = b
        .add_geometry(
            "hf",
            WORLD,
            SE3::identity(),
            Shape::HeightField(bad),
            Material::default(),
        )
        .unwrap_err();
    assert!(
        e.to_string().contains("one per cell") && e.to_string().contains("`hf`"),
        "{e}"
    );
}

/// The quadruped, PD-held in its standing posture, put on rough terrain
/// (3 cm bumps, μ from 0.1 to 1.5) in place of its flat ground, stands for
/// a second: its base stays up and level.
#[test]
fn quadruped_stands_on_rough_terrain() {
    let scene = scenes::quadruped().unwrap();
    let terrain = Terrain::rough(&RoughTerrain {
        size: [4.0, 4.0],
        ..RoughTerrain::default()
    })
    .unwrap();
    let model = Arc::new(scene.model.with_terrain(&terrain).unwrap());
    assert_eq!(model.geometries.len(), scene.model.geometries.len());
    assert!(
        model
            .geometries
            .iter()
            .any(|g| matches!(g.shape, Shape::HeightField(_)))
    );
    assert!(
        !model
            .geometries
            .iter()
            .any(|g| matches!(g.shape, Shape::HalfSpace { .. }))
    );
    let mut sim = Simulator::new(model.clone(), SimParams::default()).unwrap();
    let mut state = scene.state.clone();
    // Lift it above the bumps.
    state.q[2] += terrain.field.height_range().1;
    let mut tau = vec![0.0; model.nv];
    let mut contacts = 0;
    for _ in 0..1000 {
        scene.control(&state, &mut tau);
        sim.step(&mut state, &tau).unwrap();
        contacts = contacts.max(sim.contacts().len());
    }
    let up = moreau::math::quat_from_slice(&state.q.as_slice()[3..7]) * Vec3::z();
    let ground = terrain.height_at(state.q[0], state.q[1]);
    println!(
        "after 1 s: base {:.3} m above the terrain, up·z {:.4}, up to {contacts} contacts",
        state.q[2] - ground,
        up.z
    );
    assert!(state.q[2] - ground > 0.15 && up.z > 0.97);
    assert!(contacts >= 4);
}
