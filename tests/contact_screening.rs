//! Open contacts set aside before the solve (`SimParams::screen_contacts`,
//! `src/sim/screen.rs`): the step's answer is the one with every contact,
//! those set aside that the answer would violate are taken back, and the
//! differentiated steps and the other laws' solvers keep every contact.

use moreau::contact::SolverKind;
use moreau::sim::{SimParams, Simulator, State, StepJacobians};
use std::sync::Arc;

/// Box `a` resting on the floor and falling at 2 m/s onto it, box `b`
/// 1 mm above `a` falling with it, box `c` at rest 3 mm above the floor
/// (all within the 5 mm margin, over the 0.5 mm set aside at least; dt
/// 1 ms).
fn scene() -> (Arc<moreau::Model>, State) {
    let xml = r#"<mujoco model="screen"><option timestep="0.001"/><worldbody>
        <geom name="floor" type="plane" size="5 5 0.1"/>
        <body name="a" pos="0 0 0.1"><freejoint/><geom type="box" size="0.1 0.1 0.1"/></body>
        <body name="b" pos="0 0 0.301"><freejoint/><geom type="box" size="0.1 0.1 0.1"/></body>
        <body name="c" pos="1 0 0.103"><freejoint/><geom type="box" size="0.1 0.1 0.1"/></body>
        </worldbody></mujoco>"#;
    let m = moreau::load::mjcf::parse_mjcf(
        xml,
        "screen.xml",
        std::path::Path::new("."),
        &Default::default(),
    )
    .unwrap();
    let model = Arc::new(m.model.clone());
    let mut v = nalgebra::DVector::zeros(model.nv);
    // Free joints: linear velocity first; a and b fall at 2 m/s.
    v[2] = -2.0;
    v[8] = -2.0;
    (model, State::new(m.q0.clone(), v))
}

fn sim(model: &Arc<moreau::Model>, screen: bool, solver: SolverKind) -> Simulator {
    let mut params = SimParams {
        dt: 1e-3,
        screen_contacts: screen,
        solver,
        ..Default::default()
    };
    params.solver_settings.tolerance = 1e-10;
    Simulator::new(model.clone(), params).unwrap()
}

/// Contacts of the step between bodies `x` and `y` (either order).
fn between(s: &Simulator, x: usize, y: usize) -> usize {
    (s.contacts().iter())
        .filter(|c| (c.body_a, c.body_b) == (x, y) || (c.body_a, c.body_b) == (y, x))
        .count()
}

#[test]
fn open_contacts_are_set_aside_and_the_violated_ones_taken_back() {
    let (model, start) = scene();
    let body = |name: &str| model.body_name.iter().position(|n| n == name).unwrap();
    let (a, b, c) = (body("a"), body("b"), body("c"));
    let (mut all, mut screened) = (
        sim(&model, false, SolverKind::NcpAdmm),
        sim(&model, true, SolverKind::NcpAdmm),
    );
    let (mut s_all, mut s_screened) = (start.clone(), start.clone());
    let tau = vec![0.0; model.nv];
    all.step(&mut s_all, &tau).unwrap();
    screened.step(&mut s_screened, &tau).unwrap();
    // Every contact the detector finds: a on the floor, b on a, c above
    // the floor.
    assert_eq!(
        (
            between(&all, a, 0),
            between(&all, b, a),
            between(&all, c, 0)
        ),
        (4, 4, 4)
    );
    // c's gap stays open: set aside. b's opens under the free motion (a
    // and b fall together: J_N v_f + φ/dt = 1 m/s) but a's floor contact
    // stops a: b's would be violated by 1 m/s, so it was taken back.
    assert_eq!(
        (
            between(&screened, a, 0),
            between(&screened, b, a),
            between(&screened, c, 0)
        ),
        (4, 4, 0)
    );
    let dv = (&s_all.v - &s_screened.v).amax();
    let dq = (&s_all.q - &s_screened.q).amax();
    println!(
        "one step, with every contact against the open ones set aside: |Δv| {dv:.1e}, |Δq| {dq:.1e}"
    );
    assert!(dv < 1e-8 && dq < 1e-11, "{dv:e} {dq:e}");
    // a stopped on the floor; b closes its 1 mm gap to a in the step and
    // no more (without its contacts it would fall on at 2 m/s).
    assert!(s_screened.v[2].abs() < 1e-6, "{}", s_screened.v[2]);
    assert!((s_screened.v[8] + 1.0).abs() < 1e-6, "{}", s_screened.v[8]);
    // 300 steps: c falls 3 mm and lands (its contacts then kept), the
    // stack settles; the two runs agree to the solver's tolerance.
    let mut set_aside = 0;
    for _ in 0..300 {
        all.step(&mut s_all, &tau).unwrap();
        screened.step(&mut s_screened, &tau).unwrap();
        set_aside += all.contacts().len() - screened.contacts().len();
    }
    let dq = (&s_all.q - &s_screened.q).amax();
    println!("after 300 steps |Δq| {dq:.1e}, contacts set aside in all {set_aside}");
    assert!(dq < 1e-8, "{dq:e}");
    assert!(set_aside > 0);
    assert_eq!(screened.contacts().len(), 12, "c landed: every contact in");
}

#[test]
fn differentiated_steps_and_other_laws_keep_every_contact() {
    let (model, start) = scene();
    let tau = vec![0.0; model.nv];
    let mut s = sim(&model, true, SolverKind::NcpAdmm);
    let mut jac = StepJacobians::default();
    let mut x = start.clone();
    s.step_with_jacobians(&mut x, &tau, &mut jac).unwrap();
    assert_eq!(s.contacts().len(), 12);
    // Then the plain step sets them aside again.
    let mut x = start.clone();
    s.step(&mut x, &tau).unwrap();
    assert_eq!(s.contacts().len(), 8);
    for solver in [SolverKind::CcpAdmm, SolverKind::LcpPgs] {
        let mut s = sim(&model, true, solver);
        let mut x = start.clone();
        s.step(&mut x, &tau).unwrap();
        assert_eq!(s.contacts().len(), 12, "{solver:?}");
    }
}
