//! Every scenario shipped in `scenarios/` parses, evaluates, and names figures that exist.

#![allow(clippy::unwrap_used)] // test code: a panic is the failure report

use std::path::PathBuf;

use weft_model::calc;
use weft_model::scenario::{Figures, Scenario};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The figures weft ships (`data/figures.toml`; `figures_copy.rs` checks them against the
/// reference file).
fn figures() -> Figures {
    Figures::bundled().unwrap()
}

#[test]
fn every_scenario_parses_evaluates_and_cites_real_figures() {
    let figures = figures();
    let dir = repo().join("scenarios");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("toml") {
            continue;
        }
        seen += 1;
        let text = std::fs::read_to_string(&path).unwrap();
        let s =
            Scenario::parse(&text, &path.display().to_string()).unwrap_or_else(|e| panic!("{e}"));
        let points = calc::evaluate(&s);
        assert_eq!(points.len(), s.points().len());
        for p in &points {
            assert!(
                !p.metrics.is_empty(),
                "{}: no model answer at {:?}",
                s.name,
                p.point
            );
        }
        for e in &s.expect {
            let values = figures
                .numbers(&e.source)
                .unwrap_or_else(|err| panic!("{}: {err}", path.display()));
            for i in e.select.iter().flatten() {
                assert!(
                    *i < values.len(),
                    "{}: select {i} of {}",
                    path.display(),
                    values.len()
                );
            }
            // The metric compared is one the model engine reports.
            assert!(
                points
                    .iter()
                    .any(|p| p.workload == e.workload && p.metrics.contains_key(&e.metric)),
                "{}: the model never reports {}",
                path.display(),
                e.metric
            );
        }
    }
    assert!(seen >= 5, "only {seen} scenarios in {}", dir.display());
}
