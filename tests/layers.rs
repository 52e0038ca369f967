//! The library's layers, as ARCHITECTURE.md states them: a module calls
//! only the modules before it in [`LAYERS`]. Read from the source (`crate::`
//! paths outside comments and `#[cfg(test)]` items), so that a new upward
//! call fails here rather than going unnoticed. (The lab and the Python
//! package are separate crates: the compiler keeps them out of the library.)

use std::collections::{BTreeMap, BTreeSet};
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
        // (A macro exported at the root, `crate::name!`, is not a layer.)
        let macro_call = rest[name.len()..].starts_with('!');
        if !name.is_empty() && !macro_call {
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
/// by what its parts do before it gets there): its Rust (`src/`), its
/// shaders (`shaders/`) and the Python package's Rust (`python/src/`).
#[test]
fn no_file_of_the_library_has_more_than_a_thousand_lines() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    rust_files(&root.join("python").join("src"), &mut files);
    assert!(files.len() > 60, "read {} Rust files", files.len());
    let shaders: Vec<PathBuf> = std::fs::read_dir(root.join("shaders"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "wgsl"))
        .collect();
    assert!(shaders.len() > 10, "read {} shaders", shaders.len());
    files.extend(shaders);
    let long: Vec<String> = files
        .iter()
        .map(|f| (f, std::fs::read_to_string(f).unwrap().lines().count()))
        .filter(|(_, n)| *n > 1000)
        .map(|(f, n)| format!("{} ({n} lines)", f.display()))
        .collect();
    assert!(long.is_empty(), "over 1 000 lines: {long:?}");
}

/// A module's path from its file: `src/gpu/batched/kernel.rs` → `gpu::batched::kernel`,
/// `src/gpu/mod.rs` → `gpu` (`lib.rs` → the root, empty).
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

/// Every path a `crate::` or `super::` prefix starts in `code`, as written
/// from the crate's root (a `use` group `a::{b, c::D}` gives each of its
/// paths; `self` in a group is the group's own path).
fn paths(code: &str, module: &[String]) -> Vec<Vec<String>> {
    fn ident(s: &str) -> (&str, &str) {
        let end = s
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(s.len());
        (&s[..end], &s[end..])
    }
    /// A path and its group from `s` (after a prefix), each full path
    /// appended to `out` under `base`.
    fn tree(mut s: &str, mut base: Vec<String>, out: &mut Vec<Vec<String>>) -> usize {
        let start = s.len();
        loop {
            s = s.trim_start();
            if let Some(rest) = s.strip_prefix('{') {
                s = rest;
                loop {
                    s = s.trim_start();
                    if let Some(rest) = s.strip_prefix('}') {
                        s = rest;
                        break;
                    }
                    if let Some(rest) = s.strip_prefix(',') {
                        s = rest;
                        continue;
                    }
                    if s.is_empty() {
                        break;
                    }
                    let used = tree(s, base.clone(), out);
                    if used == 0 {
                        // Not a path (`*`): skip a character.
                        s = &s[s.char_indices().nth(1).map_or(s.len(), |(i, _)| i)..];
                    } else {
                        s = &s[used..];
                    }
                }
                return start - s.len();
            }
            let (name, rest) = ident(s);
            if name.is_empty() {
                if !base.is_empty() {
                    out.push(base);
                }
                return start - s.len();
            }
            s = rest;
            if name != "self" {
                base.push(name.to_string());
            }
            match s.strip_prefix("::") {
                Some(rest) => s = rest,
                None => {
                    out.push(base);
                    return start - s.len();
                }
            }
        }
    }
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find(['c', 's']) {
        let before = code.len() - rest.len() + i;
        rest = &rest[i..];
        let boundary = code[..before]
            .chars()
            .last()
            .is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
        let (base, after) = if let Some(after) = rest.strip_prefix("crate::") {
            (Vec::new(), after)
        } else if rest.starts_with("super::") {
            let mut base = module.to_vec();
            let mut after = rest;
            while let Some(a) = after.strip_prefix("super::") {
                base.pop();
                after = a;
            }
            (base, after)
        } else {
            rest = &rest[1..];
            continue;
        };
        if boundary {
            tree(after, base, &mut out);
            rest = after;
        } else {
            rest = &rest[1..];
        }
    }
    out
}

