//! Invalid models, NaN inputs and malformed contact problems produce errors
//! that name the culprit, never panics, and leave the state untouched.

use moreau::contact::{ContactProblem, ContactSolution, SolverKind, SolverSettings};
use moreau::error::{ModelError, ProblemError, SimError};
use moreau::math::{Inertia, Mat3, SE3, Vec3};
use moreau::model::{JointType, Material, ModelBuilder, Shape, WORLD};
use moreau::scenes;
use moreau::sim::{SimParams, Simulator};
use nalgebra::{DMatrix, DVector};

fn unit() -> Inertia {
    Inertia::cuboid(1.0, Vec3::repeat(0.1))
}

#[test]
fn model_builder_names_the_culprit() {
    let mut b = ModelBuilder::new("bad");
    let e = b
        .add_body(
            "heavy",
            WORLD,
            JointType::Free,
            SE3::identity(),
            Inertia::cuboid(0.0, Vec3::repeat(0.1)),
        )
        .unwrap_err();
    assert!(
        matches!(&e, ModelError::NonPositiveMass { body, .. } if body == "heavy"),
        "{e}"
    );
    let neg = Inertia::new(
        1.0,
        Vec3::zeros(),
        Mat3::from_diagonal(&Vec3::new(1.0, 1.0, -1.0)),
    );
    let e = b
        .add_body("neg", WORLD, JointType::Free, SE3::identity(), neg)
        .unwrap_err();
    assert!(
        matches!(&e, ModelError::InertiaNotPositiveDefinite { body, .. } if body == "neg"),
        "{e}"
    );
    let tri = Inertia::new(
        1.0,
        Vec3::zeros(),
        Mat3::from_diagonal(&Vec3::new(1.0, 1.0, 3.0)),
    );
    let e = b
        .add_body("tri", WORLD, JointType::Free, SE3::identity(), tri)
        .unwrap_err();
    assert!(
        matches!(&e, ModelError::InertiaTriangleInequality { body, .. } if body == "tri"),
        "{e}"
    );
    let e = b
        .add_body(
            "axis",
            WORLD,
            JointType::Revolute(Vec3::zeros()),
            SE3::identity(),
            unit(),
        )
        .unwrap_err();
    assert!(
        matches!(&e, ModelError::ZeroAxis { body, .. } if body == "axis"),
        "{e}"
    );
    let e = b
        .add_body("orphan", 7, JointType::Free, SE3::identity(), unit())
        .unwrap_err();
    assert!(
        matches!(&e, ModelError::UnknownParent { body, parent: 7, .. } if body == "orphan"),
        "{e}"
    );
    let nan = SE3::from_translation(Vec3::new(f64::NAN, 0.0, 0.0));
    let e = b
        .add_body("nan", WORLD, JointType::Free, nan, unit())
        .unwrap_err();
    assert!(e.to_string().contains("nan"), "{e}");
    let ok = b
        .add_body("ok", WORLD, JointType::Free, SE3::identity(), unit())
        .unwrap();
    let e = b
        .add_body("ok", WORLD, JointType::Free, SE3::identity(), unit())
        .unwrap_err();
    assert!(matches!(e, ModelError::DuplicateName { .. }));
    let e = b
        .add_geometry(
            "ghost",
            9,
            SE3::identity(),
            Shape::Ball { radius: 1.0 },
            Material::default(),
        )
        .unwrap_err();
    assert!(
        matches!(&e, ModelError::UnknownBody { geom, body: 9, .. } if geom == "ghost"),
        "{e}"
    );
    let e = b
        .add_geometry(
            "flat",
            ok,
            SE3::identity(),
            Shape::Ball { radius: -1.0 },
            Material::default(),
        )
        .unwrap_err();
    assert!(
        matches!(&e, ModelError::InvalidGeometry { geom, .. } if geom == "flat"),
        "{e}"
    );
    let flat_hull = Shape::ConvexMesh {
        points: vec![
            Vec3::zeros(),
            Vec3::x(),
            Vec3::y(),
            Vec3::new(1.0, 1.0, 0.0),
        ],
    };
    let e = b
        .add_geometry("hull", ok, SE3::identity(), flat_hull, Material::default())
        .unwrap_err();
    assert!(
        matches!(&e, ModelError::InvalidGeometry { geom, .. } if geom == "hull"),
        "{e}"
    );
    let e = b
        .add_geometry(
            "slippery",
            ok,
            SE3::identity(),
            Shape::Ball { radius: 1.0 },
            Material::with_friction(-0.1),
        )
        .unwrap_err();
    assert!(
        matches!(&e, ModelError::InvalidGeometry { geom, .. } if geom == "slippery"),
        "{e}"
    );
    // The failed calls left the builder usable and unchanged.
    let model = b.build().unwrap();
    assert_eq!(model.nbodies, 2);
    assert!(model.geometries.is_empty());
    println!(
        "example message: {}",
        ModelError::ZeroAxis {
            body: "elbow".into(),
            axis: [0.0; 3]
        }
    );
}

