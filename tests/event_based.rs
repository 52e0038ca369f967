//! The event-based simulator (`moreau::events`) on scenes with analytic
//! answers: a bouncing ball (apex heights `e^{2k} h₀`, the Zeno rule at the
//! accumulation time), a block sliding to rest (`v²/(2μg)`), a torque-free
//! tumbling body (the implicit midpoint conserves its energy, RK4 drifts),
//! and the falling cube, whose resting pose time-stepping and event-based
//! agree on as their steps shrink.

use moreau::events::{EventKind, EventParams, EventSim, SmoothIntegrator};
use moreau::math::{Inertia, SE3, Vec3};
use moreau::model::{JointType, ModelBuilder, WORLD};
use moreau::scenes;
use moreau::sim::{SimParams, Simulator, State};
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
                    assert!((vz - speed).abs() < 1e-9, "rebound {vz} vs {speed}");
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
