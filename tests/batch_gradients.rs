//! Reverse mode on batches: `BatchSim::step_for_vjp` records each world's
//! step and `BatchSim::vjp` applies its transpose to adjoints.
//!
//! - On the CPU backends the products equal the transposed full Jacobians
//!   of `step_with_jacobians` at the same states (1e-9 relative; measured
//!   3e-15), on the quadruped under random torques (feet sticking, sliding
//!   and breaking), a cube sliding and the cart-pole (no contacts); a
//!   record serves any number of adjoints.
//! - On the GPU backend (lavapipe in CI, `MOREAU_REQUIRE_GPU=1`) the
//!   impulses are the f32 kernel's and the contact stage's transposed
//!   solves run in the f32 VJP kernel. The products equal the same
//!   record's f64 products within 1e-3 (measured 3e-6 on the quadruped,
//!   4e-4 on resting cubes, whose `G` is singular), and the CPU backend's
//!   at the same states within 1e-3 (measured 2e-5 and 4e-4), on the worlds
//!   whose f32 solve converged and whose contacts were read in the same
//!   modes: a contact at a mode boundary (a corner about to lift) has
//!   one-sided derivatives, and the f32 and f64 impulses may pick either
//!   side. Those worlds are counted and printed, and must stay a minority.
//!   The GPU backend's forward Jacobians (`step_with_jacobians`) give the
//!   products of a tape recorded from the same states and cold starts
//!   within 1e-8 (measured 6e-10).

use moreau::batch::{Backend, BatchOptions, BatchSim, GPU_MIN_TOLERANCE};
use moreau::scenes::Scene;
use moreau::sim::{SimParams, StepVjp};

fn options(scene: &Scene, backend: Backend, tolerance: f64) -> BatchOptions {
    let mut params = SimParams {
        dt: scene.dt,
        ..Default::default()
    };
    params.solver_settings.tolerance = tolerance;
    params.solver_settings.max_iterations = 5000;
    BatchOptions {
        backend,
        params,
        ..Default::default()
    }
}

/// Per-world torques at step `k` (deterministic, different per world).
fn torques(nv: usize, n: usize, k: usize, scale: f64) -> Vec<f64> {
    (0..n * nv)
        .map(|i| {
            scale * ((i % nv + 1) as f64 * 0.7 + (i / nv) as f64 * 1.3 + k as f64 * 0.37).sin()
        })
        .collect()
}

fn adjoint(n: usize, seed: f64) -> Vec<f64> {
    (0..n).map(|i| (seed + 1.7 * i as f64).cos()).collect()
}

/// `‖a − b‖∞ / max(‖b‖∞, floor)`.
fn rel(a: &[f64], b: &[f64], floor: f64) -> f64 {
    let d = a
        .iter()
        .zip(b)
        .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
    d / b.iter().fold(floor, |m, y| m.max(y.abs()))
}

/// A batch of `scene` after `warmup` steps of random torques.
fn batch_after(
    scene: &Scene,
    backend: Backend,
    tol: f64,
    n: usize,
    warmup: usize,
) -> Option<BatchSim> {
    let nv = scene.model.nv;
    let mut batch = match BatchSim::new(
        scene.model.clone(),
        &scene.state,
        n,
        &options(scene, backend, tol),
    ) {
        Ok(b) => b,
        Err(e) if backend.uses_gpu() => {
            assert!(
                std::env::var("MOREAU_REQUIRE_GPU").as_deref() != Ok("1"),
                "GPU backend required (MOREAU_REQUIRE_GPU=1): {e}"
            );
            eprintln!("SKIPPED (no GPU): {e}");
            return None;
        }
        Err(e) => panic!("{e}"),
    };
    for k in 0..warmup {
        let r = batch.step(&torques(nv, n, k, 2.0)).unwrap();
        assert!(r.failed.is_empty(), "{:?}", r.failed);
    }
    Some(batch)
}

