//! The event-based simulator (`moreau_lab::events`) on scenes with analytic
//! answers: a bouncing ball (apex heights `e^{2k} h₀`, the Zeno rule at the
//! accumulation time), a block sliding to rest (`v²/(2μg)`), a torque-free
//! tumbling body (the implicit midpoint conserves its energy, RK4 drifts),
//! and the falling cube, whose resting pose time-stepping and event-based
//! agree on as their steps shrink.

use moreau::math::{Inertia, SE3, Vec3};
use moreau::model::{JointType, ModelBuilder, WORLD};
use moreau::scenes;
use moreau::sim::{SimParams, Simulator, State};
use moreau_lab::events::{EventKind, EventParams, EventSim, SmoothIntegrator};
use nalgebra::DVector;
use std::sync::Arc;

const G: f64 = 9.81;

fn params(h: f64, integrator: SmoothIntegrator) -> EventParams {
    EventParams {
        h,
        integrator,
        ..EventParams::default()
    }
}

/// The ball-drop scene: a ball of radius 0.1 m released with its bottom
/// 0.9 m above the ground, restitution 0.5.
#[test]
fn bouncing_ball_apexes_and_zeno_accumulation_time() {
    let scene = scenes::ball_drop().unwrap();
    let (r, e, h0): (f64, f64, f64) = (0.1, 0.5, 0.9);
    let zero = vec![0.0; 6];
    for integrator in [SmoothIntegrator::Rk4, SmoothIntegrator::ImplicitMidpoint] {
        let p = params(0.01, integrator);
        let mut sim = EventSim::new(scene.model.clone(), p).unwrap();
        let mut state = scene.state.clone();
        let mut bounces = 0;
        let mut worst_apex = 0.0f64;
        let mut worst_time = 0.0f64;
        let v0 = (2.0 * G * h0).sqrt();
        let mut t_impact = (2.0 * h0 / G).sqrt();
        let mut seen = 0;
        while state.t < 3.0 {
            sim.step(&mut state, p.h, &zero).unwrap();
            let events = sim.events();
            let new: Vec<_> = events[seen..].to_vec();
            seen = events.len();
            for ev in new {
                if let EventKind::Impact { restitution, .. } = ev.kind
                    && restitution > 0.0
                {
                    // The analytic impact time of this bounce.
                    worst_time = worst_time.max((ev.t - t_impact).abs());
                    bounces += 1;
                    let vz = state.v[2];
                    let speed = v0 * e.powi(bounces);
                    // (Impacts are located at φ = −gap_tolerance: the
                    // approach speed is off by about g·gap_tolerance/v.)
                    let bound = 2.0 * G * p.gap_tolerance / (speed / e) + 1e-12;
                    assert!((vz - speed).abs() < bound, "rebound {vz} vs {speed}");
                    t_impact += 2.0 * speed / G;
                    // Fly to the analytic apex time and read the height.
                    let mut apex = state.clone();
                    let mut side = EventSim::new(scene.model.clone(), p).unwrap();
                    side.advance_to(&mut apex, state.t + vz / G, &zero).unwrap();
                    let height = apex.q[2] - r;
                    let expected = e.powi(2 * bounces) * h0;
                    worst_apex = worst_apex.max((height - expected).abs());
                }
            }
        }
        println!(
            "{}: {bounces} bounces, worst apex error {worst_apex:.2e} m, worst impact time error {worst_time:.2e} s",
            integrator.name()
        );
        assert!(bounces >= 10, "{bounces} bounces");
        assert!(worst_apex < 1e-9, "apex error {worst_apex:e}");
        assert!(worst_time < 1e-9, "impact time error {worst_time:e}");
        // The Zeno rule: one plastic impact ends the sequence, at most
        // 2 e v_z / (g (1 − e)) before the accumulation time, which it
        // estimates.
        let t_inf = (2.0 * h0 / G).sqrt() + 2.0 * e * v0 / (G * (1.0 - e));
        let zeno: Vec<_> = sim
            .events()
            .iter()
            .filter_map(|ev| match ev.kind {
                EventKind::Zeno { accumulation_time } => Some((ev.t, accumulation_time)),
                _ => None,
            })
            .collect();
        assert_eq!(zeno.len(), 1, "{:?}", sim.events());
        let (t_end, estimate) = zeno[0];
        let bound = 2.0 * e * p.zeno_velocity / (G * (1.0 - e));
        println!(
            "  Zeno rule at t = {t_end:.9} s; accumulation time {t_inf:.12} s, estimated {estimate:.12} s (error {:.1e}); cut short by {:.2e} s ≤ {bound:.2e}",
            (estimate - t_inf).abs(),
            t_inf - t_end
        );
        assert!((estimate - t_inf).abs() < 1e-9);
        assert!(t_end <= t_inf && t_inf - t_end <= bound);
        // Then at rest on the ground.
        assert!((state.q[2] - r).abs() < 1e-9, "z = {}", state.q[2]);
        assert!(state.v.amax() < 1e-9, "v = {}", state.v);
    }

    // Time-stepping at dt = 1 ms (restitution applies above its bounce
    // velocity, 0.1 m/s by default): apexes from the highest sample between impacts.
    let mut sim = Simulator::new(scene.model.clone(), SimParams::default()).unwrap();
    let mut state = scene.state.clone();
    let zero = vec![0.0; 6];
    let (mut rising, mut top, mut k) = (false, 0.0f64, 0);
    let mut errors = Vec::new();
    while state.t < 3.0 && k < 6 {
        sim.step(&mut state, &zero).unwrap();
        let vz = state.v[2];
        if vz > 0.0 {
            rising = true;
            top = 0.0;
        }
        if rising {
            top = top.max(state.q[2] - r);
            if vz < 0.0 {
                rising = false;
                k += 1;
                errors.push((top - e.powi(2 * k) * h0).abs());
            }
        }
    }
    println!(
        "time-stepping, dt = 1 ms: apex errors of the first {k} bounces {:?} m",
        errors
            .iter()
            .map(|x| format!("{x:.1e}"))
            .collect::<Vec<_>>()
    );
}

