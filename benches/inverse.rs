//! Criterion benches of one inverse-dynamics call per formulation
//! (`moreau::inverse`: no-slip, Coulomb by Lemke, two-stage, the NCP by
//! Gauss–Newton through the step) against the number of contacts (1 to
//! 16: `scenes::legged`, a box on that many actuated legs), beside one
//! forward step of the same scene; and on the standing quadruped. One
//! core; solver tolerance 1e-10.
//!
//! `cargo bench --bench inverse`

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use moreau::inverse::{Formulation, InverseDynamics, InverseSettings};
use moreau::scenes::{self, Scene};
use moreau::sim::{SimParams, Simulator};
use std::time::Duration;

fn params(scene: &Scene) -> SimParams {
    let mut p = SimParams {
        dt: scene.dt,
        ..Default::default()
    };
    p.solver_settings.tolerance = 1e-10;
    p
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("inverse");
    group
        .measurement_time(Duration::from_secs(2))
        .warm_up_time(Duration::from_millis(300))
        .sample_size(20);
    let mut scenes: Vec<Scene> = [1, 2, 4, 8, 16]
        .into_iter()
        .map(|k| scenes::legged(k).unwrap())
        .collect();
    scenes.push(scenes::scene("quadruped").unwrap());
    for scene in &scenes {
        let p = params(scene);
        let mut id = InverseDynamics::new(scene.model.clone(), p, None).unwrap();
        let zero = vec![0.0; id.actuated().len()];
        let tau = vec![0.0; scene.model.nv];
        let mut sim = Simulator::new(scene.model.clone(), p).unwrap();
        let contacts = {
            let mut s = scene.state.clone();
            sim.step(&mut s, &tau).unwrap().nc
        };
        let label = format!("{} ({contacts} contacts)", scene.name);
        group.bench_function(BenchmarkId::new("forward step", &label), |b| {
            b.iter(|| {
                let mut s = scene.state.clone();
                sim.step(&mut s, &tau).unwrap()
            })
        });
        for formulation in Formulation::ALL {
            let settings = InverseSettings {
                formulation,
                ..Default::default()
            };
            if id.solve(&scene.state, &zero, &settings).is_err() {
                eprintln!(
                    "{label}: {} has no answer here; not timed",
                    formulation.name()
                );
                continue;
            }
            group.bench_function(BenchmarkId::new(formulation.name(), &label), |b| {
                b.iter(|| id.solve(&scene.state, &zero, &settings).unwrap())
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
