//! The coordinate charts of the configuration space
//! (`dynamics::configuration_charts`) against finite differences of `⊕` and
//! `⊖`, on models with free, spherical and 1-dof joints.

mod common;

use common::{Lcg, random_q};
use moreau::dynamics::{configuration_charts, difference, integrate};
use moreau::scenes::{self, random_tree};
use nalgebra::{DMatrix, DVector};

#[test]
fn charts_match_finite_differences_of_the_exponential_and_logarithm() {
    let mut rng = Lcg(9);
    // (random_tree has spherical joints among its joint types)
    let random = std::sync::Arc::new(random_tree(12, 4).unwrap());
    for name in ["quadruped", "cube-resting", "random tree"] {
        let model = match name {
            "random tree" => random.clone(),
            _ => scenes::scene(name).unwrap().model,
        };
        let model = &*model;
        let (nq, nv) = (model.nq, model.nv);
        for _ in 0..5 {
            let q = random_q(model, &mut rng);
            let (mut c, mut d) = (DMatrix::zeros(0, 0), DMatrix::zeros(0, 0));
            configuration_charts(model, q.as_slice(), &mut c, &mut d);
            assert!(
                (&d * &c - DMatrix::<f64>::identity(nv, nv)).amax() < 1e-12,
                "{name}: d·c ≠ I"
            );
            let eps = 1e-7;
            let mut out = DVector::zeros(nq);
            for k in 0..nv {
                // c's column k: the coordinates' change along tangent k.
                let mut dv = DVector::zeros(nv);
                dv[k] = eps;
                integrate(model, q.as_slice(), dv.as_slice(), 1.0, out.as_mut_slice());
                let fd = (&out - &q) / eps;
                assert!((fd - c.column(k)).amax() < 1e-6, "{name}: c column {k}");
            }
            // d: the tangent change of a small coordinate change.
            let dq = DVector::from_fn(nq, |_, _| rng.range(-1.0, 1.0)) * 1e-7;
            let q1 = &q + &dq;
            let mut t = DVector::zeros(nv);
            difference(model, q.as_slice(), q1.as_slice(), t.as_mut_slice());
            assert!((&t - &d * &dq).amax() < 1e-12, "{name}: d");
        }
    }
}
