//! ABA, CRBA, RNEA and the LᵀDL factorization agree with each other, on the
//! quadruped and on a 40-body random tree with every joint type.

mod common;

use common::{Lcg, random_q, rel_err};
use moreau::Model;
use moreau::dynamics::{
    Data, aba, crba, ltdl_factorize, ltdl_solve_in_place, nonlinear_effects, rnea,
};
use moreau::scenes::{quadruped_model, random_tree};

fn models() -> Vec<Model> {
    let tree = random_tree(40, 7).unwrap();
    assert!(
        tree.nv >= 30,
        "random tree must have 30+ dofs, has {}",
        tree.nv
    );
    vec![quadruped_model().unwrap(), tree]
}

#[test]
fn aba_equals_inverse_mass_matrix_times_forces() {
    let mut rng = Lcg(1);
    for model in models() {
        let mut data = Data::new(&model);
        let mut worst: f64 = 0.0;
        for _ in 0..20 {
            let q = random_q(&model, &mut rng);
            let v = rng.vector(model.nv, -2.0, 2.0);
            let tau = rng.vector(model.nv, -5.0, 5.0);
            let ddq = aba(
                &model,
                &mut data,
                q.as_slice(),
                v.as_slice(),
                tau.as_slice(),
            )
            .clone();
            let m = crba(&model, &mut data, q.as_slice()).clone();
            let b = nonlinear_effects(&model, &mut data, q.as_slice(), v.as_slice()).clone();
            let reference = m.cholesky().expect("M must be SPD").solve(&(&tau - &b));
            worst = worst.max(rel_err(&ddq, &reference));
        }
        println!(
            "{} (nv = {}): worst relative |ABA − M⁻¹(τ − b)| = {worst:.2e}",
            model.name, model.nv
        );
        assert!(worst < 1e-10, "{}: {worst:e}", model.name);
    }
}

#[test]
fn rnea_inverts_aba() {
    let mut rng = Lcg(2);
    for model in models() {
        let mut data = Data::new(&model);
        let mut worst: f64 = 0.0;
        for _ in 0..20 {
            let q = random_q(&model, &mut rng);
            let v = rng.vector(model.nv, -2.0, 2.0);
            let tau = rng.vector(model.nv, -5.0, 5.0);
            let ddq = aba(
                &model,
                &mut data,
                q.as_slice(),
                v.as_slice(),
                tau.as_slice(),
            )
            .clone();
            let back = rnea(
                &model,
                &mut data,
                q.as_slice(),
                v.as_slice(),
                ddq.as_slice(),
            )
            .clone();
            worst = worst.max(rel_err(&back, &tau));
        }
        println!(
            "{}: worst relative |RNEA(q, v, ABA(q, v, τ)) − τ| = {worst:.2e}",
            model.name
        );
        assert!(worst < 1e-10, "{}: {worst:e}", model.name);
    }
}

#[test]
fn crba_is_symmetric_positive_definite_and_matches_rnea_columns() {
    let mut rng = Lcg(3);
    for model in models() {
        let mut data = Data::new(&model);
        let q = random_q(&model, &mut rng);
        let v = rng.vector(model.nv, -1.0, 1.0);
        let m = crba(&model, &mut data, q.as_slice()).clone();
        assert!((&m - m.transpose()).amax() < 1e-12);
        let b = nonlinear_effects(&model, &mut data, q.as_slice(), v.as_slice()).clone();
        // M e_k = RNEA(q, v, e_k) − b(q, v)
        for k in 0..model.nv {
            let mut a = nalgebra::DVector::zeros(model.nv);
            a[k] = 1.0;
            let col = rnea(&model, &mut data, q.as_slice(), v.as_slice(), a.as_slice()) - &b;
            let err = (col - m.column(k)).amax();
            assert!(err < 1e-9 * m.amax(), "{} column {k}: {err:e}", model.name);
        }
    }
}

#[test]
fn ltdl_factorization_reproduces_and_solves_the_mass_matrix() {
    let mut rng = Lcg(4);
    for model in models() {
        let mut data = Data::new(&model);
        let q = random_q(&model, &mut rng);
        let m = crba(&model, &mut data, q.as_slice()).clone();
        ltdl_factorize(&model, &mut data);
        let nv = model.nv;
        // Rebuild Lᵀ D L densely from the sparse factor.
        let mut l = nalgebra::DMatrix::identity(nv, nv);
        let mut d = nalgebra::DMatrix::zeros(nv, nv);
        for k in 0..nv {
            d[(k, k)] = data.ltdl[(k, k)];
            for i in 0..k {
                l[(k, i)] = data.ltdl[(k, i)];
            }
        }
        let rebuilt = l.transpose() * d * &l;
        let err = (&rebuilt - &m).amax() / m.amax();
        println!("{}: |LᵀDL − M| / |M| = {err:.2e}", model.name);
        assert!(err < 1e-12);
        // L only has entries on ancestor dofs.
        for k in 0..nv {
            let mut anc = Vec::new();
            let mut i = model.dof_parent[k];
            while i != moreau::model::NO_DOF {
                anc.push(i);
                i = model.dof_parent[i];
            }
            for i in 0..k {
                if !anc.contains(&i) {
                    assert_eq!(
                        data.ltdl[(k, i)],
                        m[(k, i)],
                        "fill-in outside the ancestors at ({k}, {i})"
                    );
                }
            }
        }
        let rhs = rng.vector(nv, -1.0, 1.0);
        let mut x = rhs.clone();
        ltdl_solve_in_place(&model.dof_parent, &data.ltdl, x.as_mut_slice());
        assert!(rel_err(&(&m * &x), &rhs) < 1e-10);
    }
}
