//! The seed study's findings ("Contact Models in Robotics: a Comparative
//! Analysis"), reproduced: each test prints its numbers and asserts the margin.

use moreau::contact::{SolverKind, SolverSettings};
use moreau_lab::study::{self, Trajectory};

const ALL: [SolverKind; 8] = SolverKind::ALL;

fn slide(kind: SolverKind) -> Trajectory {
    let scene = study::sliding_cube().unwrap();
    study::simulate(&scene, study::params(kind, scene.dt), 400, None).unwrap()
}

/// Lateral drift (m): displacement perpendicular to the initial velocity.
fn lateral(t: &Trajectory) -> f64 {
    let a = study::SLIDE_ANGLE_DEG.to_radians();
    let p = t.records.last().unwrap().position;
    (-a.sin() * p[0] + a.cos() * p[1]).abs()
}

/// Largest departure of the kinetic energy from the analytic curve, relative to KE₀.
fn energy_error(t: &Trajectory) -> (f64, f64) {
    let e0 = study::sliding_cube_energy(0.0);
    let mut worst: f64 = 0.0;
    let mut signed = 0.0;
    for r in &t.records {
        let d = (r.kinetic - study::sliding_cube_energy(r.t)) / e0;
        if d.abs() > worst.abs() {
            worst = d;
        }
        signed += d;
    }
    (worst, signed / t.records.len() as f64)
}

#[test]
fn sliding_cube_lcp_drifts_ccp_bounces_raisim_under_dissipates() {
    let mut rows = Vec::new();
    for kind in ALL {
        let t = slide(kind);
        let (worst, mean) = energy_error(&t);
        let lift = t.max_of(|r| r.position[2] - 0.1);
        let vn = t.max_of(|r| r.max_loaded_normal_velocity);
        let mdp = t.max_of(|r| r.mdp).to_degrees();
        println!(
            "{:<10} lateral drift {:.2e} m | max lift {:.2e} m, max loaded c_N {:.2e} m/s | KE − analytic: worst {:+.2} %, mean {:+.3} % | max MDP angle {:.2}°",
            kind.name(),
            lateral(&t),
            lift,
            vn,
            100.0 * worst,
            100.0 * mean,
            mdp
        );
        rows.push((kind, lateral(&t), lift, vn, worst, mean));
    }
    let get = |k: SolverKind| *rows.iter().find(|r| r.0 == k).unwrap();
    // Friction pyramid: sideways drift; NCP solvers go straight.
    assert!(get(SolverKind::LcpPgs).1 > 1e-3);
    for k in [
        SolverKind::NcpPgs,
        SolverKind::NcpAdmm,
        SolverKind::Staggered,
        SolverKind::RaisimDs,
    ] {
        assert!(get(k).1 < 1e-6, "{}", k.name());
        // Follows the analytic energy within 1 %.
        assert!(get(k).4.abs() < 0.01, "{}", k.name());
    }
    // CCP: the sliding cube separates from the ground while pushing on it, and leaves the curve.
    for k in [SolverKind::CcpPgs, SolverKind::CcpAdmm] {
        let (_, _, lift, vn, worst, _) = get(k);
        assert!(lift > 1e-3 && vn > 0.1, "{}", k.name());
        assert!(worst.abs() > 0.01, "{}", k.name());
    }
    // RaiSim dissipates less than Coulomb with maximum dissipation (its
    // friction is off the slip direction); RaiSim+DS matches the curve.
    let (raisim, raisim_ds) = (get(SolverKind::Raisim), get(SolverKind::RaisimDs));
    assert!(
        raisim.5 > 1e-3 && raisim.4 > 0.0,
        "RaiSim: mean excess {}",
        raisim.5
    );
    assert!(raisim_ds.5.abs() < 1e-4 && raisim_ds.4.abs() < 1e-3);
    let mdp = |k| slide(k).max_of(|r| r.mdp);
    assert!(mdp(SolverKind::Raisim) > 5f64.to_radians());
    assert!(mdp(SolverKind::RaisimDs) < 0.01f64.to_radians());
}

fn drag(kind: SolverKind, warm: bool) -> Trajectory {
    let scene = study::dragged_cube().unwrap();
    let mut params = study::params(kind, scene.dt);
    params.warm_start = warm;
    study::simulate(&scene, params, 350, Some(&study::drag_force)).unwrap()
}

