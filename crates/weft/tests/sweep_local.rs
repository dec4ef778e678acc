//! `weft sweep` on this machine: the 200-run grid of plans/hol-grid.toml killed half-way and
//! resumed without running a finished run twice, then tabulated and plotted; SIGINT; failing runs;
//! a scenario plan; plan errors.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions

mod common;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{succeed, weft};
use serde_json::Value;

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(rel)
}

/// The records of a results.jsonl: complete lines only (a torn last line is left out).
fn records(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.split_inclusive('\n')
        .filter(|l| l.ends_with('\n'))
        .map(|l| serde_json::from_str(l).expect("a complete line is a record"))
        .collect()
}

fn ids(recs: &[Value]) -> Vec<String> {
    recs.iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect()
}

/// The ids of every run of a plan, from `weft sweep --dry-run`.
fn plan_ids(plan: &Path) -> Vec<String> {
    let out = succeed(weft().args(["sweep", "--dry-run"]).arg(plan));
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .collect()
}

/// Starts `weft sweep PLAN --out DIR --quiet --jobs 2` (two at a time whatever the machine, so
/// that it is caught half-way), waits until `at_least` results are recorded, and returns the
/// process, still running.
fn start_and_wait_for(plan: &Path, dir: &Path, at_least: usize) -> std::process::Child {
    let mut child = weft()
        .arg("sweep")
        .arg(plan)
        .arg("--out")
        .arg(dir)
        .args(["--quiet", "--jobs", "2"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let n = records(&dir.join("results.jsonl")).len();
        if n >= at_least {
            return child;
        }
        if let Some(status) = child.try_wait().unwrap() {
            panic!(
                "the sweep ended ({status}) with only {n} results before it could be interrupted"
            );
        }
        assert!(Instant::now() < deadline, "only {n} results after 120 s");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn grid_of_200_killed_and_resumed_runs_each_run_once() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("hol");
    let plan = repo("plans/hol-grid.toml");
    let expected = plan_ids(&plan);
    assert_eq!(expected.len(), 200);

    // Kill the sweep (SIGKILL: no chance to tidy up) once some runs are in.
    let mut child = start_and_wait_for(&plan, &dir, 30);
    child.kill().unwrap();
    child.wait().unwrap();
    let before = records(&dir.join("results.jsonl"));
    let raw_before = std::fs::read(dir.join("results.jsonl")).unwrap();
    assert!(
        before.len() >= 30 && before.len() < 200,
        "{} results at the kill",
        before.len()
    );

    // Resume: only the others run.
    let out = weft()
        .arg("sweep")
        .arg(&plan)
        .arg("--out")
        .arg(&dir)
        .arg("--quiet")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "{} already done, {} to run",
            before.len(),
            200 - before.len()
        )),
        "{stderr}"
    );

    let after = records(&dir.join("results.jsonl"));
    let all = ids(&after);
    let unique: HashSet<&String> = all.iter().collect();
    assert_eq!(
        all.len(),
        200,
        "a finished run was run again, or one is missing"
    );
    assert_eq!(unique.len(), 200);
    assert_eq!(unique, expected.iter().collect::<HashSet<_>>());
    assert!(
        after
            .iter()
            .all(|r| r["status"] == "ok" && r["result"]["kind"] == "sim.hol")
    );
    // What was there before the kill is kept as it was (a torn last line aside).
    let raw_after = std::fs::read(dir.join("results.jsonl")).unwrap();
    let complete = raw_before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    assert_eq!(raw_after[..complete], raw_before[..complete]);
    // Each record is its run: the seed and parameters went to the simulator.
    for r in &after {
        assert_eq!(r["result"]["params"]["seed"], r["seed"]);
        let contention = match r["params"]["contention"].as_str() {
            Some("rr") => "round-robin",
            other => other.unwrap(),
        };
        assert_eq!(r["result"]["params"]["contention"], contention);
        assert_eq!(r["result"]["params"]["ports"][0], r["params"]["ports"]);
    }

    // The table: one row per run, parameters and metrics as columns.
    let csv = std::fs::read_to_string(dir.join("results.csv")).unwrap();
    let header = csv.lines().next().unwrap();
    assert!(
        header.starts_with("id,seed,status,ports,contention,slots,"),
        "{header}"
    );
    assert!(header.contains(",throughput,"), "{header}");
    assert_eq!(csv.lines().count(), 201);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("200 ok, 0 failed, 0 pending"), "{stdout}");

    // The plot: throughput against ports, a line per contention, bands across the seeds.
    let out = weft().arg("plot").arg(&dir).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let svg = std::fs::read_to_string(dir.join("results.svg")).unwrap();
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let count = |class: &str| {
        doc.descendants()
            .filter(|n| n.attribute("class") == Some(class))
            .count()
    };
    assert_eq!(count("point"), 40);
    assert_eq!(count("band"), 2);
    let legend: Vec<&str> = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("legend-entry"))
        .filter_map(|n| n.text())
        .collect();
    assert_eq!(legend, ["contention=random", "contention=rr"]);
    assert!(svg.contains("throughput against ports"));
}

fn write_plan(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn sigint_stops_starting_runs_and_keeps_what_finished() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("out");
    let plan = write_plan(
        tmp.path(),
        "p.toml",
        "command = [\"sim\", \"hol\"]\nseeds = { from = 1, to = 20 }\n[grid]\nports = [8, 16]\nslots = 100000\n",
    );
    let child = start_and_wait_for(&plan, &dir, 4);
    let kill = Command::new("kill")
        .arg("-INT")
        .arg(child.id().to_string())
        .status()
        .unwrap();
    assert!(kill.success());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let first = records(&dir.join("results.jsonl"));
    assert!(first.len() < 40, "the sweep ran to the end despite SIGINT");
    assert!(
        first.iter().all(|r| r["status"] == "ok"),
        "an interrupted run was recorded as failed"
    );

    succeed(weft().arg("sweep").arg(&plan).arg("--out").arg(&dir));
    let all = ids(&records(&dir.join("results.jsonl")));
    assert_eq!(all.len(), 40);
    assert_eq!(all.iter().collect::<HashSet<_>>().len(), 40);
}

