//! The `moreau` command line: `run` simulates a scene or a robot file and
//! writes its trajectory (and, optionally, the contact problems it met);
//! `inspect` prints what a robot file loads as; `solve` solves
//! contact problems read from a file; `bench` measures stepping throughput;
//! `compare` runs every solver through the seed study's experiments and
//! writes tables, plots and JSON; `scenes` lists scenes.

use clap::{Parser, Subcommand, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use moreau::batch::Backend;
use moreau::contact::io::{ProblemWriter, read_problems};
use moreau::contact::{ContactSolution, Evaluation, SolverKind, SolverSettings, evaluate};
use moreau::counters::{Stage, StageTimes};
use moreau::load::{LoadOptions, ModelFormat, load_model_file};
use moreau::scenes::{self, SCENE_NAMES, Scene};
use moreau::sim::{SimParams, Simulator, StepReport, Trajectory};
use moreau::tools::bench::batch::SceneBenchConfig;
use moreau::tools::study::{self, report};
use nalgebra::DVector;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Device {
    /// The f64 CPU reference solvers.
    Cpu,
    /// The batched wgpu solvers (f32; every solver but staggered).
    Gpu,
}

/// Help for `--solver`, listing the solvers of this build.
fn solver_help() -> String {
    let names: Vec<_> = SolverKind::ALL.iter().map(|k| k.name()).collect();
    format!("Contact solver: {}", names.join(", "))
}

fn parse_solver(name: &str) -> Result<SolverKind, moreau::ProblemError> {
    name.parse()
}

fn parse_decomposition(s: &str) -> Result<moreau::gpu::Decomposition, String> {
    s.parse()
}

fn parse_backend(name: &str) -> Result<Backend, String> {
    name.parse()
        .map_err(|e: moreau::batch::BatchError| e.to_string())
}

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
enum BenchWhat {
    /// Batched GPU solves (f32) against the same algorithm on one CPU core
    /// (f64), on random well-posed problems: problems per second, the ratio,
    /// upload / solve / download times, GPU bytes per problem; writes
    /// bench_solve.json and bench_solve.svg (throughput versus batch size)
    /// to --out. On a software adapter (lavapipe) the figures are not GPU
    /// figures: use them to check that the path works.
    Solve {
        /// GPU solver (any but staggered).
        #[arg(long, value_parser = parse_solver, default_value = "ncp-pgs")]
        solver: SolverKind,
        /// Problems per batch.
        #[arg(long, value_delimiter = ',', default_values_t = [1, 16, 256, 4096, 65536])]
        batch: Vec<usize>,
        /// Contacts per problem.
        #[arg(long, value_delimiter = ',', default_values_t = [4, 12, 48])]
        contacts: Vec<usize>,
        /// Iteration cap (a fixed iteration count unless --tol is given).
        #[arg(long, visible_alias = "max-iter", default_value_t = 50)]
        iterations: usize,
        /// Solve to this eps_abs instead of a fixed iteration count.
        #[arg(long)]
        tol: Option<f64>,
        /// Timed repeats per point (the fastest is kept).
        #[arg(long, default_value_t = 3)]
        repeats: usize,
        /// GPU decompositions to compare: invocation (one invocation per
        /// problem, every solver) and workgroup (one workgroup per problem,
        /// the PGS solvers).
        #[arg(long, value_delimiter = ',', value_parser = parse_decomposition, default_value = "invocation,workgroup")]
        decomposition: Vec<moreau::gpu::Decomposition>,
        /// Output folder.
        #[arg(long, default_value = "bench-solve-out")]
        out: PathBuf,
    },
}

#[derive(Subcommand)]
enum Command {
    /// Simulate a built-in scene or a robot file and write its trajectory.
    Run {
        /// Scene name (see `moreau scenes`), or a robot file (.urdf, .xml/.mjcf):
        /// loaded on a ground, its joints held at the loaded posture by a PD
        /// (see --passive), at the file's time step or 1 ms.
        scene: String,
        #[command(flatten)]
        file: ModelFileArgs,
        /// Robot files: no PD, the joints are free.
        #[arg(long)]
        passive: bool,
        /// Number of steps.
        #[arg(long, default_value_t = 2000)]
        steps: usize,
        /// Time step in seconds (default: the scene's).
        #[arg(long)]
        dt: Option<f64>,
        /// Contact solver.
        #[arg(long, default_value = "ncp-admm", help = solver_help())]
        solver: String,
        /// Solver tolerance on eps_abs.
        #[arg(long, visible_alias = "tol", default_value_t = 1e-8)]
        tolerance: f64,
        /// Solver iteration cap.
        #[arg(long, visible_alias = "max-iter", default_value_t = 1000)]
        max_iterations: usize,
        /// Trajectory file, CSV or JSON by extension (time, q, v, energies, contacts, eps_abs).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Write the contact problem of every step with contacts (G, g, mu, R,
        /// and the warm start as lambda0) to this file, as a JSON list that
        /// `moreau solve` reads.
        #[arg(long, value_name = "FILE.json")]
        dump_problems: Option<PathBuf>,
        /// With --dump-problems: keep only steps 0, N, 2N, ... (those with contacts).
        #[arg(long, value_name = "N", default_value_t = 1, requires = "dump_problems",
              value_parser = clap::value_parser!(u64).range(1..))]
        dump_every: u64,
    },
    /// Solve the contact problems of a JSON file (one problem or a list; see
    /// `moreau run --dump-problems`). Prints one JSON object per problem and line:
    /// problem, nc, solver, model, lambda, c, iterations, converged, eps_abs,
    /// eps_p, eps_d, eps_c, eps_ncp, time_us. eps_abs (= max of eps_p, eps_d,
    /// eps_c) is the residual of the solver's own model (ncp, ccp, lcp-<facets>;
    /// for raisim, which solves no cone problem, its own stopping residual);
    /// eps_ncp is the NCP's, the physical truth. Both are recomputed from the
    /// returned lambda, with c = (G + R) lambda + g (raisim's own residual
    /// comes from the solver: its last sweep's largest correction).
    Solve {
        /// Problem file (JSON).
        file: PathBuf,
        /// Contact solver.
        #[arg(long, value_parser = parse_solver, help = solver_help())]
        solver: SolverKind,
        /// Solver tolerance on eps_abs.
        #[arg(long, visible_alias = "tolerance", default_value_t = 1e-8)]
        tol: f64,
        /// Solver iteration cap.
        #[arg(long, visible_alias = "max-iterations", default_value_t = 1000)]
        max_iter: usize,
        /// Where to solve: the f64 CPU solvers, or the f32 GPU kernels (all
        /// problems in one batch; the adapter is picked as `moreau info`
        /// says; in f32, tolerances much below 1e-6 of the problem's scale
        /// are not reachable and the solve stops at --max-iter; time_us is
        /// the batch's time divided by the number of problems).
        #[arg(long, value_enum, default_value_t = Device::Cpu)]
        device: Device,
    },
    /// List the GPU adapters found, the one chosen (MOREAU_ADAPTER=substring
    /// picks one by name; otherwise discrete > integrated > virtual > CPU)
    /// and its limits.
    Info,
    /// The throughput benchmark: scenes stepped as batches of worlds (1 to
    /// 16 384 and more) on every backend (gpu, cpu on all cores, cpu1 on one
    /// core), with a progress bar. Reports world steps per second, the time
    /// per stage (actions, dynamics, collision, Delassus, pack, upload,
    /// solve, download, integrate), contacts per world, solver iterations
    /// and eps_abs, host and device bytes per world, the device and the
    /// precision; prints the GPU-over-single-core ratios; writes a JSON
    /// report (--out) and an SVG plot of throughput versus batch size next
    /// to it. Actions: the scene's PD controller (not random). Without a GPU
    /// adapter the GPU backend is dropped with a note (an error if it is the
    /// only backend asked for). The defaults take a few minutes on two cores
    /// with a software GPU; on a real GPU pass e.g. --envs 1,64,4096,16384.
    Bench {
        /// `solve`: batched GPU solver throughput against one CPU core.
        #[command(subcommand)]
        what: Option<BenchWhat>,
        /// Scenes to run: built-in names (see `moreau scenes`) or robot files
        /// (.urdf, .xml/.mjcf; held at their loaded posture by a PD).
        #[arg(long, value_delimiter = ',', default_values_t = ["quadruped".to_string(), "pyramid".to_string()])]
        scene: Vec<String>,
        /// Batch sizes (worlds).
        #[arg(long, value_delimiter = ',', default_values_t = [1, 16, 256, 1024])]
        envs: Vec<usize>,
        /// Backends: gpu, cpu (all cores), cpu1 (one core).
        #[arg(long, value_delimiter = ',', value_parser = parse_backend, default_values_t = [Backend::Gpu, Backend::CpuParallel, Backend::CpuSingle])]
        backend: Vec<Backend>,
        /// Timed steps per run.
        #[arg(long, default_value_t = 50)]
        steps: usize,
        /// Untimed steps per run before the timed ones.
        #[arg(long, default_value_t = 5)]
        warmup: usize,
        /// Steps of one world settling the scene before every world starts
        /// from its state (a dropped robot lands on its feet).
        #[arg(long, default_value_t = 500)]
        settle: usize,
        /// Skip a (backend, size) whose time, estimated from the smaller
        /// sizes, exceeds this many seconds (and the larger sizes after it).
        #[arg(long, default_value_t = 60.0)]
        budget: f64,
        /// Contact solver.
        #[arg(long, value_parser = parse_solver, default_value = "ncp-admm", help = solver_help())]
        solver: SolverKind,
        /// Solver tolerance on eps_abs (at least 1e-6 for the GPU's f32 kernels).
        #[arg(long, visible_alias = "tolerance", default_value_t = 1e-6)]
        tol: f64,
        /// Solver iteration cap.
        #[arg(long, visible_alias = "max-iterations", default_value_t = 1000)]
        max_iter: usize,
        /// GPU: split each step into this many chunks of worlds, pipelined
        /// (one chunk on the GPU while the host prepares the next).
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
        pipeline: u64,
        /// GPU: invocation (one invocation per world's problem) or workgroup
        /// (one workgroup per problem; PGS solvers only).
        #[arg(long, value_parser = parse_decomposition, default_value = "invocation")]
        decomposition: moreau::gpu::Decomposition,
        /// JSON report; the plot is written next to it (same name, .svg).
        #[arg(long, default_value = "bench-out/bench.json")]
        out: PathBuf,
    },
    /// Run every solver through the seed study's experiments: Table II from
    /// measurements, mass ratios, self-consistency against dt and tolerance,
    /// time-to-accuracy, compliance. Prints the tables; writes energy.svg,
    /// internal_forces.svg, time_to_accuracy.svg, mass_ratio.svg and
    /// compare.json to --out.
    Compare {
        /// Output folder (created if missing).
        #[arg(long, default_value = "compare-out")]
        out: PathBuf,
        /// A quicker, coarser run (reference dt 0.5 ms, dt 1 and 10 ms, fewer
        /// problems for time-to-accuracy).
        #[arg(long)]
        quick: bool,
    },
    /// List the built-in scenes.
    Scenes,
    /// Load a robot file (URDF or MJCF) and print its tree (bodies, joints
    /// with types and limits, geometries), nq, nv, bodies, total mass,
    /// actuators and the loader's warnings.
    Inspect {
        /// Robot file: .urdf, or .xml / .mjcf.
        file: PathBuf,
        #[command(flatten)]
        options: ModelFileArgs,
    },
}

