//! Stepping does not allocate once the workspaces have grown: a counting
//! global allocator watches 1000 steps of the standing quadruped (dense
//! `G`), of the resting cube and of the pyramid (`G` as its factors, the
//! tree path) after a warm-up.

use moreau::scenes;
use moreau::sim::{SimParams, Simulator};
use nalgebra::DVector;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

struct Counting;
static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn steady_stepping_does_not_allocate() {
    for name in ["quadruped", "cube-resting", "pyramid"] {
        let scene = scenes::scene(name).unwrap();
        let mut sim = Simulator::new(scene.model.clone(), SimParams::default()).unwrap();
        let mut state = scene.state.clone();
        let mut tau = DVector::zeros(scene.model.nv);
        let mut run = |n: usize| {
            for _ in 0..n {
                if let Some(c) = &scene.controller {
                    c.torques(&state, tau.as_mut_slice());
                }
                sim.step(&mut state, tau.as_slice()).unwrap();
            }
        };
        run(1500);
        let before = ALLOCATIONS.load(Ordering::Relaxed);
        run(1000);
        let during = ALLOCATIONS.load(Ordering::Relaxed) - before;
        println!("{name}: {during} allocations in 1000 steps after warm-up");
        assert_eq!(during, 0, "{name}: the step allocated");
    }
}
