//! Loads a URDF file and prints its tree: `cargo run --release --example load_urdf -- FILE [--floating]`.

use moreau::model::urdf::{UrdfOptions, load_urdf};

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(file) = args.next() else {
        eprintln!("usage: load_urdf FILE [--floating]");
        std::process::exit(2);
    };
    let options = UrdfOptions {
        floating_base: args.any(|a| a == "--floating"),
        ..Default::default()
    };
    match load_urdf(&file, &options) {
        Ok(r) => {
            let m = &r.model;
            println!(
                "{}: nq {} nv {} bodies {} total mass {:.6} kg, {} geometries",
                m.name,
                m.nq,
                m.nv,
                m.nbodies,
                m.total_mass(),
                m.geometries.len()
            );
            for i in 1..m.nbodies {
                println!(
                    "  {:<24} parent {:<24} joint {}",
                    m.body_name[i],
                    m.body_name[m.body_parent[i]],
                    m.joint_type[i].name()
                );
            }
            for (j, lo, hi) in &r.joint_limits {
                println!("  limit {j}: [{lo}, {hi}]");
            }
            for w in &r.warnings {
                println!("  warning: {w}");
            }
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}