#[test]
fn a_failing_run_is_recorded_and_the_others_go_on() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("out");
    // `--ports 0` is refused by `weft sim hol`.
    let plan = write_plan(
        tmp.path(),
        "p.toml",
        "command = [\"sim\", \"hol\"]\nseeds = [1, 2]\n[grid]\nports = [2, 0, 4]\nslots = 2000\n",
    );
    let run = |extra: &[&str]| {
        weft()
            .arg("sweep")
            .arg(&plan)
            .arg("--out")
            .arg(&dir)
            .args(extra)
            .output()
            .unwrap()
    };
    let out = run(&[]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("2 runs failed"), "{stderr}");
    let recs = records(&dir.join("results.jsonl"));
    assert_eq!(recs.len(), 6);
    let failed: Vec<&Value> = recs.iter().filter(|r| r["status"] == "failed").collect();
    assert_eq!(failed.len(), 2);
    for f in &failed {
        assert_eq!(f["params"]["ports"], 0);
        let e = f["error"].as_str().unwrap();
        assert!(
            e.contains("exit status: 2") && e.contains("port counts must be between 1"),
            "{e}"
        );
    }
    let csv = std::fs::read_to_string(dir.join("results.csv")).unwrap();
    assert_eq!(csv.lines().filter(|l| l.contains(",failed,")).count(), 2);

    // Resuming keeps the failures; --retry-failed runs them again.
    let out = run(&[]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("6 already done, 0 to run"));
    assert_eq!(records(&dir.join("results.jsonl")).len(), 6);
    let out = run(&["--retry-failed"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("4 already done, 2 to run"));
    assert_eq!(records(&dir.join("results.jsonl")).len(), 8);
}

#[test]
fn scenario_plan_overrides_the_scenario_per_run() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ebn");
    succeed(
        weft()
            .arg("sweep")
            .arg(repo("plans/ebn-window.toml"))
            .arg("--out")
            .arg(&dir),
    );
    let recs = records(&dir.join("results.jsonl"));
    assert_eq!(recs.len(), 15);
    for r in &recs {
        // The window the model used is the run's, in whole segments (the BSD sender's Nagle),
        // and window / (RTT and the delayed ACK's two segment times) is the rate it allows.
        let param = r["params"]["workload.0.window"].as_f64().unwrap();
        let s = &r["result"]["samples"][0];
        let window = s["window_sent_bytes"].as_f64().unwrap();
        let mss = s["mtu_bytes"].as_f64().unwrap() - 40.0;
        assert!(
            window <= param && window > param - mss,
            "{window} of {param}: {r}"
        );
        let rtt_s = s["ack_round_ms"].as_f64().unwrap() / 1e3;
        assert!(rtt_s > s["rtt_ms"].as_f64().unwrap() / 1e3, "{r}");
        let allowed_mbps = window * 8.0 / rtt_s / 1e6;
        let got = s["window_mbps"].as_f64().unwrap();
        assert!(
            (got - allowed_mbps).abs() / allowed_mbps < 1e-4,
            "{got} vs {allowed_mbps}: {r}"
        );
        assert_eq!(r["seed"], Value::Null);
    }
    // A bigger window never lowers the model's goodput at the same delay.
    let goodput = |w: i64, d: &str| {
        recs.iter()
            .find(|r| r["params"]["workload.0.window"] == w && r["params"]["link.1.delay"] == d)
            .and_then(|r| r["result"]["samples"][0]["goodput_mbps"].as_f64())
            .unwrap()
    };
    assert!(goodput(16384, "20ms") < goodput(65536, "20ms"));
    assert!(goodput(65536, "20ms") <= goodput(262144, "20ms"));
    assert!(goodput(16384, "20ms") < goodput(16384, "4ms"));

    succeed(weft().arg("plot").arg(&dir).args([
        "--y",
        "samples.0.goodput_mbps",
        "--x",
        "workload.0.window",
    ]));
    let svg = std::fs::read_to_string(dir.join("results.svg")).unwrap();
    assert_eq!(svg.matches("class=\"point\"").count(), 15);
}

#[test]
fn bad_plans_are_usage_errors_with_their_place() {
    let tmp = tempfile::tempdir().unwrap();
    for (text, want) in [
        (
            "command = [\"sim\", \"hol\"]\n[grid]\nportz = [2]\n",
            "p.toml:3:1: grid.portz: the command has no flag --portz",
        ),
        (
            "command = [\"sim\", \"hal\"]\n",
            "p.toml:1:11: command: `weft sim` has no \"hal\"",
        ),
        (
            "command = [\"calc\", \"window\"]\nseeds = [1]\n",
            "takes no --seed",
        ),
        (
            "scenario = \"../../scenarios/ebn-vp26.toml\"\n[grid]\n\"workload.9.window\" = [1]\n",
            "`workload.9.window`: workload has 2 entries",
        ),
    ] {
        let plan = write_plan(tmp.path(), "p.toml", text);
        let out = weft()
            .arg("sweep")
            .arg(&plan)
            .arg("--out")
            .arg(tmp.path().join("o"))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{text}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(want), "{text}: {stderr}");
    }
}
