//! The inverse problem of the differentiable-simulation seed paper's Fig. 4:
//! Gauss–Newton with the step Jacobians `∂v⁺/∂τ` finds the joint torques
//! that hold a standing quadruped still (zero velocity after one step),
//! from zero torques, after the robot settled under a PD; then again with
//! `∂v⁺/∂τ` by central differences. Prints `‖v⁺‖∞` per iteration and plots
//! both against the steps spent (log scale). (Differences of 1e-5 m/s by
//! default: at zero torques the feet slide, and a solve to 1e-12 leaves
//! ~1e-10 of noise in a sliding contact's velocities; at 1e-6 the first
//! direction is no longer a descent direction.)
//!
//!     cargo run --release --example standing_torques -- [--urdf solo12.urdf] [--eps 1e-6] [--out standing.svg]
//!
//! Without `--urdf`, the built-in quadruped; with it, that robot (a
//! floating base, its `HFE` joints at ±0.8 rad and `KFE` at ∓1.6 rad, as
//! example-robot-data's Solo-12 stands).

#[path = "common/plot.rs"]
mod plot;

use moreau::scenes::{self, Scene};
use moreau::sim::{SimParams, Simulator};
use moreau_lab::inverse_problems::{GaussNewtonIterate, Gradients, standing_torques};
use nalgebra::DVector;

fn scene(urdf: Option<&str>) -> Result<Scene, Box<dyn std::error::Error>> {
    let Some(path) = urdf else {
        return Ok(scenes::scene("quadruped")?);
    };
    let mut loaded = moreau::load::load_model_file(path, &Default::default())?;
    let m = &loaded.model;
    for i in 1..m.nbodies {
        let (name, front) = (&m.joint_name[i], m.joint_name[i].starts_with('F'));
        let angle = match () {
            _ if name.ends_with("HFE") => 0.8,
            _ if name.ends_with("KFE") => -1.6,
            _ => continue,
        };
        loaded.q0[m.joint_idx_q[i]] = if front { angle } else { -angle };
    }
    Ok(scenes::from_loaded(&loaded, false)?)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let flag = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let out = flag("--out").unwrap_or_else(|| "standing.svg".into());
    let scene = scene(flag("--urdf").as_deref())?;
    let mut params = SimParams {
        dt: scene.dt,
        ..Default::default()
    };
    let mut sim = Simulator::new(scene.model.clone(), params)?;
    let mut state = scene.state.clone();
    let mut tau = DVector::zeros(scene.model.nv);
    for _ in 0..1500 {
        scene.control(&state, tau.as_mut_slice());
        sim.step(&mut state, tau.as_slice())?;
    }
    params.solver_settings.tolerance = 1e-12;
    params.solver_settings.max_iterations = 5000;
    let mut runs: Vec<(&str, Vec<GaussNewtonIterate>)> = Vec::new();
    for (name, gradients) in [
        ("step Jacobians", Gradients::Analytic),
        (
            "central differences",
            Gradients::FiniteDifferences {
                eps: flag("--eps")
                    .map(|e| e.parse())
                    .transpose()?
                    .unwrap_or(1e-5),
            },
        ),
    ] {
        let mut sim = Simulator::new(scene.model.clone(), params)?;
        let mut tau = DVector::zeros(scene.model.nv);
        let iterates = standing_torques(&mut sim, &state, &mut tau, 20, 1e-8, gradients)?;
        println!(
            "{}: Gauss–Newton on ½‖v⁺(τ)‖² with {name}, from τ = 0",
            scene.name
        );
        for (k, it) in iterates.iter().enumerate() {
            println!(
                "  iteration {k:2}: ‖v⁺‖∞ = {:.3e}  ({} constraint rows, {} steps, {:.1} ms)",
                it.velocity,
                it.nc,
                it.steps,
                1e3 * it.seconds
            );
        }
        println!("torques: {:.4}", tau.transpose());
        runs.push((name, iterates));
    }

    let series: Vec<(&str, Vec<(f64, f64)>)> = runs
        .iter()
        .map(|(name, iterates)| {
            let points = iterates
                .iter()
                .map(|i| (i.steps as f64, i.velocity))
                .collect();
            (*name, points)
        })
        .collect();
    plot::log_series(
        &out,
        &format!("{}: standing torques by Gauss–Newton", scene.name),
        ("steps simulated", "‖v⁺‖∞ after the step"),
        &series,
    )?;
    Ok(())
}
