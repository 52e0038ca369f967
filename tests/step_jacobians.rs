//! The Jacobians of one step (`Simulator::step_with_jacobians`) against
//! central finite differences of the step, away from mode switches: a cube
//! in free fall, resting (sticking), sliding, lifting off, on a gap, on
//! another cube; balls on the ground, impacting, and on a ball; the
//! standing quadruped, Gymnasium's ant on its legs (contacts and joint
//! limits). Solver tolerance 1e-12. (Steps of 1e-4 m/s where contacts
//! slide: the NCP residual sees a sliding contact's friction direction only
//! at second order, so a solve to 1e-12 leaves ~1e-10 of noise in its
//! velocities, too much for steps of 1e-6.)
//!
//! A body at rest on a contact or a stop settles at distance 0, exactly
//! where the stabilization's slope changes (`φ/dt` on a gap, `βφ/dt` in
//! penetration): the step is not differentiable in `q` there. The states
//! differentiated are moved off it ([`sink`]).

mod common;

use moreau::math::{Inertia, SE3, Vec3};
use moreau::model::{JointType, Material, ModelBuilder, Shape, WORLD};
use moreau::scenes::Scene;
use moreau::sim::{
    Q_EXACT_RESIDUAL, QSide, SimParams, Simulator, StepJacobians, step_jacobians_by_differences,
};
use moreau::{Model, State};
use nalgebra::DVector;
use std::sync::Arc;

fn params(dt: f64) -> SimParams {
    let mut p = SimParams::with_dt(dt);
    p.solver_settings.tolerance = 1e-12;
    p.solver_settings.max_iterations = 5000;
    p
}

/// Moves each free body down by `depth` times its rank among the free
/// bodies (1, 2, …: a stack sinks into the ground and into itself), and
/// (`stops`) puts each joint within `depth` of a stop `depth` past it.
fn sink(model: &Model, state: &mut State, depth: f64, stops: bool) {
    let mut rank = 0.0;
    for b in 1..model.nbodies {
        let iq = model.joint_idx_q[b];
        if model.joint_type[b] == JointType::Free {
            rank += 1.0;
            state.q[iq + 2] -= rank * depth;
        }
        if let Some((lower, upper)) = model.joint_range[b].filter(|_| stops) {
            let q = &mut state.q[iq];
            if *q < lower + depth {
                *q = lower - depth;
            } else if *q > upper - depth {
                *q = upper + depth;
            }
        }
    }
}

/// What [`settle_and_differentiate`] returns.
type Differentiated = (
    Simulator,
    State,
    DVector<f64>,
    StepJacobians,
    moreau::sim::StepReport,
);

/// Steps `scene` `steps` times under its controller (or zero torques),
/// applies `prepare` to the state, then steps once more with the
/// Jacobians: the simulator, the state that last step started from, its
/// torques, the Jacobians and the step's report.
fn settle_and_differentiate(
    scene: &Scene,
    steps: usize,
    prepare: &dyn Fn(&Model, &mut State),
) -> Differentiated {
    settle_and_differentiate_with(scene, steps, prepare, params(scene.dt))
}

/// [`settle_and_differentiate`] under `params`.
fn settle_and_differentiate_with(
    scene: &Scene,
    steps: usize,
    prepare: &dyn Fn(&Model, &mut State),
    params: SimParams,
) -> Differentiated {
    let mut sim = Simulator::new(scene.model.clone(), params).unwrap();
    let mut state = scene.state.clone();
    let mut tau = DVector::zeros(scene.model.nv);
    for _ in 0..steps {
        scene.control(&state, tau.as_mut_slice());
        sim.step(&mut state, tau.as_slice()).unwrap();
    }
    prepare(&scene.model, &mut state);
    scene.control(&state, tau.as_mut_slice());
    let at = state.clone();
    let mut jac = StepJacobians::default();
    let report = sim
        .step_with_jacobians(&mut state, tau.as_slice(), &mut jac)
        .unwrap();
    (sim, at, tau, jac, report)
}

/// Compares the step Jacobians at the state [`settle_and_differentiate`]
/// reaches with differences; the worst relative difference.
/// With respect to `q` too where `exact_q` (which the step's `q_residual`
/// must agree with).
fn check(
    scene: &Scene,
    steps: usize,
    eps: f64,
    prepare: &dyn Fn(&Model, &mut State),
    exact_q: bool,
) -> f64 {
    check_with(scene, steps, eps, prepare, exact_q, params(scene.dt))
}

