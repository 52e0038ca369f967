//! Gymnasium's tasks computed on the resident worlds (`gpu::resident`'s
//! task kernel: `shaders/philox.wgsl`, `shaders/gym_task.wgsl`) against
//! their CPU twin (`GymTask::draw_reset`, `GymTask::evaluate`) at the same
//! states: the reset draws from the same Philox streams, then environment
//! steps of random controls with episodes ending and worlds reset on the
//! device, every observation, reward, termination and info term compared
//! with the CPU's evaluation of the device's own states. On lavapipe in CI
//! (`MOREAU_REQUIRE_GPU=1`).

mod common;

use moreau::envs::Rng;
use moreau::envs::gymnasium::{GymKind, GymParams, GymRow, GymScratch, GymTask, GymWorld};
use moreau::gpu::GpuContext;
use moreau::gpu::resident::{DeviceTaskSpec, ResidentBatch};
use moreau::math::PhiloxStream;
use moreau::sim::{Actuation, SimParams, State};
use nalgebra::DVector;
use std::sync::Arc;

const N: usize = 8;
const STEPS: usize = 40;

/// `|a − b| ≤ tol (1 + |b|)`.
fn near(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * (1.0 + b.abs())
}

/// Each world's `q`, `v`, the last step's start and constraint forces, read
/// back from the device.
struct Read {
    q: Vec<Vec<f64>>,
    v: Vec<Vec<f64>>,
    start_q: Vec<Vec<f64>>,
    start_v: Vec<Vec<f64>>,
    qfrc0: Vec<f64>,
}

fn read(r: &mut ResidentBatch, nq: usize, nv: usize) -> Read {
    r.read_columns(|c| {
        let col = |f: &dyn Fn(usize, usize) -> f64, w: usize, k: usize| {
            (0..k).map(|t| f(w, t)).collect::<Vec<_>>()
        };
        Read {
            q: (0..N).map(|w| col(&|w, t| c.q(w, t), w, nq)).collect(),
            v: (0..N).map(|w| col(&|w, t| c.v(w, t), w, nv)).collect(),
            start_q: (0..N)
                .map(|w| col(&|w, t| c.start_q(w, t).unwrap(), w, nq))
                .collect(),
            start_v: (0..N)
                .map(|w| col(&|w, t| c.start_v(w, t).unwrap(), w, nv))
                .collect(),
            qfrc0: (0..N).map(|w| c.qfrc(w, 0)).collect(),
        }
    })
    .unwrap()
}

