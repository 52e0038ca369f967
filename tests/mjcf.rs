//! MJCF loading: a loaded humanoid falls onto the floor without exploding;
//! a small model loads; mesh files are found and hulled with their mass;
//! unsupported physics is reported by name. (MuJoCo's numbers:
//! tests/mjcf_mujoco.rs; bad and mutated files: tests/mjcf_bad_files.rs.)

mod common;

use common::mjcf::{PENDULUM, parse, rel};
use moreau::dynamics::{Data, forward_kinematics};
use moreau::load::mjcf::{MjcfOptions, load_mjcf};
use moreau::math::{Mat3, Vec3};
use moreau::sim::{SimParams, Simulator, State};
use nalgebra::DVector;
use std::sync::Arc;

/// Lowest point of a ball or capsule geometry in the world (the humanoid has no other shape).
fn lowest_point(model: &moreau::Model, data: &Data, k: usize) -> f64 {
    let g = &model.geometries[k];
    let x = data.world_from_body[g.body].mul(&g.body_from_geom);
    match g.shape {
        moreau::model::Shape::Ball { radius } => x.translation.z - radius,
        moreau::model::Shape::Capsule {
            half_length,
            radius,
        } => {
            let axis = x.rotation.column(2) * half_length;
            (x.translation.z - axis.z.abs()) - radius
        }
        ref s => panic!("unexpected shape {s:?}"),
    }
}

#[test]
fn a_loaded_humanoid_falls_and_lands_without_exploding() {
    let Some(files) = common::robot_files() else {
        return;
    };
    let m = load_mjcf(
        files.gymnasium_assets.join("humanoid.xml"),
        &MjcfOptions::default(),
    )
    .unwrap();
    let model = Arc::new(m.model.clone());
    let dt = m.timestep;
    let mut sim = Simulator::new(model.clone(), SimParams::with_dt(dt)).unwrap();
    // Gymnasium's initial state: qpos0 (torso at z = 1.4), plus a small push
    // (forward and a roll rate) so that it does not fall symmetrically.
    let mut v = DVector::zeros(model.nv);
    v[0] = 0.3;
    v[3] = 0.5;
    let mut state = State::new(m.q0.clone(), v);
    assert!((state.q[2] - 1.4).abs() < 1e-12);
    let tau = DVector::zeros(model.nv);
    let (ke0, pe0) = sim.energy(&state).unwrap();
    let e0 = ke0 + pe0;
    let floor = model
        .geometries
        .iter()
        .position(|g| g.name == "floor")
        .unwrap();
    let steps = (2.0 / dt).round() as usize;
    let (mut max_contacts, mut first_contact) = (0usize, None);
    let (mut worst_penetration, mut max_energy_gain, mut max_ke): (f64, f64, f64) = (0.0, 0.0, 0.0);
    let mut data = Data::new(&model);
    for step in 0..steps {
        let report = sim
            .step(&mut state, tau.as_slice())
            .unwrap_or_else(|e| panic!("step {step}: {e}"));
        assert!(
            state.q.iter().chain(state.v.iter()).all(|x| x.is_finite()),
            "step {step}: non-finite state"
        );
        if report.nc > 0 && first_contact.is_none() {
            first_contact = Some(step as f64 * dt);
        }
        max_contacts = max_contacts.max(report.nc);
        let (ke, pe) = sim.energy(&state).unwrap();
        max_ke = max_ke.max(ke);
        max_energy_gain = max_energy_gain.max(ke + pe - e0);
        forward_kinematics(&model, &mut data, state.q.as_slice());
        for k in 0..model.geometries.len() {
            if k != floor {
                worst_penetration = worst_penetration.max(-lowest_point(&model, &data, k));
            }
        }
    }
    let (ke, pe) = sim.energy(&state).unwrap();
    println!(
        "humanoid, {steps} steps of {dt} s: first contact at {:.3} s, up to {max_contacts} contacts; \
         torso z {:.3} m (start 1.4); energy: start {e0:.2} J, end {:.2} J (kinetic {ke:.3} J), \
         max kinetic {max_ke:.2} J, potential lost {:.2} J, max gain over start {max_energy_gain:.3} J; \
         worst penetration {:.4} m",
        first_contact.unwrap_or(f64::NAN),
        state.q[2],
        ke + pe,
        pe0 - pe,
        worst_penetration
    );
    assert!(first_contact.is_some(), "it never touched the floor");
    assert!(max_contacts >= 2);
    // Energy: contacts and friction dissipate; a small numerical gain is allowed.
    assert!(max_energy_gain < 0.05 * (pe0 - pe) + 1.0);
    assert!(max_ke < ke0 + (pe0 - pe).max(0.0) * 1.05 + 1.0);
    // It lies on the floor: torso low, nothing deep in the ground, nearly at rest.
    assert!(
        state.q[2] < 0.5 && state.q[2] > 0.0,
        "torso z {}",
        state.q[2]
    );
    assert!(worst_penetration < 0.03, "penetration {worst_penetration}");
    assert!(ke < 0.1 * (pe0 - pe), "still moving fast: {ke} J");
}

#[test]
fn a_small_pendulum_loads() {
    let m = parse(PENDULUM);
    assert_eq!((m.model.nq, m.model.nv, m.bodies), (2, 2, 3));
    assert_eq!(m.model.actuators[0].dof, 0);
    assert!(m.warnings.iter().all(|w| !w.contains("damping")));
}

