//! The analytical derivatives of RNEA, ABA and `q ⊕ v` against central
//! finite differences taken through `⊕` (tangent perturbations of `q`,
//! never additions to quaternion components), on models with every joint
//! type (free, spherical, revolute, prismatic, fixed).

mod common;

use common::{Lcg, random_q};
use moreau::Model;
use moreau::dynamics::{
    Data, Derivatives, aba, aba_derivatives, crba, difference, integrate, integrate_jacobians,
    rnea, rnea_derivatives,
};
use moreau::scenes::{quadruped_model, random_tree};
use nalgebra::{DMatrix, DVector};

/// The finite-difference step (ABA's use a larger one: the quadruped's light
/// feet make `q̈` large, and rounding dominates at 1e-6; measured: 3.5e-6
/// relative at 1e-6, 3.7e-7 at 1e-5, 2.8e-8 at 1e-4 for `∂q̈/∂q̇`).
const EPS: f64 = 1e-6;
const EPS_ABA: f64 = 1e-5;

fn models() -> Vec<Model> {
    vec![
        quadruped_model().unwrap(),
        random_tree(40, 11).unwrap(),
        random_tree(12, 3).unwrap(),
    ]
}

/// `q ⊕ dv`.
fn plus(model: &Model, q: &DVector<f64>, dv: &DVector<f64>) -> DVector<f64> {
    let mut out = q.clone();
    integrate(model, q.as_slice(), dv.as_slice(), 1.0, out.as_mut_slice());
    out
}

/// `max |a − b| / max(1, max |b|)`.
fn relative(a: &DMatrix<f64>, b: &DMatrix<f64>) -> f64 {
    (a - b).amax() / b.amax().max(1.0)
}

/// Central differences of `f` (nv → n) along each tangent direction of `q`.
fn fd_q(
    model: &Model,
    q: &DVector<f64>,
    (n, eps): (usize, f64),
    mut f: impl FnMut(&DVector<f64>) -> DVector<f64>,
) -> DMatrix<f64> {
    let mut out = DMatrix::zeros(n, model.nv);
    for k in 0..model.nv {
        let mut d = DVector::zeros(model.nv);
        d[k] = eps;
        let fp = f(&plus(model, q, &d));
        let fm = f(&plus(model, q, &(-&d)));
        out.set_column(k, &((fp - fm) / (2.0 * eps)));
    }
    out
}

/// Central differences of `f` along each coordinate of the vector `x`.
fn fd_x(
    x: &DVector<f64>,
    (n, eps): (usize, f64),
    mut f: impl FnMut(&DVector<f64>) -> DVector<f64>,
) -> DMatrix<f64> {
    let mut out = DMatrix::zeros(n, x.len());
    for k in 0..x.len() {
        let (mut xp, mut xm) = (x.clone(), x.clone());
        xp[k] += eps;
        xm[k] -= eps;
        out.set_column(k, &((f(&xp) - f(&xm)) / (2.0 * eps)));
    }
    out
}

#[test]
fn rnea_derivatives_match_finite_differences() {
    let mut rng = Lcg(21);
    for model in models() {
        let mut data = Data::new(&model);
        let mut der = Derivatives::new(&model);
        let mut worst = [0.0f64; 2];
        for _ in 0..3 {
            let q = random_q(&model, &mut rng);
            let v = rng.vector(model.nv, -2.0, 2.0);
            let a = rng.vector(model.nv, -3.0, 3.0);
            rnea_derivatives(
                &model,
                &mut data,
                &mut der,
                q.as_slice(),
                v.as_slice(),
                a.as_slice(),
            );
            let tau = data.tau.clone();
            let mut d2 = Data::new(&model);
            let want = rnea(&model, &mut d2, q.as_slice(), v.as_slice(), a.as_slice()).clone();
            assert!((&tau - &want).amax() <= 1e-12 * want.amax().max(1.0));
            let nv = model.nv;
            let dq = fd_q(&model, &q, (nv, EPS), |qq| {
                rnea(&model, &mut d2, qq.as_slice(), v.as_slice(), a.as_slice()).clone()
            });
            let dv = fd_x(&v, (nv, EPS), |vv| {
                rnea(&model, &mut d2, q.as_slice(), vv.as_slice(), a.as_slice()).clone()
            });
            worst[0] = worst[0].max(relative(&der.dtau_dq, &dq));
            worst[1] = worst[1].max(relative(&der.dtau_dv, &dv));
        }
        println!(
            "{} (nv {}): dtau/dq {:.1e}, dtau/dv {:.1e} (relative to finite differences)",
            model.name, model.nv, worst[0], worst[1]
        );
        assert!(
            worst[0] < 1e-6 && worst[1] < 1e-6,
            "{}: {worst:?}",
            model.name
        );
    }
}

