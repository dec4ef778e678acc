//! `data/figures.toml`, which weft compiles in, holds every figure of the reference studies as the
//! project copied them: `data/reference/figures.toml` is the project's reference file, byte for
//! byte as it was copied (its digest is pinned below, so it cannot be edited to follow an edit of
//! a figure). Every table, key and value of it must be in `data/figures.toml` unchanged; comments
//! may differ. What `data/figures.toml` holds beyond it are the project's own additions (figures
//! of the studies the reference lacked, and other sources), each with its source in the file; the
//! test lists them. Nothing here reads outside the repository.

#![allow(clippy::unwrap_used)] // test code: a panic is the failure report

use weft_model::scenario::{BUNDLED_TEXT, Figures};

/// The reference file as the project copied it.
const REFERENCE_TEXT: &str = include_str!("../../../data/reference/figures.toml");

/// The BLAKE3 digest of [`REFERENCE_TEXT`] (its SHA-256 is in `data/README.md`). To take a newer
/// reference file: copy it over `data/reference/figures.toml`, bring `data/figures.toml` to it,
/// and change this digest in the same commit.
const REFERENCE_BLAKE3: &str = "49151a8a3209f51d49718f5ad36974fa638c1d70ac93ed52ae8c781ad4891c9e";

#[test]
fn the_reference_copy_is_the_one_the_project_copied() {
    assert_eq!(
        blake3::hash(REFERENCE_TEXT.as_bytes()).to_hex().as_str(),
        REFERENCE_BLAKE3,
        "data/reference/figures.toml changed: it is the reference file as copied, not a file to \
         edit (a correction of a figure goes into data/figures.toml, with its reason)"
    );
}

#[test]
fn bundled_figures_hold_every_reference_figure_unchanged() {
    let bundled = Figures::bundled().unwrap();
    assert!(bundled.number("rates.oc3c_line_mbps").is_ok());
    let theirs: toml::Table = toml::from_str(REFERENCE_TEXT).unwrap();
    let ours: toml::Table = toml::from_str(BUNDLED_TEXT).unwrap();
    let mut missing = Vec::new();
    let mut changed = Vec::new();
    let mut added = Vec::new();
    compare("", &theirs, &ours, &mut missing, &mut changed, &mut added);
    println!(
        "data/figures.toml adds {} figures to the reference copy:",
        added.len()
    );
    for k in &added {
        println!("  {k}");
    }
    assert!(
        missing.is_empty(),
        "data/figures.toml lacks figures of the reference copy: {missing:?}"
    );
    assert!(
        changed.is_empty(),
        "data/figures.toml changes figures of the reference copy: {changed:?}"
    );
    // The one table added before the catalogue, as a check that additions are seen at all.
    assert!(added.iter().any(|k| k.starts_with("romanow_floyd.")));
}

/// Walks the reference table `theirs` against `ours`, collecting dotted keys that are missing
/// from ours, whose values differ, and that ours adds. Tables are walked into; any other value
/// (numbers, strings, arrays of either) is compared whole.
fn compare(
    prefix: &str,
    theirs: &toml::Table,
    ours: &toml::Table,
    missing: &mut Vec<String>,
    changed: &mut Vec<String>,
    added: &mut Vec<String>,
) {
    for (k, v) in theirs {
        let key = format!("{prefix}{k}");
        match (v, ours.get(k)) {
            (_, None) => missing.push(key),
            (toml::Value::Table(t), Some(toml::Value::Table(o))) => {
                compare(&format!("{key}."), t, o, missing, changed, added);
            }
            (v, Some(o)) if v == o => {}
            (v, Some(o)) => changed.push(format!("{key}: {v} -> {o}")),
        }
    }
    for (k, v) in ours {
        if theirs.contains_key(k) {
            continue;
        }
        match v {
            toml::Value::Table(t) => {
                compare(
                    &format!("{prefix}{k}."),
                    &toml::Table::new(),
                    t,
                    missing,
                    changed,
                    added,
                );
            }
            _ => added.push(format!("{prefix}{k}")),
        }
    }
}
