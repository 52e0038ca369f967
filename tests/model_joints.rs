//! The model carries its joints: names, position ranges, damping, armature,
//! dry friction, velocity and effort limits, and actuators, as the URDF and
//! MJCF files give them; the builder refuses inconsistent ones, naming the joint.

use moreau::load::mjcf::{MjcfOptions, parse_mjcf};
use moreau::load::parse_urdf;
use moreau::math::{Inertia, SE3, Vec3};
use moreau::model::urdf::UrdfOptions;
use moreau::model::{Actuator, JointSpec, JointType, ModelBuilder};
use std::path::Path;

const ARM: &str = r#"<?xml version="1.0"?>
<robot name="arm">
  <link name="base"/>
  <joint name="shoulder" type="revolute">
    <parent link="base"/><child link="upper"/>
    <axis xyz="0 1 0"/>
    <limit lower="-1.5" upper="1.5" effort="10" velocity="3"/>
    <dynamics damping="0.7" friction="0.2"/>
  </joint>
  <link name="upper"><inertial><mass value="1"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>
  <joint name="wrist" type="continuous">
    <parent link="upper"/><child link="hand"/>
    <origin xyz="0 0 -1"/>
    <axis xyz="0 0 1"/>
    <limit effort="0" velocity="5"/>
  </joint>
  <link name="hand"><inertial><mass value="0.5"/><inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>
</robot>"#;

#[test]
fn urdf_limits_and_dynamics_are_in_the_model() {
    let r = parse_urdf(ARM, "arm.urdf", &UrdfOptions::default()).unwrap();
    let m = &r.model;
    assert_eq!(m.joint_name, ["", "shoulder", "wrist"]);
    assert_eq!(m.joint_id("wrist"), Some(2));
    // A continuous joint has no range, even with a <limit> for its effort.
    assert_eq!(m.joint_range, [None, Some((-1.5, 1.5)), None]);
    assert_eq!(m.dof_effort_limit, [10.0, f64::INFINITY], "effort 0: none");
    assert_eq!(m.dof_velocity_limit, [3.0, 5.0]);
    assert_eq!(m.dof_damping, [0.7, 0.0]);
    // URDF's friction is recorded, not simulated (no box rows).
    assert_eq!(m.dof_urdf_friction, [0.2, 0.0]);
    assert_eq!(m.dof_frictionloss, [0.0, 0.0]);
    assert_eq!(m.dof_armature, [0.0, 0.0]);
    // One motor per moving joint, named after it, its torque clamped to the effort limit.
    assert_eq!(m.nu(), 2);
    assert_eq!(
        (
            m.actuators[0].name.as_str(),
            m.actuators[0].dof,
            m.actuators[0].gear
        ),
        ("shoulder", 0, 1.0)
    );
    let mut tau = [0.0; 2];
    moreau::sim::actuator_forces(
        m,
        &[0.0, 0.0],
        &[0.0, 0.0],
        &[25.0, 25.0],
        &[],
        0.0,
        &mut tau,
    );
    assert_eq!(tau, [10.0, 25.0]);
    // A negative damping is refused, naming the joint.
    let bad = ARM.replace("damping=\"0.7\"", "damping=\"-1\"");
    let e = parse_urdf(&bad, "arm.urdf", &UrdfOptions::default()).unwrap_err();
    assert!(
        e.to_string().contains("shoulder") && e.to_string().contains("damping"),
        "{e}"
    );
}

const MJCF: &str = r#"<mujoco model="m">
  <compiler angle="radian"/>
  <worldbody>
    <body name="torso" pos="0 0 1">
      <freejoint name="root"/>
      <geom type="sphere" size="0.1" mass="1"/>
      <body name="leg" pos="0 0 -0.2">
        <joint name="hip" type="hinge" axis="0 1 0" range="-1 1" limited="true"
               damping="2" armature="0.05" frictionloss="0.3"/>
        <geom type="capsule" fromto="0 0 0 0 0 -0.4" size="0.05" mass="0.5"/>
        <body name="foot" pos="0 0 -0.4">
          <joint name="ankle" type="slide" axis="0 0 1"/>
          <geom type="sphere" size="0.05" mass="0.1"/>
        </body>
      </body>
    </body>
  </worldbody>
  <actuator>
    <motor name="hip_motor" joint="hip" gear="40" ctrlrange="-1 1" ctrllimited="true"
           forcerange="-30 30" forcelimited="true"/>
    <motor joint="ankle"/>
  </actuator>