/// [`check`] under `params`.
fn check_with(
    scene: &Scene,
    steps: usize,
    eps: f64,
    prepare: &dyn Fn(&Model, &mut State),
    exact_q: bool,
    params: SimParams,
) -> f64 {
    let model = scene.model.clone();
    let (sim, at, tau, jac, report) = settle_and_differentiate_with(scene, steps, prepare, params);
    assert!(jac.wrt_q, "{}", scene.name);
    assert_eq!(
        jac.q_residual <= Q_EXACT_RESIDUAL,
        exact_q,
        "{}: residual {:e}, {:?}",
        scene.name,
        jac.q_residual,
        sim.contacts()
    );
    let fd = step_jacobians_by_differences(&model, params, &at, tau.as_slice(), eps).unwrap();
    let mut worst = 0.0f64;
    let mut parts = Vec::new();
    // Each relative to its largest entry, but at least its scale in free
    // flight (a resting body's are near zero): 1 for ∂v⁺/∂v, dt for ∂q⁺/∂v,
    // dt/m and dt²/m for the torques (m the total mass).
    let (dt, mass) = (scene.dt, model.total_mass());
    for (name, ours, theirs, floor) in [
        ("dv/dv", &jac.dv_dv, &fd.dv_dv, 1.0),
        ("dv/dtau", &jac.dv_dtau, &fd.dv_dtau, dt / mass),
        ("dq/dv", &jac.dq_dv, &fd.dq_dv, dt),
        ("dq/dtau", &jac.dq_dtau, &fd.dq_dtau, dt * dt / mass),
        ("dv/dq", &jac.dv_dq, &fd.dv_dq, 1.0 / dt),
        ("dq/dq", &jac.dq_dq, &fd.dq_dq, 1.0),
    ] {
        if name.ends_with("/dq") && !exact_q {
            continue;
        }
        let e = (ours - theirs).amax() / theirs.amax().max(floor);
        parts.push(format!("{name} {e:.1e}"));
        worst = worst.max(e);
    }
    println!(
        "{}: nv {}, {} contacts, {} limits: {} (q residual {:.0e})",
        scene.name,
        model.nv,
        report.nc,
        report.nl,
        parts.join(", "),
        jac.q_residual
    );
    worst
}

/// A ball of radius 0.1 m leaning on a ball of radius 0.2 m fixed on the
/// world, its centre off the vertical by about 20° (sphere against sphere).
fn ball_on_ball() -> Scene {
    let mut b = ModelBuilder::new("ball-on-ball");
    let material = Material {
        friction: 0.8,
        ..Default::default()
    };
    b.add_geometry(
        "base",
        WORLD,
        SE3::identity(),
        Shape::Ball { radius: 0.2 },
        material,
    )
    .unwrap();
    let ball = b
        .add_body(
            "ball",
            WORLD,
            JointType::Free,
            SE3::identity(),
            Inertia::sphere(1.0, 0.1),
        )
        .unwrap();
    b.add_geometry(
        "ball",
        ball,
        SE3::identity(),
        Shape::Ball { radius: 0.1 },
        material,
    )
    .unwrap();
    let model = Arc::new(b.build().unwrap());
    let mut q = model.neutral_configuration();
    let centre = Vec3::new(0.1, 0.03, 0.27).normalize() * (0.3 - 1e-4);
    for r in 0..3 {
        q[r] = centre[r];
    }
    let v = DVector::zeros(model.nv);
    Scene {
        name: "ball-on-ball".into(),
        model,
        state: State::new(q, v),
        dt: 1e-3,
        controller: None,
    }
}

/// A plate (0.6 × 0.6 × 0.04 m, 2 kg) on a cube (0.2 m, 1 kg, turned 0.3
/// rad about z) on a table (a box fixed on the world), each 0.1 mm into
/// the one below: box against box, the cube's vertices on the table's face
/// and on the plate's.
fn plate_on_cube_on_table() -> Scene {
    let mut b = ModelBuilder::new("plate-on-cube-on-table");
    let material = Material {
        friction: 0.5,
        ..Default::default()
    };
    let cuboid = |x: f64, y: f64, z: f64| Shape::Cuboid {
        half_extents: Vec3::new(x, y, z),
    };
    b.add_geometry(
        "table",
        WORLD,
        SE3::from_translation(Vec3::new(0.0, 0.0, -0.1)),
        cuboid(0.5, 0.5, 0.1),
        material,
    )
    .unwrap();
    // The plate first: the pair (plate, cube) has the cube's vertices on
    // `b`'s side.
    for (name, mass, half) in [
        ("plate", 2.0, Vec3::new(0.3, 0.3, 0.02)),
        ("cube", 1.0, Vec3::repeat(0.1)),
    ] {
        let body = b
            .add_body(
                name,
                WORLD,
                JointType::Free,
                SE3::identity(),
                Inertia::cuboid(mass, half * 2.0),
            )
            .unwrap();
        b.add_geometry(
            name,
            body,
            SE3::identity(),
            cuboid(half.x, half.y, half.z),
            material,
        )
        .unwrap();
    }
    let model = Arc::new(b.build().unwrap());
    let mut q = model.neutral_configuration();
    let depth = 1e-4;
    // Plate (q[0..7]) and cube (q[7..14]): position, quaternion (x, y, z, w).
    let (plate_z, cube_z) = (0.2 - 2.0 * depth + 0.02, 0.1 - depth);
    q.as_mut_slice()[..3].copy_from_slice(&[0.02, -0.01, plate_z]);
    q.as_mut_slice()[7..10].copy_from_slice(&[0.0, 0.0, cube_z]);
    q.as_mut_slice()[10..14].copy_from_slice(&[0.0, 0.0, (0.15f64).sin(), (0.15f64).cos()]);
    let v = DVector::zeros(model.nv);
    Scene {
        name: "plate-on-cube-on-table".into(),
        model,
        state: State::new(q, v),
        dt: 1e-3,
        controller: None,
    }
}

