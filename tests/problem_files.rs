//! Contact problems as JSON files (`moreau::contact::io`): exact round trips,
//! hand-written problems with known solutions, and bad files refused with a
//! message that names the file, the problem and the key.

use moreau::contact::io::{
    ProblemFileReason, ProblemWriter, parse_problems, problem_to_json, read_problems,
    write_problems,
};
use moreau::contact::{ContactProblem, ContactSolution, SolverKind, SolverSettings};
use nalgebra::{DMatrix, DVector};

fn temp_path(stem: &str) -> std::path::PathBuf {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    std::env::temp_dir().join(format!(
        "moreau-{stem}-{}-{}.json",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ))
}

/// xorshift64*: deterministic, no dependency.
struct Rng(u64);
impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    /// Uniform in [-1, 1) with all 53 bits of mantissa used.
    fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    }
    /// Any finite f64 from its bits (all exponents, subnormals, -0.0).
    fn any_finite(&mut self) -> f64 {
        loop {
            let x = f64::from_bits(self.next_u64());
            if x.is_finite() {
                return x;
            }
        }
    }
}

/// A valid problem whose numbers need all 17 significant digits.
fn random_problem(rng: &mut Rng, nc: usize) -> ContactProblem {
    let m = 3 * nc;
    let a = DMatrix::from_fn(m, m + 2, |_, _| {
        rng.uniform() * 10f64.powi((rng.next_u64() % 7) as i32 - 3)
    });
    let g = a.clone() * a.transpose();
    // Exactly symmetric (the product may differ in the last bit across the diagonal).
    let g = DMatrix::from_fn(m, m, |i, j| if i <= j { g[(i, j)] } else { g[(j, i)] });
    let mut p = ContactProblem {
        delassus: g,
        g: DVector::from_fn(m, |_, _| rng.any_finite()),
        mu: (0..nc).map(|_| rng.uniform().abs()).collect(),
        compliance: DVector::from_fn(m, |_, _| rng.any_finite().abs()),
        warm_start: DVector::from_fn(m, |_, _| rng.uniform() * 1e-300),
        row_sets: Vec::new(),
        coupling: Default::default(),
    };
    // Awkward values that must survive too.
    p.g[0] = 0.1;
    p.warm_start[0] = -0.0;
    if m > 1 {
        p.g[1] = f64::MIN_POSITIVE / 3.0; // subnormal
        p.compliance[1] = f64::MAX;
    }
    p
}

fn bits(p: &ContactProblem) -> Vec<u64> {
    p.delassus
        .iter()
        .chain(&p.g)
        .chain(&p.mu)
        .chain(&p.compliance)
        .chain(&p.warm_start)
        .map(|x| x.to_bits())
        .collect()
}

#[test]
fn write_then_read_is_bit_exact() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let problems: Vec<_> = (0..40)
        .map(|k| random_problem(&mut rng, k % 5 + 1))
        .collect();
    let path = temp_path("roundtrip");
    write_problems(&path, &problems).unwrap();
    let back = read_problems(&path).unwrap();
    std::fs::remove_file(&path).ok();
    assert_eq!(back.len(), problems.len());
    let mut numbers = 0;
    for (i, (a, b)) in problems.iter().zip(&back).enumerate() {
        assert_eq!(bits(a), bits(b), "problem {i} changed in the round trip");
        assert_eq!(a.delassus.shape(), b.delassus.shape());
        numbers += bits(a).len();
    }
    // Through `problem_to_json` as well, one object at a time.
    for p in &problems {
        let text = problem_to_json(p).to_string();
        let back = parse_problems(&text, "memory").unwrap();
        assert_eq!(back.len(), 1);
        assert_eq!(bits(p), bits(&back[0]));
    }
    println!(
        "{} problems, {numbers} f64 values (random bit patterns, subnormals, -0.0, f64::MAX): all bit-exact after write + read",
        problems.len()
    );
}

#[test]
fn empty_batch_and_empty_problem() {
    let path = temp_path("empty");
    write_problems(&path, &[]).unwrap();
    assert!(read_problems(&path).unwrap().is_empty());
    std::fs::remove_file(&path).ok();
    let p = parse_problems(r#"{"G": [], "g": [], "mu": []}"#, "x.json").unwrap();
    assert_eq!(p[0].nc(), 0);
    let mut out = ContactSolution::default();
    for kind in SolverKind::ALL {
        kind.build()
            .solve(&p[0], &SolverSettings::default(), &mut out)
            .unwrap();
        assert!(
            out.stats.converged && out.lambda.is_empty(),
            "{}",
            kind.name()
        );
    }
}

/// One contact on a plane with unit Delassus: sliding (tangential free velocity
/// 1 > μ·1) and sticking (0.1 < μ·1), in one batch.
const PLANE: &str = r#"[
  { "G": [[1, 0, 0], [0, 1, 0], [0, 0, 1]], "g": [1, 0, -1], "mu": [0.5] },
  { "G": [[1, 0, 0], [0, 1, 0], [0, 0, 1]], "g": [0.1, 0, -1], "mu": [0.5],
    "R": [0, 0, 0], "lambda0": [0, 0, 0.5] }
]"#;

