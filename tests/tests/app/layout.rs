//! The code's layout holds (issue 24): inside the `api` crate no two modules import each other,
//! directly or around a circle, so each group (the front's request path, the portal, pricing,
//! suggestions, the role launchers and the CLI) can be read and changed from the bottom up.
//!
//! A module is one source file. It imports another when it names a `crate::…` or `super::…`
//! path that resolves to that file (the longest path that is a module), outside comments and
//! outside its `#[cfg(test)] mod tests`. A parent naming a child, or a child its own ancestors'
//! items through `super`, is not a circle. Strongly connected components of more than one module
//! (Tarjan) are the circles.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file under `root`, as its module path (`portal/auth`, `lib` → ``).
fn modules(root: &Path) -> BTreeMap<Vec<String>, PathBuf> {
    let mut out = BTreeMap::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("read src dir").flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path.strip_prefix(root).expect("under root").with_extension("");
                let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
                if matches!(parts.last().map(String::as_str), Some("mod" | "lib" | "main")) {
                    parts.pop();
                }
                out.insert(parts, path);
            }
        }
    }
    out
}

/// The `crate::a::b` / `super::a` paths named in `source` (comments and the test module left out).
fn named_paths(source: &str) -> Vec<(bool, Vec<String>)> {
    let code = source.split("#[cfg(test)]\nmod tests").next().unwrap_or(source);
    let mut out = Vec::new();
    for line in code.lines().filter(|l| !l.trim_start().starts_with("//")) {
        let bytes = line.as_bytes();
        for (start, _) in line.match_indices("::") {
            // The word before `::` must be `crate` or `super` and start a path.
            let word_start = line[..start].rfind(|c: char| !(c.is_alphanumeric() || c == '_')).map_or(0, |i| i + 1);
            let word = &line[word_start..start];
            if !(word == "crate" || word == "super") {
                continue;
            }
            if word_start >= 2 && &bytes[word_start - 2..word_start] == b"::" {
                continue; // `super::super::x`: handled from the first `super`
            }
            let rest: String =
                line[start..].chars().take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':').collect();
            let parts: Vec<String> = rest.split("::").filter(|p| !p.is_empty()).map(str::to_owned).collect();
            out.push((word == "super", parts));
        }
    }
    out
}

fn circles(root: &Path) -> Vec<Vec<String>> {
    let mods = modules(root);
    let resolve = |path: &[String]| -> Option<Vec<String>> {
        (1..=path.len()).rev().map(|n| path[..n].to_vec()).find(|p| mods.contains_key(p))
    };
    let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for (module, file) in &mods {
        let source = std::fs::read_to_string(file).expect("read module");
        let targets = edges.entry(module.clone()).or_default();
        for (relative, parts) in named_paths(&source) {
            let path = if relative {
                let mut base = module[..module.len().saturating_sub(1)].to_vec();
                let mut parts = parts.as_slice();
                while parts.first().is_some_and(|p| p == "super") {
                    base.pop();
                    parts = &parts[1..];
                }
                base.extend(parts.iter().cloned());
                base
            } else {
                parts
            };
            if let Some(target) = resolve(&path)
                && target != *module
                && !module.starts_with(&target)
            {
                targets.insert(target);
            }
        }
    }
    // Tarjan's strongly connected components, iteratively small enough to recurse.
    struct Tarjan<'a> {
        edges: &'a BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        index: BTreeMap<Vec<String>, usize>,
        low: BTreeMap<Vec<String>, usize>,
        stack: Vec<Vec<String>>,
        on_stack: BTreeSet<Vec<String>>,
        found: Vec<Vec<String>>,
    }
    impl Tarjan<'_> {
        fn visit(&mut self, v: &Vec<String>) {
            let i = self.index.len();
            self.index.insert(v.clone(), i);
            self.low.insert(v.clone(), i);
            self.stack.push(v.clone());
            self.on_stack.insert(v.clone());
            for w in self.edges.get(v).into_iter().flatten() {
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let low = self.low[v].min(self.low[w]);
                    self.low.insert(v.clone(), low);
                } else if self.on_stack.contains(w) {
                    let low = self.low[v].min(self.index[w]);
                    self.low.insert(v.clone(), low);
                }
            }
            if self.low[v] == self.index[v] {
                let mut component = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack.remove(&w);
                    let done = w == *v;
                    component.push(if w.is_empty() { "lib".to_owned() } else { w.join("/") });
                    if done {
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
    let mut t = Tarjan {
        edges: &edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for v in edges.keys() {
        if !t.index.contains_key(v) {
            t.visit(v);
        }
    }
    t.found
}

#[test]
fn the_api_crate_has_no_import_circles() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../api/src");
    let found = circles(&root);
    assert!(found.is_empty(), "modules of api/src that import each other around a circle: {found:?}");
}

#[test]
fn the_circle_finder_finds_a_circle() {
    let dir = std::env::temp_dir().join(format!("dsa-layout-{}", uuid::Uuid::now_v7().simple()));
    std::fs::create_dir_all(dir.join("b")).expect("mkdir");
    std::fs::write(dir.join("lib.rs"), "mod a;\nmod b;\n").expect("write");
    std::fs::write(dir.join("a.rs"), "use crate::b::Thing;\n// use crate::c::Ignored;\n").expect("write");
    std::fs::write(dir.join("b/mod.rs"), "mod c;\npub struct Thing;\n").expect("write");
    std::fs::write(dir.join("b/c.rs"), "use super::super::a::Other;\n").expect("write");
    std::fs::write(dir.join("c.rs"), "").expect("write");
    let found = circles(&dir);
    let _ = std::fs::remove_dir_all(&dir);
    // a names b (Thing), b/c names a; b only declares its child b/c, which is not an import,
    // and nothing in b/c is reached from a: no circle (and the commented-out path is ignored).
    assert!(found.is_empty(), "{found:?}");
    let dir2 = std::env::temp_dir().join(format!("dsa-layout-{}", uuid::Uuid::now_v7().simple()));
    std::fs::create_dir_all(&dir2).expect("mkdir");
    std::fs::write(dir2.join("lib.rs"), "mod a;\nmod b;\n").expect("write");
    std::fs::write(dir2.join("a.rs"), "use crate::b::Thing;\n").expect("write");
    std::fs::write(dir2.join("b.rs"), "pub struct Thing;\nfn f() { super::a::g() }\n").expect("write");
    let found = circles(&dir2);
    let _ = std::fs::remove_dir_all(&dir2);
    assert_eq!(found, vec![vec!["a".to_owned(), "b".to_owned()]]);
}