#[test]
fn step_jacobians_match_finite_differences() {
    let scene = |name: &str| moreau::scenes::scene(name).unwrap();
    let renamed = |name: &str, new: &str| {
        let mut s = scene(name);
        s.name = new.into();
        s
    };
    let sunk = |depth: f64| move |m: &Model, s: &mut State| sink(m, s, depth, true);
    let mut falling = renamed("cube-resting", "cube-falling");
    falling.state.q[2] += 0.5;
    // A spinning ball 0.5 mm above the ground at 1 m/s: an impact with
    // restitution 0.5.
    let mut impact = renamed("ball-drop", "ball-impact");
    impact.state.q[2] = 0.1 + 5e-4;
    impact.state.v = DVector::from_vec(vec![0.2, 0.0, -1.0, 1.0, 3.0, -2.0]);
    let mut resting_ball = renamed("ball-drop", "ball-resting");
    resting_ball.state.q[2] = 0.1 - 1e-4;
    let lift_off = |_: &Model, s: &mut State| s.v[2] = 0.1;
    let none = |_: &Model, _: &mut State| {};
    type Prepare = Box<dyn Fn(&Model, &mut State)>;
    let mut cases: Vec<(Scene, usize, f64, Prepare, bool)> = vec![
        (falling, 0, 1e-6, Box::new(none), true),
        (scene("cube-resting"), 50, 1e-6, Box::new(sunk(1e-4)), true),
        (
            renamed("cube-resting", "cube-on-a-gap"),
            50,
            1e-6,
            Box::new(sunk(-2e-6)),
            true,
        ),
        (
            renamed("cube-resting", "cube-lifting-off"),
            50,
            1e-6,
            Box::new(lift_off),
            true,
        ),
        (scene("cube-sliding"), 50, 1e-4, Box::new(sunk(1e-4)), true),
        (plate_on_cube_on_table(), 0, 1e-6, Box::new(none), true),
        (resting_ball, 0, 1e-6, Box::new(none), true),
        (impact, 0, 1e-6, Box::new(none), true),
        (ball_on_ball(), 0, 1e-4, Box::new(none), true),
        (scene("quadruped"), 300, 1e-6, Box::new(sunk(1e-4)), true),
    ];
    if let Some(files) = common::robot_files() {
        let loaded = moreau::load::load_model_file(
            files.gymnasium_assets.join("ant.xml"),
            &Default::default(),
        )
        .unwrap();
        let ant = moreau::scenes::from_loaded(&loaded, true).unwrap();
        // On its legs (sunk 0.1 mm, its ankles on their stops without
        // force): four sticking feet whose Jacobian has rank 11 of 12;
        // moving one foot's distance asks for a contact velocity the feet
        // cannot produce: not differentiable in q (the least-squares
        // derivative is reported, not compared). (Pressed
        // into their stops, the ankles make the feet slide.)
        let on_legs = |m: &Model, s: &mut State| sink(m, s, 1e-4, false);
        cases.push((ant.clone(), 1500, 1e-6, Box::new(on_legs), false));
        // In the air with each ankle 0.1 mm into its stop: the stops'
        // rows active, with respect to q too.
        let mut flying = ant;
        flying.name = "ant (in the air, on its stops)".into();
        let lift = |m: &Model, s: &mut State| {
            sink(m, s, 1e-4, true);
            s.q[2] += 0.5;
        };
        cases.push((flying, 1500, 1e-6, Box::new(lift), true));
    }
    for (scene, steps, eps, prepare, exact_q) in &cases {
        let worst = check(scene, *steps, *eps, prepare.as_ref(), *exact_q);
        assert!(worst < 1e-5, "{}: {worst:e}", scene.name);
    }
}

