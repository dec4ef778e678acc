//! Compiles the repository's scenarios (`scenarios/*.toml`) and the catalogue of the studies'
//! results (`data/catalogue.toml`) into weft-run, so that `weft repro` runs from any directory
//! and reads nothing at run time: writes `$OUT_DIR/bundled.rs` with one `include_str!` per file.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let repo = manifest.join("../..");
    let scenarios = repo.join("scenarios");
    let data = repo.join("data");
    // A directory here makes cargo rerun this script when any file in it changes or appears.
    println!("cargo:rerun-if-changed={}", scenarios.display());
    println!("cargo:rerun-if-changed={}", data.display());
    println!("cargo:rerun-if-changed=build.rs");

    let mut files: Vec<PathBuf> = std::fs::read_dir(&scenarios)
        .map(|d| {
            d.filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "toml"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    let mut out = String::from(
        "/// The scenario files of the repository, (file stem, text), in name order.\n\
         pub const SCENARIOS: &[(&str, &str)] = &[\n",
    );
    for f in &files {
        let stem = f.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
        let _ = writeln!(out, "    ({stem:?}, include_str!({:?})),", abs(f));
    }
    out.push_str("];\n\n");
    let catalogue = data.join("catalogue.toml");
    out.push_str("/// The catalogue of the studies' results, if the repository has one.\n");
    if catalogue.is_file() {
        let _ = writeln!(
            out,
            "pub const CATALOGUE: Option<&str> = Some(include_str!({:?}));",
            abs(&catalogue)
        );
    } else {
        out.push_str("pub const CATALOGUE: Option<&str> = None;\n");
    }
    let dest = PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_default()).join("bundled.rs");
    if let Err(e) = std::fs::write(&dest, out) {
        panic!("cannot write {}: {e}", dest.display());
    }
}

fn abs(p: &Path) -> String {
    p.canonicalize()
        .unwrap_or_else(|_| p.to_path_buf())
        .display()
        .to_string()
}
