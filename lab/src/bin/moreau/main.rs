//! The `moreau` command line: `run` simulates a scene or a robot file and
//! writes its trajectory (and, optionally, the contact problems it met);
//! `inspect` prints what a robot file loads as; `solve` solves
//! contact problems read from a file; `bench` measures stepping throughput;
//! `compare` runs every solver through the seed study's experiments and
//! writes tables, plots and JSON (`compare events`: time-stepping against
//! event-based simulation); `grad` computes and times the step
//! Jacobians along a trajectory; `scenes` lists scenes.

/// `println!` that does not panic when stdout is closed (e.g. piped into `head`).
macro_rules! say {
    ($($t:tt)*) => {{
        let _ = writeln!(std::io::stdout(), $($t)*);
    }};
}

mod bench;
mod grad;
mod run;
mod show;
mod solve;

use bench::{bench, bench_solve};
use clap::{Parser, Subcommand, ValueEnum};
use grad::grad;
use indicatif::{ProgressBar, ProgressStyle};
use moreau::batch::{Backend, GPU_MIN_TOLERANCE};
use moreau::contact::io::{ProblemWriter, read_problems};
use moreau::contact::{
    DEFAULT_MAX_ITERATIONS, DEFAULT_TOLERANCE, Evaluation, SolverKind, SolverSettings, evaluate,
};
use moreau::counters::{Stage, StageTimes};
use moreau::load::{LoadOptions, ModelFormat, load_model_file};
use moreau::scenes::{self, SCENE_NAMES, Scene};
use moreau::sim::{DelassusPath, SimParams, Simulator, StepReport, Trajectory};
use moreau_lab::bench::batch::{BenchActions, SceneBenchConfig};
use moreau_lab::study::{self, report};
use nalgebra::DVector;
use run::{load_scene, run};
use show::{compare, compare_events, compare_locomotion, info, inspect, render};
use solve::solve;
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

fn parse_layout(s: &str) -> Result<moreau::gpu::Layout, String> {
    s.parse()
}