/// With recovery bounded (`max_recovery_speed` 1 m/s, rad/s: the bound is
/// reached 5 mm, 5 mrad deep at 1 ms, β = 0.2): a cube 1 cm into the
/// ground (its recovery at the bound: slope 0 in φ) and 1 mm into it
/// (below the bound: β/dt), the quadruped's legs 1 cm past their stops,
/// against differences, with respect to `q` too; and the kink reported
/// where the depth sits on the bound.
#[test]
fn step_jacobians_with_bounded_recovery_match_finite_differences() {
    let bounded = |dt: f64| SimParams {
        max_recovery_speed: Some(1.0),
        ..params(dt)
    };
    let scene = |name: &str| moreau::scenes::scene(name).unwrap();
    let sunk = |depth: f64, stops: bool| move |m: &Model, s: &mut State| sink(m, s, depth, stops);
    let ball = |depth: f64| move |_: &Model, s: &mut State| s.q[2] = 0.1 - depth;
    type Prepare = Box<dyn Fn(&Model, &mut State)>;
    let cases: [(Scene, usize, Prepare); 4] = [
        (scene("ball-drop"), 0, Box::new(ball(1e-2))),
        (scene("ball-drop"), 0, Box::new(ball(1e-3))),
        (scene("quadruped"), 300, Box::new(sunk(1e-2, true))),
        (scene("quadruped"), 300, Box::new(sunk(1e-3, true))),
    ];
    for (scene, steps, prepare) in &cases {
        let p = bounded(scene.dt);
        let worst = check_with(scene, *steps, 1e-7, prepare.as_ref(), true, p);
        assert!(worst < 1e-5, "{}: {worst:e}", scene.name);
    }
    // On the bound: a cube exactly 5 mm deep. Moving it up leaves the
    // bound, down keeps it: its height's column is one-sided.
    let cube = scene("cube-resting");
    let p = bounded(cube.dt);
    let kink = p.recovery_kink().unwrap();
    assert!((kink - 5e-3).abs() < 1e-15);
    let (_, _, _, jac, _) =
        settle_and_differentiate_with(&cube, 0, &|_, s: &mut State| s.q[2] -= kink, p);
    assert_ne!(
        jac.q_sides[2],
        moreau::sim::QSide::Both,
        "{:?}",
        jac.q_sides
    );
}

/// With respect to `q` (through `⊕`), on steps without contacts and limit
/// rows: a tumbling cube in the air (free joint), the cart-pole (prismatic
/// and revolute), the 7-dof arm, a random tree with every joint type, and
/// Gymnasium's half-cheetah in the air (joint springs); against
/// `sim::step_jacobians_by_differences`.
#[test]
fn step_jacobians_with_respect_to_q_match_finite_differences() {
    let mut falling = moreau::scenes::scene("cube-resting").unwrap();
    falling.state.q[2] += 0.5;
    falling.state.v = DVector::from_vec(vec![0.3, -0.2, 0.1, 2.0, -1.0, 0.5]);
    falling.name = "cube-tumbling".into();
    let tree = Arc::new(moreau::scenes::random_tree(10, 5).unwrap());
    let mut rng = common::Lcg(4);
    let tree_state = State::new(
        common::random_q(&tree, &mut rng),
        rng.vector(tree.nv, -1.0, 1.0),
    );
    let mut cases: Vec<(String, Arc<Model>, State, f64)> = vec![
        (
            falling.name.clone(),
            falling.model.clone(),
            falling.state.clone(),
            falling.dt,
        ),
        ("random-tree".into(), tree, tree_state, 1e-3),
    ];
    for name in ["cartpole", "arm"] {
        let s = moreau::scenes::scene(name).unwrap();
        cases.push((name.into(), s.model.clone(), s.state.clone(), s.dt));
    }
    // Gymnasium's half-cheetah in the air: its joints have springs.
    if let Some(files) = common::robot_files() {
        let loaded = moreau::load::load_model_file(
            files.gymnasium_assets.join("half_cheetah.xml"),
            &Default::default(),
        )
        .unwrap();
        let scene = moreau::scenes::from_loaded(&loaded, true).unwrap();
        assert!(scene.model.dof_stiffness.iter().any(|&k| k > 0.0));
        let mut state = scene.state.clone();
        state.q[1] += 1.0;
        cases.push((
            "half_cheetah (springs)".into(),
            scene.model.clone(),
            state,
            scene.dt,
        ));
    }
    for (name, model, state, dt) in cases {
        let tau = DVector::from_fn(model.nv, |i, _| 0.3 * (i as f64 + 1.0).sin());
        let mut sim = Simulator::new(model.clone(), params(dt)).unwrap();
        let mut jac = StepJacobians::default();
        let mut s = state.clone();
        let report = sim
            .step_with_jacobians(&mut s, tau.as_slice(), &mut jac)
            .unwrap();
        assert!(jac.wrt_q && report.nc + report.nl == 0, "{name}");
        let fd = step_jacobians_by_differences(&model, params(dt), &state, tau.as_slice(), 1e-6)
            .unwrap();
        let ev = (&jac.dv_dq - &fd.dv_dq).amax() / fd.dv_dq.amax().max(1.0 / dt);
        let eq = (&jac.dq_dq - &fd.dq_dq).amax() / fd.dq_dq.amax().max(1.0);
        println!("{name}: nv {}, dv/dq {ev:.1e}, dq/dq {eq:.1e}", model.nv);
        assert!(ev < 1e-6 && eq < 1e-6, "{name}: {ev:e} {eq:e}");
    }
}

