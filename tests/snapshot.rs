//! A model as bytes and back, and a world's full state (its `State` and
//! warm starts) restored into another batch: both continue bit for bit.

mod common;

use moreau::batch::{Backend, BatchSim};
use moreau::model::Model;
use moreau::sim::{SimParams, Simulator, State, WarmStart};
use std::sync::Arc;

/// `steps` steps of `model` from `state` under torques from `torques(step)`,
/// every state along the way.
fn rollout(
    model: Arc<Model>,
    state: &State,
    dt: f64,
    steps: usize,
    torques: impl Fn(usize) -> Vec<f64>,
) -> Vec<State> {
    let params = SimParams::with_dt(dt);
    let mut sim = Simulator::new(model, params).unwrap();
    let mut s = state.clone();
    (0..steps)
        .map(|k| {
            sim.step(&mut s, &torques(k)).unwrap();
            s.clone()
        })
        .collect()
}

/// Pseudo-random torques in `[-a, a]` (nv), the same for a given step.
fn torques(nv: usize, a: f64) -> impl Fn(usize) -> Vec<f64> {
    move |k| {
        let mut rng = common::Lcg(k as u64 * 7919 + 1);
        rng.vector(nv, -a, a).as_slice().to_vec()
    }
}

fn data_file(name: &str) -> (Arc<Model>, State, f64) {
    let path = format!("{}/tests/data/mujoco/{name}", env!("CARGO_MANIFEST_DIR"));
    let m = moreau::load::mjcf::load_mjcf(
        std::path::Path::new(&path),
        &moreau::load::mjcf::MjcfOptions::default(),
    )
    .unwrap();
    let nv = m.model.nv;
    let state = State::new(m.q0.clone(), nalgebra::DVector::zeros(nv));
    (Arc::new(m.model), state, m.timestep)
}

#[test]
fn models_read_back_from_bytes_equal_and_simulate_alike() {
    let mut cases: Vec<(String, Arc<Model>, State, f64)> = ["quadruped", "pyramid", "arm"]
        .iter()
        .map(|name| {
            let s = moreau::scenes::scene(name).unwrap();
            (name.to_string(), s.model, s.state, s.dt)
        })
        .collect();
    // Tendons (wrapping ones too), equalities, activation dynamics, a
    // height field, pairs.
    for file in [
        "loops.xml",
        "actuators.xml",
        "hfield.xml",
        "constraints.xml",
        "wrapping.xml",
    ] {
        let (model, state, dt) = data_file(file);
        cases.push((file.into(), model, state, dt));
    }
    if let Some(ant) = common::gymnasium("ant.xml") {
        let state = State::new(ant.q0.clone(), nalgebra::DVector::zeros(ant.model.nv));
        cases.push(("ant.xml".into(), Arc::new(ant.model), state, ant.timestep));
    }
    for (name, model, state, dt) in cases {
        let bytes = model.to_bytes();
        let back = Arc::new(Model::from_bytes(&bytes).unwrap_or_else(|e| panic!("{name}: {e}")));
        // Debug prints every field but the colliders, numbers exactly.
        assert_eq!(format!("{model:?}"), format!("{back:?}"), "{name}");
        // The colliders, rebuilt, collide alike: 100 steps bit for bit.
        let tau = torques(model.nv, 2.0);
        let a = rollout(model.clone(), &state, dt, 100, &tau);
        let b = rollout(back, &state, dt, 100, &tau);
        assert_eq!(a, b, "{name}");
        println!("{name}: {} bytes, 100 steps alike", bytes.len());
    }
}

#[test]
fn bad_model_bytes_are_refused_by_name() {
    let model = moreau::scenes::scene("quadruped").unwrap().model;
    let bytes = model.to_bytes();
    for bad in [&bytes[..bytes.len() / 2], b"not a model".as_slice(), &[]] {
        let e = Model::from_bytes(bad).unwrap_err().to_string();
        assert!(e.contains("not a moreau model"), "{e}");
    }
    let mut inconsistent = (*model).clone();
    inconsistent.body_parent[2] = 7;
    let e = Model::from_bytes(&inconsistent.to_bytes())
        .unwrap_err()
        .to_string();
    assert!(e.contains("body 2 has parent 7"), "{e}");
    let mut short = (*model).clone();
    short.dof_damping.pop();
    let e = Model::from_bytes(&short.to_bytes())
        .unwrap_err()
        .to_string();
    assert!(e.contains("dof_damping"), "{e}");
}

