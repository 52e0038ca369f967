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
    // Every solve is counted once by how it ended: 50 steps, 50 solves.
    let finishes = summary
        .lines()
        .find_map(|l| l.strip_prefix("solves by how they ended: "))
        .expect("the solves by how they ended");
    let counted: usize = finishes
        .split(", ")
        .map(|part| {
            let words: Vec<&str> = part.split(" (").next().unwrap().split(' ').collect();
            words.last().unwrap().parse::<usize>().unwrap()
        })
        .sum();
    assert_eq!(counted, 50, "{finishes}");
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

/// `moreau run --dump-problems` writes the problems a run met; `moreau solve`
/// reads them back and solves them, with residuals recomputed from its own λ.
#[test]
fn dumped_problems_are_solved_by_moreau_solve() {
    let bin = env!("CARGO_BIN_EXE_moreau");
    let dir = std::env::temp_dir().join(format!("moreau-cli-solve-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let dump = dir.join("tmp.json");
    let out = std::process::Command::new(bin)
        .args(["run", "cube-sliding", "--steps", "20", "--dump-problems"])
        .arg(&dump)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = moreau_solve(&dump, &["--solver", "ncp-pgs", "--tol", "1e-9"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 20, "the cube touches the floor at every step");
    let mut worst = 0.0f64;
    for (i, line) in lines.iter().enumerate() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(v["problem"], i);
        assert_eq!(v["solver"], "ncp-pgs");
        let nc = v["nc"].as_u64().unwrap() as usize;
        assert_eq!(v["lambda"].as_array().unwrap().len(), 3 * nc);
        assert_eq!(v["c"].as_array().unwrap().len(), 3 * nc);
        assert_eq!(v["converged"], true, "{line}");
        let eps = v["eps_abs"].as_f64().unwrap();
        assert!(eps <= 1e-8, "{line}");
        for k in ["eps_p", "eps_d", "eps_c", "time_us", "iterations"] {
            assert!(v[k].as_f64().is_some(), "{k} in {line}");
        }
        worst = worst.max(eps);
    }
    println!("{} problems solved, worst eps_abs {worst:.2e}", lines.len());

    // A malformed file: non-zero exit, the file named on stderr, nothing solved.
    let bad = dir.join("malformed.json");
    std::fs::write(&bad, "[{\"G\": [[1]], \"g\": [1,").unwrap();
    let out = moreau_solve(&bad, &["--solver", "ncp-pgs"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("malformed file: {}", stderr.trim());
    assert!(!out.status.success());
    assert!(stderr.contains("malformed.json"), "{stderr}");
    assert!(out.stdout.is_empty());

    // A batch whose second problem is invalid is refused before any solve.
    let text = std::fs::read_to_string(&dump).unwrap();
    let mut problems: Vec<serde_json::Value> = serde_json::from_str(&text).unwrap();
    problems[1]["mu"][0] = serde_json::json!(-1.0);
    std::fs::write(&bad, serde_json::to_string(&problems).unwrap()).unwrap();
    let out = moreau_solve(&bad, &["--solver", "ncp-admm"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("invalid problem: {}", stderr.trim());
    assert!(!out.status.success());
    assert!(
        stderr.contains("problem 1") && stderr.contains("mu"),
        "{stderr}"
    );
    assert!(
        out.stdout.is_empty(),
        "nothing is solved before all problems are valid"
    );

    // A solver without a GPU kernel is refused on the GPU, by name
    // (tests/gpu_solvers.rs checks the GPU path itself).
    let out = moreau_solve(&dump, &["--solver", "staggered", "--device", "gpu"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("`staggered` has no GPU kernel"));
    std::fs::remove_dir_all(&dir).ok();
}

/// Runs `moreau solve FILE ARGS...`.
fn moreau_solve(file: &std::path::Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_moreau"))
        .arg("solve")
        .arg(file)
        .args(args)
        .output()
        .unwrap()
}

/// `moreau grad` computes the step Jacobians along a trajectory, checks them
/// against central differences (the worst difference it prints is small)
/// and writes them with the states.
#[test]
fn grad_checks_and_writes_the_step_jacobians() {
    let bin = env!("CARGO_BIN_EXE_moreau");
    let dir = std::env::temp_dir().join(format!("moreau-grad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("grad.json");
    let out = std::process::Command::new(bin)
        .args([
            "grad",
            "cube-sliding",
            "--steps",
            "20",
            "--fd",
            "10",
            "--eps",
            "1e-4",
            "--out",
            json.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let worst: f64 = stdout
        .split("worst relative difference over 2 steps ")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(worst < 1e-5, "{stdout}");
    let rows: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 20);
    let m = rows[5]["dv_dtau"].as_array().unwrap();
    assert_eq!((m.len(), m[0].as_array().unwrap().len()), (6, 6));
    assert_eq!(rows[5]["nc"], 4);
    // A bad argument is refused with a message, not a panic.
    let bad = std::process::Command::new(bin)
        .args(["grad", "no-such-scene"])
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("no-such-scene"));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn the_command_line_reports_errors_without_panicking() {
    let bin = env!("CARGO_BIN_EXE_moreau");
    let moreau = |args: &[&str]| std::process::Command::new(bin).args(args).output().unwrap();
    let out = moreau(&["run", "no-such-scene"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("unknown scene `no-such-scene`"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    let out = moreau(&["run", "cube-resting", "--solver", "magic"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown solver `magic`"));
    let out = moreau(&["run", "cube-resting", "--dt=-1"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("dt"));
    let out = moreau(&["run", "cube-resting", "--max-recovery-speed", "0"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("max_recovery_speed"), "{err}");
    let out = moreau(&[
        "run",
        "cube-resting",
        "--steps",
        "5",
        "--max-recovery-speed",
        "0.5",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `moreau run FILE --random-controls SEED`: the actuators driven by
/// controls uniform in their ranges, reproducible by seed, a fresh draw
/// every `--control-period` steps; the step-time quantiles printed; bad
/// uses refused by name.
#[test]
fn random_controls_drive_the_actuators_reproducibly() {
    let bin = env!("CARGO_BIN_EXE_moreau");
    let dir = std::env::temp_dir().join(format!("moreau-cli-random-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // A pendulum on a hinge: a motor of gear 1 within ±2 N·m, and one
    // whose control is not limited.
    let file = |limited: bool| {
        format!(
            r#"<mujoco><option timestep="0.01" gravity="0 0 0"/><worldbody>
<body name="arm"><joint name="hinge" type="hinge" axis="0 1 0" damping="0"/>
<geom type="capsule" fromto="0 0 0 0 0 -0.5" size="0.05" mass="1" contype="0" conaffinity="0"/></body>
</worldbody><actuator><motor joint="hinge" {}/></actuator></mujoco>"#,
            if limited { r#"ctrlrange="-2 2""# } else { "" }
        )
    };
    let path = dir.join("arm.xml");
    std::fs::write(&path, file(true)).unwrap();
    let run = |extra: &[&str], out: &str| {
        let mut args = vec!["run", path.to_str().unwrap(), "--steps", "40"];
        args.extend_from_slice(extra);
        let csv = dir.join(out);
        args.extend_from_slice(&["--out", csv.to_str().unwrap()]);
        let o = std::process::Command::new(bin)
            .args(&args)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let rows: Vec<Vec<f64>> = std::fs::read_to_string(&csv)
            .unwrap()
            .lines()
            .skip(1)
            .map(|l| l.split(',').map(|x| x.parse().unwrap()).collect())
            .collect();
        (String::from_utf8_lossy(&o.stdout).to_string(), rows)
    };
    let (summary, a) = run(&["--random-controls", "7"], "a.csv");
    assert!(
        summary.contains("step time: p50")
            && summary.contains("random controls every 1 step(s), seed 7"),
        "{summary}"
    );
    let (_, b) = run(&["--random-controls", "7"], "b.csv");
    let (_, c) = run(&["--random-controls", "8"], "c.csv");
    assert_eq!(a, b, "the same seed, the same run");
    assert_ne!(a, c, "another seed, another run");
    // Column 2 is the hinge's velocity (t, q, v, …): with no gravity and no
    // damping, each step changes it by τ·dt/I with |τ| ≤ 2 N·m, and a
    // fresh draw each step makes the changes differ.
    let dv: Vec<f64> = a.windows(2).map(|w| w[1][2] - w[0][2]).collect();
    let inertia = 1.0 * 0.5f64.powi(2) / 3.0; // about the hinge, the capsule's caps aside
    assert!(
        dv.iter().all(|d| d.abs() <= 2.0 * 0.01 / inertia * 1.2),
        "{dv:?}"
    );
    assert!(dv.windows(2).all(|w| w[0] != w[1]), "{dv:?}");
    // Every 5 steps a draw: the velocity changes by the same amount within
    // a period.
    let (_, held) = run(
        &["--random-controls", "7", "--control-period", "5"],
        "d.csv",
    );
    let dv: Vec<f64> = held.windows(2).map(|w| w[1][2] - w[0][2]).collect();
    for period in dv.chunks(5) {
        assert!(
            period.iter().all(|d| (d - period[0]).abs() < 1e-9),
            "{period:?}"
        );
    }
    assert!((dv[0] - dv[5]).abs() > 1e-6);

    // Refused by name: a control without a range, a scene with its own
    // controller.
    std::fs::write(&path, file(false)).unwrap();
    let o = std::process::Command::new(bin)
        .args([
            "run",
            path.to_str().unwrap(),
            "--steps",
            "5",
            "--random-controls",
            "1",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && err.contains("actuator `hinge` has no control range"),
        "{err}"
    );
    let o = std::process::Command::new(bin)
        .args(["run", "quadruped", "--steps", "5", "--random-controls", "1"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && err.contains("--random-controls"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--joint-pos PATTERN=VALUE` starts a robot file's 1-dof joints where
/// asked (`*` a wildcard), the others where the file puts them; a pattern
/// naming no such joint, a multi-dof joint, a malformed setting and a
/// built-in scene are refused by name.
#[test]
fn joint_positions_set_a_robot_files_start() {
    let bin = env!("CARGO_BIN_EXE_moreau");
    let dir = std::env::temp_dir().join(format!("moreau-cli-joint-pos-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("legs.xml");
    std::fs::write(
        &path,
        r#"<mujoco><option timestep="0.01" gravity="0 0 0"/><worldbody>
<body name="a"><joint name="left_knee" type="hinge" axis="0 1 0"/>
<geom type="capsule" fromto="0 0 0 0 0 -0.5" size="0.05" mass="1" contype="0" conaffinity="0"/>
<body name="b" pos="0 0 -0.5"><joint name="right_knee" type="hinge" axis="0 1 0"/>
<geom type="capsule" fromto="0 0 0 0 0 -0.5" size="0.05" mass="1" contype="0" conaffinity="0"/>
<body name="c" pos="0 0 -0.5"><joint name="slide" type="slide" axis="1 0 0"/>
<geom type="sphere" size="0.05" mass="1" contype="0" conaffinity="0"/></body></body></body>
<body name="ball" pos="2 0 0"><freejoint name="float"/><geom type="sphere" size="0.1" mass="1"/></body>
</worldbody></mujoco>"#,
    )
    .unwrap();
    let csv = dir.join("start.csv");
    let run = |settings: &[&str]| {
        let mut args = vec!["run", path.to_str().unwrap(), "--steps", "1", "--passive"];
        for s in settings {
            args.extend_from_slice(&["--joint-pos", s]);
        }
        args.extend_from_slice(&["--out", csv.to_str().unwrap()]);
        std::process::Command::new(bin)
            .args(&args)
            .output()
            .unwrap()
    };
    let o = run(&["*_knee=0.3"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let first: Vec<f64> = std::fs::read_to_string(&csv)
        .unwrap()
        .lines()
        .nth(1)
        .unwrap()
        .split(',')
        .map(|x| x.parse().unwrap())
        .collect();
    // t, then q: the knees, the slide, the ball's position and quaternion.
    assert_eq!(&first[1..4], &[0.3, 0.3, 0.0], "{first:?}");
    for (settings, expected) in [
        (vec!["elbow=1"], "no 1-dof joint is named `elbow`"),
        (vec!["float=1"], "joint `float` is not a 1-dof joint"),
        (vec!["*_knee"], "expected PATTERN=VALUE"),
        (vec!["slide=nan"], "expected PATTERN=VALUE"),
    ] {
        let o = run(&settings);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(
            !o.status.success() && stderr.contains(expected),
            "{settings:?}: {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
    let o = std::process::Command::new(bin)
        .args(["run", "quadruped", "--steps", "1", "--joint-pos", "a=1"])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("applies to robot files"));
}