/// With respect to the friction coefficients: `∂v⁺/∂μ` against central
/// differences of the step in `SimParams::friction_scale` (which scales
/// every μ: the derivative is `Σ_i μ_i ∂v⁺/∂μ_i`), on the sliding cube and
/// on the quadruped with two feet sliding; a resting cube's is zero.
#[test]
fn step_jacobians_with_respect_to_friction_match_finite_differences() {
    for (name, steps, moving) in [
        ("cube-sliding", 50, true),
        ("quadruped", 300, true),
        ("cube-resting", 50, false),
    ] {
        let scene = moreau::scenes::scene(name).unwrap();
        let model = scene.model.clone();
        let (sim, at, tau, jac, _) = settle_and_differentiate(&scene, steps, &|_, _| {});
        let mu = DVector::from_iterator(sim.contacts().len(), sim.contacts().iter().map(|c| c.mu));
        let ours = &jac.dv_dmu * &mu;
        let h = 1e-4;
        let step = |scale: f64| {
            let mut p = params(scene.dt);
            p.friction_scale = scale;
            let mut s = Simulator::new(model.clone(), p).unwrap();
            let mut st = at.clone();
            s.step(&mut st, tau.as_slice()).unwrap();
            st.v
        };
        let fd = (step(1.0 + h) - step(1.0 - h)) / (2.0 * h);
        let e = (&ours - &fd).amax() / fd.amax().max(1e-3);
        println!("{name}: |dv/dscale| {:.3e}, difference {e:.1e}", fd.amax());
        assert!(e < 1e-5, "{name}: {e:e}");
        assert_eq!(moving, fd.amax() > 1e-6, "{name}");
    }
}

/// The vector–Jacobian product (`Simulator::step_with_vjp`, reverse mode)
/// equals `w_vᵀ ∂v⁺/∂x + w_qᵀ ∂q⁺/∂x` from the forward Jacobians, for `x`
/// = `q`, `v`, `τ`, `μ`, to 1e-10 relative: in free flight, on a resting,
/// a sliding and an impacting body, a box on a box, the quadruped, and
/// Gymnasium's ant on its legs (least-squares in `q`) and in the air on
/// its stops.
#[test]
fn vector_jacobian_products_match_the_forward_jacobians() {
    let scene = |name: &str| moreau::scenes::scene(name).unwrap();
    let mut falling = scene("cube-resting");
    falling.state.q[2] += 0.5;
    falling.state.v = DVector::from_vec(vec![0.3, -0.2, 0.1, 2.0, -1.0, 0.5]);
    let mut impact = scene("ball-drop");
    impact.state.q[2] = 0.1 + 5e-4;
    impact.state.v = DVector::from_vec(vec![0.2, 0.0, -1.0, 1.0, 3.0, -2.0]);
    type Prepare = Box<dyn Fn(&Model, &mut State)>;
    let mut cases: Vec<(Scene, usize, Prepare)> = vec![
        (falling, 0, Box::new(|_, _| {})),
        (
            scene("cube-resting"),
            50,
            Box::new(|m, s| sink(m, s, 1e-4, true)),
        ),
        (
            scene("cube-sliding"),
            50,
            Box::new(|m, s| sink(m, s, 1e-4, true)),
        ),
        (impact, 0, Box::new(|_, _| {})),
        (plate_on_cube_on_table(), 0, Box::new(|_, _| {})),
        (
            scene("quadruped"),
            300,
            Box::new(|m, s| sink(m, s, 1e-4, true)),
        ),
    ];
    if let Some(files) = common::robot_files() {
        let loaded = moreau::load::load_model_file(
            files.gymnasium_assets.join("ant.xml"),
            &Default::default(),
        )
        .unwrap();
        let ant = moreau::scenes::from_loaded(&loaded, true).unwrap();
        cases.push((ant.clone(), 1500, Box::new(|m, s| sink(m, s, 1e-4, false))));
        cases.push((
            ant,
            1500,
            Box::new(|m, s| {
                sink(m, s, 1e-4, true);
                s.q[2] += 0.5;
            }),
        ));
    }
    let mut rng = common::Lcg(7);
    for (scene, steps, prepare) in &cases {
        let (_, at, tau, _, _) = settle_and_differentiate(scene, *steps, prepare.as_ref());
        let nv = scene.model.nv;
        let (w_v, w_q) = (rng.vector(nv, -1.0, 1.0), rng.vector(nv, -1.0, 1.0));
        // The step from `at` twice, each on a fresh simulator (the same
        // solve: a resting body's impulses are not unique, and the modes
        // read off them decide the derivative): forward, then reverse.
        let fresh = || Simulator::new(scene.model.clone(), params(scene.dt)).unwrap();
        let mut jac = StepJacobians::default();
        fresh()
            .step_with_jacobians(&mut at.clone(), tau.as_slice(), &mut jac)
            .unwrap();
        let mut work = StepJacobians::default();
        let mut vjp = moreau::sim::StepVjp::default();
        fresh()
            .step_with_vjp(
                &mut at.clone(),
                tau.as_slice(),
                (w_v.as_slice(), w_q.as_slice()),
                &mut work,
                &mut vjp,
            )
            .unwrap();
        let product = |dv: &nalgebra::DMatrix<f64>, dq: &nalgebra::DMatrix<f64>| {
            dv.tr_mul(&w_v) + dq.tr_mul(&w_q)
        };
        let mut parts = Vec::new();
        let mut worst = 0.0f64;
        // Relative to the largest entry, but at least its free-flight scale
        // (1 for v, dt/m for τ, 1/dt for q, 1e-3 for μ): a resting body's
        // are near zero.
        let (dt, mass) = (scene.dt, scene.model.total_mass());
        let mut compare = |name: &str, ours: &DVector<f64>, theirs: DVector<f64>, floor: f64| {
            let e = (ours - &theirs).amax() / theirs.amax().max(floor);
            parts.push(format!("{name} {e:.1e} (of {:.1e})", theirs.amax()));
            worst = worst.max(e);
        };
        compare("v", &vjp.v, product(&jac.dv_dv, &jac.dq_dv), 1.0);
        compare(
            "tau",
            &vjp.tau,
            product(&jac.dv_dtau, &jac.dq_dtau),
            dt / mass,
        );
        if !vjp.mu.is_empty() {
            compare("mu", &vjp.mu, product(&jac.dv_dmu, &jac.dq_dmu), 1e-3);
        }
        assert_eq!(vjp.wrt_q, jac.wrt_q);
        compare("q", &vjp.q, product(&jac.dv_dq, &jac.dq_dq), 1.0 / dt);
        println!("{}: {}", scene.name, parts.join(", "));
        assert!(worst < 1e-10, "{}: {}", scene.name, parts.join(", "));
    }
}