#[test]
fn the_device_draws_resets_and_evaluates_gymnasiums_tasks_as_the_cpu() {
    let Some(ctx) = GpuContext::for_tests() else {
        return;
    };
    let mut tasks = 0;
    for kind in GymKind::ALL {
        let (file, frame_skip, _) = kind.registration();
        let Some(loaded) = common::gymnasium(file) else {
            return;
        };
        let model = Arc::new(loaded.model);
        let (nq, nv, nu) = (model.nq, model.nv, model.nu());
        let mut qpos0 = vec![0.0; nq];
        model.mujoco_qpos(loaded.q0.as_slice(), &mut qpos0);
        let qvel0 = vec![0.0; nv];
        let task = GymTask::new(
            kind,
            GymParams::gymnasium(kind),
            model.clone(),
            &qpos0,
            &qvel0,
        )
        .unwrap();
        let spec = match task.device_spec(frame_skip) {
            Ok(s) => s,
            Err(e) => panic!("{e}"),
        };
        let params = SimParams {
            dt: loaded.timestep,
            ..Default::default()
        };
        let initial = State::new(loaded.q0.clone(), DVector::zeros(nv));
        let mut r = ResidentBatch::new(&ctx, &model, &params, &[initial], N).unwrap();
        // Before a task is attached, nothing is evaluated.
        assert!(r.task_evaluate(&[false; N], &[0.0; N], |_| ()).is_err());
        r.attach_task(spec.clone(), 0).unwrap();
        let seeds: Vec<u64> = (0..N as u64).map(|w| 0x1234_5678_9abc + 977 * w).collect();
        let mut episodes: Vec<u32> = (0..N as u32).map(|w| w % 3).collect();
        let mut s = GymScratch::new(&model);
        let (od, id) = (task.obs_dim(), task.info_dim());
        assert_eq!(spec.row(), od + 2 + id);
        let mut position = [[0.0; 2]; N];
        let mut rng = Rng::new(7);
        let mut fresh = vec![true; N];
        let (mut worst, mut ended, mut resets, mut touching) = (0.0f64, 0, 0, 0);
        let (mut qpos, mut qvel) = (vec![0.0; nq], vec![0.0; nv]);
        for step in 0..STEPS {
            let ctrl: Vec<f64> = (0..N * nu).map(|_| rng.range(-1.0, 1.0)).collect();
            let sq: Vec<f64> = (0..N)
                .map(|w| ctrl[w * nu..(w + 1) * nu].iter().map(|a| a * a).sum())
                .collect();
            if fresh.iter().any(|&f| f) {
                // The worlds whose episode ended: drawn on the device, as
                // the host draws them from the same stream.
                r.task_reset(&fresh, &seeds, &episodes).unwrap();
                let got = read(&mut r, nq, nv);
                for w in (0..N).filter(|&w| fresh[w]) {
                    let mut stream = PhiloxStream::new(seeds[w], w as u32, episodes[w]);
                    task.draw_reset(&mut stream, &mut qpos, &mut qvel);
                    // (MuJoCo's conventions, as the host sets them.)
                    let (mut q, mut v) = (vec![0.0; nq], vec![0.0; nv]);
                    model.q_from_mujoco(&qpos, &mut q);
                    model.v_from_mujoco(&q, &qvel, &mut v);
                    for (t, (a, b)) in got.q[w].iter().zip(&q).enumerate() {
                        assert!(near(*a, *b, 1e-6), "{kind:?} world {w} q[{t}]: {a} vs {b}");
                    }
                    for (t, (a, b)) in got.v[w].iter().zip(&v).enumerate() {
                        assert!(near(*a, *b, 1e-6), "{kind:?} world {w} v[{t}]: {a} vs {b}");
                    }
                    episodes[w] += 1;
                    resets += 1;
                }
            }
            let active: Vec<bool> = fresh.iter().map(|f| !f).collect();
            if active.iter().any(|&a| a) {
                r.step_repeated(Actuation::Controls(&ctrl), Some(&active), frame_skip)
                    .unwrap();
            }
            let rows = r.task_evaluate(&fresh, &sq, |rows| rows.to_vec()).unwrap();
            let got = read(&mut r, nq, nv);
            // The last step's contact forces on the file's bodies, as
            // GymBatch reads them back for the task on the host.
            let forces: Vec<Vec<_>> = r
                .read_contacts()
                .unwrap()
                .iter()
                .map(|cs| {
                    cs.iter()
                        .flat_map(|c| {
                            let f = c.impulse / params.dt;
                            [(c.geom_a, c.point, f), (c.geom_b, c.point, -f)]
                        })
                        .filter_map(|(g, p, f)| model.geometries[g].frame.map(|k| (k, p, f)))
                        .collect()
                })
                .collect();
            if task.reads_contact_forces() {
                touching += forces.iter().filter(|f| !f.is_empty()).count();
            }
            let zeros = vec![0.0; nu];
            for w in 0..N {
                let (mut obs, mut info) = (vec![0.0; od], vec![0.0; id]);
                let world = GymWorld {
                    q: &got.q[w],
                    v: &got.v[w],
                    act: &[],
                    kin_q: if fresh[w] { &got.q[w] } else { &got.start_q[w] },
                    kin_v: if fresh[w] { &got.v[w] } else { &got.start_v[w] },
                    fresh: fresh[w],
                    forces: &forces[w],
                    constraint_force0: got.qfrc0[w],
                    ctrl: if fresh[w] {
                        &zeros
                    } else {
                        &ctrl[w * nu..(w + 1) * nu]
                    },
                    action_sq: if fresh[w] { 0.0 } else { sq[w] },
                    position_before: position[w],
                    dt: params.dt * frame_skip as f64,
                    physics_dt: params.dt,
                };
                let mut row = GymRow {
                    obs: &mut obs,
                    info: &mut info,
                    reward: 0.0,
                    terminated: false,
                    position: [0.0; 2],
                };
                task.evaluate(&mut s, &world, &mut row);
                let (reward, terminated) = (row.reward, row.terminated);
                position[w] = row.position;
                let dev = &rows[w * spec.row()..(w + 1) * spec.row()];
                let at = |what: &str, k: usize, a: f64, b: f64| {
                    assert!(
                        near(a, b, 1e-4),
                        "{kind:?} step {step} world {w} (fresh {}): {what}[{k}] {a} on the device, {b} on the CPU",
                        fresh[w]
                    );
                };
                for k in 0..od {
                    at("obs", k, dev[k] as f64, obs[k]);
                    worst = worst.max((dev[k] as f64 - obs[k]).abs() / (1.0 + obs[k].abs()));
                }
                at("reward", 0, dev[od] as f64, reward);
                assert_eq!(
                    dev[od + 1] == 1.0,
                    terminated,
                    "{kind:?} step {step} world {w}"
                );
                // (A term of width w fills w columns: the humanoid's tendons.)
                let names = task
                    .info_columns()
                    .iter()
                    .flat_map(|&(name, width)| std::iter::repeat_n(name, width));
                for (k, name) in names.enumerate() {
                    at(name, k, dev[od + 2 + k] as f64, info[k]);
                }
                ended += usize::from(terminated);
                fresh[w] = terminated;
            }
        }
        // Episodes ended and worlds were reset mid-run on the healthy tasks.
        if matches!(
            kind,
            GymKind::InvertedPendulum | GymKind::InvertedDoublePendulum | GymKind::Hopper
        ) {
            assert!(ended > 0 && resets > N, "{kind:?}: {ended} ended");
        }
        // The ant's feet touched the floor: its contact wrenches compared.
        if task.reads_contact_forces() {
            assert!(touching > N, "{kind:?}: {touching} worlds in contact");
        }
        eprintln!(
            "{kind:?}: worst observation difference {worst:.1e}, {ended} episodes ended, {resets} resets, {touching} worlds in contact"
        );
        tasks += 1;
    }
    assert!(tasks == 0 || tasks == 9, "{tasks} tasks on the device");
}

