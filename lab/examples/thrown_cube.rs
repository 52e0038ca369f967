//! The inverse problem of the differentiable-simulation seed paper's Fig. 3:
//! a cube is thrown along the floor and slides, spinning; from where it is
//! after `T` steps, Gauss–Newton recovers the velocity it was thrown with
//! (its horizontal components and its spin),
//! once with `∂q_T/∂v₀` chained through the step Jacobians and once with
//! central differences of whole rollouts. Prints the error per iteration
//! and plots both against the rollouts spent (log scale).
//!
//!     cargo run --release --example thrown_cube -- [--steps 300] [--out thrown_cube.svg]

#[path = "common/plot.rs"]
mod plot;

use moreau::sim::{SimParams, Simulator};
use moreau_lab::inverse_problems::{
    Gradients, RolloutIterate, THROWN_CUBE_UNKNOWNS, initial_velocity, rollout, thrown_cube,
};
use nalgebra::DVector;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let flag = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let out = flag("--out").unwrap_or_else(|| "thrown_cube.svg".into());
    let steps: usize = flag("--steps")
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(300);
    let truth = [1.5, 0.8, 0.0, 0.0, 0.0, 2.0];
    let (scene, throw) = thrown_cube(truth)?;
    let mut params = SimParams {
        dt: scene.dt,
        ..Default::default()
    };
    params.solver_settings.tolerance = 1e-12;
    params.solver_settings.max_iterations = 5000;
    let mut sim = Simulator::new(scene.model.clone(), params)?;
    let target = rollout(&mut sim, &throw, steps, None)?.q;
    println!(
        "cube thrown along the floor with v₀ = {truth:?}, {steps} steps of {} s: at {:.4}",
        scene.dt,
        target.transpose()
    );
    let mut runs: Vec<(&str, Vec<RolloutIterate>, DVector<f64>)> = Vec::new();
    for (name, gradients) in [
        ("step Jacobians", Gradients::Analytic),
        (
            "central differences",
            Gradients::FiniteDifferences { eps: 1e-6 },
        ),
    ] {
        let (_, mut state) = thrown_cube([0.5, 0.0, 0.0, 0.0, 0.0, 0.0])?;
        let iterates = initial_velocity(
            &mut sim,
            &mut state,
            &THROWN_CUBE_UNKNOWNS,
            &target,
            steps,
            30,
            1e-10,
            gradients,
        )?;
        println!("Gauss–Newton with {name} on (v_x, v_y, ω_z), from (0.5, 0, 0):");
        for (k, it) in iterates.iter().enumerate() {
            println!(
                "  iteration {k:2}: ‖q_T ⊖ q*‖ = {:.3e} after {} rollouts, {:.1} ms",
                it.error,
                it.rollouts,
                1e3 * it.seconds
            );
        }
        println!("  v₀ found: {:.6}", state.v.transpose());
        runs.push((name, iterates, state.v.clone()));
    }

    let series: Vec<(&str, Vec<(f64, f64)>)> = runs
        .iter()
        .map(|(name, iterates, _)| {
            let points = iterates
                .iter()
                .map(|i| (i.rollouts as f64, i.error))
                .collect();
            (*name, points)
        })
        .collect();
    plot::log_series(
        &out,
        "thrown cube: initial velocity by Gauss–Newton",
        (&format!("rollouts of {steps} steps"), "‖q_T ⊖ q*‖"),
        &series,
    )?;
    Ok(())
}