/// The cube-sliding scene: a 0.2 m cube on the ground launched at 1 m/s,
/// μ = 0.3: it slides `v²/(2 μ g)` and stops at `v/(μ g)`.
#[test]
fn sliding_block_stops_at_v2_over_2_mu_g() {
    let scene = scenes::scene("cube-sliding").unwrap();
    let (v0, mu) = (1.0, 0.3);
    let distance = v0 * v0 / (2.0 * mu * G);
    let t_stop = v0 / (mu * G);
    for integrator in [SmoothIntegrator::Rk4, SmoothIntegrator::ImplicitMidpoint] {
        let p = params(0.01, integrator);
        let mut sim = EventSim::new(scene.model.clone(), p).unwrap();
        let mut state = scene.state.clone();
        sim.advance_to(&mut state, 1.0, &[0.0; 6]).unwrap();
        let stuck: Vec<f64> = sim
            .events()
            .iter()
            .filter(|e| matches!(e.kind, EventKind::Stick { .. }))
            .map(|e| e.t)
            .collect();
        let slid = state.q[1] - scene.state.q[1];
        println!(
            "{}: slid {slid:.12} m (analytic {distance:.12}, error {:.1e}); stuck at {:?} s (analytic {t_stop:.12}); {} evaluations",
            integrator.name(),
            (slid - distance).abs(),
            stuck,
            sim.evaluations
        );
        assert!((slid - distance).abs() < 1e-9);
        assert!(!stuck.is_empty() && stuck.iter().all(|t| (t - t_stop).abs() < 1e-9));
        assert!(state.v.amax() < 1e-9, "{}", state.v);
        assert!(
            state.q[0].abs() < 1e-12 && (state.q[2] - 0.1).abs() < 1e-9,
            "{}",
            state.q
        );
    }
}

/// A box of unequal sides tumbling with no gravity and no contact for 10 s:
/// the implicit midpoint rule keeps its kinetic energy to round-off, RK4
/// drifts at fourth order in h.
#[test]
fn implicit_midpoint_conserves_a_tumbling_bodys_energy_rk4_drifts() {
    let mut b = ModelBuilder::new("tumbling");
    b.set_gravity(Vec3::zeros()).unwrap();
    b.add_body(
        "box",
        WORLD,
        JointType::Free,
        SE3::identity(),
        Inertia::cuboid(1.0, Vec3::new(0.1, 0.2, 0.4)),
    )
    .unwrap();
    let model = Arc::new(b.build().unwrap());
    let mut v = DVector::zeros(6);
    // Close to the unstable middle axis: the body flips.
    v.fixed_rows_mut::<3>(3)
        .copy_from(&Vec3::new(0.1, 4.0, 0.2));
    v[0] = 0.3;
    let start = State::new(model.neutral_configuration(), v);
    let run = |integrator, h| {
        let mut sim = EventSim::new(model.clone(), params(h, integrator)).unwrap();
        let e0 = sim.energy(&start).unwrap().0;
        let mut s = start.clone();
        let mut worst = 0.0f64;
        while s.t < 10.0 - 1e-9 {
            sim.step(&mut s, h, &[0.0; 6]).unwrap();
            worst = worst.max((sim.energy(&s).unwrap().0 - e0).abs() / e0);
        }
        worst
    };
    let mut rk4 = Vec::new();
    for h in [0.04, 0.02, 0.01] {
        let (r, m) = (
            run(SmoothIntegrator::Rk4, h),
            run(SmoothIntegrator::ImplicitMidpoint, h),
        );
        println!("h = {h}: worst relative energy error over 10 s: rk4 {r:.2e}, midpoint {m:.2e}");
        assert!(m < 1e-12, "midpoint energy error {m:e} at h = {h}");
        rk4.push(r);
    }
    let orders: Vec<f64> = rk4.windows(2).map(|w| (w[0] / w[1]).log2()).collect();
    println!("rk4 energy drift orders: {orders:.2?}");
    assert!(rk4[2] > 1e-10, "rk4 did not drift: {rk4:?}");
    assert!(orders.iter().all(|o| (3.5..5.5).contains(o)), "{orders:?}");
}

