//! The compliance of penetrating contacts (`SimParams::penetration_compliance`):
//! a block started wedged between two walls, which no velocity can free,
//! and a link started inside a wall it cannot leave are held with every
//! solve converged; a contact at rest stays rigid in the limit; the step
//! derivatives take the compliance's slope in `φ` and its scale's in `q`.

use moreau::load::mjcf::{MjcfOptions, parse_mjcf};
use moreau::sim::{OVERLAP_COMPLIANCE, SimParams, Simulator, State};
use nalgebra::DVector;
use std::path::Path;
use std::sync::Arc;

/// 500 steps of 2 ms from `q0` at rest with zero torques and the given
/// `penetration_compliance`, `each` seeing every step's state: the solves
/// left unconverged and the final state.
fn unforced(
    model: &Arc<moreau::model::Model>,
    q0: &DVector<f64>,
    alpha: f64,
    mut each: impl FnMut(usize, &State),
) -> (usize, State) {
    let params = SimParams {
        dt: 0.002,
        penetration_compliance: alpha,
        ..SimParams::default()
    };
    let mut sim = Simulator::new(model.clone(), params).unwrap();
    let mut state = State::new(q0.clone(), DVector::zeros(model.nv));
    let mut unconverged = 0;
    for step in 0..500 {
        let report = sim
            .step(&mut state, &vec![0.0; model.nv])
            .unwrap_or_else(|e| panic!("α = {alpha}, step {step}: {e}"));
        unconverged += report.solver.is_some_and(|s| !s.converged) as usize;
        each(step, &state);
    }
    (unconverged, state)
}

/// The model of `xml` and its `qpos0`; the loader's one warning, if any,
/// must be that geometries overlap at `qpos0` and name every overlap in
/// `overlaps` (none: no warning).
fn model_overlapping(xml: &str, overlaps: &[&str]) -> (Arc<moreau::model::Model>, DVector<f64>) {
    let m = parse_mjcf(xml, "test.xml", Path::new("."), &MjcfOptions::default()).unwrap();
    if overlaps.is_empty() {
        assert!(m.warnings.is_empty(), "{:?}", m.warnings);
    } else {
        assert_eq!(m.warnings.len(), 1, "{:?}", m.warnings);
        let w = &m.warnings[0];
        assert!(
            w.starts_with("at qpos0") && w.contains("penetration_compliance"),
            "{w}"
        );
        for o in overlaps {
            assert!(w.contains(o), "{o} in {w}");
        }
    }
    (Arc::new(m.model), m.q0)
}

fn model(xml: &str) -> (Arc<moreau::model::Model>, DVector<f64>) {
    model_overlapping(xml, &[])
}

/// A 10 cm block between two walls 8.4 cm apart: it overlaps each by 8 mm
/// at the start, and no velocity recovers both penetrations, so the rigid
/// problem has no solution (its solves end unconverged). With the
/// compliance the two pushes balance, every solve converges and the block
/// stays where it started, held against gravity by friction.
#[test]
fn a_block_wedged_between_two_walls_is_held_with_every_solve_converged() {
    let (model, q0) = model_overlapping(
        r#"<mujoco><option timestep="0.002"/>
          <worldbody>
            <geom type="box" pos="-0.092 0 0" size="0.05 0.2 0.2"/>
            <geom type="box" pos="0.092 0 0" size="0.05 0.2 0.2"/>
            <body name="block"><freejoint/><geom type="box" size="0.05 0.05 0.05" mass="1"/></body>
          </worldbody>
        </mujoco>"#,
        &["2 pair(s)", "by 8.0 mm"],
    );
    let run = |alpha: f64| {
        let mut fastest = 0.0f64;
        let (unconverged, state) = unforced(&model, &q0, alpha, |step, s| {
            if step >= 50 {
                fastest = fastest.max(s.v.amax());
            }
        });
        let moved = (state.q.rows(0, 3) - q0.rows(0, 3)).norm();
        (unconverged, fastest, moved)
    };
    let rigid = run(0.0);
    let compliant = run(OVERLAP_COMPLIANCE);
    println!(
        "(unconverged solves, fastest speed after 0.1 s, distance moved) rigid: {rigid:?}; compliant: {compliant:?}"
    );
    assert!(rigid.0 > 0, "the rigid problem has no solution: {rigid:?}");
    assert_eq!(compliant.0, 0, "{compliant:?}");
    assert!(compliant.1 < 1e-3 && compliant.2 < 1e-3, "{compliant:?}");
}