fn parse_backend(name: &str) -> Result<Backend, String> {
    name.parse()
        .map_err(|e: moreau::batch::BatchError| e.to_string())
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
        /// problem, every solver), workgroup (one workgroup per problem,
        /// every solver) and lane (one lane per contact, several problems
        /// per workgroup, the PGS solvers); a solver's missing ones are skipped.
        #[arg(long, value_delimiter = ',', value_parser = parse_decomposition, default_value = "invocation,workgroup,lane")]
        decomposition: Vec<moreau::gpu::Decomposition>,
        /// Layouts to compare: packed (problem after problem) and
        /// interleaved (the problems of one size side by side in G, λ, c,
        /// the contact blocks and ADMM's scratch).
        #[arg(long, value_delimiter = ',', value_parser = parse_layout, default_value = "packed")]
        layout: Vec<moreau::gpu::Layout>,
        /// Output folder.
        #[arg(long, default_value = "bench-solve-out")]
        out: PathBuf,
    },
    /// The batched renderer's frames per second: --worlds copies of each
    /// scene or robot file (each world's joints moved a little, so that no
    /// two images are alike) drawn in one call at --width x --height, the
    /// renderer made once; the best and median of --repeats calls, the
    /// readback of colours and depths included. Prints one JSON line per
    /// scene and size.
    Render {
        /// Scenes or robot files, as for `run`.
        #[arg(long, value_delimiter = ',', default_values_t = ["quadruped".to_string()])]
        scene: Vec<String>,
        #[command(flatten)]
        file: ModelFileArgs,
        /// Worlds drawn per call.
        #[arg(long, value_delimiter = ',', default_values_t = [1, 64])]
        worlds: Vec<usize>,
        /// Image sides in pixels (square images).
        #[arg(long, value_delimiter = ',', default_values_t = [256])]
        size: Vec<u32>,
        /// Timed calls per point.
        #[arg(long, default_value_t = 5)]
        repeats: usize,
    },
    /// Gymnasium's v5 tasks as an RL loop runs them, in Rust: random
    /// actions in each task's control range, the frame skip, every
    /// environment's observation, reward and termination computed in the
    /// batch, NEXT_STEP autoreset with Philox resets, Gymnasium's time
    /// limits. Prints a table (environment steps/s; µs per environment
    /// step in the physics, the task, the resets and the rest) and writes
    /// bench_env.json to --out.
    Env {
        /// Gymnasium task ids (Ant-v5, Humanoid-v5, InvertedPendulum-v5,
        /// InvertedDoublePendulum-v5, Reacher-v5, Swimmer-v5,
        /// HalfCheetah-v5, Hopper-v5, Walker2d-v5), or `all`.
        #[arg(long, value_delimiter = ',', default_values_t = ["Ant-v5".to_string(), "Humanoid-v5".to_string()])]
        task: Vec<String>,
        /// Environments per batch.
        #[arg(long, value_delimiter = ',', default_values_t = [1024, 4096, 16384])]
        envs: Vec<usize>,
        #[arg(long, value_delimiter = ',', value_parser = parse_backend, default_values_t = [Backend::CpuParallel])]
        backend: Vec<Backend>,
        /// Environment steps timed (after 5 of warm-up).
        #[arg(long, default_value_t = 20)]
        steps: usize,
        /// Gymnasium's MuJoCo assets (default:
        /// $MOREAU_ROBOT_FILES/gymnasium/envs/mujoco/assets).
        #[arg(long)]
        assets: Option<PathBuf>,
        /// Output folder.
        #[arg(long, default_value = "bench-env-out")]
        out: PathBuf,
        /// Compute the tasks on the host where the device could (`gpu`:
        /// the seven tasks on hinges and slides run there by default).
        #[arg(long)]
        task_on_host: bool,
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
        #[arg(long, default_value = SolverKind::DEFAULT.name(), help = solver_help())]
        solver: String,
        /// Solver tolerance on eps_abs.
        #[arg(long, visible_alias = "tol", default_value_t = DEFAULT_TOLERANCE)]
        tolerance: f64,
        /// Solver iteration cap.
        #[arg(long, visible_alias = "max-iter", default_value_t = DEFAULT_MAX_ITERATIONS)]
        max_iterations: usize,
        /// ncp-admm: no active-set polish (see the solver catalog).
        #[arg(long)]
        no_polish: bool,
        /// ncp-admm: no semismooth Newton finisher where the polish fails
        /// (see the solver catalog).
        #[arg(long)]
        no_newton: bool,
        /// ncp-admm and ccp-admm: one ρ for every row instead of ρ scaled per
        /// row by the diagonal of G (SolverSettings::scaled_rho), on the CPU
        /// and the GPU kernels.
        #[arg(long)]
        unscaled_rho: bool,
        /// How ncp-admm and ccp-admm see the Delassus matrix: dense, tree
        /// (its factors J and M, never formed), or auto (tree when the
        /// problem has at least as many rows as the robot has dofs).
        #[arg(long, default_value = "auto")]
        delassus: DelassusPath,
        /// The most speed (m/s, rad/s) the recovery of a penetration, a
        /// joint past its stop or an equality's error may ask for
        /// (default: unbounded, β e / dt).
        #[arg(long)]
        max_recovery_speed: Option<f64>,
        /// Keep the open contacts in the problem (by default those whose gap
        /// the free motion does not close are set aside and taken back only
        /// where the answer would violate them: SimParams::screen_contacts)
        #[arg(long)]
        keep_open_contacts: bool,
        /// The compliance α of the rows of an equality to a mocap body
        /// (R = α G_kk; 0: rigid; SimParams::mocap_compliance).
        #[arg(long, default_value_t = moreau::sim::DEFAULT_MOCAP_COMPLIANCE)]
        mocap_compliance: f64,
        /// The compliance α of a penetrating contact's normal row
        /// (R = α s e² / (e² + (5 mm)²), s the mean of its rows' G_kk, at
        /// e = depth − 1 mm > 0; 0, the default: rigid; 1 holds files that
        /// start overlapping; SimParams::penetration_compliance).
        #[arg(long, default_value_t = 0.0)]
        penetration_compliance: f64,
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
        /// Write a video of the run (.gif, or .mp4 through ffmpeg), drawn
        /// offscreen on the GPU after the timed steps, in simulated time.
        #[arg(long, value_name = "FILE")]
        video: Option<PathBuf>,
        /// Frames per second of --video: a frame every 1/fps s of simulated
        /// time, to the nearest whole number of steps (the video's rate is
        /// that of the frames kept, so that it plays in simulated time).
        #[arg(long, default_value_t = 30.0, requires = "video")]
        fps: f64,
        /// Drive the model's actuators with controls drawn uniformly in
        /// their control ranges, from this seed (reproducible), a fresh
        /// draw every --control-period steps; a robot file's joints are
        /// then free of moreau's posture PD (as with --passive).
        #[arg(long, value_name = "SEED")]
        random_controls: Option<u64>,
        /// With --random-controls: steps per draw (a Gymnasium task's
        /// frame_skip, e.g. 5 for Humanoid-v5).
        #[arg(long, value_name = "STEPS", default_value_t = 1, requires = "random_controls",
              value_parser = clap::value_parser!(u64).range(1..))]
        control_period: u64,
        #[command(flatten, next_help_heading = "Video (with --video)")]
        view: ViewArgs,
    },
    /// The step Jacobians (of v⁺ and q⁺ with respect to q, v, τ and the
    /// friction coefficients) along a trajectory of a scene or robot file:
    /// their time against a step and against central finite differences,
    /// and (--fd) the worst relative difference.
    Grad {
        /// Scene name or robot file, as for `run`.
        scene: String,
        #[command(flatten)]
        file: ModelFileArgs,
        /// Robot files: no PD, the joints are free.
        #[arg(long)]
        passive: bool,
        /// Number of steps.
        #[arg(long, default_value_t = 200)]
        steps: usize,
        /// Solver tolerance (the Jacobians are those of the solver's answers).
        #[arg(long, visible_alias = "tol", default_value_t = 1e-12)]
        tolerance: f64,
        /// Check against central finite differences every N steps (and time them).
        #[arg(long, value_name = "N", num_args = 0..=1, default_missing_value = "20")]
        fd: Option<usize>,
        /// Finite-difference step in velocity (torques: eps/dt); 1e-4 where
        /// contacts slide (see the README).
        #[arg(long, default_value_t = 1e-6)]
        eps: f64,
        /// Time the steps and the steps with Jacobians this many times each,
        /// alternating, and report the fastest pass of each (timings vary
        /// between passes on a shared machine).
        #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
        repeats: u32,
        /// Write the states, torques and Jacobians of every step as JSON.
        #[arg(long, value_name = "FILE.json")]
        out: Option<PathBuf>,
    },
    /// Solve the contact problems of a JSON file (one problem or a list; see
    /// `moreau run --dump-problems`). Prints one JSON object per problem and line:
    /// problem, nc, solver, model, lambda, c, iterations, newton_steps,
    /// fallback_sweeps, converged,
    /// eps_floor, at_floor, eps_abs, eps_p, eps_d, eps_c, eps_ncp, time_us.
    /// eps_abs (= max of eps_p, eps_d,
    /// eps_c) is the residual of the solver's own model (ncp, ccp, lcp-<facets>;
    /// for raisim, which solves no cone problem, its own stopping residual);
    /// eps_floor is f32's floor under the GPU ADMM's eps_abs (what rounding
    /// c costs; 0 on the CPU), and at_floor says the solve ended short of
    /// --tol within 16 floors, as far as f32 goes;
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
        #[arg(long, visible_alias = "tolerance", default_value_t = DEFAULT_TOLERANCE)]
        tol: f64,
        /// Solver iteration cap.
        #[arg(long, visible_alias = "max-iterations", default_value_t = DEFAULT_MAX_ITERATIONS)]
        max_iter: usize,
        /// ncp-admm: no active-set polish (see the solver catalog).
        #[arg(long)]
        no_polish: bool,
        /// ncp-admm: no semismooth Newton finisher where the polish fails
        /// (see the solver catalog).
        #[arg(long)]
        no_newton: bool,
        /// ncp-admm and ccp-admm: one ρ for every row instead of ρ scaled per
        /// row by the diagonal of G (SolverSettings::scaled_rho), on the CPU
        /// and the GPU kernels.
        #[arg(long)]
        unscaled_rho: bool,
        /// Where to solve: the f64 CPU solvers, or the f32 GPU kernels (all
        /// problems in one batch; the adapter is picked as `moreau info`
        /// says; in f32, tolerances much below 1e-6 of the problem's scale
        /// are not reachable: the ADMM stops at f32's floor, eps_floor, and
        /// the others at --max-iter; time_us is
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
    /// solve, download, integrate), contacts per world, solver iterations,
    /// Newton steps and the share of solves a finisher ended (newt, fin%),
    /// eps_abs, host and device bytes per world, the device and the
    /// precision; prints the GPU-over-single-core ratios; writes a JSON
    /// report (--out) and an SVG plot of throughput versus batch size next
    /// to it. Actions: the scene's PD controller, or random with
    /// --random-actions (the states RL visits). Without a GPU
    /// adapter the GPU backend is dropped with a note (an error if it is the
    /// only backend asked for). The defaults take a few minutes on two cores
    /// with a software GPU; on a real GPU pass e.g. --envs 1,64,4096,16384.
    Bench {
        /// `solve`: batched GPU solver throughput against one CPU core.
        #[command(subcommand)]
        what: Option<BenchWhat>,
        /// Scenes to run: built-in names (see `moreau scenes`) or robot files
        /// (.urdf, .xml/.mjcf; held at their loaded posture by a PD).
        #[arg(long, value_delimiter = ',', default_values_t = ["quadruped".to_string(), "pyramid".to_string(), "cartpole".to_string()])]
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
        #[arg(long, value_parser = parse_solver, default_value = SolverKind::DEFAULT.name(), help = solver_help())]
        solver: SolverKind,
        /// Solver tolerance on eps_abs (at least 1e-6 for the GPU's f32 kernels).
        #[arg(long, visible_alias = "tolerance", default_value_t = GPU_MIN_TOLERANCE)]
        tol: f64,
        /// Solver iteration cap.
        #[arg(long, visible_alias = "max-iterations", default_value_t = DEFAULT_MAX_ITERATIONS)]
        max_iter: usize,
        /// GPU: split each step into this many chunks of worlds, pipelined
        /// (one chunk on the GPU while the host prepares the next).
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
        pipeline: u64,
        /// GPU, worlds on the device: at most this many worlds per chunk
        /// (default: as many as the device's binding and dispatch limits
        /// allow; a larger batch is split into chunks of even size)
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
        gpu_chunk_worlds: Option<u64>,
        /// GPU: invocation (one invocation per world's problem), workgroup
        /// (one workgroup per problem) or lane (one lane per contact, the
        /// PGS solvers only).
        #[arg(long, value_parser = parse_decomposition, default_value = "invocation")]
        decomposition: moreau::gpu::Decomposition,
        /// GPU: the batch packed problem after problem, or interleaved by
        /// size class (G, λ, c, the contact blocks, ADMM's scratch).
        #[arg(long, value_parser = parse_layout, default_value = "packed")]
        layout: moreau::gpu::Layout,
        /// Random actions from this seed instead of the scene's controller:
        /// a robot file's actuators uniform in their control ranges, a
        /// built-in PD scene's targets within ±0.5 of its reference (the
        /// quadruped task's action space); each world its own draws, the
        /// same on every backend.
        #[arg(long, value_name = "SEED")]
        random_actions: Option<u64>,
        /// With --random-actions: steps per draw (a task's frame skip).
        #[arg(long, value_name = "STEPS", default_value_t = 1, requires = "random_actions",
              value_parser = clap::value_parser!(u64).range(1..))]
        control_period: u64,
        /// JSON report; the plot is written next to it (same name, .svg).
        #[arg(long, default_value = "bench-out/bench.json")]
        out: PathBuf,
    },
    /// Run every solver through the seed study's experiments: Table II from
    /// measurements, mass ratios, self-consistency against dt and tolerance,
    /// time-to-accuracy, compliance. Prints the tables; writes energy.svg,
    /// internal_forces.svg, time_to_accuracy.svg, mass_ratio.svg and
    /// compare.json to --out.
    #[command(args_conflicts_with_subcommands = true)]
    Compare {
        #[command(subcommand)]
        what: Option<CompareWhat>,
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
    /// Draw a built-in scene or a robot file, offscreen on the GPU, into a
    /// PNG image: its initial state, or its state after --steps steps (the
    /// scene's controller, or a robot file's posture held as for `run`).
    Render {
        /// Scene name or robot file, as for `run`.
        scene: String,
        #[command(flatten)]
        file: ModelFileArgs,
        /// Steps to simulate before drawing.
        #[arg(long, default_value_t = 0, conflicts_with = "state")]
        steps: usize,
        /// Draw a configuration of a trajectory `moreau run --out` wrote
        /// (.csv or .json) instead: its row --frame.
        #[arg(long, value_name = "FILE")]
        state: Option<PathBuf>,
        /// With --state: the row (0: the initial state; negative: from the end).
        #[arg(
            long,
            default_value_t = 0,
            requires = "state",
            allow_hyphen_values = true
        )]
        frame: i64,
        #[command(flatten)]
        view: ViewArgs,
        /// The PNG file to write.
        #[arg(long)]
        out: PathBuf,
    },
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

