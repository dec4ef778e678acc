//! The emulator's switches forward by the planned circuits: the 3-switch, 12-host scenario of
//! `scenarios/vc-mesh-three-switches.toml` runs an all-to-all among twelve namespaced Linux hosts
//! whose every frame is switched by the plan's cross-connect tables: the run finishes, every
//! table entry carried traffic and no frame was on an unknown circuit.
//! Needs root (network namespaces); says `skipped` without it unless WEFT_TEST_STRICT=1.

mod common;

use weft_model::Scenario;

#[test]
fn every_pair_exchanges_its_all_to_all_by_the_tables() {
    require_root!();
    let _g = common::serial();
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scenarios/vc-mesh-three-switches.toml"
    );
    let text = std::fs::read_to_string(path).expect("the scenario file");
    let s = Scenario::parse(&text, path).expect("the scenario parses");
    let doc = weft_emu::scenario::run(&s, &Default::default()).expect("emu run");
    let x = &doc.samples[0];
    assert!(x["mean_us"].as_f64().is_some_and(|m| m > 0.0), "{x}");
    let vc = &x["vc"];
    let entries = weft_model::vc::plan(
        s.vc.as_ref().expect("as planned"),
        &weft_model::vc::Shape::Mesh,
    )
    .expect("as planned")
    .counts
    .entries as u64;
    assert_eq!(vc["circuits_used"].as_u64(), Some(entries), "{vc}");
    assert_eq!(vc["frames_unknown"].as_u64(), Some(0), "{vc}");
    assert_eq!(vc["unbound"].as_u64(), Some(0), "{vc}");
    assert_eq!(vc["misdelivered"].as_u64(), Some(0), "{vc}");
    assert!(
        vc["frames"].as_u64().expect("as planned") > 12 * 11 * 20,
        "{vc}"
    );
}
