//! Augmented Random Search (Mania, Guy, Recht 2018, "Simple random search
//! provides a competitive approach to reinforcement learning"), versions
//! V1-t and V2-t: a linear policy `a = clip(M (o − μ) / σ, −1, 1)`, trained
//! from episodes of perturbed policies `M ± ν δ_k` run in parallel, one per
//! world of a [`VecEnv`] (autoreset off).
//!
//! One iteration (Algorithm 2 of the paper):
//! 1. draw `N` directions `δ_k` (i.i.d. standard normal, the shape of `M`);
//! 2. run one episode of `M + ν δ_k` and one of `M − ν δ_k` for each `k`
//!    (the pair starts from the same initial state), returns `r_k^±`;
//! 3. keep the `b` directions with the largest `max(r_k^+, r_k^−)`;
//! 4. `M ← M + α / (b σ_R) Σ_{top b} (r_k^+ − r_k^−) δ_k`, `σ_R` the
//!    standard deviation of the `2b` returns kept;
//! 5. (V2) update the running mean `μ` and standard deviation `σ` of the
//!    observations seen in the episodes of this iteration.
//!
//! The same batch also runs `eval_worlds` episodes of `M` itself (not
//! perturbed, not used for the update): the learning curve.

use moreau::batch::Backend;
use moreau::envs::{EnvError, Rng, Task, VecEnv, VecEnvOptions, world_seed};
use std::time::Instant;

/// Settings of [`Ars`]; the defaults suit the cart-pole swing-up.
#[derive(Clone, Debug)]
pub struct ArsConfig {
    /// Directions per iteration `N` (2N perturbed episodes).
    pub directions: usize,
    /// Best directions used in the update `b ≤ N`.
    pub top: usize,
    /// Step size `α`.
    pub step_size: f64,
    /// Exploration noise `ν`.
    pub noise: f64,
    /// Episodes of the unperturbed policy per iteration (learning curve).
    pub eval_worlds: usize,
    /// V2: normalize observations by their running mean and std.
    pub normalize: bool,
    pub seed: u64,
    pub backend: Backend,
}

impl Default for ArsConfig {
    fn default() -> Self {
        ArsConfig {
            directions: 16,
            top: 8,
            step_size: 0.05,
            noise: 0.05,
            eval_worlds: 4,
            normalize: true,
            seed: 0,
            backend: Backend::CpuParallel,
        }
    }
}

/// A linear policy `a = clip(M (o − μ) / σ, −1, 1)`.
#[derive(Clone, Debug, PartialEq)]
pub struct LinearPolicy {
    pub obs_dim: usize,
    pub action_dim: usize,
    /// `M`, (action_dim, obs_dim) row-major.
    pub weights: Vec<f64>,
    /// (obs_dim) observation mean and standard deviation (0 and 1 for V1).
    pub obs_mean: Vec<f64>,
    pub obs_std: Vec<f64>,
}

impl LinearPolicy {
    pub fn zeros(obs_dim: usize, action_dim: usize) -> Self {
        LinearPolicy {
            obs_dim,
            action_dim,
            weights: vec![0.0; obs_dim * action_dim],
            obs_mean: vec![0.0; obs_dim],
            obs_std: vec![1.0; obs_dim],
        }
    }
    /// The action of weights `m` (the shape of [`Self::weights`]) at `obs`, into `out`.
    pub fn act_with(&self, m: &[f64], obs: &[f32], out: &mut [f32]) {
        for (i, a) in out.iter_mut().enumerate() {
            let row = &m[i * self.obs_dim..(i + 1) * self.obs_dim];
            let mut s = 0.0;
            for j in 0..self.obs_dim {
                s += row[j] * (obs[j] as f64 - self.obs_mean[j]) / self.obs_std[j];
            }
            *a = s.clamp(-1.0, 1.0) as f32;
        }
    }
    pub fn act(&self, obs: &[f32], out: &mut [f32]) {
        self.act_with(&self.weights, obs, out);
    }
}

/// Running mean and variance of observations (Welford, per component).
#[derive(Clone, Debug)]
pub struct ObsStats {
    pub count: f64,
    pub mean: Vec<f64>,
    m2: Vec<f64>,
}

