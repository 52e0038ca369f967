//! The library's layers, as ARCHITECTURE.md states them: a module calls
//! only the modules before it in [`LAYERS`]. Read from the source (`crate::`
//! paths outside comments and `#[cfg(test)]` items), so that a new upward
//! call fails here rather than going unnoticed. (The lab and the Python
//! package are separate crates: the compiler keeps them out of the library.)

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Bottom up.
const LAYERS: &[&str] = &[
    "error",
    "math",
    "counters",
    "model",
    "dynamics",
    "collision",
    "load",
    "contact",
    "sim",
    "scenes",
    "inverse",
    "gpu",
    "render",
    "batch",
    "envs",
];

fn rust_files(path: &Path, out: &mut Vec<PathBuf>) {
    if path.is_dir() {
        for entry in std::fs::read_dir(path).unwrap() {
            rust_files(&entry.unwrap().path(), out);
        }
    } else if path.extension().is_some_and(|e| e == "rs") {
        out.push(path.to_path_buf());
    }
}

/// The source without comments and without the items under `#[cfg(test)]`.
fn code(text: &str) -> String {
    let mut out = String::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if line.trim() == "#[cfg(test)]" {
            // Skip the item: up to the line that closes its first brace.
            let mut depth = 0i64;
            let mut opened = false;
            for l in lines.by_ref() {
                depth += l.matches('{').count() as i64 - l.matches('}').count() as i64;
                opened |= l.contains('{');
                if opened && depth <= 0 {
                    break;
                }
            }
            continue;
        }
        let line = line.split("//").next().unwrap_or("");
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// The top-level modules `text` names as `crate::<module>`.
fn uses(text: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut rest = text;
    while let Some(i) = rest.find("crate::") {
        rest = &rest[i + "crate::".len()..];
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_lowercase() || *c == '_')
            .collect();
        if !name.is_empty() {
            found.insert(name);
        }
    }
    found
}

#[test]
fn every_module_calls_only_the_layers_below_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut violations = Vec::new();
    let mut modules = BTreeSet::new();
    for entry in std::fs::read_dir(&src).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        if name == "lib" {
            continue;
        }
        modules.insert(name.clone());
        let Some(rank) = LAYERS.iter().position(|&l| l == name) else {
            violations.push(format!(
                "src/{name}: not in LAYERS (nor in ARCHITECTURE.md)"
            ));
            continue;
        };
        let mut files = Vec::new();
        rust_files(&path, &mut files);
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            for used in uses(&code(&text)) {
                if used == name {
                    continue;
                }
                match LAYERS.iter().position(|&l| l == used) {
                    Some(r) if r < rank => {}
                    _ => violations.push(format!(
                        "{}: `{name}` calls `crate::{used}`, which is not below it",
                        file.display()
                    )),
                }
            }
        }
    }
    assert!(violations.is_empty(), "{}", violations.join("\n"));
    // Every layer exists: the list is the map, not a wish.
    for layer in LAYERS {
        assert!(
            modules.contains(*layer),
            "LAYERS names `{layer}`, which src/ lacks"
        );
    }
}

#[test]
fn the_check_sees_calls_and_ignores_comments_and_tests() {
    let text = "use crate::sim::Simulator; // crate::gpu\n#[cfg(test)]\nmod tests {\n    use crate::batch::X;\n}\nfn f() { crate::math::Vec3::zeros(); }\n";
    let found = uses(&code(text));
    assert_eq!(
        found,
        ["math", "sim"]
            .iter()
            .map(|s| s.to_string())
            .collect::<BTreeSet<_>>()
    );
}

/// Issue 32's rule: no file of the library over 1 000 lines (split a file
/// by what its parts do before it gets there).
#[test]
fn no_file_of_the_library_has_more_than_a_thousand_lines() {
    let mut files = Vec::new();
    rust_files(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut files,
    );
    assert!(files.len() > 50, "read {} files", files.len());
    let long: Vec<String> = files
        .iter()
        .map(|f| (f, std::fs::read_to_string(f).unwrap().lines().count()))
        .filter(|(_, n)| *n > 1000)
        .map(|(f, n)| format!("{} ({n} lines)", f.display()))
        .collect();
    assert!(long.is_empty(), "over 1 000 lines: {long:?}");
}