#[test]
fn hand_written_plane_contact_is_solved_by_admm_and_pgs() {
    let problems = parse_problems(PLANE, "plane.json").unwrap();
    assert_eq!(problems.len(), 2);
    assert_eq!(problems[1].warm_start.as_slice(), &[0.0, 0.0, 0.5]);
    let expected = [[-0.5, 0.0, 1.0], [-0.1, 0.0, 1.0]];
    let settings = SolverSettings {
        tolerance: 1e-12,
        ..Default::default()
    };
    for kind in [SolverKind::NcpAdmm, SolverKind::NcpPgs] {
        let mut solver = kind.build();
        let mut out = ContactSolution::default();
        for (p, (want, what)) in problems
            .iter()
            .zip(expected.iter().zip(["sliding", "stick"]))
        {
            solver.solve(p, &settings, &mut out).unwrap();
            let err = (0..3)
                .map(|k| (out.lambda[k] - want[k]).abs())
                .fold(0.0, f64::max);
            println!(
                "{:8} {what:7}: lambda = {:?} (expected {want:?}), max error {err:.1e}, {} iterations",
                kind.name(),
                out.lambda.as_slice(),
                out.stats.iterations
            );
            assert!(out.stats.converged, "{} {what}", kind.name());
            assert!(err < 1e-6, "{} {what}: {:?}", kind.name(), out.lambda);
        }
    }
}

const I3: &str = "[[1, 0, 0], [0, 1, 0], [0, 0, 1]]";

/// A batch whose problem 0 is fine and problem 1 is `bad`; returns the message.
fn refused(bad: &str) -> (String, ProblemFileReason) {
    let text = format!("[{{\"G\": {I3}, \"g\": [1, 0, -1], \"mu\": [0.5]}},\n {bad}]");
    match parse_problems(&text, "bad.json") {
        Ok(p) => panic!("accepted {bad}: {p:?}"),
        Err(e) => (e.to_string(), *e.reason),
    }
}

