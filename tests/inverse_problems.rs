//! Inverse problems with the step Jacobians: Gauss–Newton finds the joint
//! torques that hold a standing quadruped still (zero velocity after the
//! step), as the differentiable-simulation seed paper's Fig. 4 (there:
//! error 1e-5 in about ten iterations), on the built-in quadruped and on
//! example-robot-data's Solo-12 (knees bent, settled under a PD first).

mod common;

use moreau::scenes::Scene;
use moreau::sim::{SimParams, Simulator};
use moreau::tools::inverse::standing_torques;
use nalgebra::DVector;

/// Settles `scene` under its PD for `steps`, then solves for the torques
/// that stop it from there, starting from zero torques.
fn solve(scene: &Scene, steps: usize) -> Vec<f64> {
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
    let its = standing_torques(&mut sim, &state, &mut tau, 20, 1e-5).unwrap();
    let v: Vec<String> = its.iter().map(|i| format!("{:.1e}", i.velocity)).collect();
    println!(
        "{}: ‖v⁺‖∞ by iteration {} ({} constraints at the end)",
        scene.name,
        v.join(" "),
        its.last().unwrap().nc
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
    // 4.2e-2, 2.1e-2, 1.5e-5, then the Jacobian's modes (contacts at the
    // edge of sticking as the velocities vanish) stop predicting the step
    // and the line search stalls; the built-in quadruped (point feet) goes
    // to 2.8e-8 in two iterations.
    for (scene, steps) in &scenes {
        let v = solve(scene, *steps);
        let last = *v.last().unwrap();
        let target = if scene.name == "quadruped" {
            1e-6
        } else {
            1e-4
        };
        assert!(
            last <= target && v.len() <= 16,
            "{}: {} iterations, ‖v⁺‖∞ {last:e}",
            scene.name,
            v.len() - 1
        );
        assert!(v[0] > 1e-3, "{}: zero torques already stand", scene.name);
    }
}