#[test]
fn dragged_cube_slips_when_coulomb_says_and_internal_forces_tell_solvers_apart() {
    let t_slip = study::drag_slip_time();
    println!(
        "Coulomb: slip at {t_slip:.4} s (μ m g / {} N/s)",
        study::DRAG_RATE
    );
    println!(
        "internal forces relative to ‖λ‖: distance to the minimum-norm admissible impulse (min-norm) and lateral squeeze (world y);"
    );
    println!(
        "stuck: 0.01 s < t < 0.6 t_slip (no contact near its cone's edge); sliding: t > 1.2 t_slip"
    );
    let mut rows = Vec::new();
    let cases = ALL
        .iter()
        .map(|&k| (k, true))
        .chain([(SolverKind::NcpAdmm, false), (SolverKind::CcpAdmm, false)]);
    for (kind, warm) in cases {
        let t = drag(kind, warm);
        let slip = t
            .records
            .iter()
            .find(|r| r.velocity[0] > 1e-6)
            .map(|r| r.t)
            .unwrap_or(f64::NAN);
        let window = |lo: f64, hi: f64, f: &dyn Fn(&moreau_lab::study::Record) -> f64| {
            t.records
                .iter()
                .filter(|r| r.t > lo && r.t < hi)
                .map(f)
                .fold(0.0, f64::max)
        };
        let stuck_norm = window(0.01, 0.6 * t_slip, &|r| r.internal_relative);
        let stuck_lat = window(
            0.01,
            0.6 * t_slip,
            &moreau_lab::study::Record::lateral_squeeze,
        );
        let slide_norm = window(1.2 * t_slip, 1.0, &|r| r.internal_relative);
        let slide_lat = window(
            1.2 * t_slip,
            1.0,
            &moreau_lab::study::Record::lateral_squeeze,
        );
        println!(
            "{:<10} {:<4} slips at {slip:.4} s ({:+.1} ms) | stuck: min-norm {stuck_norm:.1e}, lateral {stuck_lat:.1e} | sliding: min-norm {slide_norm:.1e}, lateral {slide_lat:.1e}",
            kind.name(),
            if warm { "warm" } else { "cold" },
            1e3 * (slip - t_slip)
        );
        rows.push((
            kind, warm, slip, stuck_norm, stuck_lat, slide_norm, slide_lat,
        ));
    }
    let get = |k: SolverKind, warm: bool| *rows.iter().find(|r| r.0 == k && r.1 == warm).unwrap();
    // Slip within 1 % (+ the 0.3 ms the velocity needs to pass 1e-6 m/s, + a step).
    for k in [
        SolverKind::NcpAdmm,
        SolverKind::NcpPgs,
        SolverKind::RaisimDs,
        SolverKind::CcpAdmm,
        SolverKind::Staggered,
    ] {
        assert!(
            (get(k, true).2 - t_slip).abs() < 0.01 * t_slip + 1.5e-3,
            "{}",
            k.name()
        );
    }
    // At stiction the per-contact solvers squeeze the cube; global ADMM does not.
    for k in [
        SolverKind::NcpPgs,
        SolverKind::CcpPgs,
        SolverKind::LcpPgs,
        SolverKind::Raisim,
        SolverKind::RaisimDs,
    ] {
        let r = get(k, true);
        assert!(r.3 > 1e-2 && r.4 > 1e-2, "{}", k.name());
    }
    for k in [SolverKind::NcpAdmm, SolverKind::CcpAdmm] {
        let (cold, warm) = (get(k, false), get(k, true));
        assert!(cold.3 < 1e-6 && cold.4 < 1e-6, "{} cold", k.name());
        assert!(warm.4 < 1e-6, "{} warm", k.name());
    }
    // While sliding, RaiSim keeps squeezing (its friction is off the slip
    // direction); RaiSim+DS does not.
    assert!(get(SolverKind::Raisim, true).6 > 1e-3);
    assert!(get(SolverKind::RaisimDs, true).6 < 1e-6);
}

#[test]
fn heavy_on_light_cube_defeats_per_contact_solvers_but_not_ncp_admm() {
    let settings = SolverSettings {
        tolerance: 1e-6,
        max_iterations: 1000,
        ..Default::default()
    };
    let ratios = [1.0, 1e2, 1e4, 1e6];
    let results = study::mass_ratio_study(&ratios, &ALL, &settings).unwrap();
    print!("{:<10}", "ratio");
    for r in ratios {
        print!(" | {:>22.0e}", r);
    }
    println!(
        "\n{:<10} | (own-model eps_abs after its iterations; * = reached 1e-6)",
        ""
    );
    for kind in ALL {
        print!("{:<10}", kind.name());
        for r in results.iter().filter(|r| r.solver == kind) {
            print!(
                " | {:>9.1e} {:>5} it {}",
                r.eps_abs,
                r.iterations,
                if r.converged { '*' } else { ' ' }
            );
        }
        println!();
    }
    let at = |k: SolverKind, ratio: f64| {
        *results
            .iter()
            .find(|r| r.solver == k && r.ratio == ratio)
            .unwrap()
    };
    for k in ALL.into_iter().filter(|k| k.is_per_contact()) {
        let r = at(k, 1e6);
        assert!(!r.converged && r.eps_abs > 1e-6, "{} at 1e6", k.name());
    }
    for ratio in ratios {
        let r = at(SolverKind::NcpAdmm, ratio);
        assert!(
            r.converged && r.eps_ncp <= 1e-6,
            "ncp-admm at {ratio:e}: {r:?}"
        );
    }
}

#[test]
fn compliant_penetration_grows_linearly_with_r() {
    let alphas = [0.0, 1e-2, 2e-2, 4e-2, 8e-2];
    let mut pen = Vec::new();
    for &a in &alphas {
        let d = study::compliant_penetration(SolverKind::CcpAdmm, a).unwrap();
        if a > 0.0 {
            println!(
                "R = {a:.0e}·diag(G): penetration {d:.3e} m, per unit α {:.4e}",
                d / a
            );
        } else {
            println!("R = 0 (rigid): penetration {d:.3e} m");
        }
        pen.push(d);
    }
    assert!(pen[0].abs() < 1e-8, "rigid contact: no penetration");
    let slope = pen[1] / alphas[1];
    for (i, &a) in alphas.iter().enumerate().skip(2) {
        let rel = (pen[i] / a - slope).abs() / slope;
        assert!(
            rel < 0.05,
            "α = {a}: slope deviates by {:.1} %",
            100.0 * rel
        );
    }
    assert!(pen[4] > 1e-7);
}
