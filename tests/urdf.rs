//! URDF loading: a hand-written robot gives the tree, masses, placements and
//! limits it describes; malformed files are refused naming file, element and reason.

use moreau::dynamics::{Data, forward_kinematics, potential_energy};
use moreau::model::urdf::{UrdfOptions, parse_urdf};

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
    <collision><geometry><mesh filename="package://pendulum/tip.stl"/></geometry></collision>
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
        r.joint_limits,
        r.warnings
    );
    // The fixed tip is merged into the arm: world + arm.
    assert_eq!((m.nq, m.nv, m.nbodies), (1, 1, 2));
    assert!((m.total_mass() - 1.5).abs() < 1e-12);
    assert_eq!(r.joint_limits, vec![("shoulder".to_string(), -1.5, 1.5)]);
    assert_eq!(
        m.geometries.len(),
        2,
        "cylinder and sphere; the mesh is reported"
    );
    assert!(
        r.warnings
            .iter()
            .any(|w| w.contains("tip.stl") && w.contains("<link name=\"tip\">"))
    );
    // The inertia tensor is rotated by the inertial rpy (yaw 90°: ixx ↔ iyy).
    let arm = &m.body_inertia[1];
    let c = (1.0 * -0.5 + 0.5 * -1.0) / 1.5;
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
