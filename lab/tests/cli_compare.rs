//! `moreau compare --quick` runs every solver through the study's
//! experiments, prints Table II with a row per solver, and writes the four
//! plots and compare.json.

use moreau::contact::SolverKind;
use moreau_lab::study::report::TABLE_II_TITLE;
use std::process::Command;

#[test]
fn compare_quick_prints_table_ii_and_writes_plots_and_json() {
    let dir = std::env::temp_dir().join(format!("moreau-cli-compare-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let out = Command::new(env!("CARGO_BIN_EXE_moreau"))
        .args(["compare", "--quick", "--out"])
        .arg(&dir)
        .output()
        .expect("run moreau compare");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "moreau compare failed:\n{stdout}\n{stderr}"
    );
    println!("{stdout}");

    // Table II: its title, its header, and one row per solver with a ✓ or ✗ per criterion.
    let lines: Vec<&str> = stdout.lines().collect();
    let title = lines
        .iter()
        .position(|l| l.contains(TABLE_II_TITLE))
        .expect("Table II title");
    let header = lines[title + 1];
    for column in [
        "Signorini",
        "Coulomb",
        "MDP",
        "no internal forces",
        "robust",
        "converged",
    ] {
        assert!(
            header.contains(column),
            "Table II header lacks {column}: {header}"
        );
    }
    for kind in SolverKind::ALL {
        let row = lines[title + 2..]
            .iter()
            .take(SolverKind::ALL.len() + 1)
            .find(|l| l.split_whitespace().next() == Some(kind.name()))
            .unwrap_or_else(|| panic!("Table II has no row for {}", kind.name()));
        let marks = row.chars().filter(|&c| c == '✓' || c == '✗').count();
        assert_eq!(marks, 6, "{row}");
    }
    assert!(stdout.contains("Mass ratio"));
    assert!(stdout.contains("Time-to-accuracy"));

    for name in [
        "energy.svg",
        "internal_forces.svg",
        "time_to_accuracy.svg",
        "mass_ratio.svg",
    ] {
        let path = dir.join(name);
        let svg =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(!svg.is_empty(), "{name} is empty");
        assert!(svg.contains("<svg"), "{name} is not an SVG");
        assert!(svg.contains("<text"), "{name} has no text");
        for kind in SolverKind::ALL {
            assert!(
                svg.contains(kind.name()),
                "{name} does not name {}",
                kind.name()
            );
        }
    }

    let json = std::fs::read_to_string(dir.join("compare.json")).expect("compare.json");
    assert!(!json.is_empty());
    let doc: serde_json::Value = serde_json::from_str(&json).expect("compare.json parses");
    let table = doc["table"].as_array().expect("a table");
    assert_eq!(table.len(), SolverKind::ALL.len());
    for (row, kind) in table.iter().zip(SolverKind::ALL) {
        assert_eq!(row["solver"], kind.name());
        assert!(row["signorini"]["pass"].is_boolean());
    }
    assert_eq!(
        doc["time_to_accuracy"].as_array().map(|a| a.len()),
        Some(2 * 2 * SolverKind::ALL.len())
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `moreau compare events` prints the falling cube's table (a row per
/// method and step, the references marked), the analytic errors, the code
/// sizes, and writes events.json and events.svg.
#[test]
fn compare_events_prints_the_tables_and_writes_json_and_plot() {
    let dir = std::env::temp_dir().join(format!("moreau-cli-events-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let out = Command::new(env!("CARGO_BIN_EXE_moreau"))
        .args(["compare", "events", "--out"])
        .arg(&dir)
        .output()
        .expect("run moreau compare events");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "moreau compare events failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    println!("{stdout}");
    for method in ["time-stepping", "event-rk4", "event-midpoint"] {
        assert!(
            stdout.lines().filter(|l| l.starts_with(method)).count() >= 2,
            "{method}"
        );
    }
    assert_eq!(stdout.matches("(reference)").count(), 2);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("events.json")).unwrap()).unwrap();
    let cube = json["cube"].as_array().unwrap();
    assert_eq!(cube.len(), 8);
    // The references agree on the resting pose (as the tests of
    // tests/event_based.rs require), and the event-based runs have impacts.
    for run in cube {
        if run["reference"].as_bool().unwrap() {
            assert!(run["position_error_cross"].as_f64().unwrap() < 5e-3);
        }
        if run["method"].as_str().unwrap().starts_with("event") {
            assert!(run["impacts"].as_u64().unwrap() >= 5);
        }
    }
    // Event-based answers are exact where the analytic answer is known.
    for row in json["analytic"].as_array().unwrap() {
        if row["method"].as_str().unwrap().starts_with("event") {
            assert!(row["error"].as_f64().unwrap() < 1e-9, "{row}");
        }
    }
    let svg = std::fs::read_to_string(dir.join("events.svg")).unwrap();
    assert!(svg.contains("<svg") && svg.contains("event-rk4"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// `moreau compare locomotion --quick`: every controller and contact
/// model walks (3 s each), the tables are printed and the JSON and plots
/// written; the figures that show what works are checked: the sensed
/// inverse dynamics tracks the velocity on flat ground, every contact
/// model's walk stays up on flat ground, and only the NCP solver's
/// impulses meet the NCP criterion to 1e-9 on the bumps.
#[test]
fn compare_locomotion_quick_prints_the_tables_and_writes_json_and_plots() {
    let dir = std::env::temp_dir().join(format!("moreau-cli-locomotion-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let out = Command::new(env!("CARGO_BIN_EXE_moreau"))
        .args(["compare", "locomotion", "--quick", "--out"])
        .arg(&dir)
        .output()
        .expect("run moreau compare locomotion");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "moreau compare locomotion failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    println!("{stdout}");
    for name in [
        "pd",
        "no-slip",
        "coulomb",
        "two-stage",
        "ncp",
        "id(t-1)",
        "id(t-2)",
        "lcp-pgs",
        "ccp-admm",
        "raisim",
        "ncp-admm",
    ] {
        assert!(stdout.contains(name), "{name} missing");
    }
    for file in ["controllers.svg", "contact_models.svg"] {
        assert!(
            std::fs::metadata(dir.join(file)).unwrap().len() > 1000,
            "{file}"
        );
    }
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("locomotion.json")).unwrap())
            .unwrap();
    let controllers = json["controllers"].as_array().unwrap();
    assert_eq!(controllers.len(), 3 * 7);
    let models = json["contact_models"].as_array().unwrap();
    assert_eq!(models.len(), 2 * 4);
    for w in controllers {
        if w["controller"] == "id(t-1)" && w["terrain"].as_str().unwrap().starts_with("flat") {
            assert!(w["fell_at"].is_null(), "{w}");
            let v = w["mean_velocity"].as_f64().unwrap();
            assert!((v - 0.3).abs() < 0.15, "id(t-1) walked at {v} m/s");
        }
    }
    for w in models {
        if w["terrain"].as_str().unwrap().starts_with("flat") {
            assert!(w["fell_at"].is_null(), "{}", w["solver"]);
        }
        if w["terrain"].as_str().unwrap().starts_with("bumpy") {
            let eps = w["median_ncp_criterion"].as_f64().unwrap();
            let ncp = w["solver"] == "ncp-admm";
            assert_eq!(
                eps < 1e-9,
                ncp,
                "{}: median NCP criterion {eps}",
                w["solver"]
            );
        }
    }
}
