//! The inverse problem of the differentiable-simulation seed paper's Fig. 4:
//! Gauss–Newton with the step Jacobians `∂v⁺/∂τ` finds the joint torques
//! that hold a standing quadruped still (zero velocity after one step),
//! from zero torques, after the robot settled under a PD. Prints `‖v⁺‖∞`
//! per iteration and plots it (log scale).
//!
//!     cargo run --release --example standing_torques -- [--urdf solo12.urdf] [--out standing.svg]
//!
//! Without `--urdf`, the built-in quadruped; with it, that robot (a
//! floating base, its `HFE` joints at ±0.8 rad and `KFE` at ∓1.6 rad, as
//! example-robot-data's Solo-12 stands).

use moreau::scenes::{self, Scene};
use moreau::sim::{SimParams, Simulator};
use moreau::tools::inverse::standing_torques;
use nalgebra::DVector;
use plotters::prelude::*;

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
    let mut sim = Simulator::new(scene.model.clone(), params)?;
    let mut tau = DVector::zeros(scene.model.nv);
    let iterates = standing_torques(&mut sim, &state, &mut tau, 20, 1e-8)?;
    println!("{}: Gauss–Newton on ½‖v⁺(τ)‖², from τ = 0", scene.name);
    for (k, it) in iterates.iter().enumerate() {
        println!(
            "  iteration {k:2}: ‖v⁺‖∞ = {:.3e}  ({} constraint rows)",
            it.velocity, it.nc
        );
    }
    println!("torques: {:.4}", tau.transpose());

    let root = SVGBackend::new(&out, (640, 420)).into_drawing_area();
    root.fill(&WHITE)?;
    let n = iterates.len().max(2) as f64;
    let lo = iterates
        .iter()
        .map(|i| i.velocity)
        .fold(1.0, f64::min)
        .max(1e-16)
        * 0.5;
    let hi = iterates.iter().map(|i| i.velocity).fold(0.0, f64::max) * 2.0;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("{}: standing torques by Gauss–Newton", scene.name),
            ("sans-serif", 18),
        )
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..n - 1.0, (lo..hi).log_scale())?;
    chart
        .configure_mesh()
        .x_desc("iteration")
        .y_desc("‖v⁺‖∞ after the step")
        .draw()?;
    chart.draw_series(LineSeries::new(
        iterates
            .iter()
            .enumerate()
            .map(|(k, i)| (k as f64, i.velocity)),
        &BLUE,
    ))?;
    chart.draw_series(
        iterates
            .iter()
            .enumerate()
            .map(|(k, i)| Circle::new((k as f64, i.velocity), 3, BLUE.filled())),
    )?;
    root.present()?;
    println!("plot written to {out}");
    Ok(())
}
