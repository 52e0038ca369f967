//! The `moreau` command line: `run` simulates a scene and writes its
//! trajectory; `bench` measures stepping throughput; `scenes` lists scenes.

use clap::{Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use moreau::contact::SolverKind;
use moreau::scenes::{self, SCENE_NAMES, Scene};
use moreau::sim::{SimParams, Simulator, StageTimes, State, StepReport};
use nalgebra::DVector;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// `println!` that does not panic when stdout is closed (e.g. piped into `head`).
macro_rules! say {
    ($($t:tt)*) => {{
        let _ = writeln!(std::io::stdout(), $($t)*);
    }};
}

#[derive(Parser)]
#[command(
    name = "moreau",
    version,
    about = "Batched rigid-body contact simulation for robotics"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Simulate a built-in scene and write its trajectory.
    Run {
        /// Scene name (see `moreau scenes`).
        scene: String,
        /// Number of steps.
        #[arg(long, default_value_t = 2000)]
        steps: usize,
        /// Time step in seconds (default: the scene's).
        #[arg(long)]
        dt: Option<f64>,
        /// Contact solver: ncp-admm or ncp-pgs.
        #[arg(long, default_value = "ncp-admm")]
        solver: String,
        /// Solver tolerance on eps_abs.
        #[arg(long, default_value_t = 1e-8)]
        tolerance: f64,
        /// Solver iteration cap.
        #[arg(long, default_value_t = 1000)]
        max_iterations: usize,
        /// Trajectory file, CSV or JSON by extension (time, q, v, energies, contacts, eps_abs).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Measure steps per second and the time per stage, one world on one CPU core.
    Bench {
        /// Scenes to run (default: quadruped and pyramid).
        #[arg(long, value_delimiter = ',')]
        scene: Vec<String>,
        /// Steps per scene.
        #[arg(long, default_value_t = 2000)]
        steps: usize,
        /// Write the figures as JSON.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// List the built-in scenes.
    Scenes,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run {
            scene,
            steps,
            dt,
            solver,
            tolerance,
            max_iterations,
            out,
        } => run(&scene, steps, dt, &solver, tolerance, max_iterations, out),
        Command::Bench { scene, steps, out } => bench(scene, steps, out),
        Command::Scenes => {
            for name in SCENE_NAMES {
                let s = scenes::scene(name).expect("built-in scenes are valid");
                say!(
                    "{name:14} nq={:3} nv={:3} bodies={:3} geometries={:3}",
                    s.model.nq,
                    s.model.nv,
                    s.model.nbodies - 1,
                    s.model.geometries.len()
                );
            }
            Ok(())
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

type AnyError = Box<dyn std::error::Error>;

/// Contact and solver figures summed over the steps of a run.
#[derive(Default)]
struct Tally {
    nc_sum: usize,
    nc_max: usize,
    eps_max: f64,
    it_sum: usize,
    solves: usize,
    unconverged: usize,
}

impl Tally {
    fn add(&mut self, r: &StepReport) {
        self.nc_sum += r.nc;
        self.nc_max = self.nc_max.max(r.nc);
        if let Some(s) = r.solver {
            self.solves += 1;
            self.it_sum += s.iterations;
            self.unconverged += usize::from(!s.converged);
            self.eps_max = self.eps_max.max(s.residuals.eps_abs);
        }
    }
}

struct Row {
    t: f64,
    q: Vec<f64>,
    v: Vec<f64>,
    kinetic: f64,
    potential: f64,
    nc: usize,
    eps_abs: f64,
    iterations: usize,
}

fn make_sim(
    scene: &Scene,
    dt: Option<f64>,
    solver: &str,
    tolerance: f64,
    max_iterations: usize,
) -> Result<Simulator, AnyError> {
    let mut params = SimParams {
        dt: dt.unwrap_or(scene.dt),
        solver: solver.parse::<SolverKind>()?,
        ..Default::default()
    };
    params.solver_settings.tolerance = tolerance;
    params.solver_settings.max_iterations = max_iterations;
    Ok(Simulator::new(scene.model.clone(), params)?)
}

fn progress(steps: usize) -> ProgressBar {
    if steps < 2000 {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::new(steps as u64);
    pb.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} steps, {per_sec}, eta {eta}").unwrap(),
    );
    pb
}

fn stage_summary(times: &StageTimes) -> String {
    let total = times.total().as_secs_f64().max(1e-12);
    StageTimes::NAMES
        .iter()
        .zip(times.as_array())
        .map(|(n, d)| format!("{n} {:.1}%", 100.0 * d.as_secs_f64() / total))
        .collect::<Vec<_>>()
        .join(", ")
}

fn run(
    name: &str,
    steps: usize,
    dt: Option<f64>,
    solver: &str,
    tolerance: f64,
    max_iterations: usize,
    out: Option<PathBuf>,
) -> Result<(), AnyError> {
    let scene = scenes::scene(name)?;
    let mut sim = make_sim(&scene, dt, solver, tolerance, max_iterations)?;
    let mut state = scene.state.clone();
    let mut tau = DVector::zeros(scene.model.nv);
    let mut rows = Vec::with_capacity(if out.is_some() { steps + 1 } else { 0 });
    let record =
        |sim: &mut Simulator, state: &State, nc, eps_abs, iterations| -> Result<Row, AnyError> {
            let (kinetic, potential) = sim.energy(state)?;
            Ok(Row {
                t: state.t,
                q: state.q.as_slice().to_vec(),
                v: state.v.as_slice().to_vec(),
                kinetic,
                potential,
                nc,
                eps_abs,
                iterations,
            })
        };
    let first = record(&mut sim, &state, 0, 0.0, 0)?;
    let e0 = first.kinetic + first.potential;
    if out.is_some() {
        rows.push(first);
    }
    let pb = progress(steps);
    let mut tally = Tally::default();
    let start = Instant::now();
    for _ in 0..steps {
        scene.control(&state, tau.as_mut_slice());
        let r = sim.step(&mut state, tau.as_slice())?;
        tally.add(&r);
        if out.is_some() {
            let (eps, its) = r
                .solver
                .map(|s| (s.residuals.eps_abs, s.iterations))
                .unwrap_or((0.0, 0));
            rows.push(record(&mut sim, &state, r.nc, eps, its)?);
        }
        pb.inc(1);
    }
    pb.finish_and_clear();
    let wall = start.elapsed();
    let Tally {
        nc_sum,
        nc_max,
        eps_max,
        it_sum,
        solves,
        unconverged,
    } = tally;
    let (ke, pe) = sim.energy(&state)?;
    say!(
        "scene {name}: nq={} nv={} solver={} dt={} s",
        scene.model.nq,
        scene.model.nv,
        solver,
        sim.params.dt
    );
    say!(
        "{steps} steps, {:.3} s simulated in {:.3} s wall ({:.0} steps/s, real-time factor {:.1})",
        state.t,
        wall.as_secs_f64(),
        steps as f64 / wall.as_secs_f64(),
        state.t / wall.as_secs_f64()
    );
    say!(
        "contacts: mean {:.2}, max {nc_max}; solver: {solves} solves, mean {:.1} iterations, {unconverged} not converged, max eps_abs {eps_max:.2e}",
        nc_sum as f64 / steps.max(1) as f64,
        it_sum as f64 / solves.max(1) as f64
    );
    say!(
        "energy: initial {e0:.6} J, final {:.6} J (kinetic {ke:.6}, potential {pe:.6})",
        ke + pe
    );
    say!("time per stage: {}", stage_summary(&sim.times));
    if let Some(path) = out {
        write_trajectory(&path, name, &scene, sim.params.dt, solver, &rows)?;
        say!("trajectory written to {}", path.display());
    }
    Ok(())
}

fn write_trajectory(
    path: &PathBuf,
    name: &str,
    scene: &Scene,
    dt: f64,
    solver: &str,
    rows: &[Row],
) -> Result<(), AnyError> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    let file = std::fs::File::create(path)
        .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
    let mut w = std::io::BufWriter::new(file);
    match ext.as_str() {
        "csv" => {
            let mut header = vec!["t".to_string()];
            header.extend((0..scene.model.nq).map(|i| format!("q{i}")));
            header.extend((0..scene.model.nv).map(|i| format!("v{i}")));
            header
                .extend(["kinetic", "potential", "nc", "eps_abs", "iterations"].map(String::from));
            writeln!(w, "{}", header.join(","))?;
            for r in rows {
                let mut line = vec![r.t.to_string()];
                line.extend(r.q.iter().chain(&r.v).map(|x| x.to_string()));
                line.extend([
                    r.kinetic.to_string(),
                    r.potential.to_string(),
                    r.nc.to_string(),
                    r.eps_abs.to_string(),
                    r.iterations.to_string(),
                ]);
                writeln!(w, "{}", line.join(","))?;
            }
        }
        "json" => {
            let rows_json: Vec<_> = rows
                .iter()
                .map(|r| {
                    serde_json::json!({
                        "t": r.t, "q": r.q, "v": r.v, "kinetic": r.kinetic, "potential": r.potential,
                        "nc": r.nc, "eps_abs": r.eps_abs, "iterations": r.iterations,
                    })
                })
                .collect();
            let doc = serde_json::json!({
                "scene": name, "nq": scene.model.nq, "nv": scene.model.nv, "dt": dt, "solver": solver,
                "precision": "f64", "trajectory": rows_json,
            });
            serde_json::to_writer(&mut w, &doc)?;
        }
        _ => {
            return Err(format!(
                "--out {}: unknown extension, use .csv or .json",
                path.display()
            )
            .into());
        }
    }
    w.flush()?;
    Ok(())
}

fn bench(scenes_arg: Vec<String>, steps: usize, out: Option<PathBuf>) -> Result<(), AnyError> {
    eprintln!(
        "notice: no GPU backend in this build yet; running the f64 CPU reference, one world on one core."
    );
    let names = if scenes_arg.is_empty() {
        vec!["quadruped".to_string(), "pyramid".to_string()]
    } else {
        scenes_arg
    };
    let mut reports = Vec::new();
    for name in &names {
        let scene = scenes::scene(name)?;
        let mut sim = make_sim(&scene, None, "ncp-admm", 1e-8, 1000)?;
        let mut state = scene.state.clone();
        let mut tau = DVector::zeros(scene.model.nv);
        let pb = progress(steps);
        let mut tally = Tally::default();
        let start = Instant::now();
        for _ in 0..steps {
            scene.control(&state, tau.as_mut_slice());
            tally.add(&sim.step(&mut state, tau.as_slice())?);
            pb.inc(1);
        }
        pb.finish_and_clear();
        let Tally {
            nc_sum,
            it_sum,
            eps_max,
            ..
        } = tally;
        let wall: Duration = start.elapsed();
        let sps = steps as f64 / wall.as_secs_f64();
        say!(
            "{name:12} backend=cpu1 precision=f64 worlds=1 steps={steps}: {sps:.0} steps/s ({:.1} µs/step), contacts/world {:.2}, mean iterations {:.1}, max eps_abs {eps_max:.1e} (tol 1e-8, warm start)",
            1e6 / sps,
            nc_sum as f64 / steps as f64,
            it_sum as f64 / steps as f64
        );
        say!("{:12} stages: {}", "", stage_summary(&sim.times));
        let stages: serde_json::Map<String, serde_json::Value> = StageTimes::NAMES
            .iter()
            .zip(sim.times.as_array())
            .map(|(n, d)| {
                (
                    n.to_string(),
                    serde_json::json!(d.as_secs_f64() / steps as f64),
                )
            })
            .collect();
        reports.push(serde_json::json!({
            "scene": name, "backend": "cpu1", "precision": "f64", "worlds": 1, "steps": steps,
            "steps_per_second": sps, "contacts_per_world": nc_sum as f64 / steps as f64,
            "mean_iterations": it_sum as f64 / steps as f64, "max_eps_abs": eps_max, "tolerance": 1e-8,
            "warm_start": true, "random_actions": false, "seconds_per_step_by_stage": stages,
        }));
    }
    if let Some(path) = out {
        std::fs::write(&path, serde_json::to_string_pretty(&reports)?)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        say!("report written to {}", path.display());
    }
    Ok(())
}
