//! The batched contact-stage vector–Jacobian product on the GPU
//! (`gpu::vjp`, f32) against its f64 twin, and the twin against the
//! sensitivity the CPU step derivatives use
//! (`ContactSensitivity::apply_transpose`): on worlds resting, sliding,
//! impacting, a box on a box, the quadruped, a pendulum on its stop beside
//! a cube, and a world without constraints, in one batch; f32 tolerance
//! 1e-5 (measured 1e-7). On lavapipe in CI
//! (`MOREAU_REQUIRE_GPU=1`).
//!
//! Where `G` is singular (a resting box: 12 rows, 6 dofs) `ḡ` is unique
//! only up to `null(G) = null(Jᵀ)`, which the step never sees (it uses
//! `Jᵀ ḡ`): the answers are compared through `G` (`‖G(ḡ₁ − ḡ₂)‖ / ‖G ḡ₂‖`),
//! the raw difference printed beside.

use moreau::contact::ContactSensitivity;
use moreau::gpu::GpuContext;
use moreau::gpu::vjp::{GpuContactVjp, VjpWorld, contact_vjp_f64};
use moreau::scenes::Scene;
use moreau::sim::{SimParams, Simulator, StepJacobians};
use nalgebra::{DMatrix, DVector};

/// `(‖G(a − b)‖∞ / ‖G b‖∞, ‖a − b‖∞ / ‖b‖∞)`.
fn differences(g: &DMatrix<f64>, a: &[f64], b: &[f64]) -> (f64, f64) {
    let (a, b) = (DVector::from_column_slice(a), DVector::from_column_slice(b));
    let gb = g * &b;
    (
        (g * (&a - &b)).amax() / gb.amax().max(1e-300),
        (&a - &b).amax() / b.amax().max(1e-300),
    )
}

/// One world's contact stage at the state `scene` reaches after `steps`
/// (its first free body lowered `sink` m): the simulator (holding the
/// dense problem and the solution), `c` and the modes.
fn world(
    scene: &Scene,
    steps: usize,
    sink: f64,
) -> (Simulator, Vec<f64>, Vec<moreau::contact::ContactMode>) {
    let mut params = SimParams {
        dt: scene.dt,
        ..Default::default()
    };
    params.solver_settings.tolerance = 1e-12;
    params.solver_settings.max_iterations = 5000;
    let mut sim = Simulator::new(scene.model.clone(), params).unwrap();
    let mut state = scene.state.clone();
    let mut tau = DVector::zeros(scene.model.nv);
    for _ in 0..steps {
        scene.control(&state, tau.as_mut_slice());
        sim.step(&mut state, tau.as_slice()).unwrap();
    }
    state.q[2] -= sink;
    scene.control(&state, tau.as_mut_slice());
    let mut jac = StepJacobians::default();
    sim.step_with_jacobians(&mut state, tau.as_slice(), &mut jac)
        .unwrap();
    let modes = jac.modes().to_vec();
    sim.problem_with_delassus();
    let mut c = vec![0.0; sim.problem().m()];
    sim.problem()
        .contact_velocity(sim.solution().lambda.as_slice(), &mut c);
    (sim, c, modes)
}

/// A cube resting on the ground beside a pendulum pressed by gravity
/// against its stop (0.1 mm past it): contacts and a limit row in one
/// problem.
fn cube_and_pendulum() -> Scene {
    use moreau::math::{Inertia, SE3, Vec3};
    use moreau::model::{JointSpec, JointType, Material, ModelBuilder, Shape, WORLD};
    let mut b = ModelBuilder::new("cube-and-pendulum");
    b.add_ground("ground", Material::default()).unwrap();
    let cube = b
        .add_body(
            "cube",
            WORLD,
            JointType::Free,
            SE3::identity(),
            Inertia::cuboid(1.0, Vec3::repeat(0.2)),
        )
        .unwrap();
    b.add_geometry(
        "cube",
        cube,
        SE3::identity(),
        Shape::Cuboid {
            half_extents: Vec3::repeat(0.1),
        },
        Material::default(),
    )
    .unwrap();
    let rod = b
        .add_body(
            "rod",
            WORLD,
            JointType::Revolute(Vec3::y()),
            SE3::from_translation(Vec3::new(1.0, 0.0, 1.0)),
            Inertia::new(
                1.0,
                Vec3::new(0.0, 0.0, -0.4),
                moreau::math::Mat3::identity() * 0.01,
            ),
        )
        .unwrap();
    b.set_joint_spec(
        rod,
        JointSpec {
            range: Some((-1.0, -0.2)),
            ..Default::default()
        },
    )
    .unwrap();
    let model = std::sync::Arc::new(b.build().unwrap());
    let mut q = model.neutral_configuration();
    q[2] = 0.1 - 1e-4;
    q[7] = -0.2 + 1e-4;
    let v = DVector::zeros(model.nv);
    Scene {
        name: "cube-and-pendulum".into(),
        model,
        state: moreau::State::new(q, v),
        dt: 1e-3,
        controller: None,
    }
}

