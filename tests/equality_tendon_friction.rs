//! Equality constraints, fixed tendons and dry joint friction (MJCF's
//! `<equality>`, `<tendon><fixed>`, `frictionloss`) against analytic
//! answers: each is a row of the constraint problem (bilateral, unilateral,
//! box) solved with the contacts, so every solver that takes rows is tried.

use moreau::contact::SolverKind;
use moreau::load::mjcf::{MjcfOptions, parse_mjcf};
use moreau::model::Model;
use moreau::sim::{SimParams, Simulator, State};
use std::path::Path;
use std::sync::Arc;

fn model(xml: &str) -> (Arc<Model>, Vec<String>) {
    let m = parse_mjcf(xml, "test.xml", Path::new("."), &MjcfOptions::default()).unwrap();
    (Arc::new(m.model), m.warnings)
}

fn sim(model: &Arc<Model>, solver: SolverKind) -> Simulator {
    let params = SimParams {
        dt: 1e-3,
        solver,
        ..Default::default()
    };
    Simulator::new(model.clone(), params).unwrap()
}

/// Every solver that solves the rows (the RaiSim variants treat them as
/// the PGS does; the LCP's pyramid only concerns contacts).
const SOLVERS: [SolverKind; 8] = SolverKind::ALL;

/// Two wheels on vertical hinges (no gravity along them), inertias
/// `I₁ = 0.02`, `I₂ = 0.06` about their axes, and a slider of 2 kg.
const WHEELS: &str = r#"<mujoco model="wheels">
  <option gravity="0 0 -9.81"/>
  <worldbody>
    <body name="w1" pos="0 0 1">
      <joint name="a" type="hinge" axis="0 0 1"/>
      <inertial pos="0 0 0" mass="1" diaginertia="0.01 0.01 0.02"/>
    </body>
    <body name="w2" pos="1 0 1">
      <joint name="b" type="hinge" axis="0 0 1"/>
      <inertial pos="0 0 0" mass="1" diaginertia="0.03 0.03 0.06"/>
    </body>
    <body name="cart" pos="0 2 1">
      <joint name="s" type="slide" axis="1 0 0" frictionloss="3"/>
      <inertial pos="0 0 0" mass="2" diaginertia="0.1 0.1 0.1"/>
    </body>
  </worldbody>
  TENDON
  EQUALITY
</mujoco>"#;

fn wheels(tendon: &str, equality: &str) -> Arc<Model> {
    let xml = WHEELS
        .replace("TENDON", tendon)
        .replace("EQUALITY", equality);
    let (m, warnings) = model(&xml);
    assert!(warnings.is_empty(), "{warnings:?}");
    m
}

/// Runs `steps` steps under the torques `tau` from rest; returns the state.
fn run(s: &mut Simulator, model: &Model, tau: &[f64], steps: usize) -> State {
    let mut state = State::new(
        model.neutral_configuration(),
        nalgebra::DVector::zeros(model.nv),
    );
    for _ in 0..steps {
        s.step(&mut state, tau).unwrap();
    }
    state
}

#[test]
fn frictionloss_holds_below_its_force_and_slides_above_it() {
    let m = wheels("", "");
    assert_eq!(m.dof_frictionloss, [0.0, 0.0, 3.0]);
    let dof = m.joint_idx_v[m.joint_id("s").unwrap()];
    for solver in SOLVERS {
        let mut s = sim(&m, solver);
        // 2.9 N against 3 N of dry friction: it does not move (to the
        // solvers' tolerance; free, it would slide 0.18 m in 0.5 s).
        let mut tau = vec![0.0; m.nv];
        tau[dof] = 2.9;
        let held = run(&mut s, &m, &tau, 500);
        assert!(
            held.v[dof].abs() < 1e-6 && held.q[dof].abs() < 1e-6,
            "{}: held v {:e}, q {:e}",
            solver.name(),
            held.v[dof],
            held.q[dof]
        );
        // 5 N: it slides at (5 − 3)/2 = 1 m/s², friction opposing.
        for sign in [1.0, -1.0] {
            tau[dof] = 5.0 * sign;
            let mut s = sim(&m, solver);
            let slid = run(&mut s, &m, &tau, 500);
            let want = sign * 1.0 * 0.5;
            assert!(
                (slid.v[dof] - want).abs() < 1e-6,
                "{}: v {} after 0.5 s, want {want}",
                solver.name(),
                slid.v[dof]
            );
        }
    }
}