/// `BatchSim::step_with_jacobians`: each world's Jacobians (on all cores)
/// are those of a single simulator with the same history, bit for bit
/// (the GPU backend's: `tests/batch_gradients.rs`).
#[test]
fn batched_worlds_give_each_worlds_jacobians() {
    use moreau::batch::{BatchOptions, BatchSim};
    let scene = moreau::scenes::scene("quadruped").unwrap();
    let nv = scene.model.nv;
    let options = BatchOptions {
        params: params(scene.dt),
        ..Default::default()
    };
    let n = 4;
    let mut batch = BatchSim::new(scene.model.clone(), &scene.state, n, &options).unwrap();
    let mut singles: Vec<Simulator> = (0..n)
        .map(|_| Simulator::new(scene.model.clone(), params(scene.dt)).unwrap())
        .collect();
    let mut states = vec![scene.state.clone(); n];
    // Different torques per world, some steps, then one with Jacobians.
    let torques = |w: usize, k: usize| -> Vec<f64> {
        (0..nv)
            .map(|i| 0.5 * ((w + 1) as f64 * (i + k) as f64).sin())
            .collect()
    };
    for k in 0..60 {
        let actions: Vec<f64> = (0..n).flat_map(|w| torques(w, k)).collect();
        let last = k == 59;
        if last {
            batch.step_with_jacobians(&actions, None).unwrap();
        } else {
            batch.step(&actions).unwrap();
        }
        for w in 0..n {
            let mut jac = StepJacobians::default();
            let tau = torques(w, k);
            if last {
                singles[w]
                    .step_with_jacobians(&mut states[w], &tau, &mut jac)
                    .unwrap();
                let theirs = batch.jacobians(w).unwrap().expect("asked for");
                assert_eq!(theirs.dv_dv, jac.dv_dv, "world {w}");
                assert_eq!(theirs.dq_dtau, jac.dq_dtau, "world {w}");
                assert_eq!(theirs.dv_dq, jac.dv_dq, "world {w}");
                assert!(jac.dv_dtau.amax() > 0.0);
            } else {
                singles[w].step(&mut states[w], &tau).unwrap();
            }
        }
    }
    // A plain step drops them.
    batch.step(&vec![0.0; n * nv]).unwrap();
    assert!(batch.jacobians(0).unwrap().is_none());
}

