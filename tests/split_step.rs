//! `Simulator::prepare` + any solver + `Simulator::finish` is `step`, bit for
//! bit (what the batched worlds rely on), and `finish` refuses what it must.

use moreau::contact::{ContactSolution, SolverKind};
use moreau::error::SimError;
use moreau::{SimParams, Simulator};

#[test]
fn prepare_solve_finish_is_a_step() {
    for name in ["quadruped", "pyramid", "cube-sliding"] {
        let scene = moreau::scenes::scene(name).unwrap();
        // `step` may hand its own solver G's factors (the tree path), a
        // prepared problem always holds the dense G, and every contact (an
        // outside solver's answer is not checked against those set aside):
        // compare like with like.
        let params = SimParams {
            dt: scene.dt,
            delassus: moreau::sim::DelassusPath::Dense,
            screen_contacts: false,
            ..Default::default()
        };
        let mut a = Simulator::new(scene.model.clone(), params).unwrap();
        let mut b = Simulator::new(scene.model.clone(), params).unwrap();
        let (mut sa, mut sb) = (scene.state.clone(), scene.state.clone());
        let mut solver = SolverKind::NcpAdmm.build();
        let mut solution = ContactSolution::default();
        let mut tau = vec![0.0; scene.model.nv];
        let mut contacts = 0;
        for _ in 0..300 {
            scene.control(&sa, &mut tau);
            let ra = a.step(&mut sa, &tau).unwrap();
            let nc = b.prepare(&sb, &tau).unwrap();
            assert_eq!(nc, ra.nc);
            contacts += nc;
            let rb = if nc > 0 {
                // As the simulator does: warm-start ρ from the last solve.
                let mut settings = params.solver_settings;
                settings.rho = solver.last_rho();
                solver.solve(b.problem(), &settings, &mut solution).unwrap();
                b.finish(&mut sb, solution.lambda.as_slice(), solution.stats)
                    .unwrap()
            } else {
                b.finish(&mut sb, &[], Default::default()).unwrap()
            };
            assert_eq!(rb.nc, ra.nc);
        }
        let dq = (&sa.q - &sb.q).amax();
        println!("{name}: {contacts} contacts over 300 steps, max |q_step - q_split| = {dq:e}");
        assert!(contacts > 0);
        assert_eq!(dq, 0.0, "{name}: the same arithmetic");
    }
}

#[test]
fn finish_refuses_what_it_must_and_leaves_the_state() {
    let scene = moreau::scenes::scene("cube-resting").unwrap();
    let mut sim = Simulator::new(scene.model.clone(), SimParams::default()).unwrap();
    let mut state = scene.state.clone();
    let before = state.clone();
    let e = sim.finish(&mut state, &[], Default::default()).unwrap_err();
    assert_eq!(e, SimError::NotPrepared);
    let tau = vec![0.0; scene.model.nv];
    let nc = sim.prepare(&state, &tau).unwrap();
    assert!(nc > 0);
    let e = sim
        .finish(&mut state, &[0.0; 2], Default::default())
        .unwrap_err();
    println!("{e}");
    assert!(matches!(
        e,
        SimError::DimensionMismatch { what: "lambda", .. }
    ));
    let mut lambda = vec![0.0; 3 * nc];
    lambda[2] = f64::NAN;
    let e = sim
        .finish(&mut state, &lambda, Default::default())
        .unwrap_err();
    println!("{e}");
    assert!(matches!(e, SimError::SolverDiverged { contact: 0, .. }));
    assert_eq!(state.q, before.q);
    assert_eq!(state.v, before.v);
    // The failed finish consumed the preparation.
    let e = sim
        .finish(&mut state, &vec![0.0; 3 * nc], Default::default())
        .unwrap_err();
    assert_eq!(e, SimError::NotPrepared);
}
