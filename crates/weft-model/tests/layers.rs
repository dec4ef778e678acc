//! The core's modules in layers that cannot loop (issue 31; the workspace README draws them):
//! a module may use its own layer and the layers below, never one above. The test reads every
//! `crate::` path in each module's code (comments left out) and fails on an edge that points
//! up, naming the file and line; a new module must be given a layer here.

use std::collections::BTreeSet;
use std::path::Path;

/// The layers, bottom first, and their modules (the top-level modules of `src/`).
const LAYERS: &[(&str, &[&str])] = &[
    (
        "base",
        &["units", "time", "rng", "element", "engine", "figures"],
    ),
    (
        "fabric",
        &["tech", "cell", "queue", "shaper", "fabric", "net", "vc"],
    ),
    (
        "transports and applications",
        &["tcp", "ndp", "dcqcn", "app", "mp", "host"],
    ),
    ("scenarios and closed forms", &["scenario", "calc"]),
];

/// Upward edges allowed, each a file and the module it reaches up to: none remain (issue 31
/// moved the last five to the layer they belong in). Never add one.
const KNOWN: &[(&str, &str)] = &[];

/// The crate root's re-exports (`lib.rs`), and the modules they come from.
const ROOT: &[(&str, &str)] = &[
    ("Duration", "time"),
    ("Instant", "time"),
    ("Element", "element"),
    ("WireLen", "element"),
    ("Scenario", "scenario"),
    ("ScenarioError", "scenario"),
    ("Encap", "tech"),
    ("Tech", "tech"),
    ("Transport", "tech"),
    ("aal5_cells", "tech"),
    ("Rate", "units"),
    ("Size", "units"),
    ("UnitError", "units"),
];

fn layer_of(module: &str) -> Option<usize> {
    let module = ROOT
        .iter()
        .find(|(name, _)| *name == module)
        .map_or(module, |(_, m)| m);
    LAYERS.iter().position(|(_, ms)| ms.contains(&module))
}

/// The source without comments (line comments and doc comments; string literals kept, which
/// name no module of the crate as a path).
fn code(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let code = match line.find("//") {
            // A "//" inside a string literal (an URL): an odd number of quotes before it.
            Some(i) if line[..i].matches('"').count() % 2 == 0 => &line[..i],
            _ => line,
        };
        out.push_str(code);
        out.push('\n');
    }
    out
}

/// The modules of the crate `text` names: `crate::name` and `crate::{name, ...}`.
fn uses(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let mut rest = line;
        while let Some(i) = rest.find("crate::") {
            rest = &rest[i + "crate::".len()..];
            if let Some(group) = rest.strip_prefix('{') {
                // One level of braces: `crate::{a, b::c, d::{e, f}}`.
                let mut depth = 0;
                let mut item = String::new();
                for ch in group.chars() {
                    match ch {
                        '{' => depth += 1,
                        '}' if depth == 0 => break,
                        '}' => depth -= 1,
                        ',' if depth == 0 => {
                            found.push((n + 1, head(&item)));
                            item.clear();
                            continue;
                        }
                        _ => {}
                    }
                    item.push(ch);
                }
                found.push((n + 1, head(&item)));
            } else {
                found.push((n + 1, head(rest)));
            }
        }
    }
    found.retain(|(_, m)| !m.is_empty());
    found
}

/// The first path segment of `s`.
fn head(s: &str) -> String {
    s.trim()
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect()
}

fn files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn no_module_of_the_core_uses_a_layer_above_its_own() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut all = Vec::new();
    files(&src, &mut all);
    all.sort();
    let mut up = Vec::new();
    let mut unplaced = BTreeSet::new();
    let mut known_seen = BTreeSet::new();
    for path in &all {
        let rel = path
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if rel == "lib.rs" {
            continue;
        }
        let module = head(&rel);
        let Some(mine) = layer_of(&module) else {
            unplaced.insert(module);
            continue;
        };
        let text = std::fs::read_to_string(path).unwrap();
        for (line, used) in uses(&code(&text)) {
            let Some(theirs) = layer_of(&used) else {
                unplaced.insert(used);
                continue;
            };
            if theirs <= mine {
                continue;
            }
            if KNOWN.contains(&(rel.as_str(), used.as_str())) {
                known_seen.insert((rel.clone(), used.clone()));
                continue;
            }
            up.push(format!(
                "src/{rel}:{line}: {module} ({}) uses {used} ({})",
                LAYERS[mine].0, LAYERS[theirs].0
            ));
        }
    }
    assert!(
        unplaced.is_empty(),
        "modules without a layer (add them to LAYERS): {unplaced:?}"
    );
    assert!(up.is_empty(), "upward edges:\n{}", up.join("\n"));
    let stale: Vec<_> = KNOWN
        .iter()
        .filter(|(f, m)| !known_seen.contains(&(f.to_string(), m.to_string())))
        .collect();
    assert!(
        stale.is_empty(),
        "KNOWN edges that are gone (remove them): {stale:?}"
    );
}

#[test]
fn the_reader_finds_grouped_and_plain_paths_and_skips_comments() {
    let text = "use crate::{time::Instant, units::{Rate, Size}};\n\
                let x = crate::net::Topology::new(); // crate::calc\n\
                /// [`crate::scenario`]\n";
    let got: Vec<_> = uses(&code(text)).into_iter().map(|(_, m)| m).collect();
    assert_eq!(got, ["time", "units", "net"]);
}
