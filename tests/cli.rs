//! `moreau run` writes the trajectory it promises, in CSV and JSON.

#[test]
fn run_writes_csv_and_json_trajectories() {
    let bin = env!("CARGO_BIN_EXE_moreau");
    let dir = std::env::temp_dir().join(format!("moreau-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let csv = dir.join("traj.csv");
    let out = std::process::Command::new(bin)
        .args([
            "run",
            "cube-sliding",
            "--steps",
            "50",
            "--out",
            csv.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary = String::from_utf8_lossy(&out.stdout);
    assert!(
        summary.contains("50 steps") && summary.contains("time per stage"),
        "{summary}"
    );
    let text = std::fs::read_to_string(&csv).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 52, "header + initial state + 50 steps");
    let header: Vec<&str> = lines[0].split(',').collect();
    assert_eq!(header.len(), 1 + 7 + 6 + 5);
    assert_eq!(
        &header[header.len() - 5..],
        &["kinetic", "potential", "nc", "eps_abs", "iterations"]
    );
    let last: Vec<f64> = lines[51].split(',').map(|x| x.parse().unwrap()).collect();
    assert!((last[0] - 0.05).abs() < 1e-12, "time column");
    assert_eq!(last[header.len() - 3], 4.0, "four contacts while sliding");

    let json = dir.join("traj.json");
    let out = std::process::Command::new(bin)
        .args([
            "run",
            "ball-drop",
            "--steps",
            "20",
            "--solver",
            "ncp-pgs",
            "--out",
            json.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(doc["solver"], "ncp-pgs");
    let traj = doc["trajectory"].as_array().unwrap();
    assert_eq!(traj.len(), 21);
    assert_eq!(traj[20]["q"].as_array().unwrap().len(), 7);
    std::fs::remove_dir_all(&dir).ok();
}