#[test]
fn recorded_vjps_equal_the_transposed_jacobians_on_the_cpu() {
    for (name, warmup) in [("quadruped", 250), ("cube-sliding", 3), ("cartpole", 10)] {
        let scene = moreau::scenes::scene(name).unwrap();
        let (n, nv) = (6, scene.model.nv);
        for backend in [Backend::CpuSingle, Backend::CpuParallel] {
            let mut a = batch_after(&scene, backend, 1e-12, n, warmup).unwrap();
            let mut b = batch_after(&scene, backend, 1e-12, n, warmup).unwrap();
            let tau = torques(nv, n, warmup, 2.0);
            a.step_with_jacobians(&tau, None).unwrap();
            let (_, mut tape) = b.step_for_vjp(&tau, None).unwrap();
            assert_eq!(tape.nworlds(), n);
            let mut worst = 0.0f64;
            let (mut contacts, mut with_q) = (0, 0);
            for seed in [0.3, 2.1] {
                let (w_v, w_q) = (adjoint(n * nv, seed), adjoint(n * nv, seed + 5.0));
                let got = b.vjp(&mut tape, &w_v, &w_q).unwrap();
                for w in 0..n {
                    let jac = a.jacobians(w).unwrap().expect("asked for");
                    contacts += jac.modes().len();
                    let (wv, wq) = (&w_v[w * nv..(w + 1) * nv], &w_q[w * nv..(w + 1) * nv]);
                    // The explicit transposes of the full Jacobians.
                    let (wv, wq) = (
                        nalgebra::DVector::from_column_slice(wv),
                        nalgebra::DVector::from_column_slice(wq),
                    );
                    let v = jac.dv_dv.tr_mul(&wv) + jac.dq_dv.tr_mul(&wq);
                    let tau = jac.dv_dtau.tr_mul(&wv) + jac.dq_dtau.tr_mul(&wq);
                    let q = jac.dv_dq.tr_mul(&wv) + jac.dq_dq.tr_mul(&wq);
                    let mu = jac.dv_dmu.tr_mul(&wv) + jac.dq_dmu.tr_mul(&wq);
                    let s = w * nv..(w + 1) * nv;
                    assert_eq!(got.wrt_q[w], jac.wrt_q);
                    // (`q` where it is differentiated: otherwise the
                    // Jacobians' q columns are unspecified.)
                    with_q += usize::from(jac.wrt_q);
                    let errs = [
                        rel(&got.v[s.clone()], v.as_slice(), 1e-3),
                        rel(&got.tau[s.clone()], tau.as_slice(), 1e-3),
                        if jac.wrt_q {
                            rel(&got.q[s.clone()], q.as_slice(), 1e-3)
                        } else {
                            0.0
                        },
                        rel(&got.mu[w], mu.as_slice(), 1e-3),
                    ];
                    assert!(
                        errs.iter().all(|&e| e < 1e-9),
                        "{name} {backend:?} world {w}: v, τ, q, μ relative errors {errs:?}"
                    );
                    worst = errs.iter().fold(worst, |m, &e| m.max(e));
                    // The forward record's own vjp is the same transposes.
                    let mut own = StepVjp::default();
                    let mut jac = jac.clone();
                    jac.vjp(wv.as_slice(), wq.as_slice(), &mut own).unwrap();
                    assert!(rel(own.tau.as_slice(), tau.as_slice(), 1e-3) < 1e-12);
                    if jac.wrt_q {
                        assert!(rel(own.q.as_slice(), q.as_slice(), 1e-3) < 1e-12);
                    }
                }
            }
            println!(
                "{name} {backend:?}: worst relative difference {worst:.2e}, {contacts} contact blocks, \
                 {with_q} of {} world records with q",
                2 * n
            );
            assert!(
                with_q > 0,
                "{name}: the test must differentiate q somewhere"
            );
            if name != "cartpole" {
                assert!(contacts > 0, "{name}: the test must see contacts");
            }
        }
    }
}

#[test]
fn a_batch_without_a_record_or_with_wrong_adjoints_is_refused() {
    let scene = moreau::scenes::scene("cartpole").unwrap();
    let (n, nv) = (3, scene.model.nv);
    let mut b = batch_after(&scene, Backend::CpuParallel, 1e-12, n, 0).unwrap();
    let (_, mut tape) = b.step_for_vjp(&vec![0.0; n * nv], None).unwrap();
    let e = b
        .vjp(&mut tape, &vec![0.0; n * nv - 1], &vec![0.0; n * nv])
        .unwrap_err();
    assert!(
        e.to_string().contains("w_v") && e.to_string().contains("expected"),
        "{e}"
    );
    let mut other = batch_after(&scene, Backend::CpuParallel, 1e-12, n + 1, 0).unwrap();
    let e = other
        .vjp(
            &mut tape,
            &vec![0.0; (n + 1) * nv],
            &vec![0.0; (n + 1) * nv],
        )
        .unwrap_err();
    assert!(e.to_string().contains("tape of 3 worlds"), "{e}");
    // A world that sat the step out passes its adjoints through.
    let active = [true, false, true];
    let (_, mut tape) = b.step_for_vjp(&vec![0.1; n * nv], Some(&active)).unwrap();
    assert!(tape.world(1).is_none() && tape.world(0).is_some());
    let w = adjoint(n * nv, 0.5);
    let got = b.vjp(&mut tape, &w, &w).unwrap();
    assert_eq!(&got.v[nv..2 * nv], &w[nv..2 * nv]);
    assert!(got.tau[nv..2 * nv].iter().all(|&x| x == 0.0));
}

