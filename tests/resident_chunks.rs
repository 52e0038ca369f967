//! Resident batches split into chunks (issue 74, `gpu::resident::ResidentChunks`):
//! a world steps bit for bit as in one batch, whatever chunk holds it, and
//! a batch over a device limit stays on the device, split (lavapipe in CI).

mod common;

use moreau::batch::{Backend, BatchSim};
use moreau::sim::State;
use std::sync::Arc;

fn bits(x: &[f64]) -> Vec<u64> {
    x.iter().map(|v| v.to_bits()).collect()
}

/// 20 quadrupeds (contacts, joint stops) from 20 starts, in one batch and
/// in chunks of 7 (7, 7, 6): 40 steps of random torques, some worlds left
/// out of some steps, frame skips of 3, a world's state set between steps
/// and two worlds' friction changed (per-world records in two chunks), the
/// last step's starts kept. Every state, start, constraint force and
/// contact, and the steps' solve tallies, are the same bit for bit.
#[test]
fn chunked_worlds_step_bit_for_bit_as_one_batch() {
    let mut scene = moreau::scenes::scene("quadruped").unwrap();
    let model = scene.model.clone();
    // Its feet on the ground (the scene drops it from 10 cm).
    scene.state.q =
        moreau::scenes::quadruped_standing(&model, moreau::scenes::quadruped_standing_height());
    let (n, nv) = (20, model.nv);
    let mut options = common::batch_options(Backend::Gpu, scene.dt);
    let Some(mut one) = common::gpu_batch(model.clone(), &scene.state, n, &options) else {
        return;
    };
    options.gpu_chunk_worlds = Some(7);
    let mut chunked = BatchSim::new(model.clone(), &scene.state, n, &options).unwrap();
    assert_eq!(
        one.resident_chunk_sizes(),
        Some(vec![20]),
        "{:?}",
        one.notice()
    );
    assert_eq!(chunked.resident_chunk_sizes(), Some(vec![7, 7, 6]));
    let mut rng = common::Lcg(7);
    let starts: Vec<State> = (0..n)
        .map(|w| {
            let mut s = scene.state.clone();
            // Lifted by up to 2 mm, turned a little, moving.
            s.q[2] += 0.002 * rng.next();
            s.q[3] += 0.05 * (rng.next() - 0.5);
            for k in 0..nv {
                s.v[k] = 0.2 * (rng.next() - 0.5) * if w % 3 == 0 { 1.0 } else { 0.0 };
            }
            s
        })
        .collect();
    for b in [&mut one, &mut chunked] {
        b.keep_last_start(true).unwrap();
        for (w, s) in starts.iter().enumerate() {
            b.set_state(w, s.clone()).unwrap();
        }
    }
    let mut contacts = 0;
    for step in 0..40 {
        let tau: Vec<f64> = (0..n * nv)
            .map(|k| {
                if k % nv < 6 {
                    0.0
                } else {
                    4.0 * (rng.next() - 0.5)
                }
            })
            .collect();
        let active: Vec<bool> = (0..n).map(|w| (w + step) % 5 != 0).collect();
        if step == 10 {
            for b in [&mut one, &mut chunked] {
                b.set_state(13, starts[2].clone()).unwrap();
                b.params_mut(4).unwrap().friction_scale = 0.1;
                b.params_mut(15).unwrap().friction_scale = 0.2;
            }
        }
        let (r1, r2) = if step % 4 == 0 {
            (
                one.step_repeated(&tau, 3, Some(&active)).unwrap(),
                chunked.step_repeated(&tau, 3, Some(&active)).unwrap(),
            )
        } else {
            (
                one.step_active(&tau, Some(&active)).unwrap(),
                chunked.step_active(&tau, Some(&active)).unwrap(),
            )
        };
        assert!(r1.failed.is_empty(), "{:?}", r1.failed);
        let tally = |r: &moreau::batch::BatchStepReport| {
            (
                (r.contacts, r.max_contacts, r.worlds_solved, r.iterations),
                (r.max_eps_abs.to_bits(), r.newton_steps, r.finished),
                (
                    r.unconverged,
                    r.at_floor,
                    r.overflowed_worlds,
                    r.dropped_contacts,
                ),
            )
        };
        assert_eq!(tally(&r1), tally(&r2), "step {step}");
        contacts += r1.contacts;
    }
    assert!(one.is_resident() && chunked.is_resident());
    assert!(contacts > 40 * 3, "{contacts} contacts");
    let (c1, c2) = (one.contacts().unwrap(), chunked.contacts().unwrap());
    assert_eq!(format!("{c1:?}"), format!("{c2:?}"));
    for w in 0..n {
        let (a, b) = (one.state(w).unwrap(), chunked.state(w).unwrap());
        assert_eq!(bits(a.q.as_slice()), bits(b.q.as_slice()), "world {w}");
        assert_eq!(bits(a.v.as_slice()), bits(b.v.as_slice()), "world {w}");
        assert_eq!(a.t.to_bits(), b.t.to_bits());
        let (sa, sb) = (one.last_start(w).unwrap(), chunked.last_start(w).unwrap());
        assert_eq!(format!("{sa:?}"), format!("{sb:?}"), "world {w}");
        let (fa, fb) = (
            one.constraint_forces(w).unwrap(),
            chunked.constraint_forces(w).unwrap(),
        );
        assert_eq!(bits(fa.as_slice()), bits(fb.as_slice()), "world {w}");
    }
    // The worlds differ from each other (the test compares something).
    let (s0, s1) = (one.state(0).unwrap(), one.state(1).unwrap());
    assert!(bits(s0.q.as_slice()) != bits(s1.q.as_slice()));
    // No worlds, or too few initial states: refused, not a panic later.
    let ctx = moreau::gpu::GpuContext::for_tests().unwrap();
    let chunks = |n, initial: &[State]| {
        moreau::gpu::resident::ResidentChunks::new(
            &ctx,
            &model,
            &options.params,
            initial,
            n,
            Some(7),
        )
    };
    assert!(chunks(0, std::slice::from_ref(&scene.state)).is_err());
    let e = chunks(20, &starts[..3]).err().unwrap();
    assert!(e.to_string().contains("initial states"), "{e}");
    // Bad input is refused naming the world as the batch numbers it.
    let mut bad = starts[0].clone();
    bad.v[0] = f64::NAN;
    let e = chunked.set_state(17, bad).unwrap_err();
    assert!(e.to_string().contains("world 17"), "{e}");
    assert!(
        BatchSim::new(
            model.clone(),
            &scene.state,
            n,
            &moreau::batch::BatchOptions {
                gpu_chunk_worlds: Some(0),
                ..options.clone()
            }
        )
        .is_err()
    );
}