const BALL: &str = r#"<mujoco><option timestep="0.002"/>
  <worldbody>
    <geom type="plane" size="2 2 0.1"/>
    <body name="ball" pos="0 0 0.1"><freejoint/><geom type="sphere" size="0.1" mass="1"/></body>
  </worldbody>
</mujoco>"#;

/// `R` vanishes with the penetration: a ball started 2 cm into the floor
/// comes out as the rigid one does (to within the compliance's share of
/// the first steps) and then rests on it, its penetration recovered to
/// rounding, as rigid as without the compliance.
#[test]
fn a_contact_at_rest_is_rigid_in_the_limit() {
    let (model, mut q0) = model(BALL);
    q0[2] -= 0.02;
    let run = |alpha: f64| {
        let mut heights = Vec::new();
        let (unconverged, _) = unforced(&model, &q0, alpha, |_, s| heights.push(s.q[2]));
        assert_eq!(unconverged, 0);
        heights
    };
    let (rigid, compliant) = (run(0.0), run(OVERLAP_COMPLIANCE));
    let first = (0..5)
        .map(|k| (rigid[k] - compliant[k]).abs())
        .fold(0.0, f64::max);
    let last = (compliant[499] - 0.1).abs();
    println!(
        "first 5 steps: {first:.2e} m apart; after 1 s: penetration {last:.2e} m (rigid {:.2e})",
        (rigid[499] - 0.1).abs()
    );
    // The first step asks 2 m/s back, the compliant contact gives G/(G + R)
    // of it (about half): millimetres apart.
    assert!(first > 1e-4 && first < 1e-2, "{first}");
    assert!(last < 1e-9, "{last}");
}

/// The step derivatives take `∂R_N/∂φ · λ_N` in the normal row: a ball
/// resting 3 mm into the floor, against central differences, with the
/// term large enough to matter (the compliant and rigid Jacobians differ).
#[test]
fn the_step_derivatives_take_the_compliance_slope() {
    let (model, mut q0) = model(BALL);
    q0[2] -= 0.003;
    let state = State::new(q0, DVector::zeros(model.nv));
    let jacobians = |alpha: f64| {
        let params = SimParams {
            dt: 0.002,
            penetration_compliance: alpha,
            warm_start: false,
            ..SimParams::default()
        };
        let mut sim = Simulator::new(model.clone(), params).unwrap();
        let mut jac = moreau::sim::StepJacobians::default();
        let mut s = state.clone();
        sim.step_with_jacobians(&mut s, &[0.0; 6], &mut jac)
            .unwrap();
        let fd =
            moreau::sim::step_jacobians_by_differences(&model, params, &state, &[0.0; 6], 1e-7)
                .unwrap();
        (jac.dv_dq, fd.dv_dq)
    };
    let (rigid, _) = jacobians(0.0);
    let (analytic, differences) = jacobians(OVERLAP_COMPLIANCE);
    let gap = (&analytic - &differences).amax();
    let effect = (&analytic - &rigid).amax();
    println!(
        "∂v⁺/∂q: analytic against differences {gap:.2e}, compliant against rigid {effect:.2e}"
    );
    assert!(gap < 1e-5 * analytic.amax(), "{analytic} {differences}");
    assert!(effect > 1e3 * gap, "{effect} {gap}");
}

