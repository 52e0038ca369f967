//! MJCF sensors against analytic answers (MuJoCo's own readings are
//! compared in python/tests/test_sensors.py): a pendulum released from the
//! horizontal, a falling body, the step convention, model bytes.

use moreau::load::mjcf::{MjcfOptions, parse_mjcf};
use moreau::model::{Model, SensorKind};
use moreau::sim::{SimParams, Simulator, State};
use nalgebra::DVector;
use std::path::Path;
use std::sync::Arc;

const G: f64 = 9.81;
const M: f64 = 2.0;
const L: f64 = 0.6;

/// A rod of mass `M` and length `L` hanging from a hinge about y at the
/// origin (its centre of mass `L/2` below, `I = M L²/12` about it), a site
/// at the pivot and one at the tip; a free ball far away.
fn pendulum() -> (Arc<Model>, DVector<f64>) {
    let i = M * L * L / 12.0;
    let text = format!(
        r#"<mujoco>
  <option timestep="0.001"/>
  <worldbody>
    <body name="rod">
      <joint name="hinge" type="hinge" axis="0 1 0"/>
      <inertial pos="0 0 {c}" mass="{M}" diaginertia="{i} {i} 1e-4"/>
      <geom type="capsule" fromto="0 0 0 0 0 -{L}" size="0.01" contype="0" conaffinity="0"/>
      <site name="pivot"/>
      <site name="tip" pos="0 0 -{L}"/>
    </body>
    <body name="ball" pos="5 0 3">
      <freejoint/>
      <geom type="sphere" size="0.1" mass="1" contype="0" conaffinity="0"/>
      <site name="ball_imu" euler="30 40 50"/>
    </body>
  </worldbody>
  <sensor>
    <force name="pivot_force" site="pivot"/>
    <torque name="pivot_torque" site="pivot"/>
    <accelerometer name="tip_acc" site="tip"/>
    <accelerometer name="ball_acc" site="ball_imu"/>
    <jointpos name="angle" joint="hinge"/>
    <subtreecom name="rod_com" body="rod"/>
  </sensor>
</mujoco>"#,
        c = -L / 2.0
    );
    let m = parse_mjcf(
        &text,
        "pendulum.xml",
        Path::new("."),
        &MjcfOptions::default(),
    )
    .unwrap();
    assert!(m.warnings.is_empty(), "{:?}", m.warnings);
    (Arc::new(m.model), m.q0)
}

fn values<'a>(model: &Model, all: &'a [f64], name: &str) -> &'a [f64] {
    let k = model.sensors.iter().position(|s| s.name == name).unwrap();
    let a = model.sensor_address()[k];
    &all[a..a + model.sensors[k].kind.dim()]
}

#[test]
fn a_pendulum_released_from_the_horizontal_feels_a_quarter_of_its_weight() {
    let (model, q0) = pendulum();
    assert_eq!(model.nsensordata(), 3 + 3 + 3 + 3 + 1 + 3);
    let mut sim = Simulator::new(model.clone(), SimParams::default()).unwrap();
    let mut q = q0.clone();
    q[0] = std::f64::consts::FRAC_PI_2; // the rod along −x, horizontal
    let mut state = State::new(q, DVector::zeros(model.nv));
    // Before a step: the step sensors read 0, the state sensors the state.
    let before = sim.sensors(&state).unwrap();
    assert_eq!(values(&model, &before, "pivot_force"), &[0.0; 3]);
    assert_eq!(
        values(&model, &before, "angle"),
        &[std::f64::consts::FRAC_PI_2]
    );
    let com = values(&model, &before, "rod_com");
    assert!((com[0].abs() - L / 2.0).abs() < 1e-12 && com[2].abs() < 1e-12);

    sim.step(&mut state, &[0.0; 7]).unwrap();
    let after = sim.sensors(&state).unwrap();
    // α = 3g/(2L) at rest: the pivot carries M g − M α L/2 = M g/4, upwards
    // in the world, no horizontal force (no velocity yet), no torque about
    // the pivot; the frames turned with the rod by the start angle.
    let f = values(&model, &after, "pivot_force");
    let f = nalgebra::Vector3::new(f[0], f[1], f[2]);
    let r = nalgebra::Rotation3::from_axis_angle(
        &nalgebra::Vector3::y_axis(),
        std::f64::consts::FRAC_PI_2,
    );
    let world = r * f;
    assert!((world.z - M * G / 4.0).abs() < 1e-9, "{world:?}");
    assert!(world.x.abs() < 1e-9 && world.y.abs() < 1e-9, "{world:?}");
    let t = values(&model, &after, "pivot_torque");
    assert!(t.iter().all(|x| x.abs() < 1e-9), "{t:?}");
    // The tip falls at α L = 3g/2: its accelerometer reads a − g, g/2
    // downwards in the world.
    let a = values(&model, &after, "tip_acc");
    let a = r * nalgebra::Vector3::new(a[0], a[1], a[2]);
    assert!((a.z - (G - 1.5 * G)).abs() < 1e-9, "{a:?}");
    // The free ball falls freely: its accelerometer reads 0.
    assert!(
        values(&model, &after, "ball_acc")
            .iter()
            .all(|x| x.abs() < 1e-9)
    );

    // Setting the state (even to the same numbers elsewhere) forgets the step.
    let mut other = state.clone();
    other.v[0] += 1e-3;
    let moved = sim.sensors(&other).unwrap();
    assert_eq!(values(&model, &moved, "pivot_force"), &[0.0; 3]);
}