#[test]
fn a_task_the_device_cannot_run_is_refused_by_name() {
    let Some(ctx) = GpuContext::for_tests() else {
        return;
    };
    let (Some(hopper), Some(ant)) = (
        common::gymnasium("hopper.xml"),
        common::gymnasium("ant.xml"),
    ) else {
        return;
    };
    let model = Arc::new(hopper.model);
    let mut qpos0 = vec![0.0; model.nq];
    model.mujoco_qpos(hopper.q0.as_slice(), &mut qpos0);
    let task = GymTask::new(
        GymKind::Hopper,
        GymParams::gymnasium(GymKind::Hopper),
        model.clone(),
        &qpos0,
        &vec![0.0; model.nv],
    )
    .unwrap();
    let spec: DeviceTaskSpec = task.device_spec(4).unwrap();
    // Hopper's task on the ant's worlds (other sizes).
    let initial = State::new(ant.q0.clone(), DVector::zeros(ant.model.nv));
    let mut r = ResidentBatch::new(&ctx, &ant.model, &SimParams::default(), &[initial], 2).unwrap();
    let e = r.attach_task(spec.clone(), 0).unwrap_err().to_string();
    assert!(e.contains("the kernel writes"), "{e}");
    // A frame skip of 0.
    let initial = State::new(hopper.q0.clone(), DVector::zeros(model.nv));
    let mut r = ResidentBatch::new(&ctx, &model, &SimParams::default(), &[initial], 2).unwrap();
    let bad = DeviceTaskSpec {
        frame_skip: 0,
        ..spec.clone()
    };
    assert!(r.attach_task(bad, 0).is_err());
    r.attach_task(spec.clone(), 0).unwrap();
    // The same task again changes nothing; another is refused.
    r.attach_task(spec.clone(), 0).unwrap();
    let other = DeviceTaskSpec {
        frame_skip: 2,
        ..spec
    };
    let e = r.attach_task(other, 0).unwrap_err().to_string();
    assert!(e.contains("another task"), "{e}");
    // Wrong lengths, named.
    let e = r
        .task_reset(&[true; 3], &[0; 2], &[0; 2])
        .unwrap_err()
        .to_string();
    assert!(e.contains("which"), "{e}");
    let e = r
        .task_evaluate(&[false; 2], &[0.0; 1], |_| ())
        .unwrap_err()
        .to_string();
    assert!(e.contains("action_sq"), "{e}");
    // The starts a task reads stay kept.
    assert!(r.keep_last_start(false).is_err());
}