#[test]
fn bad_files_are_refused_naming_problem_and_key() {
    let g6 =
        "[[1,0,0,0,0,0],[0,1,0,0,0,0],[0,0,1,0,0,0],[0,0,0,1,0,0],[0,0,0,0,1,0],[0,0,0,0,0,1]]";
    let cases: Vec<(&str, String, &[&str])> = vec![
        (
            "missing key",
            format!(r#"{{"G": {I3}, "mu": [0.5]}}"#),
            &["problem 1", "missing key `g`"],
        ),
        (
            "unknown key (typo)",
            format!(r#"{{"G": {I3}, "g": [1, 0, -1], "mu": [0.5], "lamda0": [0, 0, 1]}}"#),
            &["problem 1", "lamda0", "line 2"],
        ),
        (
            "duplicate key",
            format!(r#"{{"G": {I3}, "g": [1, 0, -1], "mu": [0.5], "mu": [0.1]}}"#),
            &["problem 1", "duplicate key `mu`"],
        ),
        (
            "non-square G",
            r#"{"G": [[1, 0], [0, 1], [0, 0]], "g": [1, 0, -1], "mu": [0.5]}"#.into(),
            &["problem 1", "key \"G\"", "not square"],
        ),
        (
            "rows of unequal length",
            r#"{"G": [[1, 0, 0], [0, 1], [0, 0, 1]], "g": [1, 0, -1], "mu": [0.5]}"#.into(),
            &["problem 1", "key \"G\"", "row 1 has 2"],
        ),
        (
            "G smaller than 3·nc",
            format!(r#"{{"G": {g6}, "g": [0,0,0,0,0,0,0,0,0], "mu": [0.5, 0.5, 0.5]}}"#),
            &[
                "problem 1",
                "key \"G\"",
                "G has 6 rows",
                "g has 9 entries",
                "nc = len(mu) = 3",
            ],
        ),
        (
            "g of the wrong length",
            format!(r#"{{"G": {I3}, "g": [1, 0], "mu": [0.5]}}"#),
            &["problem 1", "key \"g\"", "g has 2 entries", "3·nc + nl = 3"],
        ),
        (
            "mu of the wrong length",
            format!(r#"{{"G": {I3}, "g": [1, 0, -1], "mu": [0.5, 0.5]}}"#),
            &["problem 1", "key \"G\"", "nc = len(mu) = 2"],
        ),
        (
            "R of the wrong length",
            format!(r#"{{"G": {I3}, "g": [1, 0, -1], "mu": [0.5], "R": [0]}}"#),
            &["problem 1", "key \"R\"", "R has 1 entries"],
        ),
        (
            "lambda0 of the wrong length",
            format!(r#"{{"G": {I3}, "g": [1, 0, -1], "mu": [0.5], "lambda0": [0, 0, 0, 1]}}"#),
            &["problem 1", "key \"lambda0\"", "lambda0 has 4 entries"],
        ),
        (
            "non-symmetric G",
            r#"{"G": [[1, 0.5, 0], [0, 1, 0], [0, 0, 1]], "g": [1, 0, -1], "mu": [0.5]}"#.into(),
            &["problem 1", "key \"G\"", "not symmetric"],
        ),
        (
            "negative mu",
            format!(r#"{{"G": {I3}, "g": [1, 0, -1], "mu": [-0.5]}}"#),
            &["problem 1", "key \"mu\"", "mu[0] = -0.5"],
        ),
        (
            "mu beyond f64",
            format!(r#"{{"G": {I3}, "g": [1, 0, -1], "mu": [1e400]}}"#),
            &["problem 1", "key \"mu\"", "out of range", "line 2"],
        ),
        (
            "integer beyond f64",
            format!(
                r#"{{"G": {I3}, "g": [1, 0, 1{}], "mu": [0.5]}}"#,
                "0".repeat(400)
            ),
            &["problem 1", "key \"g\"", "out of range"],
        ),
        (
            "negative R",
            format!(r#"{{"G": {I3}, "g": [1, 0, -1], "mu": [0.5], "R": [0, -1e-3, 0]}}"#),
            &["problem 1", "key \"R\"", "compliance[1]"],
        ),
        (
            "G not PSD (positive diagonal)",
            r#"{"G": [[1, 2, 0], [2, 1, 0], [0, 0, 1]], "g": [1, 0, -1], "mu": [0.5]}"#.into(),
            &["problem 1", "key \"G\"", "smallest eigenvalue -1e0"],
        ),
        (
            "string for a number",
            format!(r#"{{"G": {I3}, "g": [1, 0, -1], "mu": ["0.5"]}}"#),
            &["problem 1", "key \"mu\"", "invalid type"],
        ),
        (
            "null for a number",
            format!(r#"{{"G": {I3}, "g": [1, null, -1], "mu": [0.5]}}"#),
            &["problem 1", "key \"g\"", "invalid type: null"],
        ),
        (
            "NaN literal",
            format!(r#"{{"G": {I3}, "g": [NaN, 0, -1], "mu": [0.5]}}"#),
            &["problem 1", "key \"g\"", "invalid JSON"],
        ),
        (
            "not an object",
            "3".into(),
            &["problem 1", "expected a contact problem object"],
        ),
        (
            "truncated file",
            format!(r#"{{"G": {I3}, "g": [1, 0"#),
            &["problem 1", "EOF while parsing an object"],
        ),
    ];
    for (what, bad, needles) in &cases {
        let (msg, _) = refused(bad);
        println!("{what:30} -> {msg}");
        assert!(msg.starts_with("bad.json: "), "{what}: {msg}");
        for n in *needles {
            assert!(msg.contains(n), "{what}: `{n}` not in: {msg}");
        }
    }
    let (_, reason) = refused(&format!(
        r#"{{"G": {I3}, "g": [0, 0, 0], "mu": [0.5], "lamda0": []}}"#
    ));
    assert!(matches!(reason, ProblemFileReason::UnknownKey(k) if k == "lamda0"));
}

#[test]
fn bad_file_structure_is_refused_naming_the_file() {
    let one = format!(r#"{{"G": {I3}, "g": [1, 0, -1], "mu": [0.5]}}"#);
    let cases: Vec<(&str, String, &[&str])> = vec![
        ("empty file", String::new(), &["EOF", "line 1"]),
        (
            "top level not a problem",
            "\"G\"".into(),
            &["invalid type", "list of them"],
        ),
        (
            "missing comma",
            format!("[{one}\n{one}]"),
            &["line 2", "expected `,` or `]`"],
        ),
        (
            "trailing text",
            format!("{one} x"),
            &["trailing characters"],
        ),
        (
            "single object, missing key",
            r#"{"g": [], "mu": []}"#.into(),
            &["problem 0", "missing key `G`"],
        ),
    ];
    for (what, text, needles) in &cases {
        let msg = parse_problems(text, "bad.json").unwrap_err().to_string();
        println!("{what:30} -> {msg}");
        assert!(msg.starts_with("bad.json"), "{what}: {msg}");
        for n in *needles {
            assert!(msg.contains(n), "{what}: `{n}` not in: {msg}");
        }
    }
    // A single object is a batch of one.
    assert_eq!(parse_problems(&one, "one.json").unwrap().len(), 1);
    // A file that does not exist is named.
    let path = temp_path("missing");
    let msg = read_problems(&path).unwrap_err().to_string();
    println!("{:30} -> {msg}", "no such file");
    assert!(msg.contains(path.to_str().unwrap()), "{msg}");
}

#[test]
fn writer_refuses_non_finite_problems_instead_of_writing_null() {
    let mut p = ContactProblem::new(
        DMatrix::identity(3, 3),
        DVector::from_vec(vec![1.0, 0.0, -1.0]),
        vec![0.5],
    )
    .unwrap();
    let mut w = ProblemWriter::new(Vec::new(), "out.json").unwrap();
    w.write(&p).unwrap();
    p.warm_start[2] = f64::NAN;
    let msg = w.write(&p).unwrap_err().to_string();
    println!("{msg}");
    assert!(
        msg.contains("out.json") && msg.contains("problem 1") && msg.contains("lambda0"),
        "{msg}"
    );
    assert_eq!(w.count(), 1);
    let text = String::from_utf8(w.finish().unwrap()).unwrap();
    assert_eq!(parse_problems(&text, "out.json").unwrap().len(), 1);
}

/// Problems with joint-limit rows after the contacts keep them through a
/// file (`"nl"`), are solved with them, and a size that disagrees with
/// `3·nc + nl` is refused naming both.
#[test]
fn unilateral_rows_round_trip_and_are_solved() {
    use moreau::contact::random::random_mixed_problem;
    let problems: Vec<_> = (0..6)
        .map(|k| random_mixed_problem(k, k as usize % 3, 1 + k as usize % 4))
        .collect();
    let path = temp_path("mixed");
    write_problems(&path, &problems).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let back = read_problems(&path).unwrap();
    std::fs::remove_file(&path).ok();
    assert!(text.contains("\"nl\":"));
    for (a, b) in problems.iter().zip(&back) {
        assert_eq!((a.nc(), a.nl()), (b.nc(), b.nl()));
        assert_eq!(bits(a), bits(b));
        let mut out = ContactSolution::default();
        let mut solver = SolverKind::NcpAdmm.build();
        solver
            .solve(b, &SolverSettings::default(), &mut out)
            .unwrap();
        assert!(out.stats.converged);
        // λ ≥ 0 ⟂ c ≥ 0 on the unilateral rows.
        for k in 3 * b.nc()..b.m() {
            assert!(out.lambda[k] >= -1e-9 && out.c[k] >= -1e-8);
            assert!((out.lambda[k] * out.c[k]).abs() < 1e-7);
        }
    }
    let bad = r#"{"G": [[1, 0], [0, 1]], "g": [0, 0], "mu": [], "nl": 1}"#;
    let e = parse_problems(bad, "bad.json").unwrap_err().to_string();
    assert!(e.contains("nl = 1") && e.contains("3·nc + nl = 1"), "{e}");
}

/// Bilateral and box rows round-trip through `"sets"`, a problem of
/// unilateral rows is written without it, and a bad set is refused naming
/// the key.
#[test]
fn row_sets_round_trip_and_bad_sets_are_refused() {
    use moreau::contact::RowSet;
    use moreau::contact::random::random_mixed_problem;
    let mut p = random_mixed_problem(3, 1, 3);
    p.row_sets = vec![RowSet::Bilateral, RowSet::Unilateral, RowSet::Box(0.25)];
    let text = serde_json::to_string(&problem_to_json(&p)).unwrap();
    assert!(
        text.contains(r#""sets":["bilateral","unilateral",0.25]"#),
        "{text}"
    );
    let back = parse_problems(&text, "memory").unwrap();
    assert_eq!(back[0].row_sets, p.row_sets);
    assert_eq!(bits(&back[0]), bits(&p));
    let plain = serde_json::to_string(&problem_to_json(&random_mixed_problem(3, 1, 3))).unwrap();
    assert!(!plain.contains("sets"));
    let base = r#""G": [[1, 0], [0, 1]], "g": [0, 0], "mu": [], "nl": 2"#;
    for (sets, want) in [
        (r#"["bilateral"]"#, "sets has 1 entries, expected nl = 2"),
        (r#"["bilateral", "equality"]"#, r#"sets[1] = "equality""#),
        (
            r#"["bilateral", -1]"#,
            "box bound -1 must be finite and non-negative",
        ),
    ] {
        let e = parse_problems(&format!("{{{base}, \"sets\": {sets}}}"), "bad.json")
            .unwrap_err()
            .to_string();
        assert!(e.contains(want) && e.contains("sets"), "{sets}: {e}");
    }
}
