//! `moreau inspect FILE` and `moreau run FILE` on robot files: a hand-written
//! URDF always, and the example-robot-data / Gymnasium files when installed.

#[path = "../../tests/common/mod.rs"]
mod common;

use std::process::Command;

fn moreau(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_moreau"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const LEG: &str = r#"<robot name="leg">
  <link name="hip"><inertial><mass value="2"/><inertia ixx="0.02" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.02"/></inertial>
    <collision><geometry><box size="0.2 0.2 0.1"/></geometry></collision></link>
  <joint name="knee" type="revolute"><parent link="hip"/><child link="shin"/><origin xyz="0 0 -0.05"/>
    <axis xyz="0 1 0"/><limit lower="-2" upper="0.5" effort="5" velocity="10"/></joint>
  <link name="shin"><inertial><origin xyz="0 0 -0.15"/><mass value="0.5"/><inertia ixx="0.004" ixy="0" ixz="0" iyy="0.004" iyz="0" izz="0.0005"/></inertial>
    <collision><origin xyz="0 0 -0.15"/><geometry><capsule radius="0.03" length="0.24"/></geometry></collision></link>
</robot>"#;

#[test]
fn inspect_and_run_a_urdf_file() {
    let dir = std::env::temp_dir().join(format!("moreau-cli-robot-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("leg.urdf");
    std::fs::write(&file, LEG).unwrap();
    let f = file.to_str().unwrap();

    let (ok, out, err) = moreau(&["inspect", f]);
    println!("{out}{err}");
    assert!(ok, "{err}");
    for expect in [
        "nq 8  nv 7  bodies 2",
        "total mass 2.500000 kg",
        "hip  [free joint",
        "shin  [revolute joint axis 0.000 1.000 0.000",
        "capsule r=0.03 half-length=0.12",
        "knee                     [-2, 0.5]",
    ] {
        assert!(out.contains(expect), "`{expect}` missing");
    }
    // Welded: no free joint.
    let (ok, out, _) = moreau(&["inspect", f, "--fixed-base"]);
    assert!(ok && out.contains("nq 1  nv 1  bodies 1"), "{out}");

    // Run: a floating leg put on the ground, held by the PD: it stands.
    let traj = dir.join("leg.csv");
    let (ok, out, err) = moreau(&["run", f, "--steps", "500", "--out", traj.to_str().unwrap()]);
    println!("{out}{err}");
    assert!(ok, "{err}");
    assert!(out.contains("500 steps"));
    let text = std::fs::read_to_string(&traj).unwrap();
    let last: Vec<f64> = text
        .lines()
        .last()
        .unwrap()
        .split(',')
        .map(|x| x.parse().unwrap())
        .collect();
    // Columns: t, q (8), v (7), energies, nc...
    let (z, nc) = (last[3], last[1 + 8 + 7 + 2]);
    println!("hip height {z:.4} m, {nc} contacts");
    assert!(z > 0.0 && z < 0.5 && nc >= 1.0, "standing on the ground");

    // Bad files: named in the error, non-zero exit.
    std::fs::write(dir.join("bad.urdf"), "<robot name='x'><link name='a'>").unwrap();
    let (ok, _, err) = moreau(&["inspect", dir.join("bad.urdf").to_str().unwrap()]);
    assert!(
        !ok && err.contains("bad.urdf") && err.contains("XML"),
        "{err}"
    );
    let (ok, _, err) = moreau(&["inspect", dir.join("robot.sdf").to_str().unwrap()]);
    assert!(!ok && err.contains("unknown model format"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn inspect_and_run_installed_robot_files() {
    let Some(files) = common::robot_files() else {
        return;
    };
    let cases = [
        (
            files
                .example_robot_data
                .join("talos_data/robots/talos_reduced.urdf"),
            "nq 39  nv 38  bodies 33",
        ),
        (files.gymnasium_assets.join("humanoid.xml"), "nq 24  nv 23"),
    ];
    for (path, expect) in cases {
        let p = path.to_str().unwrap();
        let (ok, out, err) = moreau(&["inspect", p]);
        println!("{}", out.lines().take(3).collect::<Vec<_>>().join("\n"));
        assert!(ok && out.contains(expect), "{out}{err}");
        let (ok, out, err) = moreau(&["run", p, "--steps", "200"]);
        println!("{}", out.lines().take(3).collect::<Vec<_>>().join("\n"));
        assert!(ok && out.contains("200 steps"), "{out}{err}");
    }
}

/// `moreau bench env` on Gymnasium's files: a row per (task, backend,
/// size) with its rates and the time per environment step split into
/// physics, task, resets and the rest (adding up to the whole); the same
/// episodes end on `cpu` and `cpu1` (Philox resets, random actions keyed
/// per world); on `gpu` the task on the device or, asked, on the host, the
/// host's own time and the device's waits reported; an unknown task and a
/// missing assets folder are refused by name.
#[test]
fn bench_env_measures_gymnasiums_tasks_in_rust() {
    let Some(files) = common::robot_files() else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("moreau-bench-env-{}", std::process::id()));
    let assets = files.gymnasium_assets.to_str().unwrap().to_string();
    let (ok, stdout, stderr) = moreau(&[
        "bench",
        "env",
        "--task",
        "InvertedPendulum-v5,Ant-v5",
        "--envs",
        "8",
        "--steps",
        "30",
        "--backend",
        "cpu,cpu1",
        "--assets",
        &assets,
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(ok, "{stderr}");
    assert!(
        stdout.contains("InvertedPendulum-v5") && stdout.contains("env steps/s"),
        "{stdout}"
    );
    let rows: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("bench_env.json")).unwrap())
            .unwrap();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 4);
    for r in rows {
        let f = |k: &str| r[k].as_f64().unwrap();
        assert!(f("env_steps_per_s") > 0.0 && f("physics_steps_per_s") > f("env_steps_per_s"));
        let parts = f("physics_us") + f("task_us") + f("reset_us") + f("other_us");
        assert!(
            parts <= f("us_per_env_step") * 1.001 && parts > 0.9 * f("us_per_env_step"),
            "{r}"
        );
        assert_eq!(r["failed"], 0);
    }
    // The pendulum falls within 30 steps under random actions: episodes
    // end, the same number on both CPU backends.
    let ended = |task: &str, backend: &str| {
        rows.iter()
            .find(|r| r["task"] == task && r["backend"] == backend)
            .unwrap()["episodes_ended"]
            .as_u64()
            .unwrap()
    };
    assert!(ended("InvertedPendulum-v5", "cpu") > 0);
    assert_eq!(
        ended("InvertedPendulum-v5", "cpu"),
        ended("InvertedPendulum-v5", "cpu1")
    );
    assert_eq!(ended("Ant-v5", "cpu"), ended("Ant-v5", "cpu1"));
    // On `gpu`, the pendulum's task on the device, or on the host when
    // asked: the host's own time and the device's waits reported.
    for on_host in [false, true] {
        let mut args = vec![
            "bench",
            "env",
            "--task",
            "InvertedPendulum-v5",
            "--envs",
            "8",
            "--steps",
            "30",
            "--backend",
            "gpu",
            "--assets",
            &assets,
            "--out",
            dir.to_str().unwrap(),
        ];
        if on_host {
            args.push("--task-on-host");
        }
        let (ok, stdout, stderr) = moreau(&args);
        if !ok && std::env::var("MOREAU_REQUIRE_GPU").as_deref() != Ok("1") {
            break;
        }
        assert!(ok, "{stderr}");
        assert!(stdout.contains("host"), "{stdout}");
        let rows: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("bench_env.json")).unwrap())
                .unwrap();
        let r = &rows[0];
        assert_eq!(r["task_on_device"], !on_host, "{r}");
        let (host, wait) = (
            r["host_us"].as_f64().unwrap(),
            r["device_wait_us"].as_f64().unwrap(),
        );
        assert!(
            host > 0.0 && wait > 0.0 && host + wait < r["us_per_env_step"].as_f64().unwrap(),
            "{r}"
        );
        assert!(r["episodes_ended"].as_u64().unwrap() > 0, "{r}");
    }
    let (ok, _, stderr) = moreau(&["bench", "env", "--task", "Ant-v9", "--assets", &assets]);
    assert!(
        !ok && stderr.contains("unknown task `Ant-v9`") && stderr.contains("Humanoid-v5"),
        "{stderr}"
    );
    let (ok, _, stderr) = moreau(&["bench", "env", "--assets", "/no/such/dir", "--envs", "1"]);
    assert!(!ok && stderr.contains("/no/such/dir"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}
