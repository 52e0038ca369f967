//! URDF loading: a hand-written robot gives the tree, masses, placements and
//! limits it describes; malformed files are refused naming file, element and reason.

use moreau::dynamics::{Data, forward_kinematics, potential_energy};
use moreau::load::parse_urdf;
use moreau::model::urdf::UrdfOptions;

const PENDULUM: &str = r#"<?xml version="1.0"?>
<robot name="pendulum">
  <link name="base"/>
  <joint name="shoulder" type="revolute">
    <parent link="base"/><child link="arm"/>
    <origin xyz="0 0 1"/>
    <axis xyz="0 1 0"/>
    <limit lower="-1.5" upper="1.5" effort="10" velocity="3"/>
  </joint>
  <link name="arm">
    <inertial>
      <origin xyz="0 0 -0.5" rpy="0 0 1.5707963267948966"/>
      <mass value="1"/>
      <inertia ixx="0.1" ixy="0" ixz="0" iyy="0.2" iyz="0" izz="0.25"/>
    </inertial>
    <collision><origin xyz="0 0 -0.5"/><geometry><cylinder radius="0.05" length="1"/></geometry></collision>
  </link>
  <joint name="tip_mount" type="fixed">
    <parent link="arm"/><child link="tip"/>
    <origin xyz="0 0 -1"/>
  </joint>
  <link name="tip">
    <inertial><mass value="0.5"/><inertia ixx="0.001" ixy="0" ixz="0" iyy="0.001" iyz="0" izz="0.001"/></inertial>
    <collision><geometry><sphere radius="0.1"/></geometry></collision>
  </link>
</robot>"#;

#[test]
fn a_hand_written_pendulum_loads_as_described() {
    let r = parse_urdf(PENDULUM, "pendulum.urdf", &UrdfOptions::default()).unwrap();
    let m = &r.model;
    println!(
        "nq {} nv {} bodies {} mass {} limits {:?} warnings {:?}",
        m.nq,
        m.nv,
        m.nbodies,
        m.total_mass(),
        m.limited_joints().collect::<Vec<_>>(),
        r.warnings
    );
    // The fixed tip is merged into the arm: world + arm.
    assert_eq!((m.nq, m.nv, m.nbodies), (1, 1, 2));
    assert!((m.total_mass() - 1.5).abs() < 1e-12);
    assert_eq!(
        m.limited_joints().collect::<Vec<_>>(),
        vec![(1, "shoulder", (-1.5, 1.5))]
    );
    assert_eq!(m.geometries.len(), 2, "cylinder and sphere");
    assert_eq!(m.joint_name, vec!["".to_string(), "shoulder".to_string()]);
    // The inertia tensor is rotated by the inertial rpy (yaw 90°: ixx ↔ iyy).
    let arm = &m.body_inertia[1];
    // (m₁ z₁ + m₂ z₂) / (m₁ + m₂) with m = (1, 0.5), z = (-0.5, -1).
    let (m1, z1, m2, z2) = (1.0, -0.5, 0.5, -1.0);
    let c = (m1 * z1 + m2 * z2) / (m1 + m2);
    assert!((arm.com.z - c).abs() < 1e-12);
    // Potential energy at q = 0 and q = π/2 (arm horizontal: centre of mass at the joint height).
    let mut data = Data::new(m);
    forward_kinematics(m, &mut data, &[0.0]);
    let pe0 = potential_energy(m, &data);
    forward_kinematics(m, &mut data, &[std::f64::consts::FRAC_PI_2]);
    let pe1 = potential_energy(m, &data);
    let g = m.gravity.norm();
    println!("potential energy: down {pe0:.6} J, horizontal {pe1:.6} J");
    assert!((pe0 - 1.5 * g * (1.0 + c)).abs() < 1e-9);
    assert!((pe1 - 1.5 * g * 1.0).abs() < 1e-9);
    // The rotated tensor about the centre of mass: Rz(90°) diag(0.1, 0.2, 0.25) Rz(90°)ᵀ = diag(0.2, 0.1, 0.25),
    // plus the tip's point mass and small tensor about the merged centre of mass.
    let arm_only = moreau::math::Inertia::new(
        1.0,
        moreau::math::Vec3::new(0.0, 0.0, -0.5),
        moreau::math::Mat3::from_diagonal(&moreau::math::Vec3::new(0.2, 0.1, 0.25)),
    );
    let tip = moreau::math::Inertia::new(
        0.5,
        moreau::math::Vec3::new(0.0, 0.0, -1.0),
        moreau::math::Mat3::identity() * 0.001,
    );
    let want = arm_only.add(&tip);
    assert!(
        (arm.rotational - want.rotational).abs().max() < 1e-12,
        "{:?}",
        arm.rotational
    );
}