/// How to load a robot file.
#[derive(clap::Args, Clone, Debug, Default)]
struct ModelFileArgs {
    /// URDF: attach the root link by a free joint (the default unless the root link is `world`).
    #[arg(long, conflicts_with = "fixed_base")]
    floating_base: bool,
    /// URDF: weld the root link to the world.
    #[arg(long)]
    fixed_base: bool,
    /// A directory searched for `package://NAME/...` meshes (repeatable).
    #[arg(long, value_name = "DIR")]
    package_dir: Vec<PathBuf>,
}

impl ModelFileArgs {
    fn options(&self) -> LoadOptions {
        LoadOptions {
            floating_base: match (self.floating_base, self.fixed_base) {
                (true, _) => Some(true),
                (_, true) => Some(false),
                _ => None,
            },
            package_dirs: self.package_dir.clone(),
        }
    }
}

/// Whether a `run` argument names a robot file rather than a built-in scene.
fn is_model_file(name: &str) -> bool {
    let ext = std::path::Path::new(name)
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    matches!(ext.as_deref(), Some("urdf" | "xml" | "mjcf")) || std::path::Path::new(name).is_file()
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run {
            scene,
            file,
            passive,
            steps,
            dt,
            solver,
            tolerance,
            max_iterations,
            out,
            dump_problems,
            dump_every,
        } => run(
            &scene,
            (&file, passive),
            steps,
            dt,
            &solver,
            tolerance,
            max_iterations,
            out,
            dump_problems.map(|path| (path, dump_every)),
        ),
        Command::Solve {
            file,
            solver,
            tol,
            max_iter,
            device,
        } => solve(&file, solver, tol, max_iter, device),
        Command::Bench {
            what:
                Some(BenchWhat::Solve {
                    solver,
                    batch,
                    contacts,
                    iterations,
                    tol,
                    repeats,
                    decomposition,
                    out,
                }),
            ..
        } => bench_solve(
            moreau::tools::bench::solve::BenchConfig {
                kind: solver,
                contacts,
                batches: batch,
                max_iterations: iterations,
                tolerance: tol,
                repeats,
                cpu_sample: 32,
                decompositions: decomposition,
            },
            &out,
        ),
        Command::Bench {
            what: None,
            scene,
            envs,
            backend,
            steps,
            warmup,
            settle,
            budget,
            solver,
            tol,
            max_iter,
            pipeline,
            decomposition,
            out,
        } => bench(
            SceneBenchConfig {
                scenes: scene,
                envs,
                backends: backend,
                steps,
                warmup,
                settle_steps: settle,
                budget: Duration::from_secs_f64(budget.max(0.0)),
                solver,
                tolerance: tol,
                max_iterations: max_iter,
                pipeline_chunks: pipeline as usize,
                decomposition,
            },
            &out,
        ),
        Command::Compare { out, quick } => compare(&out, quick),
        Command::Inspect { file, options } => inspect(&file, &options),
        Command::Info => info(),
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
    Stage::WORLD
        .iter()
        .map(|&s| {
            let d = times.get(s);
            format!("{} {:.1}%", s.name(), 100.0 * d.as_secs_f64() / total)
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[allow(clippy::too_many_arguments)]
fn run(
    name: &str,
    (file_args, passive): (&ModelFileArgs, bool),
    steps: usize,
    dt: Option<f64>,
    solver: &str,
    tolerance: f64,
    max_iterations: usize,
    out: Option<PathBuf>,
    dump: Option<(PathBuf, u64)>,
) -> Result<(), AnyError> {
    let scene = if is_model_file(name) {
        let loaded = load_model_file(name, &file_args.options())?;
        for w in &loaded.warnings {
            eprintln!("warning: {w}");
        }
        scenes::from_loaded(&loaded, passive)?
    } else {
        scenes::scene(name)?
    };
    let mut sim = make_sim(&scene, dt, solver, tolerance, max_iterations)?;
    let mut state = scene.state.clone();
    let mut tau = DVector::zeros(scene.model.nv);
    let (k0, p0) = sim.energy(&state)?;
    let e0 = k0 + p0;
    let mut trajectory = Trajectory::new(name, &sim);
    if out.is_some() {
        trajectory.rows.reserve(steps + 1);
        trajectory.record(&mut sim, &state, None)?;
    }
    let mut dump = match dump {
        Some((path, every)) => Some((ProblemWriter::create(&path)?, path, every)),
        None => None,
    };
    let pb = progress(steps);
    let mut tally = Tally::default();
    let start = Instant::now();
    for step in 0..steps {
        scene.control(&state, tau.as_mut_slice());
        let r = match sim.step(&mut state, tau.as_slice()) {
            Ok(r) => r,
            Err(e) => {
                // Close the dump so that what the run met so far stays readable.
                if let Some((w, _, _)) = dump {
                    w.finish()?;
                }
                return Err(format!("step {step} (t = {} s): {e}", state.t).into());
            }
        };
        tally.add(&r);
        if let Some((w, _, every)) = &mut dump
            && r.nc > 0
            && (step as u64).is_multiple_of(*every)
        {
            w.write(sim.problem())?;
        }
        if out.is_some() {
            trajectory.record(&mut sim, &state, Some(&r))?;
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
        trajectory.write(&path).map_err(|e| format!("--out {e}"))?;
        say!("trajectory written to {}", path.display());
    }
    if let Some((w, path, _)) = dump {
        let n = w.count();
        w.finish()?;
        say!("{n} contact problems written to {}", path.display());
    }
    Ok(())
}

/// One output line of `moreau solve` (a struct, so that the keys keep this order).
#[derive(serde::Serialize)]
struct SolveLine<'a> {
    problem: usize,
    nc: usize,
    solver: &'a str,
    model: &'a str,
    lambda: &'a [f64],
    c: &'a [f64],
    iterations: usize,
    converged: bool,
    eps_abs: f64,
    eps_p: f64,
    eps_d: f64,
    eps_c: f64,
    eps_ncp: f64,
    time_us: f64,
}

/// `moreau solve`: every problem is read and validated before the first solve.
fn solve(
    file: &std::path::Path,
    kind: SolverKind,
    tol: f64,
    max_iter: usize,
    device: Device,
) -> Result<(), AnyError> {
    let settings = SolverSettings {
        tolerance: tol,
        max_iterations: max_iter,
        ..Default::default()
    };
    if let Err(e) = settings.validate() {
        return Err(format!("--tol {tol}: {e}").into());
    }
    let problems = read_problems(file)?;
    if device == Device::Gpu {
        return solve_gpu(file, &problems, kind, &settings);
    }
    let own_model = kind.contact_model(&settings);
    let model = study::model_name(own_model);
    let mut solver = kind.build();
    let mut sol = ContactSolution::default();
    let mut stdout = std::io::stdout().lock();
    for (i, p) in problems.iter().enumerate() {
        let start = Instant::now();
        let solved = solver.solve(p, &settings, &mut sol);
        let time_us = start.elapsed().as_secs_f64() * 1e6;
        solved.map_err(|e| {
            format!(
                "{}: problem {i}: solver {}: {e}",
                file.display(),
                kind.name()
            )
        })?;
        // Residuals of the returned lambda with c recomputed from the problem,
        // so that a solver's own bookkeeping is not taken on trust.
        let eval = evaluate(p, own_model, sol.lambda.as_slice());
        let (c, ncp) = (&eval.c, eval.ncp);
        let res = eval.model.unwrap_or(sol.stats.residuals);
        let line = serde_json::to_string(&SolveLine {
            problem: i,
            nc: p.nc(),
            solver: kind.name(),
            model: &model,
            lambda: sol.lambda.as_slice(),
            c,
            iterations: sol.stats.iterations,
            converged: sol.stats.converged,
            eps_abs: res.eps_abs,
            eps_p: res.primal,
            eps_d: res.dual,
            eps_c: res.complementarity,
            eps_ncp: ncp.eps_abs,
            time_us,
        })?;
        if writeln!(stdout, "{line}").is_err() {
            break; // stdout closed (e.g. piped into `head`)
        }
    }
    Ok(())
}

/// `moreau solve --device gpu`: every problem in one batch.
fn solve_gpu(
    file: &std::path::Path,
    problems: &[moreau::contact::ContactProblem],
    kind: SolverKind,
    settings: &SolverSettings,
) -> Result<(), AnyError> {
    use moreau::gpu::{BatchCapacity, BatchOutput, GpuContext, GpuSolver, flag_names};
    moreau::gpu::check_kernel(kind)?;
    let ctx = GpuContext::new()?;
    let mut solver = GpuSolver::new(&ctx, kind, BatchCapacity::for_problems(problems))?;
    let mut out = BatchOutput::default();
    let start = Instant::now();
    solver.solve(problems, settings, &mut out)?;
    let time_us = start.elapsed().as_secs_f64() * 1e6 / problems.len().max(1) as f64;
    let own_model = kind.contact_model(settings);
    let model = study::model_name(own_model);
    let mut flagged = Vec::new();
    let mut stdout = std::io::stdout().lock();
    for (i, p) in problems.iter().enumerate() {
        let o = out.problem(i);
        if o.flags() != 0 {
            flagged.push(format!("problem {i}: {}", flag_names(o.flags()).join(", ")));
            continue;
        }
        let lambda: Vec<f64> = o.lambda.iter().map(|&x| x as f64).collect();
        let Evaluation { c, model: own, ncp } = evaluate(p, own_model, &lambda);
        // raisim: its own stopping residual, from the kernel.
        let res = own.unwrap_or(moreau::contact::Residuals {
            primal: o.result.primal as f64,
            dual: o.result.dual as f64,
            complementarity: o.result.complementarity as f64,
            eps_abs: o.result.eps_abs as f64,
        });
        let line = serde_json::to_string(&SolveLine {
            problem: i,
            nc: p.nc(),
            solver: kind.name(),
            model: &model,
            lambda: &lambda,
            c: &c,
            iterations: o.result.iterations as usize,
            converged: o.converged(),
            eps_abs: res.eps_abs,
            eps_p: res.primal,
            eps_d: res.dual,
            eps_c: res.complementarity,
            eps_ncp: ncp.eps_abs,
            time_us,
        })?;
        if writeln!(stdout, "{line}").is_err() {
            break;
        }
    }
    if !flagged.is_empty() {
        return Err(format!(
            "{}: solver {} on {}: {}",
            file.display(),
            kind.name(),
            ctx.adapter.name,
            flagged.join("; ")
        )
        .into());
    }
    Ok(())
}

/// `moreau bench solve`.
fn bench_solve(
    cfg: moreau::tools::bench::solve::BenchConfig,
    out: &std::path::Path,
) -> Result<(), AnyError> {
    use moreau::tools::bench::solve::{plot, run};
    let (kind, iterations, tol) = (cfg.kind, cfg.max_iterations, cfg.tolerance);
    moreau::gpu::check_kernel(kind)?;
    let ctx = moreau::gpu::GpuContext::new()?;
    say!("device: {}", ctx.adapter);
    if ctx.adapter.device_type == wgpu::DeviceType::Cpu {
        say!(
            "notice: a software adapter: these are not GPU figures (correctness of the path only)"
        );
    }
    say!(
        "solver {} (GPU f32; one CPU core: the reference in f64{}), cold starts, random well-posed problems, {}",
        kind.name(),
        if moreau::gpu::cpu_f32::has_f32_twin(kind) {
            " and the kernel's twin in f32"
        } else {
            ""
        },
        match tol {
            Some(t) => format!("to eps_abs {t:e} (cap {iterations})"),
            None => format!("{iterations} iterations"),
        }
    );
    say!(
        "{:>8} {:>7} {:>10} {:>13} {:>13} {:>8} {:>13} {:>8} {:>10} {:>10} {:>10} {:>8} {:>8} {:>10} {:>8}",
        "contacts",
        "batch",
        "decomp",
        "GPU prob/s",
        "CPU64 prob/s",
        "ratio64",
        "CPU32 prob/s",
        "ratio32",
        "upload ms",
        "solve ms",
        "dl ms",
        "it GPU",
        "it CPU",
        "B/problem",
        "ΔRSS KiB"
    );
    let rows = run(&ctx, &cfg, |r| match &r.skipped {
        Some(why) => say!(
            "{:>8} {:>7} {:>10} skipped: {why}",
            r.contacts,
            r.batch,
            r.decomposition.name()
        ),
        None => say!(
            "{:>8} {:>7} {:>10} {:>13.0} {:>13.0} {:>8.2} {:>13} {:>8} {:>10.2} {:>10.2} {:>10.2} {:>8.1} {:>8.1} {:>10} {:>8}",
            r.contacts,
            r.batch,
            r.decomposition.name(),
            r.gpu_problems_per_s,
            r.cpu_problems_per_s,
            r.ratio,
            r.cpu_f32_problems_per_s
                .map_or("-".into(), |x| format!("{x:.0}")),
            r.ratio_f32.map_or("-".into(), |x| format!("{x:.2}")),
            r.upload_ms,
            r.solve_ms,
            r.download_ms,
            r.mean_iterations_gpu,
            r.mean_iterations_cpu,
            r.gpu_bytes_per_problem,
            r.host_rss_growth_kib.map_or("-".into(), |k| k.to_string())
        ),
    })?;
    std::fs::create_dir_all(out)?;
    let json = out.join("bench_solve.json");
    std::fs::write(&json, serde_json::to_string_pretty(&rows)?)?;
    say!("written: {}", json.display());
    let svg = out.join("bench_solve.svg");
    match plot(&rows, &svg) {
        Ok(()) => say!("written: {}", svg.display()),
        Err(e) => eprintln!("no plot: {e}"),
    }
    Ok(())
}

/// `moreau info`: the adapters, the one chosen and its limits.
fn info() -> Result<(), AnyError> {
    use moreau::gpu::{BatchCapacity, GpuContext};
    let wanted = std::env::var("MOREAU_ADAPTER").ok();
    let ctx = match GpuContext::with_adapter(wanted.as_deref()) {
        Ok(ctx) => ctx,
        Err(e) => {
            let (_, adapters) = moreau::gpu::enumerate_adapters();
            say!("adapters found: {}", adapters.len());
            for a in &adapters {
                say!("  {:?}", a.get_info());
            }
            return Err(e.into());
        }
    };
    say!("adapters found: {}", ctx.adapters.len());
    for (i, a) in ctx.adapters.iter().enumerate() {
        say!("  [{i}] {a}");
    }
    say!(
        "chosen: {}{}",
        ctx.adapter,
        match &wanted {
            Some(w) => format!(" (MOREAU_ADAPTER={w:?})"),
            None => " (by type: discrete > integrated > virtual > cpu)".into(),
        }
    );
    let l = &ctx.limits;
    say!("limits:");
    say!(
        "  max_storage_buffer_binding_size     {} bytes",
        l.max_storage_buffer_binding_size
    );
    say!(
        "  max_buffer_size                     {} bytes",
        l.max_buffer_size
    );
    say!(
        "  max_storage_buffers_per_shader_stage {}",
        l.max_storage_buffers_per_shader_stage
    );
    say!(
        "  max_compute_workgroups_per_dimension {}",
        l.max_compute_workgroups_per_dimension
    );
    say!(
        "  max_compute_invocations_per_workgroup {}",
        l.max_compute_invocations_per_workgroup
    );
    say!("GPU solvers: {}", moreau::gpu::gpu_solvers());
    for nc in [4, 12, 48] {
        let cap = BatchCapacity::uniform(65_536, nc);
        say!(
            "device memory, 65536 problems of {nc} contacts: PGS {:.1} MiB ({} B/problem), ADMM {:.1} MiB ({} B/problem)",
            cap.device_bytes(moreau::contact::Kernel::Pgs) as f64 / 1048576.0,
            cap.device_bytes(moreau::contact::Kernel::Pgs) / 65_536,
            cap.device_bytes(moreau::contact::Kernel::Admm) as f64 / 1048576.0,
            cap.device_bytes(moreau::contact::Kernel::Admm) / 65_536,
        );
    }
    Ok(())
}

/// `moreau compare`: the experiments with a progress bar, then the tables,
/// the plots and the JSON.
fn compare(out: &std::path::Path, quick: bool) -> Result<(), AnyError> {
    let cfg = report::CompareConfig { quick };
    let pb = ProgressBar::new(cfg.work());
    pb.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} {wide_msg} [{elapsed_precise}]")
            .unwrap(),
    );
    let start = Instant::now();
    let result = report::compare(cfg, &|label: &str| {
        pb.set_message(label.to_string());
        pb.inc(1);
    });
    pb.finish_and_clear();
    let r = result.map_err(|e| e.to_string())?;
    say!("{}", r.render());
    let plots = report::write_plots(&r, out).map_err(|e| e.to_string())?;
    let json = report::write_json(&r, out).map_err(|e| e.to_string())?;
    for p in plots.iter().chain([&json]) {
        say!("wrote {}", p.display());
    }
    say!(
        "compare{}: {:.1} s wall (trajectories {:.1} s on {} threads, time-to-accuracy {:.1} s on one)",
        if quick { " --quick" } else { "" },
        start.elapsed().as_secs_f64(),
        r.wall_trajectories,
        rayon::current_num_threads(),
        r.wall_time_to_accuracy
    );
    Ok(())
}

/// `moreau bench`: runs [`moreau::tools::bench::batch::run`] with a progress bar,
/// prints its tables and writes its JSON report and plot.
fn bench(cfg: SceneBenchConfig, out: &std::path::Path) -> Result<(), AnyError> {
    use moreau::tools::bench::batch::{self as bench, BenchEvent};
    let started = Instant::now();
    let pb = ProgressBar::new(0);
    pb.set_style(
        ProgressStyle::with_template(
            "{bar:40} {percent:>3}% world steps, {wide_msg} [{elapsed_precise}, eta {eta}]",
        )
        .unwrap(),
    );
    let report = bench::run(&cfg, |e| match e {
        BenchEvent::Start { world_steps } => pb.set_length(world_steps),
        BenchEvent::Note(n) => pb.suspend(|| eprintln!("note: {n}")),
        BenchEvent::Begin {
            scene,
            backend,
            nworlds,
        } => pb.set_message(format!("{scene}, {backend}, {nworlds} worlds")),
        BenchEvent::Progress(k) => pb.inc(k),
        BenchEvent::Done(r) => pb.suspend(|| match &r.skipped {
            Some(why) => eprintln!(
                "{} {} {} worlds: skipped: {why}",
                r.scene, r.backend, r.nworlds
            ),
            None => eprintln!(
                "{} {} {} worlds: {:.0} steps/s",
                r.scene, r.backend, r.nworlds, r.steps_per_s
            ),
        }),
    });
    pb.finish_and_clear();
    let report = report?;
    say!("{}", bench::render(&report));
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    std::fs::write(out, serde_json::to_string_pretty(&report)?)
        .map_err(|e| format!("cannot write {}: {e}", out.display()))?;
    say!("written: {}", out.display());
    let svg = out.with_extension("svg");
    match bench::plot(&report, &svg) {
        Ok(()) => say!("written: {}", svg.display()),
        Err(e) => eprintln!("no plot: {e}"),
    }
    say!("bench: {:.1} s wall", started.elapsed().as_secs_f64());
    Ok(())
}

fn inspect(file: &std::path::Path, args: &ModelFileArgs) -> Result<(), AnyError> {
    let start = Instant::now();
    let loaded = load_model_file(file, &args.options())?;
    let elapsed = start.elapsed();
    let m = &loaded.model;
    let format = match loaded.format {
        ModelFormat::Urdf => "URDF",
        ModelFormat::Mjcf => "MJCF",
    };
    say!(
        "{} ({format}, {}, loaded in {:.1} ms)",
        m.name,
        file.display(),
        elapsed.as_secs_f64() * 1e3
    );
    let mut summary = String::new();
    loaded.write_summary(&mut summary)?;
    let _ = write!(std::io::stdout(), "{summary}");
    Ok(())
}