/// What `moreau compare` compares besides the solvers.
#[derive(Subcommand)]
enum CompareWhat {
    /// Time-stepping against event-based simulation (RK4 and implicit
    /// midpoint smooth phases) on the falling cube, the bouncing ball and
    /// the sliding block: prints the tables, writes events.json and
    /// events.svg to --out.
    Events {
        /// Output folder (created if missing).
        #[arg(long, default_value = "compare-events-out")]
        out: PathBuf,
    },
    /// The trot controller on the built-in quadruped: every feedforward
    /// (PD alone, the no-slip, Coulomb, two-stage and NCP inverse
    /// dynamics, ID(t-1), ID(t-2)) on flat ground with μ = 0.1 and μ = ∞
    /// and on rough terrain; then the no-slip controller on each contact
    /// model (lcp-pgs, ccp-admm, raisim, ncp-admm), flat (μ = 0.9) and
    /// bumpy (μ = 0.3). Prints the tables; writes locomotion.json,
    /// controllers.svg and contact_models.svg to --out.
    Locomotion {
        /// Output folder (created if missing).
        #[arg(long, default_value = "compare-locomotion-out")]
        out: PathBuf,
        /// 3 s walks instead of 10 s.
        #[arg(long)]
        quick: bool,
    },
}

/// The image size and camera of `render` and of `run --video`.
#[derive(clap::Args, Clone, Debug)]
struct ViewArgs {
    /// Image width and height in pixels.
    #[arg(long, default_value_t = 640)]
    width: u32,
    #[arg(long, default_value_t = 480)]
    height: u32,
    /// A camera of the file (MJCF `<camera>`), or a body or frame the free
    /// camera follows (default: the centre of mass).
    #[arg(long, value_name = "NAME")]
    camera: Option<String>,
    /// Free camera direction: azimuth (degrees about z from +x) and
    /// elevation (degrees above the horizontal).
    #[arg(long, default_value_t = moreau::render::Renderer::AZIMUTH, allow_hyphen_values = true)]
    azimuth: f64,
    #[arg(long, default_value_t = moreau::render::Renderer::ELEVATION, allow_hyphen_values = true)]
    elevation: f64,
    /// Free camera distance from what it looks at, in metres (default: far
    /// enough to hold what moves).
    #[arg(long)]
    distance: Option<f64>,
    /// Draw the last step's contacts over the image: points as red balls,
    /// forces as yellow arrows (the model's weight 0.5 m long).
    #[arg(long)]
    contacts: bool,
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
    /// MJCF: take contacts with torsional or rolling friction (`condim` 4
    /// or 6; simulated on the CPU, and on the GPU backends host-prepared
    /// with ncp-admm or ccp-admm) as `condim` 3, sliding friction only.
    #[arg(long)]
    sliding_friction_only: bool,
    /// Robot files: start the 1-dof joints named PATTERN (`*` matches any
    /// run of characters: `'*_calf_joint=-1.8'`) at VALUE (rad or m)
    /// instead of the file's configuration; the scene's PD holds the
    /// result (repeatable; a pattern that names no such joint is refused).
    #[arg(long, value_name = "PATTERN=VALUE")]
    joint_pos: Vec<String>,
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
            sliding_friction_only: self.sliding_friction_only,
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
            no_polish,
            no_newton,
            unscaled_rho,
            delassus,
            max_recovery_speed,
            keep_open_contacts,
            mocap_compliance,
            penetration_compliance,
            out,
            dump_problems,
            dump_every,
            video,
            fps,
            view,
            random_controls,
            control_period,
        } => run(
            &scene,
            (&file, passive),
            random_controls.map(|seed| (seed, control_period as usize)),
            steps,
            (
                dt,
                max_recovery_speed,
                !keep_open_contacts,
                (mocap_compliance, penetration_compliance),
            ),
            &solver,
            (
                tolerance,
                max_iterations,
                (!no_polish, !no_newton, !unscaled_rho),
                delassus,
            ),
            out,
            dump_problems.map(|path| (path, dump_every)),
            video.map(|path| (path, fps, view)),
        ),
        Command::Solve {
            file,
            solver,
            tol,
            max_iter,
            no_polish,
            no_newton,
            unscaled_rho,
            device,
        } => solve(
            &file,
            solver,
            (tol, max_iter, (!no_polish, !no_newton, !unscaled_rho)),
            device,
        ),
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
                    layout,
                    out,
                }),
            ..
        } => bench_solve(
            moreau_lab::bench::solve::BenchConfig {
                kind: solver,
                contacts,
                batches: batch,
                max_iterations: iterations,
                tolerance: tol,
                repeats,
                cpu_sample: 32,
                decompositions: decomposition,
                layouts: layout,
            },
            &out,
        ),
        Command::Bench {
            what:
                Some(BenchWhat::Render {
                    scene,
                    file,
                    worlds,
                    size,
                    repeats,
                }),
            ..
        } => show::bench_render(&scene, &file, (&worlds, &size), repeats),
        Command::Bench {
            what:
                Some(BenchWhat::Env {
                    task,
                    envs,
                    backend,
                    steps,
                    assets,
                    out,
                    task_on_host,
                }),
            ..
        } => bench::bench_env(&task, &envs, &backend, steps, assets, &out, task_on_host),
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
            gpu_chunk_worlds,
            decomposition,
            layout,
            random_actions,
            control_period,
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
                chunk_worlds: gpu_chunk_worlds.map(|c| c as usize),
                decomposition,
                layout,
                actions: match random_actions {
                    Some(seed) => BenchActions::Random {
                        seed,
                        period: control_period as usize,
                    },
                    None => BenchActions::Controller,
                },
            },
            &out,
        ),
        Command::Grad {
            scene,
            file,
            passive,
            steps,
            tolerance,
            fd,
            eps,
            repeats,
            out,
        } => grad(
            &scene,
            (&file, passive),
            steps,
            tolerance,
            (fd, eps),
            repeats as usize,
            out,
        ),
        Command::Compare {
            what: Some(CompareWhat::Events { out }),
            ..
        } => compare_events(&out),
        Command::Compare {
            what: Some(CompareWhat::Locomotion { out, quick }),
            ..
        } => compare_locomotion(&out, quick),
        Command::Compare { out, quick, .. } => compare(&out, quick),
        Command::Inspect { file, options } => {
            if options.joint_pos.is_empty() {
                inspect(&file, &options)
            } else {
                Err("--joint-pos sets a starting configuration; inspect prints none".into())
            }
        }
        Command::Render {
            scene,
            file,
            steps,
            state,
            frame,
            view,
            out,
        } => render(
            &scene,
            &file,
            (steps, state.map(|s| (s, frame))),
            &view,
            &out,
        ),
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