/// Steps `batch` `steps` times under the torques of `tau` (all worlds
/// alike), every world's states along the way.
fn steps(
    batch: &mut BatchSim,
    steps: usize,
    from: usize,
    tau: &impl Fn(usize) -> Vec<f64>,
) -> Vec<State> {
    let n = batch.nworlds();
    let mut out = Vec::new();
    for k in from..from + steps {
        let t: Vec<f64> = (0..n).flat_map(|_| tau(k)).collect();
        let report = batch.step(&t).unwrap();
        assert!(report.failed.is_empty());
        out.extend(batch.states().cloned());
    }
    out
}

#[test]
fn a_restored_world_continues_bit_for_bit() {
    for (name, amplitude) in [("quadruped", 1.0), ("pyramid", 0.0), ("cube-sliding", 0.0)] {
        let scene = moreau::scenes::scene(name).unwrap();
        let tau = torques(scene.model.nv, amplitude);
        // The host-prepared GPU path keeps its warm starts on the host
        // (tried on one scene: lavapipe's steps are slow).
        let gpu = name == "cube-sliding";
        let backends = [Backend::CpuParallel, Backend::CpuSingle, Backend::GpuSolve];
        for backend in backends.into_iter().take(if gpu { 3 } else { 2 }) {
            let options = common::batch_options(backend, scene.dt);
            let make = || common::gpu_batch(scene.model.clone(), &scene.state, 2, &options);
            let Some(mut batch) = make() else { continue };
            // (The quadruped lands after 150 steps.)
            steps(&mut batch, 300, 0, &tau);
            let states: Vec<State> = batch.states().cloned().collect();
            let warm: Vec<WarmStart> = (0..2).map(|w| batch.warm_start(w).unwrap()).collect();
            assert!(
                !warm[0].contacts.is_empty(),
                "{name}: contacts to warm-start"
            );
            let expected = steps(&mut batch, 50, 300, &tau);

            // A fresh batch (its worlds swapped) restored continues alike.
            let mut fresh = make().unwrap();
            for w in 0..2 {
                fresh
                    .restore(1 - w, states[w].clone(), warm[w].clone())
                    .unwrap();
            }
            let got = steps(&mut fresh, 50, 300, &tau);
            for (k, (e, g)) in expected.chunks(2).zip(got.chunks(2)).enumerate() {
                assert_eq!(
                    (&e[0], &e[1]),
                    (&g[1], &g[0]),
                    "{name} on {backend:?}: step {k}"
                );
            }
            // The state alone (warm starts dropped) need not continue alike:
            // the solves start elsewhere and stop within their tolerance.
            let mut cold = make().unwrap();
            cold.set_state(0, states[0].clone()).unwrap();
            let cold_states = steps(&mut cold, 50, 300, &tau);
            let gap = (0..50)
                .map(|k| (&cold_states[2 * k].q - &expected[2 * k].q).amax())
                .fold(0.0, f64::max);
            println!(
                "{name} on {backend:?}: restored exactly; from the state alone within {gap:.1e}"
            );
        }
    }
}

#[test]
fn bad_warm_starts_are_refused_and_leave_the_world_untouched() {
    let scene = moreau::scenes::scene("quadruped").unwrap();
    let options = common::batch_options(Backend::CpuSingle, scene.dt);
    let mut batch = BatchSim::new(scene.model.clone(), &scene.state, 1, &options).unwrap();
    steps(&mut batch, 300, 0, &torques(scene.model.nv, 1.0));
    let (state, warm) = (
        batch.state(0).unwrap().clone(),
        batch.warm_start(0).unwrap(),
    );
    let mut moved = state.clone();
    moved.q[2] += 0.1;

    let mut short = warm.clone();
    short.limits.pop();
    let mut far = warm.clone();
    far.contacts[0].0.geom_b = 999;
    let mut infinite = warm.clone();
    infinite.contacts[0].1[1] = f64::INFINITY;
    let mut rho = warm.clone();
    rho.rho = Some(-1.0);
    let mut scale = warm.clone();
    scale.finisher_scale = 7;
    for (bad, says) in [
        (short, "joint-stop"),
        (far, "geometries"),
        (infinite, "not finite"),
        (rho, "ρ must be positive"),
        (scale, "finisher scale 7"),
    ] {
        let e = batch
            .restore(0, moved.clone(), bad)
            .unwrap_err()
            .to_string();
        assert!(e.contains(says), "{e}");
        assert_eq!(batch.state(0).unwrap(), &state);
        assert_eq!(
            format!("{:?}", batch.warm_start(0).unwrap()),
            format!("{warm:?}")
        );
    }
    let mut nan = moved.clone();
    nan.v[0] = f64::NAN;
    assert!(batch.restore(0, nan, warm.clone()).is_err());
    assert_eq!(batch.state(0).unwrap(), &state);
    assert!(batch.restore(3, moved.clone(), warm.clone()).is_err());
    batch.restore(0, moved.clone(), warm).unwrap();
    assert_eq!(batch.state(0).unwrap(), &moved);
}