#[test]
fn a_joint_equality_makes_two_wheels_turn_as_one() {
    // q_a = q_b: a torque on b turns both at τ / (I₁ + I₂).
    let m = wheels("", r#"<equality><joint joint1="a" joint2="b"/></equality>"#);
    assert_eq!(m.equalities.len(), 1);
    let (a, b) = (0, 1);
    for solver in SOLVERS {
        let mut s = sim(&m, solver);
        let mut tau = vec![0.0; m.nv];
        tau[b] = 0.4;
        let state = run(&mut s, &m, &tau, 1000);
        let alpha = 0.4 / (0.02 + 0.06);
        assert!(
            (state.v[a] - alpha).abs() < 1e-6 && (state.v[b] - alpha).abs() < 1e-6,
            "{}: ω = {:?}, want {alpha}",
            solver.name(),
            &state.v.as_slice()[..2]
        );
        assert!(
            (state.q[a] - state.q[b]).abs() < 1e-6,
            "{}: q {:?}",
            solver.name(),
            &state.q.as_slice()[..2]
        );
    }
    // The same with G left factored (the tree path of `ncp-admm`).
    let params = SimParams {
        dt: 1e-3,
        delassus: moreau::sim::DelassusPath::Tree,
        ..Default::default()
    };
    let mut s = Simulator::new(m.clone(), params).unwrap();
    let mut tau = vec![0.0; m.nv];
    tau[b] = 0.4;
    let state = run(&mut s, &m, &tau, 1000);
    assert!(s.tree_path());
    assert!((state.v[a] - 5.0).abs() < 1e-6 && (state.v[b] - 5.0).abs() < 1e-6);
}

#[test]
fn a_polynomial_equality_holds_its_curve_over_a_long_run() {
    // q_a = 0.1 + 0.5 q_b + 0.2 q_b²: the velocity-level row drifts off
    // the curve by its curvature, ½·P''·(q̇_b dt)² per step, and the
    // Baumgarte term pulls back β of the residual per step, so the residual
    // stays below drift/β (q̇_b < 2 rad/s, P'' = 0.4, β = 0.2: 4e-6).
    let m = wheels(
        "",
        r#"<equality><joint joint1="a" joint2="b" polycoef="0.1 0.5 0.2 0 0"/></equality>"#,
    );
    let mut s = sim(&m, SolverKind::NcpAdmm);
    let mut state = State::new(m.neutral_configuration(), nalgebra::DVector::zeros(m.nv));
    let mut tau = vec![0.0; m.nv];
    tau[1] = 0.05;
    let mut worst: f64 = 0.0;
    for step in 0..4000 {
        s.step(&mut state, &tau).unwrap();
        let (qa, qb) = (state.q[0], state.q[1]);
        let e = qa - 0.1 - 0.5 * qb - 0.2 * qb * qb;
        // The first steps pull the violated start (e = −0.1) onto the curve.
        if step > 200 {
            worst = worst.max(e.abs());
        }
    }
    assert!(state.q[1] > 1.0, "b turned {}", state.q[1]);
    let (speed, beta) = (state.v[1].abs(), SimParams::default().baumgarte);
    assert!(speed < 2.0, "{speed}");
    let bound = 0.5 * 0.4 * (speed * 1e-3).powi(2) / beta;
    assert!(
        worst < 1.5 * bound,
        "worst residual {worst:e}, bound {bound:e}"
    );
}

#[test]
fn a_tendon_equality_couples_and_a_tendon_range_stops() {
    // Tendon t = q_a − q_b held at its reference (0) by a tendon equality:
    // the wheels turn together, as with the joint equality.
    let m = wheels(
        r#"<tendon><fixed name="t"><joint joint="a" coef="1"/><joint joint="b" coef="-1"/></fixed></tendon>"#,
        r#"<equality><tendon tendon1="t"/></equality>"#,
    );
    let mut s = sim(&m, SolverKind::NcpAdmm);
    let mut tau = vec![0.0; m.nv];
    tau[0] = 0.4;
    let state = run(&mut s, &m, &tau, 1000);
    assert!((state.v[0] - 5.0).abs() < 1e-6 && (state.v[1] - 5.0).abs() < 1e-6);
    // A range on the sum q_a + q_b ≤ 0.5: driven apart by opposite torques
    // of different size, the sum stops at 0.5 and stays.
    let m = wheels(
        r#"<tendon><fixed name="sum" range="-1 0.5"><joint joint="a" coef="1"/><joint joint="b" coef="1"/></fixed></tendon>"#,
        "",
    );
    for solver in SOLVERS {
        let mut s = sim(&m, solver);
        tau = vec![0.3, 0.1, 0.0];
        let state = run(&mut s, &m, &tau, 3000);
        let sum = state.q[0] + state.q[1];
        assert!(
            (sum - 0.5).abs() < 1e-6 && (state.v[0] + state.v[1]).abs() < 1e-6,
            "{}: sum {sum}, rate {}",
            solver.name(),
            state.v[0] + state.v[1]
        );
        // At the stop the torques' difference still turns them apart:
        // I₁ α_a = 0.3 − λ, I₂ α_b = 0.1 − λ, α_a = −α_b → λ = 0.15 N·m,
        // α_a = 7.5 rad/s².
        let alpha = (state.v[0] - state.v[1]) / 2.0;
        assert!(alpha > 0.0, "{}", solver.name());
    }
}

#[test]
fn a_tendon_spring_pulls_to_its_rest_length() {
    // L = q_a + q_b with stiffness 2 and rest length 0.3 ("springlength"):
    // from rest at L = 0 it oscillates about 0.3; with damping it settles
    // there.
    let m = wheels(
        r#"<tendon><fixed name="sp" stiffness="2" damping="0.5" springlength="0.3"><joint joint="a" coef="1"/><joint joint="b" coef="1"/></fixed></tendon>"#,
        "",
    );
    assert_eq!(m.tendons[0].spring_length, (0.3, 0.3));
    let mut s = sim(&m, SolverKind::NcpAdmm);
    let state = run(&mut s, &m, &[0.0; 3], 20_000);
    let l = state.q[0] + state.q[1];
    assert!((l - 0.3).abs() < 1e-4, "L = {l}");
    // Equal and opposite angular momenta? No: the spring's torque is the
    // same on both joints (coef 1), so I₁ q_a = I₂ q_b·(I₁/I₂)... each
    // joint's angle is in proportion to 1/I: q_a / q_b = I₂ / I₁ = 3.
    assert!(
        (state.q[0] / state.q[1] - 3.0).abs() < 1e-3,
        "{:?}",
        &state.q.as_slice()[..2]
    );
}

#[test]
fn a_motor_on_a_tendon_drives_each_joint_by_its_coefficient() {
    // t = q_a − 2 q_b, a motor of gear 2 at control 0.1: a gets
    // +0.2 N·m, b gets −0.4 N·m.
    let xml = WHEELS
        .replace(
            "TENDON",
            r#"<tendon><fixed name="t"><joint joint="a" coef="1"/><joint joint="b" coef="-2"/></fixed></tendon>
  <actuator><motor tendon="t" gear="2"/></actuator>"#,
        )
        .replace("EQUALITY", "");
    let (m, warnings) = model(&xml);
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!((m.nu(), m.actuators[0].name.as_str()), (1, "t"));
    assert!(
        m.constraint_features()
            .unwrap()
            .contains("actuator(s) on tendons")
    );
    let mut s = sim(&m, SolverKind::NcpAdmm);
    let mut state = State::new(m.neutral_configuration(), nalgebra::DVector::zeros(m.nv));
    for _ in 0..100 {
        s.step_controls(&mut state, &[0.1]).unwrap();
    }
    let (wa, wb) = (0.2 / 0.02 * 0.1, -0.4 / 0.06 * 0.1);
    assert!(
        (state.v[0] - wa).abs() < 1e-9 && (state.v[1] - wb).abs() < 1e-9,
        "{:?}",
        state.v
    );
}

/// World pose of the MJCF body named `name` (through the body carrying it).
fn mjcf_pose(
    m: &moreau::load::mjcf::MjcfModel,
    data: &moreau::dynamics::Data,
    name: &str,
) -> moreau::math::SE3 {
    let b = m.mjcf_bodies.iter().find(|b| b.name == name).unwrap();
    data.world_from_body[b.body].mul(&b.body_from_mjcf)
}

/// `m`'s model and a simulator of it at step `dt` (the default solver).
fn simulator_at(m: &moreau::load::mjcf::MjcfModel, dt: f64) -> (Arc<Model>, Simulator) {
    let model = Arc::new(m.model.clone());
    let params = SimParams::with_dt(dt);
    (model.clone(), Simulator::new(model, params).unwrap())
}

fn parsed(xml: &str) -> moreau::load::mjcf::MjcfModel {
    let m = parse_mjcf(xml, "test.xml", Path::new("."), &MjcfOptions::default()).unwrap();
    assert!(m.warnings.is_empty(), "{:?}", m.warnings);
    m
}

/// A pendulum closed by `connect`: a free body held by its origin on the
/// tip of a hinged rod swings as the same body on a ball joint there (the
/// reduced-coordinate double pendulum). The two integrations differ at
/// first order in `dt`: the gap after 0.5 s halves with the step, and the
/// connect's residual stays within the Baumgarte drift.
#[test]
fn a_pendulum_closed_by_connect_swings_as_on_a_ball_joint() {
    let arm = r#"<joint name="h" type="hinge" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 1 0 0" size=".05" mass="1" contype="0" conaffinity="0"/>"#;
    let link = r#"<geom type="capsule" fromto="0 0 0 0.6 0.2 0.3" size=".05" mass="0.5" contype="0" conaffinity="0"/>"#;
    let ball = parsed(&format!(
        r#"<mujoco><worldbody><body name="a">{arm}
        <body name="b" pos="1 0 0"><joint type="ball"/>{link}</body></body></worldbody></mujoco>"#
    ));
    let closed = parsed(&format!(
        r#"<mujoco><worldbody><body name="a">{arm}</body>
        <body name="b" pos="1 0 0"><freejoint/>{link}</body></worldbody>
        <equality><connect name="tip" body1="a" body2="b" anchor="1 0 0"/></equality></mujoco>"#
    ));
    let e = &closed.model.body_equalities[0];
    assert_eq!((e.name.as_str(), e.rotation), ("tip", None));
    assert!((e.point1 - moreau::math::Vec3::new(1.0, 0.0, 0.0)).norm() < 1e-12);
    assert!(e.point2.norm() < 1e-12);
    let run = |m: &moreau::load::mjcf::MjcfModel, dt: f64| {
        let (model, mut sim) = simulator_at(m, dt);
        let mut state = State::new(m.q0.clone(), nalgebra::DVector::zeros(model.nv));
        let mut data = moreau::dynamics::Data::new(&model);
        let mut residual: f64 = 0.0;
        for _ in 0..(0.5 / dt).round() as usize {
            let report = sim.step(&mut state, &vec![0.0; model.nv]).unwrap();
            if let Some(s) = report.solver {
                assert!(s.converged, "{s:?}");
            }
            moreau::dynamics::forward_kinematics(&model, &mut data, state.q.as_slice());
            let (a, b) = (mjcf_pose(m, &data, "a"), mjcf_pose(m, &data, "b"));
            let tip = a.act_point(&moreau::math::Vec3::new(1.0, 0.0, 0.0));
            residual = residual.max((tip - b.translation).norm());
        }
        let b = mjcf_pose(m, &data, "b");
        (
            b.act_point(&moreau::math::Vec3::new(0.6, 0.2, 0.3)),
            residual,
        )
    };
    let mut gaps = Vec::new();
    for dt in [1e-3, 5e-4] {
        let (want, joint_residual) = run(&ball, dt);
        let (got, residual) = run(&closed, dt);
        assert!(joint_residual < 1e-12);
        let gap = (got - want).norm();
        println!(
            "dt {dt}: link end {got:?} vs ball joint {want:?}: {gap:.1e}; connect residual ≤ {residual:.1e}"
        );
        assert!(residual < 1e-4, "{residual}");
        // It swung: the link's end fell by more than 0.5 m.
        assert!(want.z < -0.5, "{want:?}");
        gaps.push(gap);
    }
    assert!(gaps[0] < 2e-2, "{gaps:?}");
    assert!(gaps[1] < 0.65 * gaps[0], "first order in dt: {gaps:?}");
}

/// A `weld` makes two free bodies one: spun without gravity, the pair
/// tumbles as the single body of their merged inertia. To rounding: the
/// weld's impulse projects the two bodies' free velocities (in the mass
/// metric) onto their common rigid motion, which is the merged body's
/// step, and each free joint then integrates the same twist.
#[test]
fn welded_bodies_move_as_one() {
    let a = r#"<geom type="box" size=".2 .1 .05" mass="2" contype="0" conaffinity="0"/>"#;
    let b = r#"<geom type="capsule" fromto="0 0 0 0.3 0 0.1" size=".04" mass="0.7" contype="0" conaffinity="0"/>"#;
    let place = r#"pos="0.3 0.1 -0.05" euler="0 0 30""#;
    let merged = parsed(&format!(
        r#"<mujoco><option gravity="0 0 0"/><worldbody><body name="a" pos="0 0 1"><freejoint/>{a}
        <body name="b" {place}>{b}</body></body></worldbody></mujoco>"#
    ));
    let welded = parsed(&format!(
        r#"<mujoco><option gravity="0 0 0"/><worldbody><body name="a" pos="0 0 1"><freejoint/>{a}</body>
        <body name="b" pos="0.3 0.1 0.95" euler="0 0 30"><freejoint/>{b}</body></worldbody>
        <equality><weld body1="a" body2="b"/></equality></mujoco>"#
    ));
    assert!(welded.model.body_equalities[0].rotation.is_some());
    // The pair's initial twist: a's (body frame), and b's the same rigid motion.
    let (w, v) = (
        moreau::math::Vec3::new(0.3, 2.0, 1.0),
        moreau::math::Vec3::new(0.1, 0.0, 0.2),
    );
    let run = |m: &moreau::load::mjcf::MjcfModel, dt: f64| {
        let (model, mut sim) = simulator_at(m, dt);
        let mut data = moreau::dynamics::Data::new(&model);
        moreau::dynamics::forward_kinematics(&model, &mut data, m.q0.as_slice());
        let mut v0 = nalgebra::DVector::zeros(model.nv);
        v0.rows_mut(0, 3).copy_from(&v);
        v0.rows_mut(3, 3).copy_from(&w);
        if model.nv == 12 {
            let (pa, pb) = (mjcf_pose(m, &data, "a"), mjcf_pose(m, &data, "b"));
            let ab = pa.inv_mul(&pb);
            let r = ab.rotation.transpose();
            v0.rows_mut(6, 3)
                .copy_from(&(r * (v + w.cross(&ab.translation))));
            v0.rows_mut(9, 3).copy_from(&(r * w));
        }
        let mut state = State::new(m.q0.clone(), v0);
        for _ in 0..(1.0 / dt).round() as usize {
            sim.step(&mut state, &vec![0.0; model.nv]).unwrap();
        }
        moreau::dynamics::forward_kinematics(&model, &mut data, state.q.as_slice());
        (mjcf_pose(m, &data, "a"), mjcf_pose(m, &data, "b"))
    };
    for dt in [1e-3, 5e-4] {
        let (a0, b0) = run(&merged, dt);
        let (a1, b1) = run(&welded, dt);
        let rel = a1.inv_mul(&b1);
        let want_rel = a0.inv_mul(&b0);
        let held = (rel.translation - want_rel.translation).norm()
            + (rel.rotation - want_rel.rotation).amax();
        let gap = (b1.translation - b0.translation).norm() + (a1.rotation - a0.rotation).amax();
        println!("dt {dt}: gap to the merged body {gap:.1e}, weld residual {held:.1e}");
        assert!(held < 1e-9, "{held}");
        assert!(gap < 1e-9, "{gap}");
        // It tumbled: a turned by more than a radian.
        assert!((a0.rotation - moreau::math::Mat3::identity()).amax() > 0.5);
    }
}

/// A ball on a string: a spatial tendon from a fixed site to the ball,
/// `range="0 0.3"` (dm_control's ball_in_cup's string). Dropped from 0.1 m
/// under the site, it falls freely (`z = z₀ − g t²/2`) until the string is
/// taut, is caught without rebound (the row is inelastic) and hangs at 0.3 m;
/// the string never stretches beyond the limit's drift.
#[test]
fn a_spatial_tendon_holds_a_ball_on_a_string() {
    let m = parsed(
        r#"<mujoco><option timestep="0.001"/><worldbody>
        <site name="hook" pos="0 0 1"/>
        <body name="ball" pos="0 0 0.9"><freejoint/>
          <geom type="sphere" size="0.02" mass="0.1" contype="0" conaffinity="0"/>
          <site name="knot"/></body></worldbody>
        <tendon><spatial name="string" limited="true" range="0 0.3">
          <site site="hook"/><site site="knot"/></spatial></tendon></mujoco>"#,
    );
    let t = &m.model.tendons[0];
    assert!(t.is_spatial() && (t.length0 - 0.1).abs() < 1e-12);
    let model = Arc::new(m.model.clone());
    for solver in SOLVERS {
        let mut sim = sim(&model, solver);
        let mut state = State::new(m.q0.clone(), nalgebra::DVector::zeros(model.nv));
        let mut longest: f64 = 0.0;
        for step in 1..=1500 {
            sim.step(&mut state, &[0.0; 6]).unwrap();
            let length = 1.0 - state.q[2];
            longest = longest.max(length);
            let t = step as f64 * 1e-3;
            // Free fall until the string is taut at 0.2 m more (t ≈ 0.2 s).
            if t < 0.19 {
                let free = 0.9 - 9.81 * 1e-3 * 1e-3 * (step * (step + 1)) as f64 / 2.0;
                assert!((state.q[2] - free).abs() < 1e-9, "{solver:?} step {step}");
            }
        }
        assert!(longest < 0.3 + 2e-3, "{solver:?}: {longest}");
        assert!(
            (1.0 - state.q[2] - 0.3).abs() < 1e-4,
            "{solver:?}: {}",
            state.q[2]
        );
        assert!(state.v.norm() < 1e-3, "{solver:?}: {}", state.v.norm());
    }
}

/// A ball joint's cone limit (`range="0 30"`, degrees) stops a rod spun
/// about a horizontal axis without gravity at 30° of rotation, on every
/// solver, where the free rod turns on; and leaves a rod whose spin axis
/// stays inside the cone alone.
#[test]
fn a_ball_joints_cone_limit_stops_the_rotation_at_its_angle() {
    let xml = |range: &str| {
        format!(
            r#"<mujoco><option gravity="0 0 0" timestep="0.001"/><worldbody><body>
            <joint name="ball" type="ball" {range}/>
            <geom type="capsule" fromto="0 0 0 0 0 -0.5" size=".05" mass="1" contype="0" conaffinity="0"/>
            </body></worldbody></mujoco>"#
        )
    };
    let angle = |q: &[f64]| {
        2.0 * nalgebra::Vector3::new(q[0], q[1], q[2])
            .norm()
            .atan2(q[3].abs())
    };
    let limit = 30f64.to_radians();
    let (limited, warnings) = model(&xml(r#"range="0 30""#));
    assert!(warnings.is_empty(), "{warnings:?}");
    assert!(
        limited
            .constraint_features()
            .unwrap()
            .contains("1 ball joint cone limit")
    );
    let (free, _) = model(&xml(""));
    let spin = |m: &Arc<Model>, solver: SolverKind| {
        let mut s = sim(m, solver);
        let mut v = nalgebra::DVector::zeros(3);
        v[0] = 2.0;
        let mut state = State::new(m.neutral_configuration(), v);
        let mut worst = 0.0f64;
        for _ in 0..1000 {
            s.step(&mut state, &[0.0; 3]).unwrap();
            worst = worst.max(angle(state.q.as_slice()));
        }
        (worst, angle(state.q.as_slice()), state.v.norm())
    };
    let (turned, _, _) = spin(&free, SolverKind::NcpAdmm);
    assert!(
        (turned - 2.0).abs() < 1e-9,
        "the free rod turns 2 rad in 1 s: {turned}"
    );
    for solver in SOLVERS {
        let (worst, last, speed) = spin(&limited, solver);
        println!(
            "{solver:?}: at most {:.4}°, last {:.4}°, speed {speed:.1e}",
            worst.to_degrees(),
            last.to_degrees()
        );
        assert!(worst < limit + 1e-3, "{solver:?}: {}°", worst.to_degrees());
        assert!(
            (last - limit).abs() < 1e-3,
            "{solver:?}: {}°",
            last.to_degrees()
        );
        assert!(speed < 1e-3, "{solver:?}: still turning at {speed}");
    }
    // Inside the cone: no row, the rod turns freely.
    let mut s = sim(&limited, SolverKind::NcpAdmm);
    let mut v = nalgebra::DVector::zeros(3);
    v[0] = 0.2;
    let mut state = State::new(limited.neutral_configuration(), v);
    for _ in 0..1000 {
        s.step(&mut state, &[0.0; 3]).unwrap();
        assert!(s.extra_rows().is_empty());
    }
    assert!((angle(state.q.as_slice()) - 0.2).abs() < 1e-9);
}

/// A two-link arm whose tip is `connect`ed to a mocap target moved out of
/// its reach: no motion meets the equality, so the rigid problem has no
/// solution (the arm stretched, its Jacobian singular along the pull) and
/// its solves end unconverged. With the mocap rows' compliance
/// ([`SimParams::mocap_compliance`], on by default) every solve converges,
/// the equality gives way in least squares and the arm comes to rest
/// pointing at the target, its tip as near as the reach allows.
#[test]
fn a_mocap_target_out_of_reach_leaves_every_solve_converged() {
    use moreau::math::Vec3;
    let m = parsed(
        r#"<mujoco><option gravity="0 0 0" timestep="0.002"/>
          <worldbody>
            <body name="target" mocap="true" pos="1 0 0"/>
            <body name="l1"><joint name="j1" axis="0 1 0" damping="0.05"/>
              <geom type="capsule" fromto="0 0 0 0.5 0 0" size="0.03" contype="0" conaffinity="0"/>
              <body name="l2" pos="0.5 0 0"><joint name="j2" axis="0 1 0" damping="0.05"/>
                <geom type="capsule" fromto="0 0 0 0.5 0 0" size="0.03" contype="0" conaffinity="0"/>
              </body>
            </body>
          </worldbody>
          <equality><connect body1="l2" body2="target" anchor="0.5 0 0"/></equality>
        </mujoco>"#,
    );
    let target = Vec3::new(1.2, 0.0, 0.4);
    let run = |alpha: f64| {
        let (model, mut sim) = simulator_at(&m, 2e-3);
        sim.params.mocap_compliance = alpha;
        let mut pose = model.mocap[0].pose;
        pose.translation = target;
        sim.set_mocap_pose(0, pose).unwrap();
        let mut state = State::new(m.q0.clone(), nalgebra::DVector::zeros(model.nv));
        let (mut unconverged, mut speeds) = (0, Vec::new());
        for _ in 0..3000 {
            let report = sim.step(&mut state, &[0.0, 0.0]).unwrap();
            unconverged += report.solver.is_some_and(|s| !s.converged) as usize;
            speeds.push(state.v.amax());
        }
        // The fastest joint over the run's second and sixth seconds.
        let fastest = |r: std::ops::Range<usize>| speeds[r].iter().fold(0.0f64, |a, &b| a.max(b));
        let speeds = (fastest(500..1000), fastest(2500..3000));
        let mut data = moreau::dynamics::Data::new(&model);
        moreau::dynamics::forward_kinematics(&model, &mut data, state.q.as_slice());
        let tip = mjcf_pose(&m, &data, "l2").act_point(&Vec3::new(0.5, 0.0, 0.0));
        (unconverged, speeds, tip)
    };
    let (rigid, rigid_speeds, _) = run(0.0);
    let (unconverged, speeds, tip) = run(SimParams::default().mocap_compliance);
    let reach = target.norm() - 1.0;
    println!(
        "rigid: {rigid} of 3000 solves unconverged, fastest joint {:.1e}, {:.1e} rad/s in the 2nd and 6th s; compliant: {unconverged}, {:.1e}, {:.1e} rad/s, tip {:.1e} m from the nearest reachable point",
        rigid_speeds.0,
        rigid_speeds.1,
        speeds.0,
        speeds.1,
        ((tip - target).norm() - reach).abs(),
    );
    assert!(rigid > 0, "the rigid problem has no solution here");
    assert_eq!(unconverged, 0);
    // Stretched towards the target, coming to rest (the stretched arm's
    // bending, pulled taut, rings down through the joints' damping).
    assert!(((tip - target).norm() - reach).abs() < 1e-6);
    assert!((tip.normalize() - target.normalize()).norm() < 1e-6);
    assert!(speeds.1 < 1e-2 && speeds.1 < 1e-2 * speeds.0, "{speeds:?}");
}