/// At states where robots have settled (feet at distance ≈ 0, ankles on
/// their stops): each column of `∂v⁺/∂q` is the derivative its
/// `q_sides` entry says (issue 37: never a silent wrong number). A `Both`
/// column equals one-sided differences from above and from below, a
/// `Plus` (`Minus`) column the one from above (below), relative to the
/// matrix's scale, along the column through `⊕`: the quadruped within 1e-6
/// (steps of 1e-7), Gymnasium's walker, hopper and ant within 1e-4 (steps
/// of 1e-6). The walker's columns differ from their side's differences by
/// 2.3e-5 at steps of 1e-7 and 2.3e-4 at 1e-8, every column alike: about
/// 1e-9 m/s in `v⁺` that does not shrink with the step, the solve's
/// accuracy (1e-12 in `c`) showing in `v⁺` where the contact impulses are
/// not unique (two capsules' ends on the floor); at 1e-6 they differ by
/// 1.4e-6 to 1.6e-5, from the other side by 0.74 to 0.88. `Kink` columns
/// are not compared. On the quadruped the three kinks are real (the
/// differences from either side disagree) and most columns are one-sided.
/// A difference needs converged solves: a column whose reference step did
/// not converge is not judged, and named (measured 2026-11-27: 7 of the
/// walker's 9 columns, where the default solver stalls at the perturbed
/// states; the differences of earlier runs there came from unconverged
/// solves).
#[test]
fn settled_robots_report_the_side_of_each_q_column() {
    let mut scenes = vec![(
        moreau::scenes::scene("quadruped").unwrap(),
        2000,
        1e-7,
        1e-6,
    )];
    for file in ["ant.xml", "walker2d_v5.xml", "hopper.xml"] {
        if let Some(loaded) = common::robot_files().map(|f| {
            moreau::load::load_model_file(f.gymnasium_assets.join(file), &Default::default())
                .unwrap()
        }) {
            let mut scene = moreau::scenes::from_loaded(&loaded, true).unwrap();
            scene.name = file.into();
            scenes.push((scene, 1000, 1e-6, 1e-4));
        }
    }
    for (scene, steps, h, tolerance) in scenes {
        let model = scene.model.clone();
        let nv = model.nv;
        let (_, at, tau, jac, report) = settle_and_differentiate(&scene, steps, &|_, _| {});
        assert!(jac.wrt_q && report.nc > 0, "{}", scene.name);
        assert_eq!(jac.q_sides.len(), nv);
        // v⁺, and whether the solve converged (a difference from an
        // unconverged solve judges nothing).
        let step = |s: &State| {
            let mut sim = Simulator::new(model.clone(), params(scene.dt)).unwrap();
            let mut s = s.clone();
            let report = sim.step(&mut s, tau.as_slice()).unwrap();
            (s.v, report.solver.is_none_or(|r| r.converged))
        };
        let (base, base_converged) = step(&at);
        assert!(base_converged, "{}", scene.name);
        let mut unverified = Vec::new();
        let scale = jac.dv_dq.amax().max(1.0 / scene.dt);
        let mut counts = [0usize; 4];
        let mut worst = 0.0f64;
        for k in 0..nv {
            let one_sided = |sign: f64| {
                let mut unit = DVector::zeros(nv);
                unit[k] = 1.0;
                let mut s = at.clone();
                moreau::dynamics::integrate(
                    &model,
                    at.q.as_slice(),
                    unit.as_slice(),
                    sign * h,
                    s.q.as_mut_slice(),
                );
                let (v, converged) = step(&s);
                ((v - &base) / (sign * h), converged)
            };
            let ((plus, plus_ok), (minus, minus_ok)) = (one_sided(1.0), one_sided(-1.0));
            let column = jac.dv_dq.column(k);
            let error = |d: &DVector<f64>| (column - d).amax() / scale;
            let side = jac.q_sides[k];
            let needed = match side {
                QSide::Both => plus_ok && minus_ok,
                QSide::Plus => plus_ok,
                QSide::Minus => minus_ok,
                QSide::Kink => true,
            };
            if !needed {
                unverified.push(k);
                counts[(side.code() + 1).clamp(0, 3) as usize] += 1;
                continue;
            }
            let checked = match side {
                QSide::Both => error(&plus).max(error(&minus)),
                QSide::Plus => error(&plus),
                QSide::Minus => error(&minus),
                QSide::Kink => {
                    if scene.name == "quadruped" {
                        let apart = (&plus - &minus).amax() / scale;
                        assert!(
                            apart > 1e-3,
                            "quadruped column {k}: a kink that is not one ({apart:e})"
                        );
                    }
                    0.0
                }
            };
            assert!(
                checked < tolerance,
                "{}: column {k} is {side:?} but differs from that side's differences by {checked:e}",
                scene.name
            );
            worst = worst.max(checked);
            counts[(side.code() + 1).clamp(0, 3) as usize] += 1;
        }
        // Columns whose reference steps did not converge cannot be judged
        // (named in the printout). The quadruped's and the ant's all
        // converge; at the walker's and the hopper's perturbed states the
        // default solver does not (2 capsule ends per foot, redundant:
        // issue 36), and only the columns it solves are judged.
        if matches!(scene.name.as_str(), "quadruped" | "ant.xml") {
            assert!(unverified.is_empty(), "{}: {unverified:?}", scene.name);
        }
        assert!(unverified.len() < nv, "{}: no column judged", scene.name);
        println!(
            "{}: {} columns: {} both, {} plus, {} minus, {} kinks; worst difference {worst:.1e} (q residual {:.0e}); unverified (a reference solve unconverged): {unverified:?}",
            scene.name, nv, counts[1], counts[2], counts[0], counts[3], jac.q_residual
        );
        if scene.name == "quadruped" {
            assert_eq!(counts[3], 3, "the base's three rotations");
            assert!(counts[0] + counts[2] >= 12, "{counts:?}");
        }
    }
}

