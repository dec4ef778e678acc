//! `data/figures.toml`, which weft compiles in, holds the same figures as the project's reference
//! file `shared/reference/figures.toml` (found beside the repository, as CI lays it out, or above
//! a worktree). Comments may differ; every table, key and value must not. Tables of figures from
//! outside the reference studies, added in this repository, are listed in [`ADDED_HERE`] until the
//! reference copy takes them.

#![allow(clippy::unwrap_used)] // test code: a panic is the failure report

use std::path::PathBuf;

use weft_model::scenario::{BUNDLED_TEXT, Figures};

/// Tables `data/figures.toml` holds beyond the reference file, each with its source in the file.
const ADDED_HERE: &[&str] = &["romanow_floyd"];

#[test]
fn bundled_figures_parse_and_match_the_reference_file() {
    let bundled = Figures::bundled().unwrap();
    assert!(bundled.number("rates.oc3c_line_mbps").is_ok());
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let Some(reference) = here
        .ancestors()
        .map(|d| d.join("shared/reference/figures.toml"))
        .find(|p| p.exists())
    else {
        weft_testutil::skip(&format!(
            "no shared/reference/figures.toml above {} to check data/figures.toml against",
            here.display()
        ));
        return;
    };
    let theirs: toml::Table =
        toml::from_str(&std::fs::read_to_string(&reference).unwrap()).unwrap();
    let ours: toml::Table = toml::from_str(BUNDLED_TEXT).unwrap();
    for (k, v) in &theirs {
        assert_eq!(
            ours.get(k),
            Some(v),
            "data/figures.toml differs from {} in [{k}]: copy the file again",
            reference.display()
        );
    }
    let extra: Vec<&String> = ours
        .keys()
        .filter(|k| !theirs.contains_key(*k) && !ADDED_HERE.contains(&k.as_str()))
        .collect();
    assert!(
        extra.is_empty(),
        "data/figures.toml has tables the reference lacks: {extra:?}"
    );
    for k in ADDED_HERE {
        assert!(
            ours.contains_key(*k) && !theirs.contains_key(*k),
            "[{k}] is listed as added here: it must be in data/figures.toml and not yet in {}",
            reference.display()
        );
    }
}
