//! Augmented Random Search (linear policy, V2-t) on moreau's vectorized
//! environments: many perturbed policies evaluated in parallel worlds, no
//! machine-learning dependency. Prints progress per iteration and writes the
//! learning curve as an SVG.
//!
//! ```text
//! cargo run --release --example ars -- --task cartpole --iterations 60 --out ars_cartpole.svg
//! cargo run --release --example ars -- --task quadruped --iterations 100 --out ars_quadruped.svg
//! cargo run --release --example ars -- --task box-push --iterations 60 --out ars_box_push.svg
//! ```

use clap::Parser;
use moreau::batch::Backend;
use moreau::envs::ars::{
    Ars, ArsConfig, IterationReport, plot_learning_curve, random_policy_returns,
};
use moreau::envs::{BoxPush, CartPoleSwingUp, QuadrupedWalk, Task};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
struct Args {
    /// cartpole, quadruped or box-push.
    #[arg(long, default_value = "cartpole")]
    task: String,
    #[arg(long, default_value_t = 60)]
    iterations: usize,
    /// Directions per iteration (2 episodes each).
    #[arg(long, default_value_t = 16)]
    directions: usize,
    /// Best directions kept for the update.
    #[arg(long, default_value_t = 8)]
    top: usize,
    #[arg(long, default_value_t = 0.02)]
    step_size: f64,
    #[arg(long, default_value_t = 0.03)]
    noise: f64,
    #[arg(long, default_value_t = 4)]
    eval_worlds: usize,
    /// V1 (no observation normalization) instead of V2.
    #[arg(long)]
    v1: bool,
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// gpu, cpu (all cores) or cpu1.
    #[arg(long, default_value = "cpu")]
    backend: Backend,
    /// Random linear policies evaluated as a baseline before training (0: none).
    #[arg(long, default_value_t = 64)]
    baseline: usize,
    /// The learning curve (SVG).
    #[arg(long, default_value = "ars.svg")]
    out: PathBuf,
}

fn run<T: Task + Clone>(task: T, args: &Args) -> Result<(), String> {
    let config = ArsConfig {
        directions: args.directions,
        top: args.top,
        step_size: args.step_size,
        noise: args.noise,
        eval_worlds: args.eval_worlds,
        normalize: !args.v1,
        seed: args.seed,
        backend: args.backend,
    };
    let name = task.name().to_string();
    let baseline = if args.baseline > 0 {
        let t = std::time::Instant::now();
        let nenv = 2 * args.directions + args.eval_worlds;
        let r = random_policy_returns(&task, args.baseline, nenv, 1.0, args.seed + 1, args.backend)
            .map_err(|e| e.to_string())?;
        let mean = r.iter().sum::<f64>() / r.len() as f64;
        let best = r.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        println!(
            "{name}: {} random linear policies (weights N(0, 1)): mean return {mean:.2}, best {best:.2} ({:.1} s)",
            r.len(),
            t.elapsed().as_secs_f64()
        );
        Some(mean)
    } else {
        None
    };
    let mut ars = Ars::new(task, config.clone()).map_err(|e| e.to_string())?;
    println!(
        "{name}: ARS V{} with {} directions (top {}), α = {}, ν = {}, {} worlds on backend {}, obs {} / actions {}, control dt {} s",
        if config.normalize { 2 } else { 1 },
        config.directions,
        config.top,
        config.step_size,
        config.noise,
        ars.env().num_envs(),
        config.backend,
        ars.env().obs_dim(),
        ars.env().action_dim(),
        ars.env().control_dt(),
    );
    let mut reports: Vec<IterationReport> = Vec::new();
    for _ in 0..args.iterations {
        let r = ars.iterate().map_err(|e| e.to_string())?;
        println!(
            "iter {:4}  return {:9.2}  perturbed mean {:9.2} max {:9.2}  episodes {:6}  env steps {:8}  {:7.1} s",
            r.iteration,
            r.eval_return,
            r.perturbed_mean,
            r.perturbed_max,
            r.episodes,
            r.env_steps,
            r.seconds
        );
        reports.push(r);
    }
    let final_return = ars.evaluate(args.seed + 12345).map_err(|e| e.to_string())?;
    println!(
        "{name}: final policy, mean return over {} fresh episodes: {final_return:.2}",
        ars.env().num_envs()
    );
    let title = format!(
        "ARS on {name} ({} directions, top {})",
        config.directions, config.top
    );
    plot_learning_curve(
        &reports,
        &title,
        baseline.map(|b| (b, "random linear policies (mean)")),
        &args.out,
    )?;
    println!("learning curve written to {}", args.out.display());
    Ok(())
}

fn main() -> ExitCode {
    let args = Args::parse();
    let result = match args.task.as_str() {
        "cartpole" => run(CartPoleSwingUp::new(), &args),
        "quadruped" => run(QuadrupedWalk::new(), &args),
        "box-push" => run(BoxPush::new(), &args),
        other => Err(format!(
            "unknown task `{other}`; tasks: cartpole, quadruped, box-push"
        )),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
