//! Criterion benches of a whole step with `ncp-admm`, `G` formed and
//! factorized densely against kept as its factors (the tree path,
//! [`moreau::contact::TreeDelassus`]), on built-in scenes and, when
//! `scripts/fetch-robot-files` has run, Gymnasium's robots lying passive.
//! Each scene first runs 500 steps (the robots fall and settle), then the
//! bench steps on from there. What sets `moreau::sim::TREE_ROWS_PER_DOF`.
//!
//! `cargo bench --bench tree_delassus`

#[path = "../tests/common/mod.rs"]
mod common;

use criterion::{Criterion, criterion_group, criterion_main};
use moreau::scenes::{self, Scene};
use moreau::sim::{DelassusPath, SimParams, Simulator};
use nalgebra::DVector;
use std::time::Duration;

fn scenes_to_bench() -> Vec<Scene> {
    let mut out: Vec<Scene> = ["pyramid", "cube-stack", "cube-resting", "quadruped"]
        .iter()
        .map(|n| scenes::scene(n).unwrap())
        .collect();
    out.push(scenes::box_grid(3).unwrap());
    // The tests' lookup of the robot files (without them: the built-in scenes only).
    out.extend(common::gymnasium_scenes(&[
        "humanoid.xml",
        "ant.xml",
        "walker2d_v5.xml",
        "hopper.xml",
    ]));
    out
}

fn steps(c: &mut Criterion) {
    for scene in scenes_to_bench() {
        let mut group = c.benchmark_group(format!("step/{}-nv{}", scene.name, scene.model.nv));
        group
            .warm_up_time(Duration::from_millis(500))
            .measurement_time(Duration::from_secs(2));
        for (label, path) in [("dense", DelassusPath::Dense), ("tree", DelassusPath::Tree)] {
            let params = SimParams {
                dt: scene.dt,
                delassus: path,
                ..Default::default()
            };
            let mut sim = Simulator::new(scene.model.clone(), params).unwrap();
            let mut state = scene.state.clone();
            let mut tau = DVector::zeros(scene.model.nv);
            let mut step = |sim: &mut Simulator, state: &mut moreau::State| {
                scene.control(state, tau.as_mut_slice());
                sim.step(state, tau.as_slice()).unwrap()
            };
            let mut rows = 0;
            for _ in 0..500 {
                let r = step(&mut sim, &mut state);
                rows = 3 * r.nc + r.nl;
            }
            group.bench_function(format!("{label}-m{rows}"), |b| {
                b.iter(|| step(&mut sim, &mut state))
            });
        }
        group.finish();
    }
}

criterion_group!(benches, steps);
criterion_main!(benches);