#[test]
fn aba_derivatives_match_finite_differences() {
    let mut rng = Lcg(8);
    for model in models() {
        let mut data = Data::new(&model);
        let mut der = Derivatives::new(&model);
        let mut d2 = Data::new(&model);
        let mut worst = [0.0f64; 3];
        for _ in 0..3 {
            let q = random_q(&model, &mut rng);
            let v = rng.vector(model.nv, -2.0, 2.0);
            let tau = rng.vector(model.nv, -5.0, 5.0);
            aba_derivatives(
                &model,
                &mut data,
                &mut der,
                q.as_slice(),
                v.as_slice(),
                tau.as_slice(),
            );
            let nv = model.nv;
            let dq = fd_q(&model, &q, (nv, EPS_ABA), |qq| {
                aba(&model, &mut d2, qq.as_slice(), v.as_slice(), tau.as_slice()).clone()
            });
            let dv = fd_x(&v, (nv, EPS_ABA), |vv| {
                aba(&model, &mut d2, q.as_slice(), vv.as_slice(), tau.as_slice()).clone()
            });
            let dt = fd_x(&tau, (nv, EPS_ABA), |tt| {
                aba(&model, &mut d2, q.as_slice(), v.as_slice(), tt.as_slice()).clone()
            });
            worst[0] = worst[0].max(relative(&der.ddq_dq, &dq));
            worst[1] = worst[1].max(relative(&der.ddq_dv, &dv));
            worst[2] = worst[2].max(relative(&der.ddq_dtau, &dt));
            // ∂q̈/∂τ is M⁻¹.
            let m = crba(&model, &mut d2, q.as_slice()).clone();
            let eye = DMatrix::<f64>::identity(nv, nv);
            assert!((&m * &der.ddq_dtau - eye).amax() < 1e-9);
        }
        println!(
            "{} (nv {}): dddq/dq {:.1e}, dddq/dv {:.1e}, dddq/dtau {:.1e}",
            model.name, model.nv, worst[0], worst[1], worst[2]
        );
        assert!(worst.iter().all(|&w| w < 1e-6), "{}: {worst:?}", model.name);
    }
}

#[test]
fn integrate_jacobians_match_finite_differences() {
    let mut rng = Lcg(3);
    for model in models() {
        let nv = model.nv;
        let mut worst = [0.0f64; 2];
        // Small steps (the series branches) and large ones (closed forms).
        for (scale, dt) in [(0.5, 1e-3), (2.0, 0.3), (1.0, 1.0)] {
            let q = random_q(&model, &mut rng);
            let v = rng.vector(nv, -scale, scale);
            let (mut jq, mut jv) = (DMatrix::zeros(nv, nv), DMatrix::zeros(nv, nv));
            integrate_jacobians(&model, v.as_slice(), dt, &mut jq, &mut jv);
            let step = |qq: &DVector<f64>, vv: &DVector<f64>| {
                let mut out = qq.clone();
                integrate(&model, qq.as_slice(), vv.as_slice(), dt, out.as_mut_slice());
                out
            };
            let base = step(&q, &v);
            // Differences expressed in the tangent space at q⁺.
            let tangent = |x: &DVector<f64>| {
                let mut d = DVector::zeros(nv);
                difference(&model, base.as_slice(), x.as_slice(), d.as_mut_slice());
                d
            };
            let dq = fd_q(&model, &q, (nv, EPS), |qq| tangent(&step(qq, &v)));
            let dv = fd_x(&v, (nv, EPS), |vv| tangent(&step(&q, vv)));
            worst[0] = worst[0].max(relative(&jq, &dq));
            worst[1] = worst[1].max(relative(&jv, &dv));
        }
        println!(
            "{}: d(q+)/dq {:.1e}, d(q+)/dv {:.1e}",
            model.name, worst[0], worst[1]
        );
        assert!(
            worst[0] < 1e-7 && worst[1] < 1e-7,
            "{}: {worst:?}",
            model.name
        );
    }
}

