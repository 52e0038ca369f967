//! Criterion benches of the batched GPU solvers: batches of random
//! well-posed problems (`moreau::contact::random::random_problem`), 4 / 12 / 48
//! contacts, a fixed 50 iterations, cold starts; one iteration of the bench
//! is upload + solve + download of the whole batch (throughput is reported
//! in problems), for each decomposition the solver has (`gpu-f32` one
//! invocation per problem, `gpu-f32-wg` one workgroup per problem). The
//! same algorithm on one CPU core is benched beside it: the reference in
//! f64, per problem, and (PGS) the kernel's f32 twin over the whole batch.
//! Without an adapter the GPU benches are skipped with a
//! notice. For the full sweep over batch sizes with the stage times and a
//! plot, run `moreau bench solve`.
//!
//! `cargo bench --bench gpu_solvers`; one solver: `cargo bench --bench gpu_solvers -- ncp-admm`

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use moreau::contact::random::random_problem;
use moreau::contact::{ContactSolution, SolverKind, SolverSettings};
use moreau::gpu::{BatchCapacity, BatchOutput, Decomposition, GpuContext, GpuSolver, HostBatch};
use std::hint::black_box;
use std::time::Duration;

fn gpu_solvers(c: &mut Criterion) {
    let settings = SolverSettings {
        tolerance: 1e-30,
        max_iterations: 50,
        ..Default::default()
    };
    let ctx = match GpuContext::new() {
        Ok(ctx) => Some(ctx),
        Err(e) => {
            eprintln!("notice: GPU benches skipped: {e}");
            None
        }
    };
    if let Some(ctx) = &ctx {
        eprintln!("device: {}", ctx.adapter);
    }
    let mut group = c.benchmark_group("gpu_solvers");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_millis(500));
    for kind in [SolverKind::NcpPgs, SolverKind::NcpAdmm] {
        for (nc, batch) in [(4, 1024), (12, 256), (48, 16)] {
            let pool: Vec<_> = (0..16).map(|s| random_problem(s + 1, nc)).collect();
            let problems: Vec<_> = (0..batch).map(|k| pool[k % pool.len()].clone()).collect();
            let cap = BatchCapacity::uniform(batch, nc);
            for d in Decomposition::ALL {
                let Some(ctx) = &ctx else { break };
                if d.check(kind, &cap).is_err() {
                    continue;
                }
                let mut solver = GpuSolver::with_decomposition(ctx, kind, cap, d).unwrap();
                let mut out = BatchOutput::default();
                let tag = match d {
                    Decomposition::Invocation => "gpu-f32",
                    Decomposition::Workgroup => "gpu-f32-wg",
                    Decomposition::Lane => "gpu-f32-lane",
                };
                group.throughput(Throughput::Elements(batch as u64));
                group.bench_function(format!("{}/{tag}/nc{nc}/batch{batch}", kind.name()), |b| {
                    b.iter(|| {
                        solver.solve(&problems, &settings, &mut out).unwrap();
                        black_box(&out.lambda);
                    })
                });
            }
            if moreau::gpu::cpu_f32::has_f32_twin(kind) {
                let mut packed = HostBatch::new(nc);
                for p in &problems {
                    packed.push(p, settings.max_iterations, settings.tolerance);
                }
                let mut out = BatchOutput::default();
                group.throughput(Throughput::Elements(batch as u64));
                group.bench_function(
                    format!("{}/cpu-f32/nc{nc}/batch{batch}", kind.name()),
                    |b| {
                        b.iter(|| {
                            moreau::gpu::cpu_f32::solve_batch_f32(
                                kind, &packed, &settings, &mut out,
                            )
                            .unwrap();
                            black_box(&out.lambda);
                        })
                    },
                );
            }
            let mut cpu = kind.build();
            let mut sol = ContactSolution::default();
            group.throughput(Throughput::Elements(1));
            group.bench_function(format!("{}/cpu-f64/nc{nc}", kind.name()), |b| {
                let mut k = 0;
                b.iter(|| {
                    cpu.solve(&pool[k % pool.len()], &settings, &mut sol)
                        .unwrap();
                    k += 1;
                    black_box(&sol.lambda);
                })
            });
        }
    }
    group.finish();
}

criterion_group!(benches, gpu_solvers);
criterion_main!(benches);