#[test]
fn gpu_contact_vjp_matches_its_f64_twin_and_the_sensitivity() {
    let scene = |name: &str| moreau::scenes::scene(name).unwrap();
    let mut impact = scene("ball-drop");
    impact.state.q[2] = 0.1 + 5e-4;
    impact.state.v = DVector::from_vec(vec![0.2, 0.0, -1.0, 1.0, 3.0, -2.0]);
    let mut flying = scene("cube-resting");
    flying.state.q[2] += 0.5;
    let cases = vec![
        ("cube resting", scene("cube-resting"), 50, 1e-4),
        ("cube sliding", scene("cube-sliding"), 50, 1e-4),
        ("ball impact", impact, 0, 0.0),
        ("cube stack", scene("cube-stack"), 100, 1e-4),
        ("quadruped", scene("quadruped"), 300, 1e-4),
        ("cube and pendulum on its stop", cube_and_pendulum(), 0, 0.0),
        ("cube in the air", flying, 0, 0.0),
    ];
    let mut sims = Vec::new();
    for (name, s, steps, sink) in &cases {
        let (sim, c, modes) = world(s, *steps, *sink);
        sims.push((*name, sim, c, modes));
    }
    // λ̄ in the range of G (as the step's J M̃⁻¹ w̄ is): G z, z random.
    let mut seed = 12345u64;
    let mut random = || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((seed >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
    };
    let mut bars = Vec::new();
    for (_, sim, _, _) in &sims {
        let p = sim.problem();
        let z = DVector::from_fn(p.m(), |_, _| random());
        bars.push((&p.delassus * z).iter().copied().collect::<Vec<f64>>());
    }
    let worlds: Vec<VjpWorld> = sims
        .iter()
        .zip(&bars)
        .map(|((_, sim, c, modes), bar)| VjpWorld {
            problem: sim.problem(),
            lambda: sim.solution().lambda.as_slice(),
            c,
            modes,
            lambda_bar: bar,
        })
        .collect();
    // The twin against the CPU sensitivity (its own LU, 1e-9
    // regularization, 3 refinements).
    let twins: Vec<Vec<f64>> = worlds.iter().map(contact_vjp_f64).collect();
    for (k, w) in worlds.iter().enumerate() {
        let mut sens = ContactSensitivity::default();
        sens.factorize(w.problem, w.lambda, w.c).unwrap();
        assert_eq!(sens.modes, w.modes, "{}", sims[k].0);
        let mut cpu = w.lambda_bar.to_vec();
        sens.apply_transpose(&mut cpu);
        let (e, raw) = differences(&w.problem.delassus, &twins[k], &cpu);
        println!(
            "{}: m {}, modes {:?}: twin vs sensitivity {e:.1e} through G ({raw:.1e} raw)",
            sims[k].0,
            w.problem.m(),
            w.modes
        );
        assert!(e < 1e-9, "{}: {e:e}", sims[k].0);
    }
    let Some(ctx) = GpuContext::for_tests() else {
        return;
    };
    let gpu = GpuContactVjp::new(&ctx).unwrap();
    let out = gpu.run(&worlds).unwrap();
    assert_eq!(out.g_bar.len(), worlds.len());
    for (k, twin) in twins.iter().enumerate() {
        let ours: Vec<f64> = out.g_bar[k].iter().map(|&x| x as f64).collect();
        let (e, raw) = differences(&worlds[k].problem.delassus, &ours, twin);
        println!(
            "{}: GPU (f32) vs twin {e:.1e} through G ({raw:.1e} raw), flags {}",
            sims[k].0, out.flags[k]
        );
        assert_eq!(out.flags[k], 0, "{}", sims[k].0);
        assert!(e < 1e-5, "{}: {e:e}", sims[k].0);
    }
    // Bad input: a λ̄ of the wrong length is refused, naming the world.
    let mut bad = worlds.clone();
    let short = vec![0.0; 1];
    bad[1].lambda_bar = &short;
    let e = gpu.run(&bad).unwrap_err().to_string();
    assert!(e.contains("world 1") && e.contains("lambda_bar"), "{e}");
}