/// The library's modules (by path) and, for each, the modules it names
/// (the longest module prefix of each path), leaving out its own
/// ancestors and descendants (a `mod.rs` re-exports its children and they
/// reach its items through `super::`).
fn module_graph() -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let modules: BTreeSet<Vec<String>> = files.iter().map(|f| module_of(&src, f)).collect();
    let related = |a: &[String], b: &[String]| a.starts_with(b) || b.starts_with(a);
    let mut graph = BTreeMap::new();
    for file in &files {
        let module = module_of(&src, file);
        let text = code(&std::fs::read_to_string(file).unwrap());
        let mut edges = BTreeSet::new();
        for path in paths(&text, &module) {
            let target = (0..=path.len())
                .rev()
                .map(|n| path[..n].to_vec())
                .find(|p| modules.contains(p))
                .unwrap_or_default();
            if !related(&module, &target) {
                edges.insert(target);
            }
        }
        graph.insert(module, edges);
    }
    graph
}

/// The cycles of `graph`: its strongly connected components of more than
/// one module (Tarjan's algorithm).
fn cycles(graph: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>) -> Vec<Vec<String>> {
    struct Walk<'a> {
        graph: &'a BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        index: BTreeMap<&'a Vec<String>, (usize, usize)>,
        stack: Vec<&'a Vec<String>>,
        on_stack: BTreeSet<&'a Vec<String>>,
        found: Vec<Vec<String>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, v: &'a Vec<String>) {
            let n = self.index.len();
            self.index.insert(v, (n, n));
            self.stack.push(v);
            self.on_stack.insert(v);
            for w in self.graph.get(v).into_iter().flatten() {
                if !self.graph.contains_key(w) {
                    continue;
                }
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let low = self.index[w].1.min(self.index[v].1);
                    self.index.get_mut(v).unwrap().1 = low;
                } else if self.on_stack.contains(w) {
                    let low = self.index[w].0.min(self.index[v].1);
                    self.index.get_mut(v).unwrap().1 = low;
                }
            }
            if self.index[v].0 == self.index[v].1 {
                let mut component = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack.remove(w);
                    component.push(w.join("::"));
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort();
                    self.found.push(component);
                }
            }
        }
    }
    let mut walk = Walk {
        graph,
        index: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for v in graph.keys() {
        if !walk.index.contains_key(v) {
            walk.visit(v);
        }
    }
    walk.found
}

/// No module of the library reaches itself through others: the modules
/// form layers within each layer too (a module and its `mod.rs` aside).
#[test]
fn no_import_cycle_among_the_librarys_modules() {
    let graph = module_graph();
    assert!(graph.len() > 50, "read {} modules", graph.len());
    let found = cycles(&graph);
    if !found.is_empty() {
        for c in &found {
            for m in c {
                let key: Vec<String> = m.split("::").map(str::to_string).collect();
                let within: Vec<String> = graph[&key]
                    .iter()
                    .map(|t| t.join("::"))
                    .filter(|t| c.contains(t))
                    .collect();
                eprintln!("{m} -> {within:?}");
            }
        }
    }
    assert!(found.is_empty(), "import cycles: {found:?}");
}

#[test]
fn the_cycle_check_reads_use_groups_and_finds_a_cycle() {
    let m = |s: &str| -> Vec<String> { s.split("::").map(str::to_string).collect() };
    let text = "use super::{kernel::{self, BatchKernel}, batch::X};\nuse crate::gpu::pgs::Y;\nfn f() { super::super::math::Vec3::zeros(); }\n";
    let found = paths(text, &m("gpu::admm"));
    assert_eq!(
        found,
        vec![
            m("gpu::kernel"),
            m("gpu::kernel::BatchKernel"),
            m("gpu::batch::X"),
            m("gpu::pgs::Y"),
            m("math::Vec3::zeros"),
        ]
    );
    let mut graph = BTreeMap::new();
    graph.insert(m("a"), BTreeSet::from([m("b")]));
    graph.insert(m("b"), BTreeSet::from([m("c")]));
    graph.insert(m("c"), BTreeSet::from([m("a")]));
    graph.insert(m("d"), BTreeSet::from([m("a")]));
    assert_eq!(
        cycles(&graph),
        vec![vec!["a".to_string(), "b".into(), "c".into()]]
    );
}
