//! A cube launched at 1 m/s on a plane with μ = 0.3: prints its speed and
//! kinetic energy against Coulomb's law with maximum dissipation,
//! `v(t) = v0 − μ g t`, until it stops.
//!
//! `cargo run --release --example sliding_cube`

use moreau::scenes;
use moreau::sim::{SimParams, Simulator};
use nalgebra::DVector;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let scene = scenes::scene("cube-sliding")?;
    let mut sim = Simulator::new(scene.model.clone(), SimParams::default())?;
    let mut state = scene.state.clone();
    let tau = DVector::zeros(scene.model.nv);
    let (v0, mu, g) = (1.0, 0.3, 9.81);
    println!(
        "{:>6} {:>10} {:>10} {:>10} {:>10}",
        "t (s)", "y (m)", "v (m/s)", "Coulomb", "eps_abs"
    );
    for step in 1..=400 {
        let r = sim.step(&mut state, tau.as_slice())?;
        if step % 40 == 0 {
            println!(
                "{:6.3} {:10.5} {:10.5} {:10.5} {:10.1e}",
                state.t,
                state.q[1],
                state.v[1],
                (v0 - mu * g * state.t).max(0.0),
                r.solver.map(|s| s.residuals.eps_abs).unwrap_or(0.0)
            );
        }
    }
    println!(
        "stopped after {:.5} m; Coulomb says v0²/(2μg) = {:.5} m",
        state.q[1],
        v0 * v0 / (2.0 * mu * g)
    );
    Ok(())
}