#[test]
fn nan_and_misshapen_inputs_are_refused_and_leave_the_state_untouched() {
    let scene = scenes::scene("cube-sliding").unwrap();
    let mut sim = Simulator::new(scene.model.clone(), SimParams::default()).unwrap();
    let mut state = scene.state.clone();
    let good = DVector::zeros(6);
    sim.step(&mut state, good.as_slice()).unwrap();
    let before = state.clone();
    let mut tau = good.clone();
    tau[4] = f64::NAN;
    let e = sim.step(&mut state, tau.as_slice()).unwrap_err();
    assert!(
        matches!(
            e,
            SimError::NonFinite {
                what: "tau",
                index: 4,
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("tau[4]"), "{e}");
    assert_eq!(state, before);
    let e = sim.step(&mut state, &[0.0; 5]).unwrap_err();
    assert!(
        matches!(
            e,
            SimError::DimensionMismatch {
                what: "tau",
                got: 5,
                expected: 6
            }
        ),
        "{e}"
    );
    let mut bad = state.clone();
    bad.v[2] = f64::INFINITY;
    let e = sim.step(&mut bad, good.as_slice()).unwrap_err();
    assert!(
        matches!(
            e,
            SimError::NonFinite {
                what: "v",
                index: 2,
                ..
            }
        ),
        "{e}"
    );
    assert_eq!(bad.q, before.q);
    let mut bad = state.clone();
    for k in 3..7 {
        bad.q[k] = 0.0;
    }
    let e = sim.step(&mut bad, good.as_slice()).unwrap_err();
    assert!(
        matches!(&e, SimError::BadQuaternion { body, .. } if body == "cube"),
        "{e}"
    );
    // Parameters changed between steps are validated too.
    sim.params.dt = f64::NAN;
    assert!(matches!(
        sim.step(&mut state, good.as_slice()),
        Err(SimError::InvalidParameter { name: "dt", .. })
    ));
    assert_eq!(state, before);
    sim.params.dt = 1e-3;
    // The simulator still works afterwards.
    sim.step(&mut state, good.as_slice()).unwrap();
    assert!(state.t > before.t);
}

#[test]
fn invalid_parameters_and_names_are_refused() {
    let scene = scenes::scene("cube-resting").unwrap();
    let e = Simulator::new(
        scene.model.clone(),
        SimParams {
            dt: 0.0,
            ..Default::default()
        },
    )
    .err()
    .unwrap();
    assert!(
        matches!(e, SimError::InvalidParameter { name: "dt", .. }),
        "{e}"
    );
    let e = scenes::scene("nope").unwrap_err();
    assert!(
        e.to_string().contains("nope") && e.to_string().contains("quadruped"),
        "{e}"
    );
    let e = "pgs-lcp".parse::<SolverKind>().unwrap_err();
    assert!(e.to_string().contains("ncp-admm"), "{e}");
}

fn problem(g: DMatrix<f64>) -> ContactProblem {
    let m = g.nrows();
    ContactProblem {
        delassus: g,
        g: DVector::from_element(m, -1.0),
        mu: vec![0.5; m / 3],
        compliance: DVector::zeros(m),
        warm_start: DVector::zeros(m),
        row_sets: Vec::new(),
        coupling: Default::default(),
    }
}

#[test]
fn malformed_contact_problems_are_reported() {
    let settings = SolverSettings::default();
    for kind in SolverKind::ALL {
        let mut solver = kind.build();
        let mut out = ContactSolution::default();
        let mut p = problem(DMatrix::identity(6, 6));
        p.g[3] = f64::NAN;
        assert_eq!(
            solver.solve(&p, &settings, &mut out),
            Err(ProblemError::NonFinite {
                what: "g",
                index: 3
            })
        );
        let mut p = problem(DMatrix::identity(6, 6));
        p.mu[1] = -0.2;
        assert!(matches!(
            solver.solve(&p, &settings, &mut out),
            Err(ProblemError::BadFriction { contact: 1, .. })
        ));
        let mut p = problem(DMatrix::identity(6, 6));
        p.delassus[(0, 4)] = 0.5;
        assert!(matches!(
            solver.solve(&p, &settings, &mut out),
            Err(ProblemError::NotSymmetric { .. })
        ));
        let mut p = problem(DMatrix::identity(6, 6));
        p.mu.push(0.3);
        assert!(matches!(
            solver.solve(&p, &settings, &mut out),
            Err(ProblemError::DimensionMismatch { .. })
        ));
        let p = problem(-DMatrix::identity(6, 6));
        assert!(matches!(
            solver.solve(&p, &settings, &mut out),
            Err(ProblemError::NotPsd { .. })
        ));
        // A contact block with a non-negative diagonal but a negative eigenvalue.
        let mut g = DMatrix::identity(6, 6);
        g[(3, 5)] = 3.0;
        g[(5, 3)] = 3.0;
        let e = solver.solve(&problem(g), &settings, &mut out).unwrap_err();
        assert!(
            matches!(e, ProblemError::NotPsd { .. }),
            "{}: {e}",
            kind.name()
        );
        // Settings out of range are refused by name.
        for (bad, name) in [
            (
                SolverSettings {
                    pyramid_facets: 2,
                    ..settings
                },
                "pyramid_facets",
            ),
            (
                SolverSettings {
                    over_relaxation: 2.5,
                    ..settings
                },
                "over_relaxation",
            ),
            (
                SolverSettings {
                    tolerance: f64::NAN,
                    ..settings
                },
                "tolerance",
            ),
            (
                SolverSettings {
                    rho: Some(-1.0),
                    ..settings
                },
                "rho",
            ),
        ] {
            let e = solver
                .solve(&problem(DMatrix::identity(6, 6)), &bad, &mut out)
                .unwrap_err();
            assert!(
                matches!(&e, ProblemError::InvalidSetting { name: n, .. } if *n == name),
                "{}: {e}",
                kind.name()
            );
        }
    }
    // An indefinite G with a non-negative diagonal passes the cheap checks; ADMM's factorization catches it.
    let mut g = DMatrix::identity(3, 3);
    g[(0, 1)] = 5.0;
    g[(1, 0)] = 5.0;
    let mut out = ContactSolution::default();
    let e = SolverKind::NcpAdmm
        .build()
        .solve(&problem(g), &settings, &mut out)
        .unwrap_err();
    assert!(matches!(e, ProblemError::NotPsd { .. }), "{e}");
}

#[test]
fn nan_impulses_never_look_converged() {
    let r = moreau::contact::ncp_residuals(
        &[0.5, 0.5],
        &[0.0, 0.0, 1.0, f64::NAN, 0.0, 1.0],
        &[0.0; 6],
    );
    assert!(r.eps_abs.is_nan(), "{r:?}");
}