/// One `StepJacobians` reused by simulators of two different trees with
/// as many dofs gives each tree's own Jacobians (bit for bit those of a
/// fresh one): its workspaces follow the model, not only the dof count.
#[test]
fn jacobians_reused_across_trees_with_as_many_dofs_are_each_trees_own() {
    // Two random trees with the same nv and different parents.
    let trees: Vec<Model> = (0..40)
        .map(|seed| moreau::scenes::random_tree(8, seed).unwrap())
        .collect();
    let (a, b) = trees
        .iter()
        .enumerate()
        .find_map(|(i, a)| {
            trees[i + 1..]
                .iter()
                .find(|b| b.nv == a.nv && b.body_parent != a.body_parent)
                .map(|b| (a.clone(), b.clone()))
        })
        .expect("two trees with as many dofs");
    let jacobians = |model: &Model, jac: &mut StepJacobians| {
        let model = Arc::new(model.clone());
        let mut sim = Simulator::new(model.clone(), params(1e-3)).unwrap();
        let mut state = State::new(
            common::random_q(&model, &mut common::Lcg(3)),
            DVector::from_fn(model.nv, |i, _| 0.1 * (i as f64 + 1.0).sin()),
        );
        let tau = DVector::from_fn(model.nv, |i, _| 0.3 * (i as f64).cos());
        sim.step_with_jacobians(&mut state, tau.as_slice(), jac)
            .unwrap();
        (jac.dv_dq.clone(), jac.dv_dv.clone(), jac.dq_dtau.clone())
    };
    let mut reused = StepJacobians::default();
    let _ = jacobians(&a, &mut reused);
    let after_a = jacobians(&b, &mut reused);
    let fresh = jacobians(&b, &mut StepJacobians::default());
    assert_eq!(
        after_a, fresh,
        "a reused StepJacobians kept the first tree's workspaces"
    );
}

/// The same for the columns of `v` and `τ` (`StepJacobians::v_sides`,
/// `tau_sides`): at the settled quadruped and Gymnasium's ant, each
/// column that is not a kink equals its side's one-sided differences of
/// whole steps (`δv` of `h`, `δτ` of `h/dt`), and on the quadruped a
/// column taken as two-sided has the same differences on both sides.
#[test]
fn settled_robots_report_the_side_of_each_v_and_tau_column() {
    let mut scenes = vec![(
        moreau::scenes::scene("quadruped").unwrap(),
        2000,
        1e-7,
        1e-6,
    )];
    if let Some(loaded) = common::robot_files().map(|f| {
        moreau::load::load_model_file(f.gymnasium_assets.join("ant.xml"), &Default::default())
            .unwrap()
    }) {
        let mut scene = moreau::scenes::from_loaded(&loaded, true).unwrap();
        scene.name = "ant.xml".into();
        scenes.push((scene, 1000, 1e-6, 1e-4));
    }
    for (scene, steps, h, tolerance) in scenes {
        let model = scene.model.clone();
        let (nv, dt) = (model.nv, scene.dt);
        let (_, at, tau, jac, report) = settle_and_differentiate(&scene, steps, &|_, _| {});
        assert!(report.nc > 0, "{}", scene.name);
        assert_eq!((jac.v_sides.len(), jac.tau_sides.len()), (nv, nv));
        let step = |s: &State, t: &DVector<f64>| {
            let mut sim = Simulator::new(model.clone(), params(dt)).unwrap();
            let mut s = s.clone();
            let report = sim.step(&mut s, t.as_slice()).unwrap();
            assert!(report.solver.is_none_or(|r| r.converged), "{}", scene.name);
            s.v
        };
        let base = step(&at, &tau);
        let mut counts = [0usize; 4];
        let mut worst = 0.0f64;
        // Flagged columns whose two sides' differences disagree (a real
        // boundary) and agree (a boundary within reach not crossed).
        let (mut apart, mut alike, mut widest) = (0, 0, 0.0f64);
        for (name, analytic, sides, step_size, floor) in [
            ("v", &jac.dv_dv, &jac.v_sides, h, 1.0),
            (
                "τ",
                &jac.dv_dtau,
                &jac.tau_sides,
                h / dt,
                dt / model.total_mass(),
            ),
        ] {
            let scale = analytic.amax().max(floor);
            for k in 0..nv {
                let one_sided = |sign: f64| {
                    let (mut s, mut t) = (at.clone(), tau.clone());
                    if name == "v" {
                        s.v[k] += sign * step_size;
                    } else {
                        t[k] += sign * step_size;
                    }
                    (step(&s, &t) - &base) / (sign * step_size)
                };
                let (plus, minus) = (one_sided(1.0), one_sided(-1.0));
                let error = |d: &DVector<f64>| (analytic.column(k) - d).amax() / scale;
                let side = sides[k];
                if side != QSide::Both {
                    widest = widest.max((&plus - &minus).amax() / scale);
                    if (&plus - &minus).amax() / scale > 1e-3 {
                        apart += 1;
                    } else {
                        alike += 1;
                    }
                }
                let checked = match side {
                    QSide::Both => error(&plus).max(error(&minus)),
                    QSide::Plus => error(&plus),
                    QSide::Minus => error(&minus),
                    QSide::Kink => 0.0,
                };
                assert!(
                    checked < tolerance,
                    "{}: {name} column {k} is {side:?} but differs from that side's differences by {checked:e}",
                    scene.name
                );
                worst = worst.max(checked);
                counts[(side.code() + 1).clamp(0, 3) as usize] += 1;
            }
        }
        println!(
            "{}: {} columns of v and τ: {} both, {} plus, {} minus, {} kinks; worst difference {worst:.1e}; flagged columns whose sides differ {apart}, agree {alike} (widest {widest:.1e})",
            scene.name,
            2 * nv,
            counts[1],
            counts[2],
            counts[0],
            counts[3]
        );
    }
}
