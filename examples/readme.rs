// The README's Rust example, as written there (`tests/readme.rs` checks
// that the two are the same and runs it).

use moreau::scenes;
use moreau::sim::{SimParams, Simulator};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let scene = scenes::scene("quadruped")?;
    let params = SimParams {
        dt: scene.dt,
        ..Default::default()
    };
    let mut sim = Simulator::new(scene.model.clone(), params)?;
    let mut state = scene.state.clone();
    let mut tau = vec![0.0; scene.model.nv];
    let mut contacts = 0;
    for _ in 0..500 {
        scene.control(&state, &mut tau);
        contacts = sim.step(&mut state, &tau)?.nc;
    }
    println!(
        "after {:.1} s: base at {:.3} m, {contacts} contacts",
        state.t, state.q[2]
    );
    Ok(())
}
