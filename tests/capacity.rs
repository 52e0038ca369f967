//! A batch too large for the host's memory is refused before anything is
//! allocated per world, with an error that names the sizes (worlds, bytes
//! per world, total, available): on every backend, in the library and from
//! `moreau bench`, and for absurd counts that would overflow a product. The
//! estimate behind it covers what stepped worlds really hold on the heap
//! (a counting allocator; the numbers are printed).

use moreau::batch::memory::{Available, Bytes, HostEstimate, check_host_memory};
use moreau::batch::{Backend, BatchError, BatchOptions, BatchSim};
use moreau::contact::SolverKind;
use moreau::scenes::{self, Scene};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

mod common;

/// Live heap bytes, and the most since [`reset_peak`].
struct Counting;
static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(by: usize) {
    let live = LIVE.fetch_add(by, Ordering::Relaxed) + by;
    PEAK.fetch_max(live, Ordering::Relaxed);
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        grew(layout.size());
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size >= layout.size() {
            grew(new_size - layout.size());
        } else {
            LIVE.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
        }
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// The tests measure the heap one at a time.
static HEAP: Mutex<()> = Mutex::new(());

fn heap() -> std::sync::MutexGuard<'static, ()> {
    HEAP.lock().unwrap_or_else(|e| e.into_inner())
}

fn reset_peak() -> usize {
    let live = LIVE.load(Ordering::Relaxed);
    PEAK.store(live, Ordering::Relaxed);
    live
}

fn options(backend: Backend, scene: &Scene) -> BatchOptions {
    let mut o = BatchOptions {
        backend,
        ..Default::default()
    };
    o.params.dt = scene.dt;
    o
}

#[test]
fn a_hundred_million_quadrupeds_are_refused_before_allocating() {
    let _heap = heap();
    let scene = scenes::scene("quadruped").unwrap();
    let n = 100_000_000;
    for backend in Backend::ALL {
        let o = options(backend, &scene);
        let before = reset_peak();
        let t = Instant::now();
        let result = BatchSim::new(scene.model.clone(), &scene.state, n, &o);
        let took = t.elapsed();
        let peak = PEAK.load(Ordering::Relaxed) - before;
        let Err(error) = result else {
            panic!("{backend}: 100 million quadrupeds were built");
        };
        let message = error.to_string();
        println!("{backend}: {took:?}, heap peak {peak} bytes: {message}");
        let BatchError::HostMemory {
            nworlds,
            bytes_per_world,
            total,
            available,
        } = error
        else {
            panic!("{backend}: not a memory refusal: {message}");
        };
        assert_eq!(nworlds, n);
        assert!(bytes_per_world > 10_000, "{backend}: {bytes_per_world}");
        assert_eq!(total, n as u128 * bytes_per_world as u128);
        assert!(total > available.bytes as u128);
        for part in [
            "100000000 worlds",
            "per world",
            "bytes",
            "in all",
            "available",
            &Bytes(bytes_per_world as u128).to_string(),
            &Bytes(total).to_string(),
        ] {
            assert!(message.contains(part), "{backend}: `{part}` in {message}");
        }
        // Refused up front: nothing per world was allocated (a GPU context
        // is not even created), and quickly.
        assert!(peak < 16 << 20, "{backend}: {peak} bytes allocated");
        assert!(took < Duration::from_millis(500), "{backend}: {took:?}");
    }
}

#[test]
fn absurd_world_counts_are_refused_not_overflowed() {
    let _heap = heap();
    let scene = scenes::scene("quadruped").unwrap();
    for n in [usize::MAX / 2, usize::MAX, 1 << 40] {
        for backend in Backend::ALL {
            let o = options(backend, &scene);
            match BatchSim::new(scene.model.clone(), &scene.state, n, &o) {
                Err(BatchError::HostMemory { nworlds, total, .. }) => {
                    assert_eq!(nworlds, n);
                    assert!(total >= n as u128, "{total}");
                }
                Err(e) => panic!("{backend}, {n} worlds: {e}"),
                Ok(_) => panic!("{backend}, {n} worlds were built"),
            }
        }
    }
    // No matter what is available, nothing over the address space.
    let plenty = Available {
        bytes: u64::MAX,
        source: "a test",
    };
    assert!(matches!(
        check_host_memory(usize::MAX, u64::MAX, Some(plenty)),
        Err(BatchError::HostMemory { .. })
    ));
    assert!(check_host_memory(usize::MAX, u64::MAX, None).is_err());
}