#[test]
fn worlds_living_on_the_device_refuse_their_warm_starts_by_name() {
    let scene = moreau::scenes::scene("cartpole").unwrap();
    let options = common::batch_options(Backend::Gpu, scene.dt);
    let Some(mut batch) = common::gpu_batch(scene.model.clone(), &scene.state, 2, &options) else {
        return;
    };
    assert!(batch.is_resident(), "{:?}", batch.notice());
    let e = batch.warm_start(0).unwrap_err().to_string();
    assert!(e.contains("living on the device"), "{e}");
    let state = batch.state(0).unwrap().clone();
    let e = batch
        .restore(0, state, WarmStart::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("living on the device"), "{e}");
}

/// Gymnasium's ant under fixed random controls with half its friction:
/// its solves reach the Newton finisher, whose regularization scale is
/// carried from solve to solve (part of the warm start).
#[test]
fn a_restored_ant_on_slippery_ground_continues_bit_for_bit() {
    let Some(ant) = common::gymnasium("ant.xml") else {
        return;
    };
    let (nu, model) = (ant.model.nu(), Arc::new(ant.model));
    let state = State::new(ant.q0.clone(), nalgebra::DVector::zeros(model.nv));
    let mut options = common::batch_options(Backend::CpuSingle, ant.timestep);
    options.params.friction_scale = 0.5;
    // (Seeds whose runs differ when the scale is not restored: 7 of 29
    // seeds do.)
    for seed in [1, 4, 9] {
        let ctrl = common::Lcg(seed).vector(nu, -1.0, 1.0).as_slice().to_vec();
        let mut batch = BatchSim::new(model.clone(), &state, 1, &options).unwrap();
        let run = |batch: &mut BatchSim, n: usize| -> Vec<State> {
            (0..n)
                .map(|_| {
                    assert!(batch.step_controls(&ctrl).unwrap().failed.is_empty());
                    batch.state(0).unwrap().clone()
                })
                .collect()
        };
        run(&mut batch, 200);
        let (s, warm) = (
            batch.state(0).unwrap().clone(),
            batch.warm_start(0).unwrap(),
        );
        let expected = run(&mut batch, 50);
        let mut fresh = BatchSim::new(model.clone(), &state, 1, &options).unwrap();
        fresh.restore(0, s, warm).unwrap();
        assert_eq!(run(&mut fresh, 50), expected, "seed {seed}");
    }
}

/// A settled pile's polish reuses the last solve's factors (ending within
/// the tolerance of a fresh factorization, not bit for bit): a snapshot
/// drops them on both sides, so the simulator it was taken from and one
/// restored from it continue alike.
#[test]
fn a_pile_solved_with_kept_factors_restores_bit_for_bit() {
    let scene = moreau::scenes::scene("pyramid").unwrap();
    let params = SimParams {
        dt: scene.dt,
        ..Default::default()
    };
    let tau = vec![0.0; scene.model.nv];
    let mut sim = Simulator::new(scene.model.clone(), params).unwrap();
    let mut state = scene.state.clone();
    let mut reused = 0;
    let run = |sim: &mut Simulator, state: &mut State, n: usize, reused: &mut usize| {
        (0..n)
            .map(|_| {
                sim.step(state, &tau).unwrap();
                *reused += usize::from(sim.solution().stats.reused_factors > 0);
                state.clone()
            })
            .collect::<Vec<_>>()
    };
    run(&mut sim, &mut state, 100, &mut reused);
    assert!(
        reused > 0,
        "the pile's polish kept no factors: the test tests nothing"
    );
    let (saved, warm) = (state.clone(), sim.warm_start());
    let mut after = 0;
    let expected = run(&mut sim, &mut state, 30, &mut after);
    assert!(after > 0, "no kept factors after the snapshot");
    let mut other = Simulator::new(scene.model.clone(), params).unwrap();
    let mut ours = 0;
    // Into a fresh simulator, and back into the one it was taken from
    // (which holds kept factors of a later state).
    for target in [&mut other, &mut sim] {
        target.set_warm_start(warm.clone()).unwrap();
        let mut s = saved.clone();
        let got = run(target, &mut s, 30, &mut ours);
        for (k, (e, g)) in expected.iter().zip(&got).enumerate() {
            assert_eq!((&e.q, &e.v), (&g.q, &g.v), "step {k} after the restore");
        }
    }
}