/// Against Pinocchio's `computeABADerivatives` and `computeRNEADerivatives`
/// on example-robot-data's Solo-12, Talos and UR5 (reference numbers and the
/// script that wrote them in tests/data/pinocchio/), joints matched by name.
#[test]
fn derivatives_equal_pinocchios_on_example_robots() {
    use moreau::load::load_urdf;
    use moreau::model::urdf::UrdfOptions;
    let Some(files) = common::robot_files() else {
        return;
    };
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/pinocchio/derivatives.json"),
    )
    .unwrap();
    let refs: serde_json::Value = serde_json::from_str(&text).unwrap();
    let vector = |v: &serde_json::Value| -> Vec<f64> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect()
    };
    let matrix = |v: &serde_json::Value| -> DMatrix<f64> {
        let rows: Vec<Vec<f64>> = v.as_array().unwrap().iter().map(vector).collect();
        DMatrix::from_fn(rows.len(), rows[0].len(), |i, j| rows[i][j])
    };
    for r in refs.as_array().unwrap() {
        let file = r["file"].as_str().unwrap();
        let loaded = load_urdf(
            files.example_robot_data.join(file),
            &UrdfOptions {
                floating_base: r["floating"].as_bool().unwrap(),
                ..Default::default()
            },
        )
        .unwrap();
        let model = &loaded.model;
        // Pinocchio's q and v offsets → moreau's, joint by joint.
        let (mut perm_q, mut perm_v) = (vec![usize::MAX; model.nq], vec![usize::MAX; model.nv]);
        for j in r["joints"].as_array().unwrap() {
            let name = j["name"].as_str().unwrap();
            let body = (1..model.nbodies)
                .find(|&i| model.joint_name[i] == name)
                .unwrap_or_else(|| panic!("{file}: no joint {name}"));
            for k in 0..j["nq"].as_u64().unwrap() as usize {
                perm_q[j["idx_q"].as_u64().unwrap() as usize + k] = model.joint_idx_q[body] + k;
            }
            for k in 0..j["nv"].as_u64().unwrap() as usize {
                perm_v[j["idx_v"].as_u64().unwrap() as usize + k] = model.joint_idx_v[body] + k;
            }
        }
        let mut q = DVector::zeros(model.nq);
        for (k, x) in vector(&r["q"]).into_iter().enumerate() {
            q[perm_q[k]] = x;
        }
        let to_moreau = |x: Vec<f64>| {
            let mut out = DVector::zeros(model.nv);
            for (k, x) in x.into_iter().enumerate() {
                out[perm_v[k]] = x;
            }
            out
        };
        let (v, tau) = (to_moreau(vector(&r["v"])), to_moreau(vector(&r["tau"])));
        let permute = |m: DMatrix<f64>| {
            let mut out = DMatrix::zeros(model.nv, model.nv);
            for i in 0..model.nv {
                for j in 0..model.nv {
                    out[(perm_v[i], perm_v[j])] = m[(i, j)];
                }
            }
            out
        };
        let mut data = Data::new(model);
        let mut der = Derivatives::new(model);
        aba_derivatives(
            model,
            &mut data,
            &mut der,
            q.as_slice(),
            v.as_slice(),
            tau.as_slice(),
        );
        let ddq_err = (&data.ddq - to_moreau(vector(&r["ddq"]))).amax();
        let mut worst = vec![("ddq", ddq_err)];
        for (name, ours) in [
            ("ddq_dq", &der.ddq_dq),
            ("ddq_dv", &der.ddq_dv),
            ("ddq_dtau", &der.ddq_dtau),
        ] {
            worst.push((name, relative(ours, &permute(matrix(&r[name])))));
        }
        let a = data.ddq.clone();
        rnea_derivatives(
            model,
            &mut data,
            &mut der,
            q.as_slice(),
            v.as_slice(),
            a.as_slice(),
        );
        for (name, ours) in [("dtau_dq", &der.dtau_dq), ("dtau_dv", &der.dtau_dv)] {
            worst.push((name, relative(ours, &permute(matrix(&r[name])))));
        }
        let shown: Vec<String> = worst.iter().map(|(n, e)| format!("{n} {e:.1e}")).collect();
        println!("{file} (nv {}): {}", model.nv, shown.join(", "));
        for (name, e) in worst {
            assert!(e < 1e-9, "{file}: {name} differs from Pinocchio's by {e:e}");
        }
    }
}
