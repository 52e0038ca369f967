//! The README's command-line blocks run as written: every `cargo run
//! --release -- …` line runs the `moreau` binary with those arguments (in a
//! scratch folder) and must succeed, the main job included. The two lines
//! this test cannot run inside `cargo test` are checked to be what CI
//! runs: `scripts/test` is `.ci/run`'s test command, and the `pip install`
//! line is the one `scripts/python-tests` installs the package with; a
//! `python` example's options are its own; `ray start` is Ray's.

#[path = "../../tests/common/mod.rs"]
mod common;

use common::code_blocks as blocks;
use std::path::Path;
use std::process::Command;

#[test]
fn every_readme_command_runs_as_written() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let ci = std::fs::read_to_string(root.join(".ci/run")).unwrap();
    let python_tests = std::fs::read_to_string(root.join("scripts/python-tests")).unwrap();
    let dir = std::env::temp_dir().join(format!("moreau-readme-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut ran = 0;
    for line in blocks(&readme, "sh").iter().flat_map(|b| b.lines()) {
        let line = line.trim();
        if let Some(args) = line.strip_prefix("cargo run --release -- ") {
            let out = Command::new(env!("CARGO_BIN_EXE_moreau"))
                .args(args.split_whitespace())
                .current_dir(&dir)
                .output()
                .unwrap();
            println!("{line}: {:?}", out.status);
            assert!(
                out.status.success(),
                "`{line}` failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            ran += 1;
        } else if line == "scripts/test" {
            assert!(
                ci.lines().any(|l| l.trim() == "scripts/test"),
                ".ci/run does not run the README's test command"
            );
        } else if let Some(args) = line.strip_prefix("pip install ") {
            assert!(
                python_tests.contains(&format!("pip\" install --quiet {args}")),
                "scripts/python-tests does not install the package as the README says: {line}"
            );
        } else if let Some(args) = line.strip_prefix("python ") {
            // A Python example (it needs the package installed: the Python
            // tests run it); here its file exists and takes those options.
            let mut words = args.split_whitespace();
            let script = words.next().unwrap_or_default();
            let text = std::fs::read_to_string(root.join(script))
                .unwrap_or_else(|e| panic!("`{line}`: {script}: {e}"));
            for flag in words.filter(|w| w.starts_with("--")) {
                assert!(
                    text.contains(&format!("\"{flag}\"")),
                    "`{line}`: {script} has no option {flag}"
                );
            }
        } else if line.starts_with("ray start ") {
            // Ray's own command, on a cluster's nodes.
        } else {
            panic!("a README command this test does not know how to run: `{line}`");
        }
    }
    assert!(ran >= 4, "only {ran} commands ran");
    assert!(dir.join("bench-out/bench.json").is_file());
    assert!(dir.join("quadruped.csv").is_file());
    let _ = std::fs::remove_dir_all(&dir);
}