#[test]
fn the_check_compares_the_total_with_what_is_available() {
    let _heap = heap();
    let gib = Available {
        bytes: 1 << 30,
        source: "a test",
    };
    assert!(check_host_memory(1024, 1 << 20, Some(gib)).is_ok());
    let e = check_host_memory(1025, 1 << 20, Some(gib)).unwrap_err();
    let message = e.to_string();
    assert!(
        message.contains("1025 worlds")
            && message.contains("1.00 MiB (1 048 576 bytes) per world")
            && message.contains("1.00 GiB (1 074 790 400 bytes) in all")
            && message.contains("1.00 GiB (1 073 741 824 bytes) available (a test)"),
        "{message}"
    );
    // Without a figure (not Linux) only the address space bounds it.
    assert!(check_host_memory(1 << 20, 1 << 20, None).is_ok());
    if cfg!(target_os = "linux") {
        let a = moreau::batch::memory::available_memory().expect("MemAvailable");
        println!("available: {} bytes ({})", a.bytes, a.source);
        assert!(a.bytes > 0);
    }
}

/// Live heap bytes per world of a batch stepped `steps` times under the
/// scene's controller, and the most contacts a world had.
fn measured_bytes_per_world(
    scene: &Scene,
    o: &BatchOptions,
    n: usize,
    steps: usize,
) -> (f64, usize) {
    // What the model's worlds share, built once for all of them (its
    // convex meshes' edge graphs), held by a world outside the count.
    let _shared = moreau::sim::Simulator::new(scene.model.clone(), o.params).unwrap();
    let before = LIVE.load(Ordering::Relaxed);
    let mut batch = BatchSim::new(scene.model.clone(), &scene.state, n, o).unwrap();
    let nv = scene.model.nv;
    let mut actions = vec![0.0; n * nv];
    let mut max_contacts = 0;
    for _ in 0..steps {
        for (w, state) in batch.states().enumerate() {
            scene.control(state, &mut actions[w * nv..(w + 1) * nv]);
        }
        max_contacts = max_contacts.max(batch.step(&actions).unwrap().max_contacts);
    }
    drop(actions);
    let held = LIVE.load(Ordering::Relaxed) as f64 - before as f64;
    drop(batch);
    (held / n as f64, max_contacts)
}

/// The estimate covers what the worlds of the built-in scenes (and, where
/// the robot files are installed, of a few robots) hold after stepping, on
/// the CPU solvers whose workspaces are largest (NCP-ADMM, staggered).
#[test]
fn the_estimate_covers_what_stepped_worlds_hold() {
    let _heap = heap();
    let mut cases: Vec<(String, Scene, usize)> = [
        "cube-resting",
        "cube-stack",
        "pyramid",
        "cartpole",
        "quadruped",
        "arm",
    ]
    .iter()
    .map(|name| (name.to_string(), scenes::scene(name).unwrap(), 300))
    .collect();
    if let Some(files) = common::robot_files() {
        for path in [
            files
                .example_robot_data
                .join("solo_description/robots/solo12.urdf"),
            files.gymnasium_assets.join("ant.xml"),
        ] {
            let loaded =
                moreau::load::load_model_file(&path, &moreau::load::LoadOptions::default());
            if let Some(scene) = loaded
                .ok()
                .and_then(|l| scenes::from_loaded(&l, false).ok())
            {
                let name = path.file_name().unwrap().to_string_lossy().into_owned();
                cases.push((name, scene, 300));
            }
        }
    }
    for (name, scene, steps) in &cases {
        for solver in [
            SolverKind::NcpAdmm,
            SolverKind::NcpPgs,
            SolverKind::Staggered,
        ] {
            let mut o = options(Backend::CpuSingle, scene);
            o.params.solver = solver;
            let estimate = HostEstimate::for_batch(&scene.model, &scene.state, &o).unwrap();
            let (held, max_contacts) = measured_bytes_per_world(scene, &o, 2, *steps);
            let ratio = estimate.bytes_per_world() as f64 / held;
            println!(
                "{name:14} {:10} contacts {:2} (estimated {:2}), {held:8.0} bytes per world, estimate {:8} ({ratio:.2}×)",
                solver.name(),
                max_contacts,
                estimate.contacts,
                estimate.bytes_per_world()
            );
            assert!(
                ratio >= 1.0,
                "{name}, {}: the estimate {} is under the {held} bytes a world holds",
                solver.name(),
                estimate.bytes_per_world()
            );
        }
    }
}