/// A batch over the device's binding size (Gymnasium's humanoid has room
/// for 45 contacts, 169 rows: one world's solver scratch is 103 kB) stays
/// on the device in chunks that each fit, and steps.
#[test]
fn worlds_beyond_one_binding_stay_on_the_device_in_chunks() {
    let (Some(ctx), Some(m)) = (
        moreau::gpu::GpuContext::for_tests(),
        common::gymnasium("humanoid.xml"),
    ) else {
        return;
    };
    let model = Arc::new(m.model.clone());
    let pairs = moreau::gpu::resident::contacts::device_pairs(&model).unwrap();
    let sizes = moreau::gpu::resident::contacts::ContactSizes::of(
        &pairs,
        moreau::gpu::resident::limit_rows(&model).max(4),
    );
    let per_world = moreau::gpu::batch::admm_work(sizes.max_rows()) as u64 * 4;
    let binding = ctx.limits.max_storage_buffer_binding_size;
    let n = (binding / per_world + 1) as usize;
    if n > 20_000 {
        // (A device with room for that many humanoids: nothing to show here.)
        return;
    }
    let options = common::batch_options(Backend::Gpu, m.timestep);
    let start = State::new(m.q0.clone(), nalgebra::DVector::zeros(model.nv));
    let Some(mut batch) = common::gpu_batch(model.clone(), &start, n, &options) else {
        return;
    };
    assert!(batch.is_resident(), "{:?}", batch.notice());
    assert!(batch.notice().is_none());
    let sizes = batch.resident_chunk_sizes().unwrap();
    println!("{n} humanoids over a binding of {binding} bytes: chunks {sizes:?}");
    assert!(
        sizes.len() >= 2 && sizes.iter().sum::<usize>() == n,
        "{sizes:?}"
    );
    assert!(sizes.iter().all(|&s| s as u64 * per_world <= binding));
    let r = batch.step_controls(&vec![0.0; n * model.nu()]).unwrap();
    assert!(r.failed.is_empty(), "{:?}", r.failed);
    // The last chunk's last world moved as the first's first.
    let (a, b) = (batch.state(0).unwrap(), batch.state(n - 1).unwrap());
    assert_eq!(bits(a.q.as_slice()), bits(b.q.as_slice()));
    assert!(a.q != start.q);
}
