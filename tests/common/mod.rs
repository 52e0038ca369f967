#![allow(dead_code)]
//! Helpers shared by the integration tests.

pub mod mjcf;

use moreau::Model;
use nalgebra::DVector;

/// Deterministic uniform samples in [0, 1) (an LCG; enough for test inputs).
pub struct Lcg(pub u64);

impl Lcg {
    pub fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
    pub fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.next()
    }
    pub fn vector(&mut self, n: usize, lo: f64, hi: f64) -> DVector<f64> {
        DVector::from_fn(n, |_, _| self.range(lo, hi))
    }
}

pub fn random_q(model: &Model, rng: &mut Lcg) -> DVector<f64> {
    moreau::dynamics::random_configuration(model, || rng.next())
}

/// Random contacts between random bodies (some against the world), random frames.
pub fn random_contacts(model: &Model, rng: &mut Lcg, n: usize) -> Vec<moreau::collision::Contact> {
    use moreau::collision::{Contact, ContactKey};
    use moreau::math::{Vec3, frame_from_normal};
    use moreau::model::WORLD;
    (0..n)
        .map(|i| {
            let body_a = 1 + (rng.next() * (model.nbodies - 1) as f64) as usize;
            let body_b = if i % 3 == 0 {
                WORLD
            } else {
                (rng.next() * model.nbodies as f64) as usize
            };
            let body_b = if body_b == body_a { WORLD } else { body_b };
            let n = Vec3::new(
                rng.range(-1.0, 1.0),
                rng.range(-1.0, 1.0),
                rng.range(-1.0, 1.0),
            )
            .normalize();
            Contact {
                geom_a: 0,
                geom_b: 0,
                body_a,
                body_b,
                point: Vec3::new(
                    rng.range(-1.0, 1.0),
                    rng.range(-1.0, 1.0),
                    rng.range(-1.0, 1.0),
                ),
                frame: frame_from_normal(&n),
                distance: 0.0,
                mu: 0.5,
                spin: [0.0; 2],
                restitution: 0.0,
                key: ContactKey {
                    geom_a: i as u32,
                    geom_b: 0,
                    feature_a: 0,
                    feature_b: 0,
                },
                geometry: Default::default(),
            }
        })
        .collect()
}

/// Relative error ‖a − b‖ / max(‖b‖, 1e-300).
pub fn rel_err(a: &DVector<f64>, b: &DVector<f64>) -> f64 {
    (a - b).norm() / b.norm().max(1e-300)
}

/// Where the robot files installed by `scripts/fetch-robot-files` live.
pub struct RobotFiles {
    /// The site-packages directory itself (dm_control's suite and mjlab's
    /// robots are read from `dm_control/suite` and `mjlab/asset_zoo`).
    pub site_packages: std::path::PathBuf,
    /// example-robot-data's `robots/` directory (URDF packages and meshes).
    pub example_robot_data: std::path::PathBuf,
    /// Gymnasium's MuJoCo assets (`ant.xml`, `humanoid.xml`, ...).
    pub gymnasium_assets: std::path::PathBuf,
}

/// The robot files from PyPI (`scripts/fetch-robot-files`, run by `.ci/run`):
/// the site-packages directory named by `MOREAU_ROBOT_FILES`, or the one under
/// `target/robot-files/venv`. When they are missing the test says so and
/// passes, except where `MOREAU_REQUIRE_ROBOT_FILES=1` (set in CI): then it
/// fails.
pub fn robot_files() -> Option<RobotFiles> {
    let site = std::env::var_os("MOREAU_ROBOT_FILES")
        .map(std::path::PathBuf::from)
        .or_else(|| {
            let lib = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("target/robot-files/venv/lib");
            std::fs::read_dir(lib).ok()?.flatten().find_map(|e| {
                let p = e.path().join("site-packages");
                p.is_dir().then_some(p)
            })
        });
    let files = site.map(|s| RobotFiles {
        site_packages: s.clone(),
        example_robot_data: s.join("cmeel.prefix/share/example-robot-data/robots"),
        gymnasium_assets: s.join("gymnasium/envs/mujoco/assets"),
    });
    match files {
        Some(f) if f.example_robot_data.is_dir() && f.gymnasium_assets.is_dir() => Some(f),
        _ => {
            let msg = "robot files not found: run scripts/fetch-robot-files (installs the PyPI \
                       packages example-robot-data and gymnasium into target/robot-files) or set \
                       MOREAU_ROBOT_FILES to a site-packages directory holding them";
            if std::env::var("MOREAU_REQUIRE_ROBOT_FILES").as_deref() == Ok("1") {
                panic!("{msg} (MOREAU_REQUIRE_ROBOT_FILES=1)");
            }
            eprintln!("SKIPPED: {msg}");
            None
        }
    }
}

/// A builder holding one rod of `mass` kg on a hinge about y at the world
/// origin, its centre of mass 0.5 m out along x (rotational inertia 0.01),
/// with the joint `spec`; returns the builder and the rod's body index.
pub fn rod(
    mass: f64,
    gravity: moreau::math::Vec3,
    spec: moreau::model::JointSpec,
) -> (moreau::model::ModelBuilder, usize) {
    use moreau::math::{Inertia, Mat3, SE3, Vec3};
    let mut b = moreau::model::ModelBuilder::new("rod");
    b.set_gravity(gravity).unwrap();
    let inertia = Inertia::new(mass, Vec3::new(0.5, 0.0, 0.0), Mat3::identity() * 0.01);
    let j = b
        .add_body(
            "rod",
            0,
            moreau::model::JointType::Revolute(Vec3::y()),
            SE3::identity(),
            inertia,
        )
        .unwrap();
    b.set_joint_spec(j, spec).unwrap();
    (b, j)
}

