//! `weft calc` and `weft run` end to end: JSON on stdout, exit codes, errors that name the file
//! line and key.

#![allow(clippy::unwrap_used)] // test code: a panic is the failure report

use std::path::PathBuf;
use std::process::{Command, Output};

fn weft(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_weft"))
        .args(args)
        .current_dir(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.."))
        .output()
        .expect("run weft")
}

fn json(out: &Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

#[test]
fn calc_overhead_json_is_a_model_result() {
    let v = json(&weft(&["calc", "overhead", "--tech", "oc3c", "--json"]));
    assert_eq!(v["engine"], "model");
    assert_eq!(v["kind"], "calc.overhead");
    let goodput = v["summary"]["goodput_bps"].as_f64().unwrap();
    assert!((goodput / 1e6 - 134.51).abs() < 0.01, "{goodput}");
    assert_eq!(v["summary"]["cells"], 192);
    let layers = v["samples"].as_array().unwrap();
    assert_eq!(layers.first().unwrap()["name"], "line (signalling)");
}

#[test]
fn calc_overhead_table_explains_sandia() {
    let out = weft(&["calc", "overhead"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("151.488"), "{text}");
    assert!(text.contains("263 of the 270 columns"), "{text}");
    assert!(text.contains("134.513"), "{text}");
}

#[test]
fn calc_window_ebn_reads_the_figures() {
    let v = json(&weft(&[
        "calc", "window", "--rtt", "17ms", "--rate", "26Mbps", "--ebn", "--json",
    ]));
    assert_eq!(v["summary"]["window_needed_bytes"], 55_250);
    assert_eq!(v["summary"]["ebn_runs"].as_array().unwrap().len(), 5);
}

#[test]
fn calc_host_prints_the_presets_and_what_they_were_fitted_to() {
    let v = json(&weft(&["calc", "host", "--json"]));
    assert_eq!(v["kind"], "calc.host");
    let hosts = v["samples"].as_array().unwrap();
    let names: Vec<&str> = hosts.iter().map(|h| h["name"].as_str().unwrap()).collect();
    // Every preset a scenario's `costs` may name, each with the figures it was fitted to.
    for p in weft_model::host::presets::all() {
        assert!(names.contains(&p.name), "{} missing from {names:?}", p.name);
    }
    assert_eq!(names.len(), weft_model::host::presets::all().len());
    let indigo = hosts.iter().find(|h| h["name"] == "indigo-r4000").unwrap();
    let from = indigo["fitted"][0]["from"].as_array().unwrap();
    assert!(
        from.contains(&serde_json::json!("gigaswitch.ttcp_without_switch_mbps")),
        "{indigo}"
    );
    // The predictions, with the one the Sandia echo scenario quotes (+39% for 1500 bytes over
    // Ethernet, one hop).
    let p = v["summary"]["predictions"].as_array().unwrap();
    let echo = p
        .iter()
        .find(|p| p["what"] == "1500-byte echo over 10 Mbit/s Ethernet, same hosts")
        .unwrap();
    assert!(
        (echo["miss"].as_f64().unwrap() - 0.388).abs() < 0.0005,
        "{echo}"
    );
    // One preset by name, in a table; an unknown one is a usage error naming the presets.
    let out = weft(&["calc", "host", "sp2-node"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("sp2-node\n"), "{text}");
    assert!(!text.contains("indigo-r4000\n"), "{text}");
    let out = weft(&["calc", "host", "vax"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("sp2-node"));
}

#[test]
fn calc_hol_and_queue_and_mathis() {
    let v = json(&weft(&[
        "calc",
        "hol",
        "--outputs",
        "5",
        "--inputs",
        "1-5",
        "--json",
    ]));
    let rates: Vec<f64> = v["samples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["rate_bps"].as_f64().unwrap() / 1e6)
        .collect();
    assert!((rates[1] - 85.5).abs() < 1e-9 && (rates[3] - 70.11).abs() < 1e-9);
    let q = json(&weft(&[
        "calc", "queue", "--ports", "2", "--load", "0.5", "--json",
    ]));
    assert_eq!(q["samples"][0]["mean_wait_slots"], 0.25);
    let m = json(&weft(&[
        "calc", "mathis", "--rtt", "100ms", "--loss", "0.01", "--json",
    ]));
    let r = m["summary"]["rate_bps"].as_f64().unwrap();
    assert!((r - 1460.0 * 8.0 / (0.1 * (0.02f64 / 3.0).sqrt())).abs() < 1.0);
}

#[test]
fn calc_usage_errors_exit_2() {
    let out = weft(&["calc", "overhead", "--tech", "token-ring"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("oc3c"));
    let out = weft(&["calc", "queue", "--load", "1.5"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn run_model_engine_against_the_figures() {
    let v = json(&weft(&[
        "run",
        "scenarios/gigaswitch-contention.toml",
        "--json",
    ]));
    assert_eq!(v["engine"], "model");
    assert_eq!(v["samples"].as_array().unwrap().len(), 5);
    let expect = v["summary"]["expect"].as_array().unwrap();
    // The formula reproduces Table 9's model column within its printed precision.
    for row in expect[0]["rows"].as_array().unwrap() {
        assert_eq!(row["within"], true, "{row}");
    }
    let out = weft(&["run", "scenarios/hol-finite-n.toml", "--strict"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn run_model_and_sim_side_by_side() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("oq.toml");
    std::fs::write(
        &path,
        "name = \"oq\"\n[[switch]]\nname = \"sw\"\nfabric = \"output-queued\"\nports = 4\n\
         [[workload]]\nkind = \"bernoulli\"\nload = [0.5, 0.8]\nslots = 50000\n",
    )
    .unwrap();
    let out = weft(&[
        "run",
        path.to_str().unwrap(),
        "--engine",
        "model,sim",
        "--json",
    ]);
    let v = json(&out);
    let docs = v.as_array().expect("one document per engine");
    assert_eq!(docs.len(), 2);
    assert_eq!(docs[0]["engine"], "model");
    assert_eq!(docs[1]["engine"], "sim");
    let (model_doc, sim_doc) = (&docs[0], &docs[1]);
    for i in 0..2 {
        let model = model_doc["samples"][i]["mean_wait_slots"].as_f64().unwrap();
        let sim = sim_doc["samples"][i]["mean_wait_slots"].as_f64().unwrap();
        assert!(
            (sim - model).abs() / model < 0.1,
            "load point {i}: sim {sim} model {model}"
        );
    }
    let out = weft(&["run", path.to_str().unwrap(), "--engine", "abacus"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn run_bad_scenario_names_file_line_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.toml");
    std::fs::write(
        &path,
        "name = \"x\"\n[[workload]]\nkind = \"bernoulli\"\nports = 4\nload = \"lots\"\n",
    )
    .unwrap();
    let out = weft(&["run", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.toml:5:"), "{err}");
    assert!(err.contains("workload[0].load"), "{err}");
}

#[test]
fn figures_are_built_in_so_run_and_calc_work_from_any_directory() {
    let elsewhere = tempfile::tempdir().unwrap();
    let scenario = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios/gigaswitch-contention.toml")
        .canonicalize()
        .unwrap();
    let run_in = |dir: &std::path::Path, args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_weft"))
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap()
    };
    let scenario = scenario.to_str().unwrap();
    let v = json(&run_in(elsewhere.path(), &["run", scenario, "--json"]));
    let rows = v["summary"]["expect"][0]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 5);
    assert!(rows.iter().all(|r| r["paper"].is_number()), "{rows:?}");
    let v = json(&run_in(
        elsewhere.path(),
        &[
            "calc", "window", "--rtt", "17ms", "--rate", "26Mbps", "--ebn", "--json",
        ],
    ));
    assert_eq!(v["summary"]["ebn_runs"].as_array().unwrap().len(), 5);
    // --figures still reads the file named, and says so when it cannot.
    let out = run_in(
        elsewhere.path(),
        &["run", scenario, "--figures", "no-such-figures.toml"],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("cannot read the figures file no-such-figures.toml"),
        "{out:?}"
    );
}

/// Two hosts on a switch: a ping-pong the simulator runs, and one by way of PVM daemons, which it
/// does not.
const DAEMON_AND_DIRECT: &str = r#"
name = "daemon-and-direct"
[[host]]
name = "a"
[[host]]
name = "b"
[[switch]]
name = "s"
[[link]]
ends = ["a", "s"]
tech = "ethernet10"
[[link]]
ends = ["b", "s"]
tech = "ethernet10"
[[workload]]
kind = "mp"
ranks = ["a", "b"]
pattern = "pingpong"
size = 64
iterations = 5
[[workload]]
kind = "mp"
ranks = ["a", "b"]
pattern = "pingpong"
size = 64
iterations = 5
route = "daemon"
"#;

#[test]
fn a_workload_an_engine_cannot_run_is_its_own_row_and_the_exit_status_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("daemon-and-direct.toml");
    std::fs::write(&path, DAEMON_AND_DIRECT).unwrap();
    let file = path.to_str().unwrap();
    let out = weft(&["run", file, "--engine", "sim", "--json"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("1 workload point(s) not run")
            && stderr.contains("sim w1 (pingpong) (not on sim"),
        "{stderr}"
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let samples = v["samples"].as_array().unwrap();
    assert_eq!(samples.len(), 2);
    assert!(samples[0].get("skipped").is_none(), "{}", samples[0]);
    assert!(
        samples[0]["mean_us"].as_f64().unwrap() > 0.0,
        "the direct route ran"
    );
    let why = samples[1]["skipped"].as_str().unwrap();
    assert!(why.starts_with("not on sim: "), "{why}");
    // The table gives the skipped workload its row.
    let out = weft(&["run", file, "--engine", "sim"]);
    assert_eq!(out.status.code(), Some(3));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("w1 (pingpong)      skipped: not on sim: "),
        "{text}"
    );
}
