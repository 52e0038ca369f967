//! Loads an MJCF file, prints its tree, actuators and warnings, and
//! optionally drops it for a while with zero torques:
//! `cargo run --release --example load_mjcf -- FILE [SECONDS]`.

use moreau::model::mjcf::{MjcfOptions, load_mjcf};
use moreau::sim::{SimParams, Simulator, State};
use nalgebra::DVector;
use std::sync::Arc;

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(file) = args.next() else {
        eprintln!("usage: load_mjcf FILE [SECONDS]");
        std::process::exit(2);
    };
    let seconds: f64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(0.0);
    let r = match load_mjcf(&file, &MjcfOptions::default()) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    };
    let m = &r.model;
    println!(
        "{}: nq {} nv {} MJCF bodies {} (model bodies {}) total mass {:.6} kg, {} geometries, timestep {:?}",
        m.name,
        m.nq,
        m.nv,
        r.bodies,
        m.nbodies,
        m.total_mass(),
        m.geometries.len(),
        r.timestep
    );
    for i in 1..m.nbodies {
        println!(
            "  {:<28} parent {:<28} joint {:<10} mass {:.4}",
            m.body_name[i],
            m.body_name[m.body_parent[i]],
            m.joint_type[i].name(),
            m.body_inertia[i].mass
        );
    }
    for a in &r.actuators {
        println!(
            "  actuator {:<20} dof {:>2} gear {} ctrl {:?}",
            a.name, a.dof, a.gear, a.ctrl_range
        );
    }
    for (j, lo, hi) in &r.joint_limits {
        println!("  limit {j}: [{lo:.4}, {hi:.4}]");
    }
    for w in &r.warnings {
        println!("  warning: {w}");
    }
    if seconds > 0.0 {
        let model = Arc::new(m.clone());
        let dt = r.timestep.unwrap_or(0.002);
        let mut sim = Simulator::new(
            model.clone(),
            SimParams {
                dt,
                ..Default::default()
            },
        )
        .expect("valid parameters");
        let mut state = State::new(r.q0.clone(), DVector::zeros(model.nv));
        let tau = DVector::zeros(model.nv);
        let steps = (seconds / dt).round() as usize;
        for k in 1..=steps {
            match sim.step(&mut state, tau.as_slice()) {
                Ok(report) if k % (steps / 10).max(1) == 0 => {
                    let (ke, pe) = sim.energy(&state).unwrap_or((f64::NAN, f64::NAN));
                    println!(
                        "  t {:.3} s: {} contacts, kinetic {ke:.3} J, potential {pe:.3} J",
                        state.t, report.nc
                    );
                }
                Ok(_) => {}
                Err(e) => {
                    eprintln!("step {k}: {e}");
                    std::process::exit(1);
                }
            }
        }
    }
}