/// Gymnasium's files `names` as scenes (their own PD controllers), those
/// that load; none without the robot files (the benches' robots).
pub fn gymnasium_scenes(names: &[&str]) -> Vec<moreau::scenes::Scene> {
    let Some(files) = robot_files() else {
        return Vec::new();
    };
    names
        .iter()
        .filter_map(|f| {
            let path = files.gymnasium_assets.join(f);
            let loaded = moreau::load::load_model_file(path, &Default::default()).ok()?;
            Some(moreau::scenes::from_loaded(&loaded, true).unwrap())
        })
        .collect()
}

/// Gymnasium's MJCF file `file`, loaded; None (the test passes, saying so)
/// without the robot files, unless they are required.
pub fn gymnasium(file: &str) -> Option<moreau::load::mjcf::MjcfModel> {
    let path = robot_files()?.gymnasium_assets.join(file);
    Some(
        moreau::load::mjcf::load_mjcf(&path, &moreau::load::mjcf::MjcfOptions::default())
            .unwrap_or_else(|e| panic!("{file}: {e}")),
    )
}

/// The fenced code blocks of a Markdown `text` whose info string is
/// `lang` (the README's blocks, which the tests run).
pub fn code_blocks(text: &str, lang: &str) -> Vec<String> {
    let fence = format!("```{lang}\n");
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(&fence) {
        let body = &rest[start + fence.len()..];
        let end = body.find("```").expect("a closed code block");
        out.push(body[..end].to_string());
        rest = &body[end + 3..];
    }
    out
}

/// Batch options on `backend` with the default parameters at step `dt`.
pub fn batch_options(backend: moreau::batch::Backend, dt: f64) -> moreau::batch::BatchOptions {
    let mut o = moreau::batch::BatchOptions {
        backend,
        ..Default::default()
    };
    o.params.dt = dt;
    o
}

/// A batch on the `gpu` backend, or `None` (the test then passes) where
/// there is no adapter, unless `MOREAU_REQUIRE_GPU=1`.
pub fn gpu_batch(
    model: std::sync::Arc<Model>,
    initial: &moreau::sim::State,
    n: usize,
    options: &moreau::batch::BatchOptions,
) -> Option<moreau::batch::BatchSim> {
    match moreau::batch::BatchSim::new(model, initial, n, options) {
        Ok(b) => Some(b),
        Err(e) => {
            assert!(
                std::env::var("MOREAU_REQUIRE_GPU").as_deref() != Ok("1"),
                "GPU backend required: {e}"
            );
            None
        }
    }
}

/// A capsule free on a table (a box fixed on the world): a pair (capsule,
/// box) that the resident contact stage does not collide yet, and its
/// neutral state.
pub fn capsule_on_a_table() -> (std::sync::Arc<Model>, moreau::sim::State) {
    let xml = "<mujoco model=\"rod\"><worldbody><geom name=\"table\" type=\"box\" size=\"1 1 0.1\" pos=\"0 0 -0.1\"/>\
        <body pos=\"0 0 0.05\"><freejoint/><geom name=\"rod\" type=\"capsule\" size=\"0.05 0.2\" euler=\"0 90 0\"/></body>\
        </worldbody></mujoco>";
    let m = moreau::load::mjcf::parse_mjcf(
        xml,
        "rod.xml",
        std::path::Path::new("."),
        &Default::default(),
    )
    .unwrap();
    let state = moreau::sim::State::new(m.q0.clone(), DVector::zeros(m.model.nv));
    (std::sync::Arc::new(m.model), state)
}

/// `n` worlds of Gymnasium's `file` on `backend` (on `gpu`, `None` without
/// an adapter unless `MOREAU_REQUIRE_GPU=1`), at MuJoCo's qpos0, with task
/// `kind` (Gymnasium's parameters) and `frame_skip`; `None` too without the
/// robot files.
pub fn gym_batch(
    file: &str,
    kind: moreau::envs::gymnasium::GymKind,
    n: usize,
    backend: moreau::batch::Backend,
    frame_skip: usize,
) -> Option<(moreau::batch::BatchSim, moreau::envs::gymnasium::GymBatch)> {
    use moreau::envs::gymnasium::{GymBatch, GymParams, GymTask};
    let loaded = gymnasium(file)?;
    let model = std::sync::Arc::new(loaded.model);
    let mut qpos0 = vec![0.0; model.nq];
    model.mujoco_qpos(loaded.q0.as_slice(), &mut qpos0);
    let initial = moreau::sim::State::new(loaded.q0.clone(), DVector::zeros(model.nv));
    let options = batch_options(backend, loaded.timestep);
    let batch = if backend == moreau::batch::Backend::Gpu {
        gpu_batch(model.clone(), &initial, n, &options)?
    } else {
        moreau::batch::BatchSim::new(model.clone(), &initial, n, &options).unwrap()
    };
    let qvel0 = vec![0.0; model.nv];
    let task = GymTask::new(kind, GymParams::gymnasium(kind), model, &qpos0, &qvel0).unwrap();
    let gym = GymBatch::new(task, &batch, frame_skip).unwrap();
    Some((batch, gym))
}