impl ObsStats {
    pub fn new(dim: usize) -> Self {
        ObsStats {
            count: 0.0,
            mean: vec![0.0; dim],
            m2: vec![0.0; dim],
        }
    }
    pub fn push(&mut self, obs: &[f32]) {
        self.count += 1.0;
        for (k, &x) in obs.iter().enumerate() {
            let x = x as f64;
            let d = x - self.mean[k];
            self.mean[k] += d / self.count;
            self.m2[k] += d * (x - self.mean[k]);
        }
    }
    /// Standard deviations, 1 where a component (almost) never varied.
    pub fn std(&self) -> Vec<f64> {
        self.m2
            .iter()
            .map(|m2| {
                let var = if self.count > 1.0 {
                    m2 / self.count
                } else {
                    0.0
                };
                if var > 1e-8 { var.sqrt() } else { 1.0 }
            })
            .collect()
    }
}

/// Returns and sizes of one batch of episodes.
#[derive(Clone, Debug)]
pub struct Rollouts {
    /// (nenv) undiscounted return of each world's episode.
    pub returns: Vec<f64>,
    /// (nenv) episode lengths (environment steps).
    pub lengths: Vec<usize>,
}

/// Runs one episode per world of `env` (which must not autoreset), world
/// `w` under weights `weights[w]` of `policy`'s shape and normalization,
/// from seed `seeds[w]`; pushes every observation of the episodes into
/// `stats` when given.
pub fn rollout<T: Task>(
    env: &mut VecEnv<T>,
    policy: &LinearPolicy,
    weights: &[&[f64]],
    seeds: &[u64],
    mut stats: Option<&mut ObsStats>,
) -> Result<Rollouts, EnvError> {
    let (n, no, na) = (env.num_envs(), env.obs_dim(), env.action_dim());
    if weights.len() != n {
        return Err(EnvError::DimensionMismatch {
            what: "policies",
            got: weights.len(),
            expected: n,
            nenv: n,
            per_env: 1,
        });
    }
    let mut obs = env.reset_with_seeds(seeds)?.to_vec();
    let mut returns = vec![0.0; n];
    let mut lengths = vec![0; n];
    let mut done = vec![false; n];
    let mut actions = vec![0.0f32; n * na];
    while done.iter().any(|d| !d) {
        for w in 0..n {
            let row = &obs[w * no..(w + 1) * no];
            if done[w] {
                continue;
            }
            if let Some(s) = stats.as_deref_mut() {
                s.push(row);
            }
            policy.act_with(weights[w], row, &mut actions[w * na..(w + 1) * na]);
        }
        let r = env.step(&actions)?;
        for w in 0..n {
            if !done[w] && r.done(w) {
                done[w] = true;
                returns[w] = r.episode_return[w];
                lengths[w] = r.episode_length[w];
            }
        }
        obs = r.obs;
    }
    Ok(Rollouts { returns, lengths })
}

/// What one ARS iteration did.
#[derive(Clone, Debug)]
pub struct IterationReport {
    /// 1-based.
    pub iteration: usize,
    /// Mean return of the unperturbed policy over the evaluation worlds
    /// (before this iteration's update).
    pub eval_return: f64,
    /// Mean and best return of the perturbed episodes.
    pub perturbed_mean: f64,
    pub perturbed_max: f64,
    /// Totals since the start.
    pub episodes: usize,
    pub env_steps: usize,
    pub seconds: f64,
}

/// ARS on one task (see the module doc).
pub struct Ars<T: Task> {
    env: VecEnv<T>,
    pub config: ArsConfig,
    pub policy: LinearPolicy,
    stats: ObsStats,
    rng: Rng,
    iteration: usize,
    episodes: usize,
    env_steps: usize,
    started: Instant,
}

impl<T: Task> Ars<T> {
    /// A zero policy and a batch of `2 · directions + eval_worlds` worlds.
    pub fn new(task: T, config: ArsConfig) -> Result<Self, EnvError> {
        if config.directions == 0 || config.top == 0 || config.top > config.directions {
            return Err(EnvError::Task {
                task: task.name().into(),
                reason: format!(
                    "ARS needs 1 ≤ top ({}) ≤ directions ({})",
                    config.top, config.directions
                ),
            });
        }
        let nenv = 2 * config.directions + config.eval_worlds;
        let options = VecEnvOptions {
            backend: config.backend,
            autoreset: false,
            params: None,
        };
        let env = VecEnv::new(task, nenv, &options)?;
        let policy = LinearPolicy::zeros(env.obs_dim(), env.action_dim());
        let stats = ObsStats::new(env.obs_dim());
        Ok(Ars {
            env,
            rng: Rng::new(config.seed),
            config,
            policy,
            stats,
            iteration: 0,
            episodes: 0,
            env_steps: 0,
            started: Instant::now(),
        })
    }