</mujoco>"#;

#[test]
fn mjcf_joint_properties_and_actuators_are_in_the_model() {
    let r = parse_mjcf(MJCF, "m.xml", Path::new("."), &MjcfOptions::default()).unwrap();
    let m = &r.model;
    assert_eq!(m.joint_name, ["", "root", "hip", "ankle"]);
    assert_eq!(m.joint_range[2], Some((-1.0, 1.0)));
    let hip = m.joint_idx_v[2];
    assert_eq!(hip, 6);
    assert_eq!(
        (
            m.dof_damping[hip],
            m.dof_armature[hip],
            m.dof_frictionloss[hip]
        ),
        (2.0, 0.05, 0.3)
    );
    assert!(m.dof_damping[..6].iter().all(|&d| d == 0.0));
    assert_eq!(m.nu(), 2);
    let a = &m.actuators[0];
    assert_eq!(
        (a.name.as_str(), a.joint, a.dof, a.gear),
        ("hip_motor", 2, 6, 40.0)
    );
    assert_eq!(
        (a.ctrl_range, a.force_range),
        (Some((-1.0, 1.0)), Some((-30.0, 30.0)))
    );
    // An unnamed motor takes its joint's name; the slide's dof is the last.
    assert_eq!(
        (m.actuators[1].name.as_str(), m.actuators[1].dof),
        ("ankle", 7)
    );
    // What the dynamics use is not warned about (dry friction is simulated).
    for attr in [
        "`damping`",
        "`armature`",
        "`frictionloss`",
        "forcerange",
        "joint range",
    ] {
        assert!(
            !r.warnings.iter().any(|w| w.contains(attr)),
            "{attr}: {:?}",
            r.warnings
        );
    }
}

#[test]
fn the_builder_refuses_inconsistent_joints_and_actuators() {
    let mut b = ModelBuilder::new("t");
    let inertia = Inertia::new(1.0, Vec3::zeros(), moreau::math::Mat3::identity() * 0.1);
    let free = b
        .add_body("base", 0, JointType::Free, SE3::identity(), inertia)
        .unwrap();
    let hinge = b
        .add_body(
            "arm",
            free,
            JointType::Revolute(Vec3::y()),
            SE3::identity(),
            inertia,
        )
        .unwrap();
    let err = |spec: JointSpec, body: usize, b: &mut ModelBuilder| {
        b.set_joint_spec(body, spec).unwrap_err().to_string()
    };
    let e = err(
        JointSpec {
            name: "elbow".into(),
            range: Some((1.0, -1.0)),
            ..Default::default()
        },
        hinge,
        &mut b,
    );
    assert!(e.contains("elbow") && e.contains("range"), "{e}");
    let e = err(
        JointSpec {
            range: Some((-1.0, 1.0)),
            ..Default::default()
        },
        free,
        &mut b,
    );
    assert!(e.contains("base") && e.contains("free"), "{e}");
    let e = err(
        JointSpec {
            effort_limit: 0.0,
            ..Default::default()
        },
        hinge,
        &mut b,
    );
    assert!(e.contains("effort limit"), "{e}");
    let motor = |joint| Actuator::motor("m", joint, 1.0);
    let e = b.add_actuator(motor(free)).unwrap_err().to_string();
    assert!(e.contains("free") && e.contains("1-dof"), "{e}");
    assert!(b.add_actuator(motor(hinge)).is_ok());
    let m = b.build().unwrap();
    assert_eq!((m.nu(), m.actuators[0].dof), (1, 6));
    // Refused specs left the joints as they were.
    assert_eq!(m.joint_range, [None, None, None]);
    assert_eq!(m.joint_name, ["", "base", "arm"]);
}
