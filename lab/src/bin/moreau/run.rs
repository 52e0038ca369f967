//! `moreau run`: steps a scene or a robot file, prints what happened,
//! records the trajectory and the contact problems.

use super::*;

/// Contact and solver figures summed over the steps of a run.
#[derive(Default)]
pub(crate) struct Tally {
    nc_sum: usize,
    nc_max: usize,
    nl_sum: usize,
    nl_max: usize,
    eps_max: f64,
    it_sum: usize,
    it_max: usize,
    solves: usize,
    unconverged: usize,
    /// Solves by how they ended ([`Finish`]): count and solve-stage seconds.
    finishes: [(usize, f64); 6],
    /// Open contacts set aside (summed over steps), those taken back after
    /// a solve, and the steps that solved again.
    set_aside: usize,
    taken_back: usize,
    solved_again: usize,
}

/// How a solve ended, cheapest first: its warm start already solved it; an
/// active-set polish did, before any ADMM iteration, with the factors kept
/// from an earlier solve or with its own; Newton steps did
/// (after a factorization); ADMM iterated; ADMM reached its cap and the
/// `ncp-pgs` fallback swept (whether or not it solved the problem).
#[derive(Clone, Copy)]
enum Finish {
    WarmStart,
    KeptPolish,
    Polish,
    Newton,
    Admm,
    Fallback,
}

impl Finish {
    const ALL: [Finish; 6] = [
        Finish::WarmStart,
        Finish::KeptPolish,
        Finish::Polish,
        Finish::Newton,
        Finish::Admm,
        Finish::Fallback,
    ];
    fn of(s: &moreau::contact::SolverStats) -> Finish {
        if s.fallback_sweeps > 0 {
            Finish::Fallback
        } else if s.iterations > 0 {
            Finish::Admm
        } else if s.newton_steps > 0 {
            Finish::Newton
        } else if s.reused_factors > 0 {
            Finish::KeptPolish
        } else if s.polishes > 0 {
            Finish::Polish
        } else {
            Finish::WarmStart
        }
    }
    fn name(self) -> &'static str {
        match self {
            Finish::WarmStart => "warm start",
            Finish::KeptPolish => "polish with kept factors",
            Finish::Polish => "polish",
            Finish::Newton => "Newton",
            Finish::Admm => "ADMM iterations",
            Finish::Fallback => "ADMM's cap, then ncp-pgs",
        }
    }
}

impl Tally {
    /// "warm start 1 200 (2.1 µs each), polish …": the solves by how they
    /// ended, with their mean solve-stage time.
    fn finishes(&self) -> String {
        Finish::ALL
            .iter()
            .zip(&self.finishes)
            .filter(|(_, (n, _))| *n > 0)
            .map(|(f, (n, t))| format!("{} {n} ({:.1} µs each)", f.name(), 1e6 * t / *n as f64))
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn add(&mut self, r: &StepReport) {
        self.set_aside += r.set_aside;
        self.taken_back += r.taken_back;
        self.solved_again += usize::from(r.taken_back > 0);
        self.nc_sum += r.nc;
        self.nc_max = self.nc_max.max(r.nc);
        self.nl_sum += r.nl;
        self.nl_max = self.nl_max.max(r.nl);
        if let Some(s) = r.solver {
            self.solves += 1;
            self.it_sum += s.iterations;
            self.it_max = self.it_max.max(s.iterations);
            self.unconverged += usize::from(!s.converged);
            self.eps_max = self.eps_max.max(s.residuals.eps_abs);
            let finish = &mut self.finishes[Finish::of(&s) as usize];
            finish.0 += 1;
            finish.1 += r.times.get(Stage::Solve).as_secs_f64();
        }
    }
}

pub(crate) fn make_sim(
    scene: &Scene,
    dt: Option<f64>,
    solver: &str,
    (tolerance, max_iterations, (polish, newton, scaled_rho), delassus): (
        f64,
        usize,
        (bool, bool, bool),
        DelassusPath,
    ),
) -> Result<Simulator, AnyError> {
    let mut params = SimParams {
        dt: dt.unwrap_or(scene.dt),
        solver: solver.parse::<SolverKind>()?,
        delassus,
        ..Default::default()
    };
    params.solver_settings.tolerance = tolerance;
    params.solver_settings.max_iterations = max_iterations;
    params.solver_settings.polish = polish;
    params.solver_settings.newton = newton;
    params.solver_settings.scaled_rho = scaled_rho;
    Ok(Simulator::new(scene.model.clone(), params)?)
}

/// A built-in scene by name, or a robot file on a ground (warnings printed).
pub(crate) fn load_scene(
    name: &str,
    file_args: &ModelFileArgs,
    passive: bool,
) -> Result<Scene, AnyError> {
    Ok(if is_model_file(name) {
        let mut loaded = load_model_file(name, &file_args.options())?;
        for w in &loaded.warnings {
            eprintln!("warning: {w}");
        }
        for setting in &file_args.joint_pos {
            set_joint_positions(&mut loaded, setting)?;
        }
        scenes::from_loaded(&loaded, passive)?
    } else if !file_args.joint_pos.is_empty() {
        return Err(
            format!("--joint-pos applies to robot files, not the built-in scene `{name}`").into(),
        );
    } else {
        scenes::scene(name)?
    })
}

/// `--joint-pos PATTERN=VALUE`: the 1-dof joints whose names match
/// PATTERN (`*` any run of characters) start at VALUE.
fn set_joint_positions(
    loaded: &mut moreau::load::LoadedModel,
    setting: &str,
) -> Result<(), AnyError> {
    let bad =
        || format!("--joint-pos `{setting}`: expected PATTERN=VALUE, e.g. '*_calf_joint=-1.8'");
    let (pattern, value) = setting.rsplit_once('=').ok_or_else(bad)?;
    let value: f64 = value.trim().parse().map_err(|_| bad())?;
    if !value.is_finite() || pattern.is_empty() {
        return Err(bad().into());
    }
    let model = &loaded.model;
    let mut matched = 0;
    for b in 1..model.nbodies {
        if !glob_match(pattern, &model.joint_name[b]) {
            continue;
        }
        if !matches!(
            model.joint_type[b],
            moreau::model::JointType::Revolute(_) | moreau::model::JointType::Prismatic(_)
        ) {
            return Err(format!(
                "--joint-pos `{setting}`: joint `{}` is not a 1-dof joint",
                model.joint_name[b]
            )
            .into());
        }
        loaded.q0[model.joint_idx_q[b]] = value;
        matched += 1;
    }
    if matched == 0 {
        return Err(format!("--joint-pos `{setting}`: no 1-dof joint is named `{pattern}`").into());
    }
    Ok(())
}

/// Whether `name` matches `pattern`, where `*` matches any run of
/// characters (none included).
fn glob_match(pattern: &str, name: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == name,
        Some((head, rest)) => {
            let Some(tail) = name.strip_prefix(head) else {
                return false;
            };
            (0..=tail.len())
                .filter(|&i| tail.is_char_boundary(i))
                .any(|i| glob_match(rest, &tail[i..]))
        }
    }
}

