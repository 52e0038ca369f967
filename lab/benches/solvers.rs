//! Criterion benches of every solver of the catalog on contact problems
//! harvested from the scenes (4 to 64 contacts), cold and warm started (the
//! simulator's warm start from the previous step). Tolerance 1e-8, at most
//! 1000 iterations: a solver that does not converge is timed at the cap.
//!
//! `cargo bench --bench solvers`; one solver: `cargo bench --bench solvers -- ncp-admm`

use criterion::{Criterion, criterion_group, criterion_main};
use moreau::contact::{ContactProblem, ContactSolution, SolverKind, SolverSettings};
use moreau::scenes;
use moreau_lab::study;
use std::hint::black_box;
use std::time::Duration;

/// (name, problem) pairs: the last problem of a short run of each scene.
fn problems() -> Vec<(String, ContactProblem)> {
    let slide = study::sliding_cube().unwrap();
    let cases = [
        (slide, 100),
        (scenes::scene("quadruped").unwrap(), 600),
        (scenes::cube_stack(1.0).unwrap(), 100),
        (scenes::scene("pyramid").unwrap(), 300),
        (scenes::box_grid(4).unwrap(), 100),
    ];
    cases
        .into_iter()
        .map(|(scene, steps)| {
            let params = study::params(SolverKind::NcpAdmm, scene.dt);
            let p = moreau::scenes::harvest(&scene, params, steps, steps, None)
                .unwrap()
                .pop()
                .expect("contacts");
            (format!("{}-nc{}", scene.name, p.nc()), p)
        })
        .collect()
}

fn solvers(c: &mut Criterion) {
    let settings = SolverSettings {
        tolerance: 1e-8,
        max_iterations: 1000,
        ..Default::default()
    };
    for (name, warm) in problems() {
        let mut cold = warm.clone();
        cold.warm_start.fill(0.0);
        let mut g = c.benchmark_group(&name);
        g.sample_size(10)
            .warm_up_time(Duration::from_millis(300))
            .measurement_time(Duration::from_secs(1));
        for kind in SolverKind::ALL {
            let mut solver = kind.build();
            let mut out = ContactSolution::default();
            for (start, p) in [("cold", &cold), ("warm", &warm)] {
                solver.solve(p, &settings, &mut out).unwrap();
                println!(
                    "{name} {} {start}: {} iterations, converged {}",
                    kind.name(),
                    out.stats.iterations,
                    out.stats.converged
                );
                g.bench_function(format!("{}/{start}", kind.name()), |b| {
                    b.iter(|| solver.solve(black_box(p), &settings, &mut out).unwrap())
                });
            }
        }
        g.finish();
    }
}

/// The per-contact solvers on the many-body problems, with the block
/// coupling the simulator found and with a dense `G` (the same impulses,
/// bit for bit): `cargo bench --bench solvers -- coupling`.
fn coupling(c: &mut Criterion) {
    let settings = SolverSettings {
        tolerance: 1e-8,
        max_iterations: 1000,
        ..Default::default()
    };
    for (name, warm) in problems()
        .into_iter()
        .filter(|(_, p)| !p.coupling.is_dense())
    {
        let mut cold = warm.clone();
        cold.warm_start.fill(0.0);
        let mut dense = cold.clone();
        dense.coupling.clear();
        let mut g = c.benchmark_group(format!("coupling/{name}"));
        g.sample_size(10)
            .warm_up_time(Duration::from_millis(300))
            .measurement_time(Duration::from_secs(1));
        for kind in [SolverKind::NcpPgs, SolverKind::RaisimDs] {
            let mut solver = kind.build();
            let mut out = ContactSolution::default();
            for (g_kind, p) in [("coupled", &cold), ("dense", &dense)] {
                g.bench_function(format!("{}/cold/{g_kind}", kind.name()), |b| {
                    b.iter(|| solver.solve(black_box(p), &settings, &mut out).unwrap())
                });
            }
        }
        g.finish();
    }
}

criterion_group!(benches, solvers, coupling);
criterion_main!(benches);