#[test]
fn a_hanging_pendulum_carries_its_weight() {
    let (model, q0) = pendulum();
    let mut sim = Simulator::new(model.clone(), SimParams::default()).unwrap();
    let mut state = State::new(q0, DVector::zeros(model.nv));
    for _ in 0..10 {
        sim.step(&mut state, &[0.0; 7]).unwrap();
    }
    let v = sim.sensors(&state).unwrap();
    let f = values(&model, &v, "pivot_force");
    assert!((f[2] - M * G).abs() < 1e-9 && f[0].abs() < 1e-9, "{f:?}");
}

#[test]
fn sensors_survive_model_bytes_and_bad_ones_are_refused() {
    let (model, _) = pendulum();
    let back = Model::from_bytes(&model.to_bytes()).unwrap();
    assert_eq!(back.sensors, model.sensors);
    let mut bad = (*model).clone();
    let k = bad.sensors.iter().position(|s| s.name == "angle").unwrap();
    bad.sensors[k].kind = SensorKind::JointPos { index: 99 };
    let e = Model::from_bytes(&bad.to_bytes()).unwrap_err().to_string();
    assert!(e.contains("sensor `angle`"), "{e}");
}

#[test]
fn an_inertia_comes_back_from_its_spatial_matrix() {
    use moreau::math::{Inertia, Mat3, Vec3};
    let rotational = Mat3::new(0.3, 0.01, -0.02, 0.01, 0.2, 0.03, -0.02, 0.03, 0.25);
    let i = Inertia::new(1.7, Vec3::new(0.1, -0.4, 0.25), rotational);
    let back = Inertia::from_matrix(&i.matrix());
    assert!((back.mass - i.mass).abs() < 1e-15);
    assert!((back.com - i.com).norm() < 1e-15);
    assert!((back.rotational - i.rotational).norm() < 1e-14);
}

#[test]
fn a_welded_group_takes_a_new_inertia_on_its_first_body() {
    // The pendulum's rod with a welded tip: twice the group's mass goes to
    // the rod; the group still sums to the model body.
    let text = r#"<mujoco><worldbody>
  <body name="rod"><joint type="hinge" axis="0 1 0"/>
    <geom type="capsule" fromto="0 0 0 0 0 -0.5" size="0.02" mass="1"/>
    <body name="tip" pos="0 0 -0.5"><geom type="sphere" size="0.05" mass="0.5"/></body>
  </body></worldbody></mujoco>"#;
    let m = parse_mjcf(text, "welded.xml", Path::new("."), &MjcfOptions::default()).unwrap();
    let mut model = m.model;
    let mut heavier = model.body_inertia[1];
    heavier.mass *= 2.0;
    model.set_body_inertia(1, heavier).unwrap();
    let frames: Vec<_> = model.body_frames().map(|(_, f)| f.clone()).collect();
    let sum = frames
        .iter()
        .map(|f| f.inertia.unwrap().transformed(&f.body_from_frame))
        .fold(moreau::math::Inertia::zero(), |a, b| a.add(&b));
    assert!((sum.mass - 3.0).abs() < 1e-12);
    assert!((sum.com - model.body_inertia[1].com).norm() < 1e-12);
    assert!((sum.rotational - model.body_inertia[1].rotational).norm() < 1e-12);
    assert!(
        (frames[1].inertia.unwrap().mass - 0.5).abs() < 1e-15,
        "the tip keeps its mass"
    );
    // Less than the tip's mass: the rod would have less than none.
    let mut light = model.body_inertia[1];
    light.mass = 0.1;
    let e = model.set_body_inertia(1, light).unwrap_err().to_string();
    assert!(e.contains("`rod` takes the change"), "{e}");
}