pub(crate) fn progress(steps: usize) -> ProgressBar {
    if steps < 2000 {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::new(steps as u64);
    pb.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} steps, {per_sec}, eta {eta}").unwrap(),
    );
    pb
}

pub(crate) fn stage_summary(times: &StageTimes) -> String {
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

/// The controls of `--random-controls`: every actuator's, uniform in its
/// control range, redrawn every `period` steps.
struct RandomControls {
    seed: u64,
    rng: moreau::math::Rng,
    ranges: Vec<(f64, f64)>,
    period: usize,
    ctrl: Vec<f64>,
}

impl RandomControls {
    fn new(scene: &Scene, name: &str, seed: u64, period: usize) -> Result<Self, AnyError> {
        let model = &scene.model;
        if model.nu() == 0 {
            return Err(format!("--random-controls: {name} has no actuators to drive").into());
        }
        if scene.controller.is_some() {
            return Err(format!(
                "--random-controls: scene {name} is driven by its own controller; it drives a robot file's actuators"
            )
            .into());
        }
        let ranges = moreau_lab::bench::batch::control_ranges(model, "--random-controls")?;
        Ok(RandomControls {
            seed,
            rng: moreau::math::Rng::new(seed),
            ctrl: vec![0.0; ranges.len()],
            ranges,
            period,
        })
    }
    /// The controls of step `step` (drawn at multiples of the period).
    fn at(&mut self, step: usize) -> &[f64] {
        if step.is_multiple_of(self.period) {
            for (c, &(lo, hi)) in self.ctrl.iter_mut().zip(&self.ranges) {
                *c = self.rng.range(lo, hi);
            }
        }
        &self.ctrl
    }
}

/// `q`-quantile of sorted `xs` (nearest rank).
fn quantile(xs: &[f64], q: f64) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    let k = ((q * xs.len() as f64).ceil() as usize).clamp(1, xs.len());
    xs[k - 1]
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn run(
    name: &str,
    (file_args, passive): (&ModelFileArgs, bool),
    random: Option<(u64, usize)>,
    steps: usize,
    (dt, max_recovery_speed, screen, (mocap_compliance, penetration_compliance)): (
        Option<f64>,
        Option<f64>,
        bool,
        (f64, f64),
    ),
    solver: &str,
    settings: (f64, usize, (bool, bool, bool), DelassusPath),
    out: Option<PathBuf>,
    dump: Option<(PathBuf, u64)>,
    video: Option<(PathBuf, f64, ViewArgs)>,
) -> Result<(), AnyError> {
    // Random controls drive the actuators alone: a file's joints free.
    let scene = load_scene(name, file_args, passive || random.is_some())?;
    let mut random = match random {
        Some((seed, period)) => Some(RandomControls::new(&scene, name, seed, period)?),
        None => None,
    };
    let mut sim = make_sim(&scene, dt, solver, settings)?;
    sim.params.max_recovery_speed = max_recovery_speed;
    sim.params.screen_contacts = screen;
    sim.params.mocap_compliance = mocap_compliance;
    sim.params.penetration_compliance = penetration_compliance;
    sim.params.validate()?;
    let mut state = scene.state.clone();
    // The video's frames: configurations kept during the run (one every
    // 1/fps s of simulated time), drawn after it, outside the timing.
    let mut frames: Vec<Vec<f64>> = Vec::new();
    let mut overlays: Vec<moreau::render::Overlay> = Vec::new();
    let (every, video) = match video {
        Some((path, fps, view)) => {
            moreau_lab::video::check(&path, view.width, view.height, fps)?;
            super::show::view_of(&scene.model, &view)?;
            frames.push(state.q.as_slice().to_vec());
            if view.contacts {
                overlays.push(Default::default());
            }
            let every = ((1.0 / (fps * sim.params.dt)).round() as usize).max(1);
            // Shown in simulated time: the rate of the frames kept.
            let fps = 1.0 / (every as f64 * sim.params.dt);
            (every, Some((path, fps, view)))
        }
        None => (0, None),
    };
    let mut tau = DVector::zeros(scene.model.nv);
    // Without a controller of ours, the model's actuators get zero controls
    // (as MuJoCo's `ctrl` starts: its position servos hold their zero).
    let ctrl =
        (scene.controller.is_none() && scene.model.nu() > 0).then(|| vec![0.0; scene.model.nu()]);
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
    // Each step's wall time, for the quantiles.
    let mut step_times = Vec::with_capacity(steps);
    let start = Instant::now();
    for step in 0..steps {
        let began = Instant::now();
        scene.control(&state, tau.as_mut_slice());
        let stepped = match (&mut random, &ctrl) {
            (Some(random), _) => sim.step_controls(&mut state, random.at(step)),
            (None, Some(ctrl)) => sim.step_controls(&mut state, ctrl),
            (None, None) => sim.step(&mut state, tau.as_slice()),
        };
        step_times.push(began.elapsed().as_secs_f64());
        let r = match stepped {
            Ok(r) => r,
            Err(e) => {
                // Close the dump and the video so that what the run met so
                // far stays readable.
                if let Some((w, _, _)) = dump {
                    w.finish()?;
                }
                if let Some((path, fps, view)) = &video {
                    super::show::write_video(
                        &scene.model,
                        (&frames, &overlays),
                        (path, *fps, view),
                    )?;
                }
                return Err(format!("step {step} (t = {} s): {e}", state.t).into());
            }
        };
        tally.add(&r);
        if let Some((w, _, every)) = &mut dump
            && r.nc + r.nl > 0
            && (step as u64).is_multiple_of(*every)
        {
            w.write(sim.problem_with_delassus())?;
        }
        if out.is_some() {
            trajectory.record(&mut sim, &state, Some(&r))?;
        }
        if every > 0 && (step + 1) % every == 0 {
            frames.push(state.q.as_slice().to_vec());
            if video.as_ref().is_some_and(|v| v.2.contacts) {
                let marks = sim.solved_contacts();
                overlays.push(moreau::render::Overlay::from_contacts(
                    &scene.model,
                    marks,
                    sim.params.dt,
                ));
            }
        }
        pb.inc(1);
    }
    pb.finish_and_clear();
    let wall = start.elapsed();
    let finishes = tally.finishes();
    let Tally {
        nc_sum,
        nc_max,
        nl_sum,
        nl_max,
        eps_max,
        it_sum,
        it_max,
        solves,
        unconverged,
        set_aside,
        taken_back,
        solved_again,
        ..
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
    step_times.sort_by(f64::total_cmp);
    let p50 = quantile(&step_times, 0.5);
    say!(
        "step time: p50 {:.1} µs, p99 {:.1} µs, max {:.1} µs (p99/p50 {:.1}){}",
        1e6 * p50,
        1e6 * quantile(&step_times, 0.99),
        1e6 * quantile(&step_times, 1.0),
        quantile(&step_times, 0.99) / p50,
        match &random {
            Some(r) => format!(
                "; random controls every {} step(s), seed {}",
                r.period, r.seed
            ),
            None => String::new(),
        }
    );
    say!(
        "contacts: mean {:.2}, max {nc_max}; rows past the contacts (joint stops, equalities, dry friction, torsional and rolling friction): mean {:.2}, max {nl_max}; solver: {solves} solves, mean {:.1} iterations (max {it_max}), {unconverged} not converged, max eps_abs {eps_max:.2e}",
        nc_sum as f64 / steps.max(1) as f64,
        nl_sum as f64 / steps.max(1) as f64,
        it_sum as f64 / solves.max(1) as f64
    );
    if solves > 0 {
        say!("solves by how they ended: {finishes}");
    }
    if set_aside + taken_back > 0 {
        say!(
            "open contacts set aside: mean {:.2} a step; {taken_back} taken back after a solve, in {solved_again} steps that solved again (--keep-open-contacts keeps them all)",
            set_aside as f64 / steps.max(1) as f64
        );
    }
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
    if let Some((path, fps, view)) = &video {
        super::show::write_video(&scene.model, (&frames, &overlays), (path, *fps, view))?;
    }
    Ok(())
}