#[test]
fn gpu_recorded_vjps_equal_the_cpus_within_f32_tolerance() {
    for (name, warmup, torque) in [("quadruped", 250, 2.0), ("cube-resting", 2, 0.5)] {
        let scene = moreau::scenes::scene(name).unwrap();
        let (n, nv) = (16, scene.model.nv);
        let Some(mut gpu) = batch_after(&scene, Backend::GpuSolve, GPU_MIN_TOLERANCE, n, warmup)
        else {
            return;
        };
        // The CPU batch at the GPU worlds' states.
        let mut cpu = batch_after(&scene, Backend::CpuParallel, 1e-12, n, 0).unwrap();
        for w in 0..n {
            cpu.set_state(w, gpu.state(w).unwrap().clone()).unwrap();
        }
        let tau = torques(nv, n, warmup, torque);
        let before: Vec<_> = (0..n).map(|w| gpu.state(w).unwrap().clone()).collect();
        let (report, mut gpu_tape) = gpu.step_for_vjp(&tau, None).unwrap();
        assert!(report.failed.is_empty() && report.fallbacks.is_empty());
        assert!(report.contacts > 0, "{name}: the test must see contacts");
        let (_, mut cpu_tape) = cpu.step_for_vjp(&tau, None).unwrap();
        let (w_v, w_q) = (adjoint(n * nv, 0.9), adjoint(n * nv, 3.3));
        let on_gpu = gpu.vjp(&mut gpu_tape, &w_v, &w_q).unwrap();
        assert!(
            on_gpu.gpu_fallbacks.is_empty(),
            "{:?}",
            on_gpu.gpu_fallbacks
        );
        let on_cpu = cpu.vjp(&mut cpu_tape, &w_v, &w_q).unwrap();
        // The same GPU record with the contact stage solved in f64.
        let mut kernel = 0.0f64;
        let mut backends = 0.0f64;
        let (mut unconverged, mut other_side) = (0, 0);
        for w in 0..n {
            let s = w * nv..(w + 1) * nv;
            let mut own = StepVjp::default();
            let mut rec = gpu_tape.world(w).unwrap().clone();
            rec.vjp(&w_v[s.clone()], &w_q[s.clone()], &mut own).unwrap();
            for (got, f64_twin) in [
                (&on_gpu.tau, &own.tau),
                (&on_gpu.v, &own.v),
                (&on_gpu.q, &own.q),
            ] {
                kernel = kernel.max(rel(&got[s.clone()], f64_twin.as_slice(), 1e-3));
            }
            // A world whose f32 solve stopped short of the tolerance
            // stepped elsewhere than the CPU's: its derivatives are those of
            // its own impulses.
            if !gpu.simulator(w).unwrap().solution().stats.converged {
                unconverged += 1;
                continue;
            }
            // A contact at a mode boundary (a corner about to lift, its
            // impulse zero in one solution and rounding in the other) has
            // one-sided derivatives: the two backends may pick either side.
            if gpu_tape.world(w).unwrap().modes() != cpu_tape.world(w).unwrap().modes() {
                other_side += 1;
                continue;
            }
            for (got, reference) in [
                (&on_gpu.tau, &on_cpu.tau),
                (&on_gpu.v, &on_cpu.v),
                (&on_gpu.q, &on_cpu.q),
            ] {
                backends = backends.max(rel(&got[s.clone()], &reference[s.clone()], 1e-3));
            }
        }
        // The GPU backend's forward Jacobians: from the same states and cold
        // starts, the same f32 impulses, so their transposed products are
        // those of a tape recorded alike.
        let fresh = |before: &[moreau::sim::State]| {
            let mut b = batch_after(&scene, Backend::GpuSolve, GPU_MIN_TOLERANCE, n, 0).unwrap();
            for (w, state) in before.iter().enumerate() {
                b.set_state(w, state.clone()).unwrap();
            }
            b
        };
        let mut forward_batch = fresh(&before);
        forward_batch.step_with_jacobians(&tau, None).unwrap();
        let (_, cold_tape) = fresh(&before).step_for_vjp(&tau, None).unwrap();
        let mut forward = 0.0f64;
        for w in 0..n {
            let jac = forward_batch.jacobians(w).unwrap().expect("asked for");
            let rec = cold_tape.world(w).unwrap();
            assert_eq!(jac.modes(), rec.modes(), "world {w}");
            let s = w * nv..(w + 1) * nv;
            let (mut theirs, mut own) = (StepVjp::default(), StepVjp::default());
            jac.clone()
                .vjp(&w_v[s.clone()], &w_q[s.clone()], &mut theirs)
                .unwrap();
            rec.clone()
                .vjp(&w_v[s.clone()], &w_q[s.clone()], &mut own)
                .unwrap();
            forward = forward.max(rel(theirs.tau.as_slice(), own.tau.as_slice(), 1e-3));
            forward = forward.max(rel(theirs.v.as_slice(), own.v.as_slice(), 1e-3));
        }
        assert!(forward < 1e-8, "{name}: forward Jacobians {forward:e}");
        println!(
            "{name}: GPU backend's forward Jacobians against its tape: {forward:.2e}; {} contacts; GPU kernel's ḡ against f64 on the same record: {kernel:.2e}; \
             GPU backend against the CPU backend at the same states: {backends:.2e} \
             ({unconverged} of {n} GPU solves unconverged, {other_side} worlds with modes read \
             on the other side of a boundary; not compared)",
            report.contacts
        );
        assert!(
            unconverged + other_side <= n / 4,
            "{name}: {unconverged} unconverged, {other_side} on other sides"
        );
        assert!(kernel < 1e-3, "{name}: kernel {kernel:e}");
        assert!(backends < 1e-3, "{name}: backends {backends:e}");
    }
}