    pub fn env(&self) -> &VecEnv<T> {
        &self.env
    }
    pub fn env_mut(&mut self) -> &mut VecEnv<T> {
        &mut self.env
    }

    /// One iteration: `2N` perturbed episodes and `eval_worlds` episodes of
    /// the current policy in one batch, then the update.
    pub fn iterate(&mut self) -> Result<IterationReport, EnvError> {
        let c = &self.config;
        let (nd, dim) = (c.directions, self.policy.weights.len());
        let deltas: Vec<Vec<f64>> = (0..nd)
            .map(|_| (0..dim).map(|_| self.rng.normal()).collect())
            .collect();
        let mut weights: Vec<Vec<f64>> = Vec::with_capacity(2 * nd + c.eval_worlds);
        for d in &deltas {
            for sign in [1.0, -1.0] {
                weights.push(
                    self.policy
                        .weights
                        .iter()
                        .zip(d)
                        .map(|(m, d)| m + sign * c.noise * d)
                        .collect(),
                );
            }
        }
        for _ in 0..c.eval_worlds {
            weights.push(self.policy.weights.clone());
        }
        // Both episodes of a pair start from the same state; the seeds
        // change every iteration.
        let base = self.rng.next_u64();
        let seeds: Vec<u64> = (0..weights.len())
            .map(|w| world_seed(base, if w < 2 * nd { w / 2 } else { w }))
            .collect();
        let refs: Vec<&[f64]> = weights.iter().map(|w| w.as_slice()).collect();
        let mut iteration_stats = ObsStats::new(self.policy.obs_dim);
        let r = rollout(
            &mut self.env,
            &self.policy,
            &refs,
            &seeds,
            Some(&mut iteration_stats),
        )?;
        self.iteration += 1;
        self.episodes += r.returns.len();
        self.env_steps += r.lengths.iter().sum::<usize>();

        let c = &self.config;
        let plus_minus: Vec<(f64, f64)> = (0..nd)
            .map(|k| (r.returns[2 * k], r.returns[2 * k + 1]))
            .collect();
        let mut order: Vec<usize> = (0..nd).collect();
        order.sort_by(|&a, &b| {
            let (ma, mb) = (
                plus_minus[a].0.max(plus_minus[a].1),
                plus_minus[b].0.max(plus_minus[b].1),
            );
            mb.total_cmp(&ma)
        });
        let kept = &order[..c.top];
        let kept_returns: Vec<f64> = kept
            .iter()
            .flat_map(|&k| [plus_minus[k].0, plus_minus[k].1])
            .collect();
        let mean = kept_returns.iter().sum::<f64>() / kept_returns.len() as f64;
        let sigma = (kept_returns.iter().map(|x| (x - mean).powi(2)).sum::<f64>()
            / kept_returns.len() as f64)
            .sqrt();
        if sigma > 1e-12 {
            let scale = c.step_size / (c.top as f64 * sigma);
            for &k in kept {
                let diff = plus_minus[k].0 - plus_minus[k].1;
                for (m, d) in self.policy.weights.iter_mut().zip(&deltas[k]) {
                    *m += scale * diff * d;
                }
            }
        }
        if c.normalize {
            merge_stats(&mut self.stats, &iteration_stats);
            self.policy.obs_mean = self.stats.mean.clone();
            self.policy.obs_std = self.stats.std();
        }
        let perturbed = &r.returns[..2 * nd];
        let eval = &r.returns[2 * nd..];
        Ok(IterationReport {
            iteration: self.iteration,
            eval_return: if eval.is_empty() {
                f64::NAN
            } else {
                eval.iter().sum::<f64>() / eval.len() as f64
            },
            perturbed_mean: perturbed.iter().sum::<f64>() / perturbed.len() as f64,
            perturbed_max: perturbed.iter().cloned().fold(f64::NEG_INFINITY, f64::max),
            episodes: self.episodes,
            env_steps: self.env_steps,
            seconds: self.started.elapsed().as_secs_f64(),
        })
    }

    /// Mean return of the current policy over one episode per world of the
    /// batch, from seed `seed`.
    pub fn evaluate(&mut self, seed: u64) -> Result<f64, EnvError> {
        let n = self.env.num_envs();
        let refs: Vec<&[f64]> = (0..n).map(|_| self.policy.weights.as_slice()).collect();
        let seeds: Vec<u64> = (0..n).map(|w| world_seed(seed, w)).collect();
        let r = rollout(&mut self.env, &self.policy, &refs, &seeds, None)?;
        Ok(r.returns.iter().sum::<f64>() / n as f64)
    }
}

