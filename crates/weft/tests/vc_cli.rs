//! `weft vc`: a plan of the Sandia database as JSON, checked back; a broken plan and a bad
//! database are refused with what is wrong; the growth table.

#![allow(clippy::unwrap_used)] // test code: a panic is the failure report

mod common;

use common::{succeed, weft};

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

#[test]
fn a_plan_checks_back_and_a_broken_one_does_not() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.json");
    let out = succeed(weft().current_dir(ROOT).args([
        "vc",
        "plan",
        "scenarios/hosts/sandia-esc.toml",
        "--mesh",
        "--json",
        "-o",
        plan.to_str().unwrap(),
    ]));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["kind"], "vc.plan");
    assert_eq!(v["counts"]["pvcs"], 66);
    let vcs = v["vcs"].as_array().unwrap();
    assert_eq!(vcs.len(), 132);
    for k in ["from", "to", "vci", "hops"] {
        assert!(vcs[0].get(k).is_some(), "{k}");
    }
    for k in ["switch", "in_port", "in_vci", "out_port", "out_vci"] {
        assert!(vcs[0]["hops"][0].get(k).is_some(), "{k}");
    }
    assert_eq!(v["tables"].as_array().unwrap().len(), 3);
    let ok = succeed(weft().current_dir(ROOT).args([
        "vc",
        "plan",
        "scenarios/hosts/sandia-esc.toml",
        "--check",
        plan.to_str().unwrap(),
    ]));
    assert!(String::from_utf8_lossy(&ok.stdout).contains("132 VCs deliver"));
    // The middle switch forgets one entry: the check names the circuit and the switch.
    let mut broken = v.clone();
    broken["tables"][1]["entries"]
        .as_array_mut()
        .unwrap()
        .remove(0);
    std::fs::write(&plan, serde_json::to_string(&broken).unwrap()).unwrap();
    let bad = weft()
        .current_dir(ROOT)
        .args(["vc", "plan", "scenarios/hosts/sandia-esc.toml", "--check"])
        .arg(&plan)
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(1));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.contains("switch bay2 has no entry"), "{err}");
}

#[test]
fn a_bad_database_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("hosts.toml");
    std::fs::write(
        &db,
        "[[switch]]\nname = \"s\"\n[[host]]\nname = \"a\"\nswitch = \"s\"\nport = 1\n\
         [[host]]\nname = \"b\"\nswitch = \"s\"\nport = 1\n",
    )
    .unwrap();
    let out = weft()
        .args(["vc", "plan", "--mesh"])
        .arg(&db)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("port 1 of switch s"), "{err}");
}

#[test]
fn growth_is_quadratic() {
    let out = succeed(weft().args(["vc", "growth", "--hosts", "8", "--switches", "2", "--json"]));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["kind"], "vc.growth");
    let rows = v["samples"].as_array().unwrap();
    assert_eq!(rows.len(), 7);
    for r in rows {
        let n = r["n"].as_u64().unwrap();
        assert_eq!(r["vcs"].as_u64().unwrap(), n * (n - 1));
    }
}