/// The falling cube (`cube-falling`: released tilted and spinning, several
/// impacts, sliding to rest on a face): time-stepping at 0.1 ms and the
/// event-based RK4 at 1 ms bring it to rest at the same pose, within 5 mm
/// and 0.02 rad.
#[test]
fn falling_cube_comes_to_rest_at_the_same_pose_both_ways() {
    let scene = scenes::falling_cube().unwrap();
    let duration = 3.0;
    let mut ts = Simulator::new(
        scene.model.clone(),
        SimParams {
            dt: 1e-4,
            // The event-based Zeno rule's speed: slower impacts are plastic.
            bounce_velocity: EventParams::default().zeno_velocity,
            ..SimParams::default()
        },
    )
    .unwrap();
    let mut a = scene.state.clone();
    while a.t < duration - 1e-9 {
        ts.step(&mut a, &[0.0; 6]).unwrap();
    }
    let mut ev = EventSim::new(scene.model.clone(), params(1e-3, SmoothIntegrator::Rk4)).unwrap();
    let mut b = scene.state.clone();
    ev.advance_to(&mut b, duration, &[0.0; 6]).unwrap();
    let pose = |s: &State| {
        let q = moreau::math::quat_from_slice(&s.q.as_slice()[3..7]);
        (Vec3::new(s.q[0], s.q[1], s.q[2]), q)
    };
    let ((pa, ra), (pb, rb)) = (pose(&a), pose(&b));
    let (dp, angle) = ((pa - pb).norm(), ra.angle_to(&rb));
    let impacts = ev
        .events()
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Impact { .. }))
        .count();
    println!(
        "resting pose: time-stepping {:.5?}, event-based {:.5?}: {:.2} mm and {:.4} rad apart; {impacts} impacts, {} events",
        pa.as_slice(),
        pb.as_slice(),
        dp * 1e3,
        angle,
        ev.events().len()
    );
    assert!(a.v.amax() < 1e-5 && b.v.amax() < 1e-5, "not at rest");
    assert!(impacts >= 5, "{impacts} impacts");
    assert!(dp < 5e-3 && angle < 0.02, "{dp} m, {angle} rad");
}

/// Bad input is refused with an error naming it, and the state is left
/// untouched: NaN in the state, a zero quaternion, torques of the wrong size, a bad step,
/// invalid parameters, a model with joint limits.
#[test]
fn bad_input_is_refused_and_leaves_the_state_alone() {
    let scene = scenes::ball_drop().unwrap();
    let mut sim = EventSim::new(scene.model.clone(), EventParams::default()).unwrap();
    let mut s = scene.state.clone();
    s.v[2] = f64::NAN;
    let before = s.clone();
    let err = sim.step(&mut s, 1e-3, &[0.0; 6]).unwrap_err().to_string();
    assert!(err.contains("v[2]"), "{err}");
    assert_eq!(format!("{s:?}"), format!("{before:?}"));
    let mut s = scene.state.clone();
    s.q.as_mut_slice()[3..7].fill(0.0);
    let err = sim.energy(&s).unwrap_err().to_string();
    assert!(err.contains("quaternion") && err.contains("ball"), "{err}");
    let mut s = scene.state.clone();
    let err = sim.step(&mut s, 1e-3, &[0.0; 5]).unwrap_err().to_string();
    assert!(err.contains("tau"), "{err}");
    let err = sim.step(&mut s, -1.0, &[0.0; 6]).unwrap_err().to_string();
    assert!(err.contains("dt"), "{err}");
    assert_eq!(s, scene.state);
    let bad = EventParams {
        h: 0.0,
        ..EventParams::default()
    };
    let err = EventSim::new(scene.model.clone(), bad)
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("`h`"), "{err}");
    // A pendulum with a joint range.
    let mut b = ModelBuilder::new("limited");
    let body = b
        .add_body(
            "pendulum",
            WORLD,
            JointType::Revolute(Vec3::x()),
            SE3::identity(),
            Inertia::cuboid(1.0, Vec3::new(0.1, 0.1, 0.5)),
        )
        .unwrap();
    b.set_joint_spec(
        body,
        moreau::model::JointSpec {
            range: Some((-1.0, 1.0)),
            ..Default::default()
        },
    )
    .unwrap();
    let limited = Arc::new(b.build().unwrap());
    let err = EventSim::new(limited, EventParams::default())
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("joint limits") && err.contains("pendulum"),
        "{err}"
    );
}
