//! Criterion benches of `ncp-admm`'s finishers on problems harvested from
//! simulations (every 10th step after the first 300), each solved from the
//! warm start the simulator gave it, with the dense `G`: as the simulator
//! solves (warm start, active-set polish, Newton where the polish fails,
//! then ADMM), with the polish alone (`newton: false`), and with neither
//! (`polish: false`, ADMM from the warm start). Built-in scenes and, when
//! `scripts/fetch-robot-files` has run, Gymnasium's humanoid and ant lying
//! passive. Each bench solves the whole set once per iteration.
//!
//! `scaled_rho/…`: the problems of `tests/data` whose rows' scales differ
//! (robosuite's UR5e: scaled from the start; Gymnasium's humanoid lying:
//! scaled at the first stall), solved with ρ scaled per row
//! (`SolverSettings::scaled_rho`, the default) and with one ρ.
//!
//! `cargo bench --bench finishers`

#[path = "../tests/common/mod.rs"]
mod common;

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, Criterion, criterion_group, criterion_main};
use moreau::contact::{ContactProblem, ContactSolution, SolverKind, SolverSettings};
use moreau::scenes::{self, Scene};
use moreau::sim::SimParams;
use std::time::Duration;

fn scenes_to_bench() -> Vec<Scene> {
    let mut out: Vec<Scene> = ["pyramid", "cube-stack", "quadruped"]
        .iter()
        .map(|n| scenes::scene(n).unwrap())
        .collect();
    out.push(scenes::box_grid(3).unwrap());
    out.extend(common::gymnasium_scenes(&["humanoid.xml", "ant.xml"]));
    out
}

fn harvest(scene: &Scene) -> Vec<ContactProblem> {
    let params = SimParams {
        dt: scene.dt,
        ..Default::default()
    };
    scenes::harvest(scene, params, 800, 10, None)
        .unwrap()
        .into_iter()
        .skip(30)
        .collect()
}

/// One bench: `ncp-admm` solving every problem of `problems` at `settings`.
fn bench_solves(
    group: &mut BenchmarkGroup<'_, WallTime>,
    label: &str,
    problems: &[ContactProblem],
    settings: &SolverSettings,
) {
    let mut solver = SolverKind::NcpAdmm.build();
    let mut out = ContactSolution::default();
    group.bench_function(label, |b| {
        b.iter(|| {
            let mut converged = 0;
            for p in problems {
                solver.solve(p, settings, &mut out).unwrap();
                converged += usize::from(out.stats.converged);
            }
            converged
        })
    });
}

fn finishers(c: &mut Criterion) {
    for scene in scenes_to_bench() {
        let problems = harvest(&scene);
        if problems.is_empty() {
            continue;
        }
        let rows = problems.iter().map(|p| p.m()).sum::<usize>() / problems.len();
        let mut group = c.benchmark_group(format!(
            "finishers/{}-{}problems-{}rows",
            scene.name,
            problems.len(),
            rows
        ));
        group
            .warm_up_time(Duration::from_millis(500))
            .measurement_time(Duration::from_secs(2));
        for (label, polish, newton) in [
            ("polish+newton", true, true),
            ("polish", true, false),
            ("admm", false, false),
        ] {
            let settings = SolverSettings {
                polish,
                newton,
                ..Default::default()
            };
            bench_solves(&mut group, label, &problems, &settings);
        }
        group.finish();
    }
}

fn scaled_rho(c: &mut Criterion) {
    for file in ["ur5e_spread_diagonal", "humanoid_lying_stall"] {
        let path = format!("{}/tests/data/{file}.json", env!("CARGO_MANIFEST_DIR"));
        let problems = moreau::contact::io::read_problems(&path).unwrap();
        let mut group = c.benchmark_group(format!("scaled_rho/{file}-{}problems", problems.len()));
        group
            .warm_up_time(Duration::from_millis(500))
            .measurement_time(Duration::from_secs(2));
        for (label, scaled_rho) in [("scaled", true), ("one-rho", false)] {
            let settings = SolverSettings {
                scaled_rho,
                ..Default::default()
            };
            bench_solves(&mut group, label, &problems, &settings);
        }
        group.finish();
    }
}

criterion_group!(benches, finishers, scaled_rho);
criterion_main!(benches);