#[test]
fn mesh_files_are_found_through_meshdir_and_hulled_with_their_mass() {
    let dir = std::env::temp_dir().join(format!("moreau-mjcf-mesh-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("meshes")).unwrap();
    // A box x ∈ [0, 0.25], y, z ∈ [-0.125, 0.125] (binary fractions: OBJ files
    // are read in single precision) with an extra point inside (not a hull
    // vertex, on no face).
    let mut obj = String::new();
    for x in [0.0, 0.25] {
        for y in [-0.125, 0.125] {
            for z in [-0.125, 0.125] {
                obj += &format!("v {x} {y} {z}\n");
            }
        }
    }
    // The six faces wound outwards (vertex 1 + 4x + 2y + z), as quads
    // the reader fans into triangles: MuJoCo's default (`legacy`) mass
    // properties come from these triangles.
    obj += "v 0.125 0 0\n";
    obj += "f 1 2 4 3\nf 5 7 8 6\nf 1 5 6 2\nf 3 4 8 7\nf 1 3 7 5\nf 2 6 8 4\n";
    std::fs::write(dir.join("meshes/brick.obj"), obj).unwrap();
    let xml = r#"<mujoco model="brick">
  <compiler meshdir="meshes"/>
  <asset><mesh file="brick.obj" scale="1 2 1"/></asset>
  <worldbody>
    <geom type="plane" size="1 1 0.1"/>
    <body name="brick" pos="0 0 0.5"><freejoint/><geom name="b" type="mesh" mesh="brick"/></body>
  </worldbody>
</mujoco>"#;
    std::fs::write(dir.join("brick.xml"), xml).unwrap();
    let m = load_mjcf(dir.join("brick.xml"), &MjcfOptions::default()).unwrap();
    let i = &m.model.body_inertia[1];
    // 0.25 × 0.5 × 0.25 m of density 1000: 31.25 kg, centred at (0.125, 0, 0),
    // moments m/12 (b² + c², a² + c², a² + b²).
    let (a, b, c) = (0.25, 0.5, 0.25);
    let mass = 1000.0 * a * b * c;
    let want = Mat3::from_diagonal(&Vec3::new(b * b + c * c, a * a + c * c, a * a + b * b))
        * (mass / 12.0);
    println!(
        "brick: mass {} com {:?} inertia {:?}",
        i.mass,
        i.com.as_slice(),
        i.rotational.diagonal().as_slice()
    );
    assert!(rel(i.mass, mass) < 1e-12);
    assert!((i.com - Vec3::new(0.125, 0.0, 0.0)).norm() < 1e-12);
    assert!((i.rotational - want).abs().max() < 1e-12);
    match &m.model.geometries[1].shape {
        moreau::model::Shape::ConvexMesh { points } => {
            assert_eq!(points.len(), 8, "the hull drops the inner point");
            assert!(points.iter().all(|p| p.y.abs() == 0.25), "scaled");
        }
        s => panic!("{s:?}"),
    }
    // The same file with the mesh directory wrong: refused, naming the path looked at.
    std::fs::write(dir.join("bad.xml"), xml.replace("meshes", "nowhere")).unwrap();
    let e = load_mjcf(dir.join("bad.xml"), &MjcfOptions::default()).unwrap_err();
    println!("{e}");
    assert!(e.element.contains("<mesh") && e.reason.contains("nowhere/brick.obj"));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn unsupported_physics_is_reported_by_name_and_harmless_elements_are_skipped() {
    let text = PENDULUM
        .replace(
            "<worldbody>",
            r#"<option integrator="RK4" viscosity="0.1" cone="elliptic"><flag warmstart="disable" energy="enable"/></option>
  <visual><map znear="0.01"/></visual>
  <worldbody>
    <light pos="0 0 3"/>
    <camera name="cam" pos="0 -3 1"/>"#,
        )
        .replace(
            r#"<geom name="ball""#,
            r#"<site name="s"/><composite type="grid" count="2 2 1"/><geom name="ball""#,
        )
        .replace(
            "</mujoco>",
            r#"<tendon><fixed name="t"><joint joint="hinge" coef="1"/></fixed></tendon>
  <equality><joint joint1="hinge" joint2="slider"/><connect body1="link" body2="tip" anchor="0 0 0"/><flex flex="cloth"/></equality>
  <contact><pair geom1="ball" geom2="floor"/></contact>
  <sensor><jointpos joint="hinge"/></sensor>
  <actuator><velocity name="v" joint="slider" kv="3"/><motor name="t" tendon="t"/></actuator>
</mujoco>"#,
        )
        .replace(
            r#"<joint name="slider" type="slide" axis="0 0 1"/>"#,
            r#"<joint name="slider" type="slide" axis="0 0 1" stiffness="50" frictionloss="0.1"/>"#,
        );
    let m = parse(&text);
    for w in &m.warnings {
        println!("warning: {w}");
    }
    let expect = [
        "integrator=\"RK4\"",
        "<flag> warmstart=\"disable\"",
        "<composite>",
        "<flex> equality constraints are not supported",
    ];
    for e in expect {
        assert!(
            m.warnings.iter().any(|w| w.contains(e)),
            "no warning about {e}"
        );
    }
    // moreau's cones are the elliptic ones; energy bookkeeping is not physics.
    for silent in ["cone=", "energy="] {
        assert!(!m.warnings.iter().any(|w| w.contains(silent)), "{silent}");
    }
    for silent in ["light", "camera", "site", "visual", "sensor"] {
        assert!(
            !m.warnings.iter().any(|w| w.contains(&format!("<{silent}"))),
            "{silent} is not physics"
        );
    }
    // What is supported loads, and is not warned about: the medium's
    // viscosity, the velocity servo, the slider's spring.
    for simulated in ["viscosity", "<velocity", "`stiffness`", "joint range"] {
        assert!(
            !m.warnings.iter().any(|w| w.contains(simulated)),
            "{simulated} is simulated"
        );
    }
    // The motor on the fixed tendon maps too.
    assert_eq!((m.model.nq, m.model.nv, m.model.actuators.len()), (2, 2, 3));
    assert_eq!(m.model.actuators[2].tendon, Some(0));
    // The fixed tendon, the joint equality and the slider's dry friction
    // are simulated, not warned about.
    for simulated in ["<tendon>", "<equality>", "`frictionloss`"] {
        assert!(
            !m.warnings.iter().any(|w| w.contains(simulated)),
            "{simulated} is simulated: {:?}",
            m.warnings
        );
    }
    assert_eq!((m.model.tendons.len(), m.model.equalities.len()), (1, 1));
    // And the explicit contact pair.
    assert_eq!(m.model.contact_pairs.len(), 1);
    // So is the connect (its anchor at `link`'s origin, on `tip` 0.5 m above tip's).
    let c = &m.model.body_equalities[0];
    assert_eq!((c.body1, c.body2, c.rotation), (1, 2, None));
    assert!(
        (c.point2 - Vec3::new(0.0, 0.0, 0.5)).norm() < 1e-12,
        "{:?}",
        c.point2
    );
    assert!(m.model.dof_frictionloss.contains(&0.1));
    let v = m.model.actuators.iter().find(|a| a.name == "v").unwrap();
    assert_eq!((v.gain, v.bias), (3.0, [0.0, 0.0, -3.0]));
    assert_eq!(m.model.medium.viscosity, 0.1);
    assert!(m.model.dof_stiffness.contains(&50.0));
}

/// A body without joints is welded into its parent; its name stays as a
/// frame of the carrying body (Gymnasium's Reacher reads its fingertip),
/// placed where MuJoCo puts it; so does a named site.
#[test]
fn welded_bodies_stay_as_named_frames() {
    let m = parse(
        r#"<mujoco><worldbody>
             <body name="arm" pos="0 0 1">
               <joint name="hinge" type="hinge" axis="0 0 1"/>
               <geom type="capsule" fromto="0 0 0 0.5 0 0" size="0.02"/>
               <body name="hand" pos="0.5 0 0" euler="0 0 90">
                 <body name="tip" pos="0.1 0 0"/>
                 <site name="grip" pos="0 0.2 0"/>
               </body>
             </body>
           </worldbody></mujoco>"#,
    );
    let model = &m.model;
    let arm = model.body_id("arm").unwrap();
    let frame = |name: &str| model.frames.iter().find(|f| f.name == name).unwrap();
    assert_eq!(frame("arm").body, arm);
    assert_eq!(frame("tip").body, arm, "welded into the arm");
    // The arm turned 90° about z puts the hand at (0, 0.5, 1), its x axis
    // (turned 90° more) along −x: the tip 0.1 along it.
    let mut data = Data::new(model);
    forward_kinematics(model, &mut data, &[std::f64::consts::FRAC_PI_2]);
    let f = frame("tip");
    let p = data.world_from_body[f.body].act_point(&f.body_from_frame.translation);
    assert!((p - Vec3::new(-0.1, 0.5, 1.0)).norm() < 1e-12, "{p}");
    // The site 0.2 along the hand's y, which the turns put along −y.
    let f = frame("grip");
    let p = data.world_from_body[f.body].act_point(&f.body_from_frame.translation);
    assert!((p - Vec3::new(0.0, 0.3, 1.0)).norm() < 1e-12, "{p}");
}

/// MuJoCo's rule for a moving body's mass: its own or that of the bodies
/// welded to it. A free object whose geoms sit in a jointless child
/// (Meta-World's nut, ball and tools are written so) loads, with the mass
/// matrix of the same object written as one body; a hinge's body whose only
/// mass lies past another joint is refused, as MuJoCo refuses it.
#[test]
fn a_moving_body_may_carry_its_mass_in_welded_children() {
    let split = parse(
        r#"<mujoco><worldbody>
             <body name="obj" pos="0 0 1">
               <freejoint/>
               <body name="part" pos="0.1 0.05 0" euler="0 0 30">
                 <geom type="box" size="0.1 0.05 0.02"/>
                 <body name="tip" pos="0.2 0 0"><geom type="sphere" size="0.03"/></body>
               </body>
             </body>
           </worldbody></mujoco>"#,
    );
    let whole = parse(
        r#"<mujoco><worldbody>
             <body name="obj" pos="0 0 1">
               <freejoint/>
               <geom type="box" size="0.1 0.05 0.02" pos="0.1 0.05 0" euler="0 0 30"/>
               <geom type="sphere" size="0.03" pos="0.27320508075688773 0.15 0"/>
             </body>
           </worldbody></mujoco>"#,
    );
    let (a, b) = (&split.model, &whole.model);
    assert_eq!((a.nq, a.nv, a.nbodies), (b.nq, b.nv, b.nbodies));
    assert!(rel(a.total_mass(), b.total_mass()) < 1e-12);
    let q = [0.3, -0.2, 1.1, 0.1, 0.5, -0.3, 0.8];
    let (mut da, mut db) = (Data::new(a), Data::new(b));
    let ma = moreau::dynamics::crba(a, &mut da, &q).clone();
    let mb = moreau::dynamics::crba(b, &mut db, &q);
    assert!((&ma - mb).norm() < 1e-12 * mb.norm(), "{ma} {mb}");

    let past_a_joint = r#"<mujoco><worldbody>
             <body name="link"><joint type="hinge"/>
               <body name="arm" pos="1 0 0"><joint type="hinge"/><geom size="0.1"/></body>
             </body>
           </worldbody></mujoco>"#;
    let e = common::mjcf::parse_err(past_a_joint).to_string();
    assert!(
        e.contains(r#"<body name="link">"#) && e.contains("positive mass"),
        "{e}"
    );
}

/// A flat mesh (a screen, a decal) that only shows is taken where nothing
/// needs its volume: drawn, in a body whose `<inertial>` gives its mass
/// (robosuite's Panda, Sawyer and Baxter, Meta-World's laptop). Where its
/// body's inertia would come from it, and where it would collide, it is
/// refused by name (MuJoCo refuses both too). Shell inertia from a flat
/// mesh's area: tests/mjcf_mujoco.rs against MuJoCo's numbers.
#[test]
fn flat_visual_meshes_load_where_nothing_needs_their_volume() {
    let with = |body: &str, geom: &str| {
        format!(
            r#"<mujoco><asset><mesh name="screen" vertex="0 0 0  0.4 0 0  0.4 0.3 0  0 0.3 0" face="0 1 2  0 2 3"/></asset>
             <worldbody><body name="head" pos="0 0 1"><joint type="hinge"/>{body}
               <geom name="face" type="mesh" mesh="screen" {geom}/></body></worldbody></mujoco>"#
        )
    };
    let visual = r#"contype="0" conaffinity="0""#;
    let m = parse(&with(
        r#"<inertial pos="0 0 0" mass="2" diaginertia="0.1 0.1 0.1"/>"#,
        visual,
    ));
    assert!(rel(m.model.total_mass(), 2.0) < 1e-12);
    assert!(m.model.geometries.is_empty(), "it does not collide");
    let drawn = m.model.visuals.iter().find(|v| v.mesh.is_some());
    assert_eq!(
        drawn.map(|v| v.mesh.as_ref().unwrap().triangles.len()),
        Some(2)
    );

    let e = common::mjcf::parse_err(&with(r#"<geom size="0.05"/>"#, visual)).to_string();
    assert!(
        e.contains(r#"<geom name="face""#) && e.contains("flat") && e.contains("<inertial>"),
        "{e}"
    );
    let e = common::mjcf::parse_err(&with(
        r#"<inertial pos="0 0 0" mass="2" diaginertia="0.1 0.1 0.1"/>"#,
        "",
    ))
    .to_string();
    assert!(
        e.contains(r#"<mesh name="screen">"#) && e.contains("flat"),
        "{e}"
    );
}

/// `<exclude>` names bodies as the file has them: excluding a torso and a
/// shoulder leaves a head welded beside the torso (merged with it into one
/// static body) colliding with the shoulder, as in MuJoCo 4.0.1 (one
/// contact, head against arm, where without the exclusion it has the
/// torso's too). robosuite's Baxter: 149 allowed geom pairs, as MuJoCo's
/// filter gives; 137 when exclusions were kept per merged body.
#[test]
fn exclusions_name_the_files_bodies_not_the_merged_ones() {
    let file = |contact: &str| {
        format!(
            r#"<mujoco><worldbody><body name="base">
              <body name="torso"><geom name="torso_box" type="box" size="0.17 0.1 0.1"/></body>
              <body name="head"><geom name="head_ball" type="sphere" size="0.1" pos="0.25 0 0"/></body>
              <body name="shoulder" pos="0.2 0 0"><joint type="hinge" axis="0 0 1"/>
                <geom name="arm" type="capsule" fromto="0 0 -0.05 0 0 0.05" size="0.06"/></body>
            </body></worldbody>{contact}</mujoco>"#
        )
    };
    let allowed = |text: &str| {
        let m = parse(text).model;
        let g = |n: &str| m.geometries.iter().position(|g| g.name == n).unwrap();
        let arm = g("arm");
        (
            m.can_collide(arm, g("head_ball")),
            m.can_collide(arm, g("torso_box")),
        )
    };
    assert_eq!(allowed(&file("")), (true, true));
    let excluded = file(r#"<contact><exclude body1="torso" body2="shoulder"/></contact>"#);
    assert_eq!(allowed(&excluded), (true, false));
    // The file's world body by name.
    let world = file(r#"<contact><exclude body1="world" body2="shoulder"/></contact>"#);
    assert_eq!(allowed(&world), (true, true));
}

/// `<compiler inertiagrouprange>`: only the geoms of those groups give
/// their body mass (Meta-World counts groups 4 and 5, its collision
/// geoms); the others, drawn or colliding, weigh nothing. A range that is
/// not two whole numbers in order is refused.
#[test]
fn inertiagrouprange_picks_the_geoms_that_weigh() {
    let file = |compiler: &str| {
        format!(
            r#"<mujoco><compiler {compiler}/><worldbody><body><joint type="slide"/>
                 <geom type="box" size="0.1 0.1 0.1" group="4"/>
                 <geom type="sphere" size="0.1" group="1"/>
               </body></worldbody></mujoco>"#
        )
    };
    let box_mass = 1000.0 * 0.2f64.powi(3);
    let ball_mass = 1000.0 * 4.0 / 3.0 * std::f64::consts::PI * 0.1f64.powi(3);
    let mass = |c: &str| parse(&file(c)).model.total_mass();
    assert!(rel(mass(""), box_mass + ball_mass) < 1e-12);
    assert!(rel(mass(r#"inertiagrouprange="4 5""#), box_mass) < 1e-12);
    assert!(rel(mass(r#"inertiagrouprange="0 3""#), ball_mass) < 1e-12);
    let e = common::mjcf::parse_err(&file(r#"inertiagrouprange="5 4""#)).to_string();
    assert!(e.contains("inertiagrouprange"), "{e}");
}

/// A scratch directory for files that include each other.
fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("moreau-mjcf-{name}-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("parts")).unwrap();
    dir
}

/// `<include>` as MuJoCo 4.0 assembles it: the children of the included
/// file's top element (whatever its name) replace the include, anywhere in
/// the tree; nested includes; a relative path is looked up in the main
/// file's directory, then in the including file's; each file at most once
/// (so a cycle is refused); a file with no element, or missing, is refused
/// naming it.
#[test]
fn include_files_are_assembled_as_mujoco_assembles_them() {
    let dir = scratch("include");
    let write = |p: &str, t: &str| std::fs::write(dir.join(p), t).unwrap();
    write(
        "main.xml",
        r#"<mujoco model="main">
  <include file="options.xml"/>
  <worldbody>
    <geom type="plane" size="1 1 0.1"/>
    <include file="parts/robot.xml"/>
  </worldbody>
</mujoco>"#,
    );
    write(
        "options.xml",
        r#"<?xml version="1.0"?>
<!-- a comment before the top element -->
<anything><option timestep="0.004"/></anything>"#,
    );
    // Found beside parts/robot.xml, which includes it by a bare name.
    write(
        "parts/robot.xml",
        r#"<mujoco><body name="base" pos="0 0 1"><freejoint/><geom size="0.1"/><include file="leg.xml"/></body></mujoco>"#,
    );
    write(
        "parts/leg.xml",
        r#"<mujoco><body name="leg"><joint axis="0 1 0"/><geom type="capsule" fromto="0 0 0 0 0 -0.3" size="0.02"/></body></mujoco>"#,
    );
    let m = load_mjcf(dir.join("main.xml"), &MjcfOptions::default()).unwrap();
    assert_eq!((m.model.nq, m.model.nv, m.bodies), (8, 7, 3));
    assert_eq!(m.timestep, 0.004);
    assert_eq!(m.mjcf_bodies[2].name, "leg");
    assert!(m.warnings.is_empty(), "{:?}", m.warnings);

    let refused = |main: &str, why: &str| {
        write("bad.xml", main);
        let e = load_mjcf(dir.join("bad.xml"), &MjcfOptions::default()).unwrap_err();
        println!("{e}");
        assert!(
            e.element.contains("<include") && e.reason.contains(why),
            "{e}"
        );
    };
    refused(
        r#"<mujoco><worldbody><include file="parts/leg.xml"/><include file="parts/leg.xml"/></worldbody></mujoco>"#,
        "already included",
    );
    write(
        "parts/loop.xml",
        r#"<mujoco><body><geom size="0.1"/><include file="parts/loop.xml"/></body></mujoco>"#,
    );
    refused(
        r#"<mujoco><worldbody><include file="parts/loop.xml"/></worldbody></mujoco>"#,
        "already included",
    );
    write("parts/empty.xml", "<mujoco> <!-- nothing --> </mujoco>");
    refused(
        r#"<mujoco><worldbody><include file="parts/empty.xml"/></worldbody></mujoco>"#,
        "no elements",
    );
    refused(
        r#"<mujoco><worldbody><include file="nowhere.xml"/></worldbody></mujoco>"#,
        "nowhere.xml",
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// `<freejoint>` is a free joint with no stiffness, damping, friction loss
/// or armature whatever the class defaults say (dm_control's humanoid and
/// dog set them for their hinges); `<joint type="free">` takes the defaults.
#[test]
fn a_freejoint_takes_no_class_defaults() {
    let text = |free: &str| {
        format!(
            r#"<mujoco><default><joint damping="2" stiffness="5" armature="0.1"/></default>
  <worldbody><body pos="0 0 1">{free}<geom size="0.1"/>
    <body><joint axis="0 1 0"/><geom type="capsule" fromto="0 0 0 0 0 -0.3" size="0.02"/></body>
  </body></worldbody></mujoco>"#
        )
    };
    let m = parse(&text("<freejoint/>"));
    let model = &m.model;
    assert_eq!(model.nv, 7);
    assert!(model.dof_damping[..6].iter().all(|d| *d == 0.0));
    assert!(model.dof_armature[..6].iter().all(|a| *a == 0.0));
    assert_eq!((model.dof_damping[6], model.dof_stiffness[6]), (2.0, 5.0));
    // The same defaults on an explicit free joint: its spring is refused.
    let e = common::mjcf::parse_err(&text(r#"<joint type="free"/>"#));
    assert!(e.reason.contains("free joint"), "{e}");
}

/// `<option><flag>`: what a disabled flag switches off is off, what moreau
/// cannot switch off is refused naming the flag, MuJoCo's solver switches
/// are reported as not used; a file without a time step runs at MuJoCo's
/// 2 ms.
#[test]
fn option_flags_switch_off_what_they_name() {
    let with = |flags: &str| {
        PENDULUM
            .replace(
                "<worldbody>",
                &format!("<option><flag {flags}/></option><worldbody>"),
            )
            .replace(
                r#"type="slide" axis="0 0 1"/>"#,
                r#"type="slide" axis="0 0 1" damping="3" stiffness="7" range="-0.1 0.1"/>"#,
            )
    };
    let plain = parse(&with(""));
    assert_eq!(plain.timestep, 0.002);
    assert_eq!(plain.model.gravity, Vec3::new(0.0, 0.0, -9.81));
    assert_eq!(plain.model.limited_joints().count(), 2);
    let colliders = |m: &moreau::load::mjcf::MjcfModel| m.model.geometries.len();
    assert!(colliders(&plain) > 0);

    let m = parse(&with(r#"contact="disable""#));
    assert_eq!(colliders(&m), 0);
    assert_eq!(m.model.limited_joints().count(), 2);
    // The geoms keep their mass.
    assert!(rel(m.model.total_mass(), plain.model.total_mass()) < 1e-15);

    let m = parse(&with(r#"limit="disable""#));
    assert_eq!(m.model.limited_joints().count(), 0);
    assert!(colliders(&m) > 0);

    let m = parse(&with(r#"constraint="disable""#));
    assert_eq!((colliders(&m), m.model.limited_joints().count()), (0, 0));

    let m = parse(&with(r#"gravity="disable""#));
    assert_eq!(m.model.gravity, Vec3::zeros());

    let slider = 1;
    let m = parse(&with(r#"damper="disable""#));
    assert_eq!(
        (m.model.dof_damping[slider], m.model.dof_stiffness[slider]),
        (0.0, 7.0)
    );
    let m = parse(&with(r#"spring="disable""#));
    assert_eq!(
        (m.model.dof_damping[slider], m.model.dof_stiffness[slider]),
        (3.0, 0.0)
    );

    for refused in ["actuation", "clampctrl", "eulerdamp", "filterparent"] {
        let e = common::mjcf::parse_err(&with(&format!(r#"{refused}="disable""#)));
        println!("{e}");
        assert!(
            e.element.contains("<flag>") && e.reason.contains(refused),
            "{e}"
        );
    }
    let e = common::mjcf::parse_err(&with(r#"gravity="off""#));
    assert!(e.reason.contains("enable"), "{e}");
    let m = parse(&with(r#"warmstart="disable""#));
    assert!(m.warnings.iter().any(|w| w.contains("warmstart")));
}

#[derive(serde::Deserialize)]
struct HfieldReference {
    /// World (x, y, height) from MuJoCo's ray casts.
    points: Vec<[f64; 3]>,
}

/// `<hfield>` as MuJoCo compiles it: `elevation` rows from +y, normalized
/// to [0, 1] and scaled by `size`'s z, over `[−rx, rx] × [−ry, ry]`, the
/// geom moved and turned: the surface's heights against MuJoCo's ray casts
/// (tests/data/mujoco/hfield.json). A `.bin` file's rows run from −y; a
/// PNG file, missing samples and a field on a moving body are refused
/// naming the element.
#[test]
fn hfield_assets_are_read_as_mujoco_reads_them() {
    let r: HfieldReference = serde_json::from_str(include_str!("data/mujoco/hfield.json")).unwrap();
    let m = load_mjcf(
        concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/mujoco/hfield.xml"),
        &MjcfOptions::default(),
    )
    .unwrap();
    assert!(m.warnings.is_empty(), "{:?}", m.warnings);
    let g = &m.model.geometries[0];
    let moreau::model::Shape::HeightField(field) = &g.shape else {
        panic!("{:?}", g.shape)
    };
    assert_eq!(field.heights.shape(), (4, 3));
    let height = |x: f64, y: f64| {
        let local = g.body_from_geom.act_inv_point(&Vec3::new(x, y, 0.0));
        g.body_from_geom.translation.z + field.height_at(local.x, local.y)
    };
    assert!(r.points.len() >= 18);
    for [x, y, z] in &r.points {
        // (MuJoCo keeps the samples in float32.)
        assert!(
            (height(*x, *y) - z).abs() < 1e-6,
            "({x}, {y}): {} against {z}",
            height(*x, *y)
        );
    }

    // A .bin file: int32 nrow, ncol, then float32 rows from −y.
    let dir = scratch("hfield");
    let mut bytes = Vec::new();
    bytes.extend(2i32.to_le_bytes());
    bytes.extend(3i32.to_le_bytes());
    for x in [0.0f32, 1.0, 2.0, 3.0, 4.0, 5.0] {
        bytes.extend(x.to_le_bytes());
    }
    std::fs::write(dir.join("field.bin"), &bytes).unwrap();
    let with = |asset: &str, geom_body: &str| {
        let text =
            format!(r#"<mujoco><asset>{asset}</asset><worldbody>{geom_body}</worldbody></mujoco>"#);
        moreau::load::mjcf::parse_mjcf(&text, "test.xml", &dir, &MjcfOptions::default())
    };
    let m = with(
        r#"<hfield name="f" file="field.bin" size="1 2 3 .1"/>"#,
        r#"<geom type="hfield" hfield="f"/>"#,
    )
    .unwrap();
    let moreau::model::Shape::HeightField(field) = &m.model.geometries[0].shape else {
        panic!()
    };
    // Corner (−rx, −ry) is the file's first sample (0), (+rx, +ry) its last (5 → 3 m).
    assert_eq!(field.heights[(0, 0)], 0.0);
    assert!((field.heights[(2, 1)] - 3.0).abs() < 1e-12);
    assert!((field.heights[(1, 0)] - 0.6).abs() < 1e-6);

    for (asset, body, needle) in [
        (
            r#"<hfield name="f" file="terrain.png" size="1 1 1 .1"/>"#,
            r#"<geom type="hfield" hfield="f"/>"#,
            "not PNG",
        ),
        (
            r#"<hfield name="f" nrow="2" ncol="2" elevation="1 2 3" size="1 1 1 .1"/>"#,
            r#"<geom type="hfield" hfield="f"/>"#,
            "nrow × ncol",
        ),
        (
            r#"<hfield name="f" nrow="2" ncol="2" size="1 1 1 .1"/>"#,
            r#"<geom type="hfield" hfield="g"/>"#,
            "no hfield asset named `g`",
        ),
        (
            r#"<hfield name="f" nrow="2" ncol="2" size="1 1 1 .1"/>"#,
            r#"<body><freejoint/><geom type="hfield" hfield="f"/><geom size=".1"/></body>"#,
            "attach it to the world",
        ),
    ] {
        let err = with(asset, body).unwrap_err().to_string();
        assert!(err.contains(needle), "{err}");
        assert!(err.contains("hfield"), "{err}");
    }
}

/// A contact takes the friction and `condim` of its higher-priority geom,
/// the larger of the two at equal priority (MuJoCo's rule); `condim="1"`
/// is frictionless: a box pushed along the floor slides on undamped. An
/// explicit `<contact><pair>` sets both, and makes geoms collide that
/// their bits keep apart.
#[test]
fn contacts_take_friction_and_condim_by_priority() {
    let slide = |floor: &str, box_attrs: &str| {
        let m = parse(&format!(
            r#"<mujoco><option timestep="0.001"/><worldbody>
            <geom name="floor" type="plane" size="5 5 .1" {floor}/>
            <body name="box" pos="0 0 0.1"><freejoint/>
              <geom name="b" type="box" size=".1 .1 .1" mass="1" {box_attrs}/></body>
            </worldbody></mujoco>"#
        ));
        let model = Arc::new(m.model);
        let (floor, b) = (&model.geometries[0].material, &model.geometries[1].material);
        let mu = model.pair_contact(floor, b).0;
        let mut sim = Simulator::new(
            model.clone(),
            SimParams {
                dt: m.timestep,
                ..Default::default()
            },
        )
        .unwrap();
        let mut v = DVector::zeros(6);
        v[0] = 1.0;
        let mut state = State::new(m.q0.clone(), v);
        for _ in 0..100 {
            sim.step(&mut state, &[0.0; 6]).unwrap();
        }
        (mu, state.v[0])
    };
    let g = 9.81;
    // Equal priority: the larger friction.
    let (mu, v) = slide(r#"friction="0.3""#, r#"friction="0.6""#);
    assert_eq!(mu, 0.6);
    assert!((v - (1.0 - mu * g * 0.1)).abs() < 1e-3, "{v}");
    // The higher priority's, though smaller.
    let (mu, _) = slide(r#"friction="0.3" priority="1""#, r#"friction="0.6""#);
    assert_eq!(mu, 0.3);
    // condim 1 on one side: the larger condim (3) wins at equal priority.
    let (mu, _) = slide(r#"friction="0.3""#, r#"friction="0.6" condim="1""#);
    assert_eq!(mu, 0.6);
    // …and the higher priority's condim 1: frictionless, no deceleration.
    let (mu, v) = slide(
        r#"friction="0.3" condim="1" priority="2""#,
        r#"friction="0.6""#,
    );
    assert_eq!(mu, 0.0);
    assert!((v - 1.0).abs() < 1e-9, "{v}");
    // An explicit pair: its own friction and dimension, whatever the
    // geoms' bits (a visual box collides through it) and materials.
    let paired = |pair: &str| {
        let m = parse(&format!(
            r#"<mujoco><option timestep="0.001"/><worldbody>
            <geom name="floor" type="plane" size="5 5 .1" friction="0.3"/>
            <body name="box" pos="0 0 0.1"><freejoint/>
              <geom name="b" type="box" size=".1 .1 .1" mass="1" contype="0" conaffinity="0"/></body>
            </worldbody><contact>{pair}</contact></mujoco>"#
        ));
        let model = Arc::new(m.model);
        let (mu, _, condim) = model.geometry_contact(0, 1);
        let mut sim = Simulator::new(model.clone(), SimParams::default()).unwrap();
        let mut v = DVector::zeros(6);
        v[0] = 1.0;
        let mut state = State::new(m.q0.clone(), v);
        let mut nc = 0;
        for _ in 0..100 {
            nc = sim.step(&mut state, &[0.0; 6]).unwrap().nc;
        }
        (mu, condim, nc, state.v[0], state.q[2])
    };
    // (Without a pair, the visual box has no collider.)
    let visual = parse(
        r#"<mujoco><worldbody><geom name="floor" type="plane" size="5 5 .1"/>
        <body><freejoint/><geom name="b" type="box" size=".1 .1 .1" contype="0" conaffinity="0"/></body>
        </worldbody></mujoco>"#,
    );
    assert_eq!(visual.model.geometries.len(), 1);
    let (mu, condim, nc, v, z) = paired(r#"<pair geom1="b" geom2="floor" friction="0.2 0.2"/>"#);
    assert_eq!((mu, condim), (0.2, 3));
    assert!(nc > 0 && (z - 0.1).abs() < 1e-3, "{nc} contacts, z {z}");
    assert!((v - (1.0 - 0.2 * g * 0.1)).abs() < 1e-3, "{v}");
    let (mu, condim, _, v, _) = paired(r#"<pair geom1="floor" geom2="b" condim="1"/>"#);
    assert_eq!((mu, condim), (0.0, 1));
    assert!((v - 1.0).abs() < 1e-9, "{v}");
    let err = common::mjcf::parse_err(
        r#"<mujoco><worldbody><geom name="g" type="plane" size="1 1 1"/></worldbody>
        <contact><pair geom1="g" geom2="nowhere"/></contact></mujoco>"#,
    );
    assert!(err.to_string().contains("no geom named `nowhere`"), "{err}");
    // MuJoCo reads `friction="0.2"` as 0.2 along one tangent, 1 along the
    // other: refused, not taken as 0.2 (as moreau once did).
    let err = common::mjcf::parse_err(
        r#"<mujoco><worldbody><geom name="g" type="plane" size="1 1 1"/>
        <body><freejoint/><geom name="b" type="sphere" size=".1"/></body></worldbody>
        <contact><pair geom1="g" geom2="b" friction="0.2"/></contact></mujoco>"#,
    );
    assert!(err.to_string().contains("[0.2, 1.0, 0.005"), "{err}");
    // A condim MuJoCo does not have is refused.
    let err = common::mjcf::parse_err(
        r#"<mujoco><worldbody><geom name="g" type="plane" size="1 1 1" condim="2"/></worldbody></mujoco>"#,
    );
    assert!(err.to_string().contains("condim"), "{err}");
}

/// Spatial tendons' paths as MuJoCo allows them: sites, sphere and
/// cylinder geoms between two sites (with a side site), pulleys; every
/// other path refused naming the tendon and the element, as MuJoCo
/// refuses it. (Their lengths and forces: tests/mjcf_mujoco.rs.)
#[test]
fn spatial_tendon_paths_are_read_or_refused_as_mujoco_does() {
    use common::mjcf::parse_err;
    use moreau::model::Wrap;
    let xml = |path: &str| {
        format!(
            r#"<mujoco><worldbody>
  <site name="a" pos="0 0 1"/><site name="s" pos="0 0.5 0.5"/>
  <geom name="post" type="cylinder" size="0.05 0.2" pos="0.2 0 0.5" contype="0" conaffinity="0"/>
  <body name="b"><joint type="hinge" axis="0 1 0"/>
    <geom name="g" type="sphere" size="0.1" contype="0" conaffinity="0"/>
    <geom name="bx" type="box" size="0.1 0.1 0.1"/>
    <site name="e" pos="0.5 0 0"/>
  </body>
</worldbody><tendon><spatial name="t" stiffness="1">{path}</spatial></tendon></mujoco>"#
        )
    };
    let m = parse(&xml(
        r#"<site site="a"/><geom geom="g" sidesite="s"/><site site="e"/><pulley divisor="2"/><site site="a"/><geom geom="post"/><site site="e"/>"#,
    ));
    assert!(m.warnings.is_empty(), "{:?}", m.warnings);
    let path = &m.model.tendons[0].path;
    assert_eq!(path.len(), 7);
    let Wrap::Geom(g) = &path[1] else {
        panic!("{path:?}")
    };
    assert_eq!(
        (g.name.as_str(), g.cylinder, g.radius, g.side.is_some()),
        ("g", false, 0.1, true)
    );
    assert_eq!(path[3], Wrap::Pulley(2.0));
    let Wrap::Geom(post) = &path[5] else {
        panic!("{path:?}")
    };
    assert_eq!((post.body, post.cylinder, post.side), (0, true, None));
    for (path, says) in [
        (
            r#"<geom geom="g"/><site site="a"/><site site="e"/>"#,
            "must lie between two sites",
        ),
        (
            r#"<site site="a"/><geom geom="g"/><geom geom="post"/><site site="e"/>"#,
            "must lie between two sites",
        ),
        (
            r#"<site site="a"/><geom geom="bx"/><site site="e"/>"#,
            "spheres and cylinders only",
        ),
        (
            r#"<site site="a"/><site site="e"/><pulley divisor="2"/>"#,
            "ends with a pulley",
        ),
        (
            r#"<site site="a"/><site site="e"/><pulley divisor="2"/><pulley divisor="2"/><site site="a"/><site site="e"/>"#,
            "two pulleys in a row",
        ),
        (
            r#"<site site="a"/><site site="e"/><pulley divisor="2"/><site site="a"/>"#,
            "neighbour that is not a pulley",
        ),
        (
            r#"<site site="a"/><site site="e"/><pulley divisor="0"/><site site="a"/><site site="e"/>"#,
            "divisor must be positive",
        ),
        (
            r#"<site site="a"/><site site="e"/><pulley/><site site="a"/><site site="e"/>"#,
            "needs a `divisor`",
        ),
        (
            r#"<site site="a"/><geom geom="g" sidesite="nowhere"/><site site="e"/>"#,
            "no side site named `nowhere`",
        ),
        (
            r#"<site site="a"/><geom geom="nothing"/><site site="e"/>"#,
            "no geom named `nothing`",
        ),
        (
            r#"<site site="a"/><joint joint="x"/><site site="e"/>"#,
            "<joint> in a spatial tendon",
        ),
        (r#"<site site="a"/>"#, "two sites or more"),
    ] {
        let e = parse_err(&xml(path));
        let text = e.to_string();
        println!("{text}");
        // The tendon (and the path's element at fault) is named.
        assert!(text.contains(says), "{path}: {text}");
        assert!(
            e.element.starts_with(r#"<spatial name="t">"#),
            "{path}: {text}"
        );
    }
}

/// MuJoCo's `condim` 4 and 6 (torsional and rolling friction) are not
/// simulated: a file where some pair of geoms would collide with them is
/// refused naming the pair, unless asked to take them as 3; a pair whose
/// higher-priority geom has `condim` 3 is not one (MuJoCo's rule).
#[test]
fn torsional_friction_is_read_per_pair_or_taken_as_sliding() {
    use common::mjcf::parse_err;
    let xml = |floor: &str, ball: &str| {
        format!(
            r#"<mujoco><worldbody><geom name="floor" type="plane" size="5 5 .1" {floor}/>
            <body><freejoint/><geom name="ball" type="sphere" size=".1" {ball}/></body>
            <body pos="1 0 0"><freejoint/><geom name="cube" type="box" size=".1 .1 .1"/></body>
            </worldbody></mujoco>"#
        )
    };
    // MuJoCo's defaults (1, 0.005, 0.0001), the larger at equal priority.
    let m = parse(&xml(r#"friction="1 0.02""#, r#"condim="6""#)).model;
    assert_eq!(m.geometry_spin(0, 1), [0.02, 0.0001]);
    assert_eq!(m.geometry_spin(1, 2), [0.005, 0.0001]);
    assert_eq!(m.geometry_spin(0, 2), [0.0; 2], "condim 3: no cone rows");
    assert_eq!(m.spin_pairs(), vec![(0, 1), (1, 2)]);
    // The floor's priority makes its pair's condim 3 (no rows), the cube's stays 4.
    let m = parse(&xml(
        r#"priority="1""#,
        r#"condim="4" friction="1 0.03 0.2""#,
    ))
    .model;
    assert_eq!(m.geometry_spin(0, 1), [0.0; 2]);
    assert_eq!(m.geometry_spin(1, 2), [0.03, 0.0]);
    assert_eq!(m.spin_pairs(), vec![(1, 2)]);
    let features = m.constraint_features().unwrap_or_default();
    assert!(
        features.contains("torsional or rolling friction"),
        "{features}"
    );
    // A ball that collides with nothing (no bits) makes no pair.
    let m = parse(&xml("", r#"condim="6" contype="0" conaffinity="0""#));
    assert!(m.model.spin_pairs().is_empty());
    // An explicit pair's five numbers; anisotropy refused by name.
    let paired = |pair: &str| {
        format!(
            r#"<mujoco><worldbody><geom name="floor" type="plane" size="5 5 .1"/>
            <body><freejoint/><geom name="ball" type="sphere" size=".1"/></body>
            </worldbody><contact>{pair}</contact></mujoco>"#
        )
    };
    let m = parse(&paired(
        r#"<pair geom1="ball" geom2="floor" condim="6" friction="0.7 0.7 0.01 0.002 0.002"/>"#,
    ));
    assert_eq!(m.model.geometry_contact(0, 1).0, 0.7);
    assert_eq!(m.model.geometry_spin(0, 1), [0.01, 0.002]);
    let e = parse_err(&paired(
        r#"<pair geom1="ball" geom2="floor" condim="4" friction="0.7 0.5"/>"#,
    ));
    assert!(e.to_string().contains("anisotropic"), "{e}");
    let e = parse_err(&xml("", r#"friction="1 -0.1""#));
    assert!(e.to_string().contains("non-negative"), "{e}");
    // Taken as sliding friction when asked: said, and no cone rows.
    let options = moreau::load::mjcf::MjcfOptions {
        sliding_friction_only: true,
        ..Default::default()
    };
    let m = moreau::load::mjcf::parse_mjcf(
        &xml("", r#"condim="6""#),
        "test.xml",
        std::path::Path::new("."),
        &options,
    )
    .unwrap();
    assert!(
        m.warnings
            .iter()
            .any(|w| w.contains("condim 4 and 6 taken as 3") && w.contains("2 pair(s)")),
        "{:?}",
        m.warnings
    );
    let (mu, _, condim) = m.model.geometry_contact(0, 1);
    assert_eq!((mu, condim), (1.0, 3));
    assert!(m.model.spin_pairs().is_empty());
}

/// A servo's `kv` and `dampratio` on one element are refused, as MuJoCo
/// refuses them; the element's own one wins over its class's. (The gains
/// against MuJoCo's: tests/mjcf_mujoco.rs, servo_dampratio_is_mujocos.)
#[test]
fn a_servo_takes_kv_or_dampratio_not_both() {
    use common::mjcf::parse_err;
    let xml = |class: &str, servo: &str| {
        format!(
            r#"<mujoco><default>{class}</default><worldbody><body><joint name="h" type="hinge"/>
            <geom type="sphere" size=".1" mass="1"/></body></worldbody>
            <actuator><position joint="h" kp="4" {servo}/></actuator></mujoco>"#
        )
    };
    let e = parse_err(&xml("", r#"kv="1" dampratio="1""#));
    assert!(
        e.to_string()
            .contains("kv and dampratio cannot both be defined"),
        "{e}"
    );
    // The class's kv yields to the element's dampratio, and the reverse.
    let m = parse(&xml(r#"<position kv="3"/>"#, r#"dampratio="1""#));
    let kv = -m.model.actuators[0].bias[2];
    assert!(kv > 0.0 && kv != 3.0, "{kv}");
    let m = parse(&xml(r#"<position dampratio="1"/>"#, r#"kv="2""#));
    assert_eq!(m.model.actuators[0].bias[2], -2.0);
    assert!(
        parse_err(&xml("", r#"dampratio="-1""#))
            .to_string()
            .contains("dampratio must be")
    );
}
