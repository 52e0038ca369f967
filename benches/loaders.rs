//! Loading robot files, meshes and hulls included (each iteration reads the
//! files and computes the hulls again): `cargo bench --bench loaders`.
//! Needs the robot files of `scripts/fetch-robot-files` (or
//! `MOREAU_ROBOT_FILES`); without them it says so and measures nothing.

use criterion::{Criterion, criterion_group, criterion_main};
use moreau::load::{LoadOptions, load_model_file};
use std::path::PathBuf;

fn site_packages() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("MOREAU_ROBOT_FILES") {
        return Some(PathBuf::from(p));
    }
    let lib = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/robot-files/venv/lib");
    std::fs::read_dir(lib).ok()?.flatten().find_map(|e| {
        let p = e.path().join("site-packages");
        p.is_dir().then_some(p)
    })
}

fn loaders(c: &mut Criterion) {
    let Some(site) = site_packages() else {
        eprintln!("robot files not found: run scripts/fetch-robot-files; nothing measured");
        return;
    };
    let erd = site.join("cmeel.prefix/share/example-robot-data/robots");
    let gym = site.join("gymnasium/envs/mujoco/assets");
    let files = [
        (
            "talos_reduced",
            erd.join("talos_data/robots/talos_reduced.urdf"),
        ),
        ("solo12", erd.join("solo_description/robots/solo12.urdf")),
        ("ur5", erd.join("ur_description/urdf/ur5_robot.urdf")),
        ("humanoid_mjcf", gym.join("humanoid.xml")),
    ];
    let mut group = c.benchmark_group("load");
    group.sample_size(20);
    for (name, path) in files {
        if let Err(e) = load_model_file(&path, &LoadOptions::default()) {
            eprintln!("{name}: {e}; not measured");
            continue;
        }
        group.bench_function(name, |b| {
            b.iter(|| load_model_file(&path, &LoadOptions::default()).unwrap())
        });
    }
    group.finish();
}

criterion_group!(benches, loaders);
criterion_main!(benches);