#[test]
fn massless_frames_on_fixed_joints_are_fine_but_not_on_moving_ones() {
    let frame = r#"<joint name="cam_mount" type="fixed"><parent link="arm"/><child link="camera"/></joint>
  <link name="camera"><inertial><mass value="0"/><inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/></inertial></link></robot>"#;
    let r = parse_urdf(
        &PENDULUM.replace("</robot>", frame),
        "p.urdf",
        &UrdfOptions::default(),
    )
    .unwrap();
    assert_eq!(r.model.nbodies, 2);
    let moving = frame.replace(r#"type="fixed""#, r#"type="continuous""#);
    let e = parse_urdf(
        &PENDULUM.replace("</robot>", &moving),
        "p.urdf",
        &UrdfOptions::default(),
    )
    .unwrap_err();
    println!("{e}");
    assert!(e.element.contains("camera") && e.reason.contains("no mass"));
}

#[test]
fn floating_base_needs_a_massive_root() {
    let opts = UrdfOptions {
        floating_base: true,
        ..Default::default()
    };
    let e = parse_urdf(PENDULUM, "pendulum.urdf", &opts).unwrap_err();
    println!("{e}");
    assert!(e.to_string().contains("pendulum.urdf") && e.element.contains("base"));
    let with_mass = PENDULUM.replace(
        r#"<link name="base"/>"#,
        r#"<link name="base"><inertial><mass value="2"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>"#,
    );
    let r = parse_urdf(&with_mass, "pendulum.urdf", &opts).unwrap();
    assert_eq!((r.model.nq, r.model.nv, r.model.nbodies), (8, 7, 3));
    assert!((r.model.total_mass() - 3.5).abs() < 1e-12);
}

#[test]
fn malformed_urdf_is_refused_naming_file_element_and_reason() {
    let cases: Vec<(String, &str)> = vec![
        ("<robot name='x'><link name='a'>".into(), "XML"),
        (PENDULUM.replace(r#"<child link="arm"/>"#, r#"<child link="hand"/>"#), "`hand` does not exist"),
        (PENDULUM.replace(r#"type="revolute""#, r#"type="planar""#), "`planar` is not supported"),
        (PENDULUM.replace(r#"<mass value="1"/>"#, r#"<mass value="-1"/>"#), "mass must be positive"),
        (PENDULUM.replace(r#"<axis xyz="0 1 0"/>"#, r#"<axis xyz="0 0 0"/>"#), "zero joint axis"),
        (PENDULUM.replace(r#"<origin xyz="0 0 1"/>"#, r#"<origin xyz="0 nan 1"/>"#), "not a finite number"),
        (PENDULUM.replace(r#"ixx="0.1""#, r#"ixx="-0.1""#), "arm"),
        (
            PENDULUM.replace(
                "</robot>",
                r#"<joint name="loop" type="fixed"><parent link="tip"/><child link="arm"/></joint></robot>"#,
            ),
            "kinematic loop",
        ),
        (PENDULUM.replace(r#"<limit lower="-1.5""#, r#"<limit lower="2""#), "lower 2 > upper 1.5"),
        ("<model/>".into(), "must be <robot>"),
    ];
    for (text, expect) in cases {
        let e = parse_urdf(&text, "bad.urdf", &UrdfOptions::default()).unwrap_err();
        println!("{e}");
        assert!(e.to_string().starts_with("bad.urdf: "), "{e}");
        assert!(
            e.to_string().contains(expect),
            "expected `{expect}` in: {e}"
        );
    }
}

/// An ASCII STL of the box `[-h, h]³` (12 triangles) plus, when `inner`, a
/// triangle inside it that the hull must drop.
fn box_stl(h: f64, inner: bool) -> String {
    let v = |i: usize| {
        [
            if i & 1 == 0 { -h } else { h },
            if i & 2 == 0 { -h } else { h },
            if i & 4 == 0 { -h } else { h },
        ]
    };
    let faces = [
        [0, 1, 3],
        [0, 3, 2],
        [4, 6, 7],
        [4, 7, 5],
        [0, 4, 5],
        [0, 5, 1],
        [2, 3, 7],
        [2, 7, 6],
        [0, 2, 6],
        [0, 6, 4],
        [1, 5, 7],
        [1, 7, 3],
    ];
    let mut s = String::from("solid box\n");
    let mut tri = |p: [[f64; 3]; 3]| {
        s += "facet normal 0 0 0\nouter loop\n";
        for x in p {
            s += &format!("vertex {} {} {}\n", x[0], x[1], x[2]);
        }
        s += "endloop\nendfacet\n";
    };
    for f in faces {
        tri([v(f[0]), v(f[1]), v(f[2])]);
    }
    if inner {
        tri([[0.0, 0.0, 0.0], [h / 2.0, 0.0, 0.0], [0.0, h / 2.0, 0.0]]);
    }
    s + "endsolid box\n"
}

fn temp_dir(tag: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("moreau-urdf-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

const MESH_ROBOT: &str = r#"<robot name="meshy">
  <link name="base"><inertial><mass value="1"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial>
    <collision><geometry><mesh filename="meshes/box.stl"/></geometry></collision>
  </link>
  <joint name="j" type="continuous"><parent link="base"/><child link="arm"/><origin xyz="0 0 1"/><axis xyz="0 0 1"/></joint>
  <link name="arm"><inertial><mass value="1"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial>
    <collision><geometry><mesh filename="package://meshpkg/box.stl" scale="1 -2 1"/></geometry></collision>
    <collision><geometry><mesh filename="package://meshpkg/tetra.obj"/></geometry></collision>
    <collision><origin xyz="0 0 0.5"/><geometry><capsule radius="0.05" length="0.4"/></geometry></collision>
  </link>
</robot>"#;

#[test]
fn meshes_are_found_and_become_convex_hulls() {
    use moreau::load::load_urdf;
    use moreau::model::Shape;
    let dir = temp_dir("mesh");
    for sub in ["robot/meshes", "share/meshpkg"] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
    }
    std::fs::write(dir.join("robot/meshes/box.stl"), box_stl(0.1, true)).unwrap();
    std::fs::write(dir.join("share/meshpkg/box.stl"), box_stl(0.1, false)).unwrap();
    std::fs::write(
        dir.join("share/meshpkg/tetra.obj"),
        "o t\nv 0 0 0\nv 0.2 0 0\nv 0 0.2 0\nv 0 0 0.2\nv 0.01 0.01 0.01\nf 1 2 3\nf 1 2 4\nf 1 3 4\nf 2 3 4\n",
    )
    .unwrap();
    let file = dir.join("robot/meshy.urdf");
    std::fs::write(&file, MESH_ROBOT).unwrap();

    // Without the package directory, `package://meshpkg` is not found.
    let e = load_urdf(&file, &UrdfOptions::default()).unwrap_err();
    println!("{e}");
    assert!(e.element.contains("arm") && e.reason.contains("package://meshpkg/box.stl"));
    assert!(e.reason.contains("not found"), "{e}");

    let opts = UrdfOptions {
        package_dirs: vec![dir.join("share")],
        ..Default::default()
    };
    let r = load_urdf(&file, &opts).unwrap();
    let g = &r.model.geometries;
    println!(
        "{:?}",
        g.iter()
            .map(|g| (&g.name, g.shape.name()))
            .collect::<Vec<_>>()
    );
    assert_eq!(g.len(), 4);
    let extent = |s: &Shape| match s {
        Shape::ConvexMesh { points } => {
            let mut lo = [f64::INFINITY; 3];
            let mut hi = [f64::NEG_INFINITY; 3];
            for p in points {
                for k in 0..3 {
                    lo[k] = lo[k].min(p[k]);
                    hi[k] = hi[k].max(p[k]);
                }
            }
            (points.len(), [hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]])
        }
        other => panic!("expected a convex mesh, got {}", other.name()),
    };
    // The relative STL: the box's 8 corners, the inner triangle dropped.
    let (n, e0) = extent(&g[0].shape);
    assert_eq!(n, 8);
    assert!(e0.iter().all(|x| (x - 0.2).abs() < 1e-6), "{e0:?}");
    // The package STL scaled by (1, -2, 1): mirrored and stretched along y.
    let (n, e1) = extent(&g[1].shape);
    assert_eq!(n, 8);
    assert!(
        (e1[1] - 0.4).abs() < 1e-6 && (e1[0] - 0.2).abs() < 1e-6,
        "{e1:?}"
    );
    // The OBJ tetrahedron: 4 vertices (the interior one dropped).
    assert_eq!(extent(&g[2].shape).0, 4);
    assert!(
        matches!(g[3].shape, Shape::Capsule { radius, half_length } if radius == 0.05 && half_length == 0.2)
    );

    // Found without a package directory when an ancestor of the model holds the package.
    std::fs::create_dir_all(dir.join("robot/meshpkg")).unwrap();
    for f in ["box.stl", "tetra.obj"] {
        std::fs::copy(
            dir.join("share/meshpkg").join(f),
            dir.join("robot/meshpkg").join(f),
        )
        .unwrap();
    }
    let r2 = load_urdf(&file, &UrdfOptions::default()).unwrap();
    assert_eq!(r2.model.geometries.len(), 4);

    // Bad meshes: a format we do not read, a corrupt STL, a flat mesh.
    let bad = [
        (
            MESH_ROBOT.replace("meshes/box.stl", "meshes/box.dae"),
            "box.dae",
            "not supported",
        ),
        (
            MESH_ROBOT.replace("meshes/box.stl", "meshes/broken.stl"),
            "broken.stl",
            "not a valid STL",
        ),
        (
            MESH_ROBOT.replace("meshes/box.stl", "meshes/flat.obj"),
            "flat.obj",
            "flat",
        ),
        (
            MESH_ROBOT.replace("meshes/box.stl", "meshes/missing.stl"),
            "missing.stl",
            "not found",
        ),
        (
            MESH_ROBOT.replace(r#"scale="1 -2 1""#, r#"scale="1 0 1""#),
            "scale",
            "non-zero",
        ),
    ];
    std::fs::write(dir.join("robot/meshes/box.dae"), "<COLLADA/>").unwrap();
    std::fs::write(
        dir.join("robot/meshes/broken.stl"),
        "solid x\nfacet normal 0 0 1\nouter",
    )
    .unwrap();
    std::fs::write(
        dir.join("robot/meshes/flat.obj"),
        "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 1 1 0\nf 1 2 3\nf 2 4 3\n",
    )
    .unwrap();
    for (text, culprit, reason) in bad {
        std::fs::write(&file, text).unwrap();
        let e = load_urdf(&file, &opts).unwrap_err();
        println!("{e}");
        assert!(
            e.file.ends_with("meshy.urdf") && e.element.starts_with("<link"),
            "{e}"
        );
        assert!(
            e.reason.contains(culprit) && e.reason.contains(reason),
            "{e}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn ignored_pairs_and_initial_overlaps_filter_collisions() {
    // Two arms hanging from a base, overlapping at q = 0; a third far away.
    let link = |name: &str, x: f64| {
        format!(
            r#"<joint name="j_{name}" type="continuous"><parent link="base"/><child link="{name}"/><origin xyz="{x} 0 0"/><axis xyz="0 1 0"/></joint>
  <link name="{name}"><inertial><mass value="1"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial>
    <collision><origin xyz="0 0 -0.5"/><geometry><box size="0.2 0.2 1"/></geometry></collision></link>"#
        )
    };
    let text = format!(
        r#"<robot name="r"><link name="base"/>{}{}{}</robot>"#,
        link("a", 0.0),
        link("b", 0.15),
        link("c", 1.0)
    );
    let r = parse_urdf(&text, "r.urdf", &UrdfOptions::default()).unwrap();
    let m = &r.model;
    let id = |n: &str| m.body_id(n).unwrap();
    println!("{:?}", r.warnings);
    assert!(!m.can_collide(0, 1), "a and b overlap at q = 0");
    assert!(
        r.warnings
            .iter()
            .any(|w| w.contains("`a`") && w.contains("`b`"))
    );
    assert!(m.can_collide(1, 2), "b and c do not");
    let keep = UrdfOptions {
        keep_initial_overlaps: true,
        ignore_pairs: vec![("b".into(), "c".into())],
        ..Default::default()
    };
    let r = parse_urdf(&text, "r.urdf", &keep).unwrap();
    assert!(r.model.can_collide(0, 1) && !r.model.can_collide(1, 2));
    assert_eq!((id("a"), id("b"), id("c")), (1, 2, 3));
    let unknown = UrdfOptions {
        ignore_pairs: vec![("b".into(), "nope".into())],
        ..Default::default()
    };
    let e = parse_urdf(&text, "r.urdf", &unknown).unwrap_err();
    println!("{e}");
    assert!(e.reason.contains("`nope` does not exist"));
}

/// Mutations of a valid file: each returns a damaged copy.
fn mutate(text: &str, rng: &mut u64) -> String {
    let mut next = |n: usize| {
        *rng = rng
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((*rng >> 33) as usize) % n.max(1)
    };
    let bytes = text.as_bytes();
    let quotes: Vec<usize> = text.match_indices('"').map(|(i, _)| i).collect();
    let tags: Vec<usize> = text.match_indices('<').map(|(i, _)| i).collect();
    match next(7) {
        // Truncate anywhere (at a char boundary).
        0 => {
            let mut cut = next(bytes.len());
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text[..cut].to_string()
        }
        // Replace an attribute value by something hostile.
        1 | 2 if quotes.len() >= 2 => {
            let k = next(quotes.len() / 2) * 2;
            let (a, b) = (quotes[k], quotes[k + 1]);
            let bad = [
                "nan",
                "-1",
                "1e308",
                "0",
                "",
                "x",
                "1 2",
                "-inf",
                "0 0 0",
                "1e-320",
                "world",
                "package://",
                "../../../etc/passwd",
                "base",
            ];
            format!(
                "{}\"{}\"{}",
                &text[..a],
                bad[next(bad.len())],
                &text[b + 1..]
            )
        }
        // Delete an element's opening tag.
        3 if !tags.is_empty() => {
            let a = tags[next(tags.len())];
            let b = text[a..].find('>').map_or(text.len(), |e| a + e + 1);
            format!("{}{}", &text[..a], &text[b..])
        }
        // Duplicate a stretch of the text.
        4 if !tags.is_empty() => {
            let a = tags[next(tags.len())];
            let b = tags[next(tags.len())].max(a);
            format!("{}{}", &text[..b], &text[a..])
        }
        // Swap two tag names.
        5 => {
            let names = [
                "link",
                "joint",
                "inertial",
                "collision",
                "geometry",
                "origin",
                "mass",
                "box",
            ];
            let (x, y) = (names[next(names.len())], names[next(names.len())]);
            text.replacen(&format!("<{x}"), &format!("<{y}"), 1)
        }
        // Flip a byte to another ASCII character.
        _ => {
            let mut v = bytes.to_vec();
            let i = next(v.len());
            if v[i].is_ascii() {
                v[i] = b" <>/=\"0a-."[next(10)];
            }
            String::from_utf8(v).unwrap_or_default()
        }
    }
}

#[test]
fn mutated_urdf_files_never_panic() {
    use moreau::{SimParams, Simulator, State};
    // (text, file name, floating base)
    let mut sources = vec![(PENDULUM.to_string(), "pendulum.urdf".to_string(), false)];
    let common_files = {
        #[path = "common/mod.rs"]
        mod common;
        common::robot_files()
    };
    if let Some(files) = common_files {
        let r = files.example_robot_data;
        for (f, floating) in [
            ("solo_description/robots/solo12.urdf", true),
            ("ur_description/urdf/ur5_robot.urdf", false),
        ] {
            let path = r.join(f);
            let text = std::fs::read_to_string(&path).unwrap();
            sources.push((text, path.display().to_string(), floating));
        }
    }
    let mut rng = 12345u64;
    let (mut ok, mut refused) = (0, 0);
    for round in 0..400 {
        let (src, file, floating) = &sources[round % sources.len()];
        let mut text = mutate(src, &mut rng);
        if round % 3 == 0 {
            text = mutate(&text, &mut rng);
        }
        let result = std::panic::catch_unwind(|| {
            let opts = UrdfOptions {
                floating_base: *floating,
                ..Default::default()
            };
            match parse_urdf(&text, file, &opts) {
                Ok(r) => {
                    // A loaded model must also step without panicking (errors are fine).
                    let model = std::sync::Arc::new(r.model);
                    if let Ok(mut sim) = Simulator::new(model.clone(), SimParams::default()) {
                        let mut state = State::new(
                            model.neutral_configuration(),
                            nalgebra::DVector::zeros(model.nv),
                        );
                        let tau = vec![0.0; model.nv];
                        for _ in 0..3 {
                            if sim.step(&mut state, &tau).is_err() {
                                break;
                            }
                        }
                    }
                    true
                }
                Err(e) => {
                    assert!(!e.reason.is_empty() && e.file == *file);
                    false
                }
            }
        });
        match result {
            Ok(true) => ok += 1,
            Ok(false) => refused += 1,
            Err(_) => panic!("round {round}: panic on the mutated file:\n{text}"),
        }
    }
    println!("400 mutated files: {ok} loaded, {refused} refused with an error, no panic");
    assert!(refused > 50 && ok > 20, "the mutations exercise both paths");
}

/// `<visual>`s become the model's visuals, with their material colours
/// (inline, or the robot's material of that name); a link whose visual
/// mesh cannot be read is drawn as its collision geometry, with a warning;
/// a malformed visual is refused like a malformed collision.
#[test]
fn visuals_carry_their_shapes_and_colours() {
    use moreau::load::load_urdf;
    use moreau::model::Shape;
    let dir = temp_dir("visual");
    std::fs::write(dir.join("box.stl"), box_stl(0.1, false)).unwrap();
    let robot = r#"<robot name="painted">
  <material name="red"><color rgba="1 0 0 1"/></material>
  <link name="base"><inertial><mass value="1"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial>
    <visual><origin xyz="0 0 0.1"/><geometry><box size="0.2 0.4 0.6"/></geometry><material name="red"/></visual>
    <visual><geometry><mesh filename="box.stl" scale="2 2 2"/></geometry><material name="inline"><color rgba="0 0.5 1 0.5"/></material></visual>
    <collision><geometry><sphere radius="0.3"/></geometry></collision>
  </link>
  <joint name="j" type="revolute"><parent link="base"/><child link="arm"/><origin xyz="0 0 1"/><axis xyz="0 1 0"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
  <link name="arm"><inertial><mass value="1"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial>
    <visual><geometry><mesh filename="arm.dae"/></geometry></visual>
    <collision><origin xyz="0 0 0.2"/><geometry><cylinder radius="0.05" length="0.4"/></geometry></collision>
  </link>
  <joint name="k" type="fixed"><parent link="arm"/><child link="tip"/><origin xyz="0 0 0.4"/></joint>
  <link name="tip"><visual><geometry><sphere radius="0.07"/></geometry></visual></link>
</robot>"#;
    let file = dir.join("painted.urdf");
    std::fs::write(&file, robot).unwrap();
    let r = load_urdf(&file, &UrdfOptions::default()).unwrap();
    let v = &r.model.visuals;
    assert_eq!(v.len(), 4, "{v:?}");
    // The base's box, red, at its origin; the hulled mesh, scaled, inline colour.
    assert_eq!(v[0].rgba, [1.0, 0.0, 0.0, 1.0]);
    assert!(
        matches!(v[0].shape, Shape::Cuboid { half_extents } if half_extents == moreau::math::Vec3::new(0.1, 0.2, 0.3))
    );
    assert_eq!(v[0].body_from_geom.translation.z, 0.1);
    assert_eq!(v[1].rgba, [0.0, 0.5, 1.0, 0.5]);
    let Shape::ConvexMesh { points } = &v[1].shape else {
        panic!("{:?}", v[1].shape)
    };
    assert!(points.iter().all(|p| (p.abs().max() - 0.2).abs() < 1e-6));
    // And drawn as the file's 12 triangles, scaled.
    let mesh = v[1].mesh.as_ref().expect("the file's triangles");
    assert_eq!(mesh.triangles.len(), 12);
    assert!(
        mesh.vertices
            .iter()
            .all(|p| p.iter().all(|x| (x.abs() - 0.2).abs() < 1e-6))
    );
    assert!(v[0].mesh.is_none());
    // The arm's COLLADA mesh is not read: its cylinder is drawn, and said.
    assert!(matches!(v[2].shape, Shape::Cylinder { .. }));
    assert_eq!((v[2].body, v[2].body_from_geom.translation.z), (1, 0.2));
    assert!(
        r.warnings.iter().any(|w| w.contains("arm")
            && w.contains("arm.dae")
            && w.contains("collision geometry")),
        "{:?}",
        r.warnings
    );
    // The fixed tip joins the arm's body, 0.4 up, grey.
    assert_eq!((v[3].body, v[3].body_from_geom.translation.z), (1, 0.4));
    assert_eq!(v[3].rgba, [0.7, 0.7, 0.7, 1.0]);
    let bad = robot.replace(r#"<box size="0.2 0.4 0.6"/>"#, r#"<box size="0.2 0.4"/>"#);
    std::fs::write(&file, bad).unwrap();
    let e = load_urdf(&file, &UrdfOptions::default()).unwrap_err();
    assert!(
        e.element.contains("base") && e.reason.contains("box size"),
        "{e}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