/// A rangefinder on a slider at height `h` above the floor, its axis
/// tilted by `α` from straight down, reads `h / cos α` (its own body's
/// ball around it does not count); one pointing up reads −1; after
/// model bytes, the same.
#[test]
fn a_rangefinder_reads_the_distance_to_the_floor_along_its_axis() {
    let alpha: f64 = 0.4;
    let text = format!(
        r#"<mujoco>
  <worldbody>
    <geom name="floor" type="plane" size="0 0 0.1"/>
    <body name="slider">
      <joint name="z" type="slide" axis="0 0 1"/>
      <geom type="sphere" size="0.1" contype="0" conaffinity="0"/>
      <site name="tilted" zaxis="0 {s} {c}"/>
      <site name="up" zaxis="0 0 1"/>
    </body>
  </worldbody>
  <sensor>
    <rangefinder name="tilted" site="tilted"/>
    <rangefinder name="up" site="up"/>
    <rangefinder name="short" site="tilted" cutoff="0.7"/>
  </sensor>
</mujoco>"#,
        s = alpha.sin(),
        c = -alpha.cos()
    );
    let m = parse_mjcf(&text, "rf.xml", Path::new("."), &MjcfOptions::default()).unwrap();
    assert!(m.warnings.is_empty(), "{:?}", m.warnings);
    let model = Arc::new(m.model);
    let back = Arc::new(Model::from_bytes(&model.to_bytes()).unwrap());
    let mut bad = (*model).clone();
    bad.ray_targets[0].body = 99;
    let e = Model::from_bytes(&bad.to_bytes()).unwrap_err().to_string();
    assert!(e.contains("rangefinder target"), "{e}");
    for model in [model, back] {
        let mut sim = Simulator::new(model.clone(), SimParams::default()).unwrap();
        for h in [1.0, 0.5, 0.05] {
            let state = State::new(DVector::from_element(1, h), DVector::zeros(1));
            let all = sim.sensors(&state).unwrap();
            let expected = h / alpha.cos();
            assert!((values(&model, &all, "tilted")[0] - expected).abs() < 1e-12);
            assert_eq!(values(&model, &all, "up")[0], -1.0);
            assert!((values(&model, &all, "short")[0] - expected.min(0.7)).abs() < 1e-12);
        }
        // Below the floor: planes are seen from the front only.
        let state = State::new(DVector::from_element(1, -0.2), DVector::zeros(1));
        let all = sim.sensors(&state).unwrap();
        assert_eq!(values(&model, &all, "tilted")[0], -1.0);
    }
    // On a terrain 0.3 m up, the rangefinder sees it, not the plane it replaces.
    let mut terrain = moreau::model::Terrain::flat([20.0, 20.0], 1.0);
    terrain.world_from_field.translation.z += 0.3;
    let raised = Arc::new(model_of(&text).with_terrain(&terrain).unwrap());
    let mut sim = Simulator::new(raised.clone(), SimParams::default()).unwrap();
    let state = State::new(DVector::from_element(1, 1.0), DVector::zeros(1));
    let all = sim.sensors(&state).unwrap();
    let reading = values(&raised, &all, "tilted")[0];
    assert!((reading - 0.7 / alpha.cos()).abs() < 1e-9, "{reading}");
}

fn model_of(text: &str) -> Model {
    parse_mjcf(text, "rf.xml", Path::new("."), &MjcfOptions::default())
        .unwrap()
        .model
}
