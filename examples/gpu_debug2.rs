use moreau::contact::*;
use moreau::gpu::*;
use moreau::scenes;
use moreau::sim::SimParams;
fn main() {
    let tol: f64 = std::env::args().nth(1).unwrap().parse().unwrap();
    let mut sets: Vec<(String, ContactProblem)> = vec![];
    for (name, steps, every) in [
        ("cube-resting", 60, 20),
        ("cube-sliding", 60, 20),
        ("quadruped", 400, 100),
    ] {
        let scene = scenes::scene(name).unwrap();
        for (k, mut p) in moreau::study::harvest(&scene, SimParams::default(), steps, every, None)
            .unwrap()
            .into_iter()
            .enumerate()
        {
            p.warm_start.fill(0.0);
            sets.push((format!("{name}#{k}"), p));
        }
    }
    for r in [1.0, 1e3, 1e6] {
        sets.push((
            format!("stack {r:e}"),
            moreau::study::stacked_cubes_problem(r).unwrap(),
        ));
    }
    let problems: Vec<_> = sets.iter().map(|s| s.1.clone()).collect();
    let ctx = GpuContext::new().unwrap();
    let set = SolverSettings {
        tolerance: tol,
        max_iterations: 2000,
        ..Default::default()
    };
    for kind in [
        SolverKind::LcpPgs,
        SolverKind::CcpPgs,
        SolverKind::NcpPgs,
        SolverKind::CcpAdmm,
        SolverKind::NcpAdmm,
    ] {
        let mut s = GpuSolver::new(&ctx, kind, BatchCapacity::uniform(problems.len(), 64)).unwrap();
        let mut out = BatchOutput::default();
        let t = std::time::Instant::now();
        s.solve(&problems, &set, &mut out).unwrap();
        println!("== {} time {:?}", kind.name(), t.elapsed());
        let mut cpu = kind.build();
        for i in 0..problems.len() {
            let mut sol = ContactSolution::default();
            cpu.solve(&problems[i], &set, &mut sol).unwrap();
            let o = out.problem(i);
            let l = o.lambda_f64();
            let rel = (&l - &sol.lambda).norm() / sol.lambda.norm().max(1e-300);
            let model = moreau::study::solver_model(kind, &set).unwrap();
            let mut c = vec![0.0; problems[i].g.len()];
            problems[i].contact_velocity(l.as_slice(), &mut c);
            let e64 = model_residuals(model, &problems[i].mu, l.as_slice(), &c).eps_abs;
            println!(
                "{:18} nc {:2} gpu it {:5} fl {} eps {:.2e} e64 {:.2e} | cpu it {:5} conv {} eps {:.2e} | rel {:.2e} |l| {:.2e} |g| {:.2e} maxG {:.2e}",
                sets[i].0,
                problems[i].nc(),
                o.result.iterations,
                o.result.flags,
                o.result.eps_abs,
                e64,
                sol.stats.iterations,
                sol.stats.converged,
                sol.stats.residuals.eps_abs,
                rel,
                sol.lambda.norm(),
                problems[i].g.amax(),
                problems[i].delassus.amax()
            );
        }
    }
}
