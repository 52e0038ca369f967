//! Inverse problems with the step Jacobians: Gauss–Newton finds the joint
//! torques that hold a standing quadruped still (zero velocity after the
//! step), as the differentiable-simulation seed paper's Fig. 4 (there:
//! error 1e-5 in about ten iterations), on the built-in quadruped and on
//! example-robot-data's Solo-12 (knees bent, settled under a PD first); and
//! recovers the velocity a cube was thrown with along the floor from where
//! it slid to (the paper's Fig. 3), with the step Jacobians chained along
//! the rollout and with central differences of rollouts.

#[path = "../../tests/common/mod.rs"]
mod common;

use moreau::scenes::Scene;
use moreau::sim::{SimParams, Simulator};
use moreau_lab::inverse_problems::{
    Gradients, THROWN_CUBE_UNKNOWNS, initial_velocity, rollout, standing_torques, thrown_cube,
};
use nalgebra::DVector;

/// Settles `scene` under its PD for `steps`, then solves for the torques
/// that stop it from there, starting from zero torques, with `gradients`.
fn solve(scene: &Scene, steps: usize, gradients: Gradients) -> Vec<f64> {
    let mut params = SimParams {
        dt: scene.dt,
        ..Default::default()
    };
    let mut sim = Simulator::new(scene.model.clone(), params).unwrap();
    let mut state = scene.state.clone();
    let mut tau = DVector::zeros(scene.model.nv);
    for _ in 0..steps {
        scene.control(&state, tau.as_mut_slice());
        sim.step(&mut state, tau.as_slice()).unwrap();
    }
    // The inverse problem with tight solves (its Jacobians are those of the
    // solver's answers).
    params.solver_settings.tolerance = 1e-12;
    params.solver_settings.max_iterations = 5000;
    let mut sim = Simulator::new(scene.model.clone(), params).unwrap();
    let mut tau = DVector::zeros(scene.model.nv);
    let its = standing_torques(&mut sim, &state, &mut tau, 20, 1e-5, gradients).unwrap();
    let v: Vec<String> = its.iter().map(|i| format!("{:.1e}", i.velocity)).collect();
    println!(
        "{} ({gradients:?}): ‖v⁺‖∞ by iteration {} ({} constraints at the end, {} steps)",
        scene.name,
        v.join(" "),
        its.last().unwrap().nc,
        its.last().unwrap().steps
    );
    its.iter().map(|i| i.velocity).collect()
}

#[test]
fn gauss_newton_finds_the_standing_torques() {
    let mut scenes = vec![(moreau::scenes::scene("quadruped").unwrap(), 1000)];
    if let Some(files) = common::robot_files() {
        let mut loaded = moreau::load::load_model_file(
            files
                .example_robot_data
                .join("solo_description/robots/solo12.urdf"),
            &Default::default(),
        )
        .unwrap();
        // Knees bent (example-robot-data's standing pose), held by the PD
        // while it settles: straight legs would rest on their stops.
        let m = &loaded.model;
        for i in 1..m.nbodies {
            let name = &m.joint_name[i];
            let front = name.starts_with('F');
            let angle = if name.ends_with("HFE") {
                if front { 0.8 } else { -0.8 }
            } else if name.ends_with("KFE") {
                if front { -1.6 } else { 1.6 }
            } else {
                continue;
            };
            loaded.q0[m.joint_idx_q[i]] = angle;
        }
        scenes.push((moreau::scenes::from_loaded(&loaded, false).unwrap(), 1500));
    }
    // Solo-12 stands on the hulls of its mesh feet: 40 constraint rows
    // (several points a foot, limit rows at their boundary). Measured: ‖v⁺‖∞
    // 4.2e-2, 2.1e-2, 3.1e-4, 4.8e-6 with the step Jacobians; with
    // differences (1e-5) 1.2e-5 after 3 iterations (80 steps against 5). The
    // built-in quadruped (point feet) goes to 2.8e-8 in two iterations.
    for ((scene, steps), gradients) in scenes.iter().flat_map(|s| {
        [
            (s, Gradients::Analytic),
            (s, Gradients::FiniteDifferences { eps: 1e-5 }),
        ]
    }) {
        let v = solve(scene, *steps, gradients);
        let last = *v.last().unwrap();
        let target = match (scene.name.as_str(), gradients) {
            ("quadruped", _) => 1e-6,
            (_, Gradients::Analytic) => 1e-5,
            _ => 1e-4,
        };
        assert!(
            last <= target && v.len() <= 16,
            "{} ({gradients:?}): {} iterations, ‖v⁺‖∞ {last:e}",
            scene.name,
            v.len() - 1
        );
        assert!(v[0] > 1e-3, "{}: zero torques already stand", scene.name);
    }
}

#[test]
fn gauss_newton_recovers_the_thrown_cubes_velocity() {
    let truth = [1.5, 0.8, 0.0, 0.0, 0.0, 2.0];
    let (scene, throw) = thrown_cube(truth).unwrap();
    let mut params = SimParams {
        dt: scene.dt,
        ..Default::default()
    };
    params.solver_settings.tolerance = 1e-12;
    params.solver_settings.max_iterations = 5000;
    let mut sim = Simulator::new(scene.model.clone(), params).unwrap();
    let steps = 300;
    let end = rollout(&mut sim, &throw, steps, None).unwrap();
    // Still sliding and spinning at the end, 0.37 m away.
    assert!(
        end.v[0].hypot(end.v[1]) > 0.1 && end.v[5].abs() > 0.1,
        "{end:?}"
    );
    for (gradients, iterations) in [
        (Gradients::Analytic, 6),
        (Gradients::FiniteDifferences { eps: 1e-6 }, 12),
    ] {
        let (_, mut state) = thrown_cube([0.5, 0.0, 0.0, 0.0, 0.0, 0.0]).unwrap();
        let its = initial_velocity(
            &mut sim,
            &mut state,
            &THROWN_CUBE_UNKNOWNS,
            &end.q,
            steps,
            iterations,
            1e-9,
            gradients,
        )
        .unwrap();
        let e: Vec<String> = its.iter().map(|i| format!("{:.1e}", i.error)).collect();
        let last = its.last().unwrap();
        println!(
            "{gradients:?}: error by iteration {}, {} rollouts, v₀ {:.6}",
            e.join(" "),
            last.rollouts,
            state.v.transpose()
        );
        assert!(last.error < 1e-9, "{gradients:?}: {}", e.join(" "));
        let found = DVector::from_row_slice(&truth);
        assert!(
            (&state.v - found).amax() < 1e-6,
            "{gradients:?}: {}",
            state.v
        );
    }
}