/// Merges `b` into `a` (Chan et al.'s parallel variance update).
fn merge_stats(a: &mut ObsStats, b: &ObsStats) {
    if b.count == 0.0 {
        return;
    }
    let n = a.count + b.count;
    for k in 0..a.mean.len() {
        let d = b.mean[k] - a.mean[k];
        a.m2[k] += b.m2[k] + d * d * a.count * b.count / n;
        a.mean[k] += d * b.count / n;
    }
    a.count = n;
}

/// Writes the learning curve (return of the unperturbed policy and mean
/// return of the perturbed ones, per iteration) as an SVG; `baseline`, if
/// given, is drawn as a dashed horizontal line with its label.
pub fn plot_learning_curve(
    reports: &[IterationReport],
    title: &str,
    baseline: Option<(f64, &str)>,
    path: &std::path::Path,
) -> Result<(), String> {
    use plotters::prelude::*;
    if reports.is_empty() {
        return Err("no iteration to plot".into());
    }
    let e = |x: &dyn std::fmt::Display| format!("{}: {x}", path.display());
    let ys = reports
        .iter()
        .flat_map(|r| [r.eval_return, r.perturbed_mean])
        .chain(baseline.map(|b| b.0))
        .filter(|y| y.is_finite());
    let (mut lo, mut hi) = ys.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), y| {
        (a.min(y), b.max(y))
    });
    if lo >= hi {
        lo -= 1.0;
        hi += 1.0;
    }
    let pad = 0.05 * (hi - lo);
    let xmax = reports.last().map_or(1, |r| r.iteration).max(2) as f64;
    let root = SVGBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 18))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(1.0..xmax, (lo - pad)..(hi + pad))
        .map_err(|x| e(&x))?;
    chart
        .configure_mesh()
        .x_desc("iteration")
        .y_desc("episode return")
        .draw()
        .map_err(|x| e(&x))?;
    let eval: Vec<(f64, f64)> = reports
        .iter()
        .map(|r| (r.iteration as f64, r.eval_return))
        .collect();
    chart
        .draw_series(LineSeries::new(eval, BLUE.stroke_width(2)))
        .map_err(|x| e(&x))?
        .label("policy (mean over evaluation episodes)")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLUE.stroke_width(2)));
    let perturbed: Vec<(f64, f64)> = reports
        .iter()
        .map(|r| (r.iteration as f64, r.perturbed_mean))
        .collect();
    chart
        .draw_series(LineSeries::new(perturbed, RED.stroke_width(1)))
        .map_err(|x| e(&x))?
        .label("perturbed policies (mean)")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], RED));
    if let Some((y, label)) = baseline {
        chart
            .draw_series(DashedLineSeries::new(
                vec![(1.0, y), (xmax, y)],
                6,
                4,
                BLACK.stroke_width(1),
            ))
            .map_err(|x| e(&x))?
            .label(label.to_string())
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .position(SeriesLabelPosition::LowerRight)
        .draw()
        .map_err(|x| e(&x))?;
    root.present().map_err(|x| e(&x))?;
    Ok(())
}

/// Mean return of `count` random linear policies (weights i.i.d.
/// `N(0, scale²)` on the raw observations, no normalization), one episode
/// each, run `nenv` at a time: the baseline ARS must beat. Also returns the
/// best single episode return.
pub fn random_policy_returns<T: Task + Clone>(
    task: &T,
    count: usize,
    nenv: usize,
    scale: f64,
    seed: u64,
    backend: Backend,
) -> Result<Vec<f64>, EnvError> {
    let options = VecEnvOptions {
        backend,
        autoreset: false,
        params: None,
    };
    let mut env = VecEnv::new(task.clone(), nenv, &options)?;
    let policy = LinearPolicy::zeros(env.obs_dim(), env.action_dim());
    let mut rng = Rng::new(seed);
    let mut out = Vec::with_capacity(count);
    let mut batch = 0u64;
    while out.len() < count {
        let weights: Vec<Vec<f64>> = (0..nenv)
            .map(|_| {
                (0..policy.weights.len())
                    .map(|_| scale * rng.normal())
                    .collect()
            })
            .collect();
        let refs: Vec<&[f64]> = weights.iter().map(|w| w.as_slice()).collect();
        let seeds: Vec<u64> = (0..nenv)
            .map(|w| world_seed(seed.wrapping_add(1000 + batch), w))
            .collect();
        let r = rollout(&mut env, &policy, &refs, &seeds, None)?;
        out.extend(r.returns.iter().take(count - out.len()));
        batch += 1;
    }
    Ok(out)
}