/// Where the Delassus matrix's diagonal moves with the configuration (a
/// frictionless ball on a hinged arm, its contact 5 mm deep and off the
/// pivot's vertical, a second link beyond it), the derivative takes its
/// variation: with the penetration's compliance `α s h(φ)` (`s = tr G_c /
/// 3`), and with [`SimParams::compliance`]'s `R = α diag G` on every row
/// (0.79 off before its `∂G_kk/∂q` was written), against central
/// differences.
#[test]
fn the_step_derivatives_take_the_delassus_variation() {
    let (model, q0) = model_overlapping(
        r#"<mujoco><option timestep="0.002"/>
          <worldbody>
            <geom type="plane" size="2 2 0.1" friction="0 0 0"/>
            <body name="arm" pos="0 0 0.528"><joint type="hinge" axis="0 1 0"/>
              <geom type="capsule" fromto="0 0 0 0.25 0 -0.433" size="0.02" mass="1" contype="0" conaffinity="0"/>
              <geom type="sphere" pos="0.25 0 -0.433" size="0.1" mass="0.5" friction="0 0 0"/>
              <body name="tip" pos="0.25 0 -0.433"><joint type="hinge" axis="0 1 0"/>
                <geom type="capsule" fromto="0 0 0 0.2 0 0.1" size="0.02" mass="0.3" contype="0" conaffinity="0"/>
              </body>
            </body>
          </worldbody>
        </mujoco>"#,
        &["by 5.0 mm"],
    );
    let state = State::new(q0, DVector::from_vec(vec![0.3, -0.2]));
    let base = SimParams {
        dt: 0.002,
        warm_start: false,
        penetration_compliance: OVERLAP_COMPLIANCE,
        ..SimParams::default()
    };
    let global = SimParams {
        compliance: 0.1,
        penetration_compliance: 0.0,
        ..base
    };
    for (name, params) in [("penetration", base), ("diagonal", global)] {
        let mut sim = Simulator::new(model.clone(), params).unwrap();
        let mut jac = moreau::sim::StepJacobians::default();
        let mut s = state.clone();
        let report = sim
            .step_with_jacobians(&mut s, &[0.0; 2], &mut jac)
            .unwrap();
        let contacts = sim.contacts();
        assert!(
            contacts.len() == 1 && contacts[0].distance < -4e-3,
            "{:?}",
            contacts.iter().map(|c| c.distance).collect::<Vec<_>>()
        );
        assert!(report.solver.is_some_and(|s| s.converged));
        let fd =
            moreau::sim::step_jacobians_by_differences(&model, params, &state, &[0.0; 2], 1e-7)
                .unwrap();
        let gap = (&jac.dv_dq - &fd.dv_dq).amax();
        println!("{name} compliance: ∂v⁺/∂q against differences {gap:.2e}");
        assert!(
            gap < 1e-6 * fd.dv_dq.amax(),
            "{name}: {} {}",
            jac.dv_dq,
            fd.dv_dq
        );
    }
}

/// A link started 2 cm inside a wall along a direction its joint cannot
/// move it (a slider on z against a wall's face along x: `G_NN = 0`), as
/// robosuite's Tiago starts with its torso inside its base: no impulse
/// changes the normal velocity, so the rigid problem has no solution. The
/// compliance's scale is the mean of the contact's three `G_kk` (its
/// tangent along the slide can move): every solve converges, and the
/// overlap's normal force holds the slider by friction, as MuJoCo's soft
/// contact holds Tiago's torso.
#[test]
fn a_link_inside_a_wall_it_cannot_leave_is_held_with_every_solve_converged() {
    let (model, q0) = model_overlapping(
        r#"<mujoco><option timestep="0.002"/>
          <worldbody>
            <geom type="box" pos="0.13 0 0" size="0.05 0.2 0.2"/>
            <body name="slider"><joint type="slide" axis="0 0 1"/>
              <geom type="box" size="0.1 0.05 0.05" mass="1"/></body>
          </worldbody>
        </mujoco>"#,
        &["`world/geom0` and `slider/geom0` by 20.0 mm"],
    );
    let run = |alpha: f64| {
        let (unconverged, state) = unforced(&model, &q0, alpha, |_, _| {});
        (unconverged, state.q[0])
    };
    let rigid = run(0.0);
    let compliant = run(OVERLAP_COMPLIANCE);
    println!("(unconverged solves, height after 1 s) rigid: {rigid:?}; compliant: {compliant:?}");
    assert!(rigid.0 > 0, "{rigid:?}");
    assert_eq!(compliant.0, 0, "{compliant:?}");
    assert!(compliant.1.abs() < 1e-6, "{compliant:?}");
}
