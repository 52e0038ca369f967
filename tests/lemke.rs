//! Lemke's algorithm (`contact::lemke`) on LCPs with known solutions,
//! degenerate ones, and ones it cannot solve (reported, not looped on).

mod common;

use common::Lcg;
use moreau::contact::{LemkeError, LemkeSettings, lemke};
use nalgebra::{DMatrix, DVector};

/// `M = AAᵀ/n + I·shift` (positive definite: a P-matrix, one solution), a
/// complementary `(z*, w*)` with about a third of each zero and, with
/// `degenerate`, some indices where both are zero; `q = w* − Mz*`.
fn known_lcp(
    rng: &mut Lcg,
    n: usize,
    degenerate: bool,
) -> (DMatrix<f64>, DVector<f64>, DVector<f64>) {
    let a = DMatrix::from_fn(n, n, |_, _| rng.range(-1.0, 1.0));
    let m = &a * a.transpose() / n as f64 + DMatrix::identity(n, n) * 0.1;
    let mut z = DVector::zeros(n);
    let mut w = DVector::zeros(n);
    for i in 0..n {
        let u = rng.next();
        if degenerate && u < 0.25 {
            continue; // both zero
        }
        if u < 0.6 {
            z[i] = rng.range(0.1, 2.0);
        } else {
            w[i] = rng.range(0.1, 2.0);
        }
    }
    let q = &w - &m * &z;
    (m, q, z)
}

#[test]
fn lemke_finds_the_known_solutions_of_random_p_matrix_lcps() {
    let mut rng = Lcg(7);
    let mut worst = 0.0f64;
    let mut most_pivots = 0;
    for trial in 0..200 {
        let n = 1 + trial % 40;
        let (m, q, z_star) = known_lcp(&mut rng, n, false);
        let s = lemke(&m, &q, &LemkeSettings::for_size(n)).unwrap();
        let err = (&s.z - &z_star).amax();
        worst = worst.max(err);
        most_pivots = most_pivots.max(s.pivots);
        assert!(err <= 1e-9, "trial {trial} (n = {n}): z off by {err:e}");
        assert!(
            s.residual() <= 1e-9,
            "trial {trial}: residual {:e}",
            s.residual()
        );
    }
    eprintln!("200 random LCPs up to n = 40: largest error {worst:.2e}, most pivots {most_pivots}");
}

#[test]
fn lemke_solves_degenerate_lcps_without_cycling() {
    // Random ones with indices where z* = w* = 0 (q has zeros, ratio ties).
    let mut rng = Lcg(11);
    for trial in 0..200 {
        let n = 2 + trial % 30;
        let (m, q, z_star) = known_lcp(&mut rng, n, true);
        let s = lemke(&m, &q, &LemkeSettings::for_size(n)).unwrap();
        assert!(
            s.residual() <= 1e-9,
            "trial {trial}: residual {:e}",
            s.residual()
        );
        assert!((&s.z - &z_star).amax() <= 1e-9, "trial {trial}");
    }
    // Ties everywhere: every qᵢ equal, M = the all-ones matrix plus I
    // (z = (1/(n+1), …) solves it), and q = 0 entries beside a negative one.
    let n = 6;
    let m = DMatrix::from_element(n, n, 1.0) + DMatrix::identity(n, n);
    let q = DVector::from_element(n, -1.0);
    let s = lemke(&m, &q, &LemkeSettings::for_size(n)).unwrap();
    assert!(s.residual() <= 1e-12, "{:e}", s.residual());
    for &zi in s.z.iter() {
        assert!((zi - 1.0 / (n as f64 + 1.0)).abs() <= 1e-12, "{}", s.z);
    }
    let q = DVector::from_vec(vec![0.0, -1.0, 0.0, 0.0]);
    let m = DMatrix::from_element(4, 4, 1.0) + DMatrix::identity(4, 4);
    let s = lemke(&m, &q, &LemkeSettings::for_size(4)).unwrap();
    assert!(s.residual() <= 1e-12, "{:e}", s.residual());
}

#[test]
fn lemke_reports_what_it_cannot_solve() {
    // No solution: w = −z − 1 < 0 for every z ≥ 0.
    let e = lemke(
        &DMatrix::from_element(1, 1, -1.0),
        &DVector::from_element(1, -1.0),
        &LemkeSettings::for_size(1),
    )
    .unwrap_err();
    assert!(matches!(e, LemkeError::Ray { .. }), "{e}");
    assert!(e.to_string().contains("ray termination"), "{e}");
    // A pivot cap below what a problem needs.
    let mut rng = Lcg(3);
    let (m, q, _) = known_lcp(&mut rng, 20, false);
    let settings = LemkeSettings {
        max_pivots: 2,
        ..LemkeSettings::for_size(20)
    };
    let needed = lemke(&m, &q, &LemkeSettings::for_size(20)).unwrap().pivots;
    assert!(needed > 2);
    assert_eq!(
        lemke(&m, &q, &settings).unwrap_err(),
        LemkeError::PivotLimit { pivots: 2 }
    );
    // Bad input names the culprit.
    let e = lemke(
        &DMatrix::zeros(2, 3),
        &DVector::zeros(2),
        &LemkeSettings::for_size(2),
    )
    .unwrap_err();
    assert!(matches!(e, LemkeError::Shape { .. }), "{e}");
    let mut q = DVector::from_element(2, -1.0);
    q[1] = f64::NAN;
    let e = lemke(&DMatrix::identity(2, 2), &q, &LemkeSettings::for_size(2)).unwrap_err();
    assert_eq!(e, LemkeError::NonFinite { what: "q" });
    // q ≥ 0: z = 0 without a pivot.
    let s = lemke(
        &DMatrix::identity(2, 2),
        &DVector::from_vec(vec![1.0, 0.0]),
        &LemkeSettings::for_size(2),
    )
    .unwrap();
    assert_eq!((s.pivots, s.z.amax()), (0, 0.0));
}
