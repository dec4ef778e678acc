//! `weft sweep --slurm` against a real Slurm: `scripts/slurm-local` brings up munge, slurmctld and
//! slurmd on this machine, the 200-run plan of plans/hol-grid.toml is submitted as a job array,
//! followed with --status, waited for with --wait, and every result must be present and the same,
//! byte for byte, as the same plan run locally. Needs root and Debian's slurm-wlm and munge
//! (`.ci/apt-packages`); skipped with the reason otherwise, except under WEFT_TEST_STRICT=1.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::weft;
use serde_json::Value;

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(rel)
}

/// Prints why the test does not run, or fails under WEFT_TEST_STRICT=1.
fn skip(reason: &str) {
    if std::env::var("WEFT_TEST_STRICT").is_ok_and(|v| v == "1") {
        panic!("WEFT_TEST_STRICT=1 and the test cannot run: {reason}");
    }
    println!("skipped: {reason}");
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.starts_with(b"0\n"))
}

fn have(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn slurm_local(arg: &str) -> Output {
    Command::new(repo("scripts/slurm-local"))
        .arg(arg)
        .output()
        .unwrap()
}

/// Stops the local Slurm when dropped, if this test started it.
struct SlurmUp {
    started_here: bool,
}

impl Drop for SlurmUp {
    fn drop(&mut self) {
        if self.started_here {
            let out = slurm_local("stop");
            eprintln!("{}", String::from_utf8_lossy(&out.stderr));
        }
    }
}

fn results(dir: &Path) -> HashMap<String, Value> {
    std::fs::read_to_string(dir.join("results.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            let r: Value = serde_json::from_str(l).unwrap();
            (r["id"].as_str().unwrap().to_string(), r)
        })
        .collect()
}

fn logs(dir: &Path) -> String {
    let mut out = String::new();
    for e in std::fs::read_dir(dir.join("slurm-1"))
        .into_iter()
        .flatten()
        .flatten()
    {
        if e.path().extension().is_some_and(|x| x == "log") {
            out.push_str(&format!(
                "{}:\n{}\n",
                e.path().display(),
                std::fs::read_to_string(e.path()).unwrap_or_default()
            ));
        }
    }
    out
}

#[test]
fn plan_through_local_slurm_gives_the_local_results() {
    if !is_root() {
        return skip("needs root: scripts/slurm-local starts slurmctld, slurmd and munged");
    }
    if !(have("slurmctld") && have("slurmd") && have("munged") && have("sbatch")) {
        return skip("slurm-wlm and munge are not installed (apt-get install slurm-wlm munge)");
    }
    let was_up =
        String::from_utf8_lossy(&slurm_local("status").stdout).contains("slurmctld: running");
    let _slurm = SlurmUp {
        started_here: !was_up,
    };
    let up = slurm_local("start");
    assert!(
        up.status.success(),
        "scripts/slurm-local: {}",
        String::from_utf8_lossy(&up.stderr)
    );

    let tmp = tempfile::tempdir().unwrap();
    let plan = repo("plans/hol-grid.toml");
    let here = tmp.path().join("local");
    let out = weft()
        .arg("sweep")
        .arg(&plan)
        .arg("--out")
        .arg(&here)
        .arg("--quiet")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // Submit in packs of 40 runs: 5 array tasks.
    let cluster = tmp.path().join("slurm");
    let out = weft()
        .arg("sweep")
        .arg(&plan)
        .arg("--out")
        .arg(&cluster)
        .args(["--slurm", "--batch", "40", "--time", "5", "--mem", "200M"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("5 tasks of up to 40 runs, 200 runs"),
        "{stderr}"
    );
    let status = weft()
        .args(["sweep", "--status", "--out"])
        .arg(&cluster)
        .output()
        .unwrap();
    let status = String::from_utf8_lossy(&status.stdout);
    assert!(
        status.contains("200 runs of weft sim hol") && status.contains("slurm-1: array job"),
        "{status}"
    );

    let mut waiting = weft()
        .args(["sweep", "--wait", "--out"])
        .arg(&cluster)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(180);
    while waiting.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = waiting.kill();
            let _ = Command::new("scancel").arg("--name=weft-sweep").status();
            panic!("the array job did not finish in 180 s:\n{}", logs(&cluster));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let out = waiting.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        logs(&cluster)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("200 ok, 0 failed, 0 pending"));

    // Every task wrote its own file; together they hold every run once.
    let task_files: Vec<_> = (0..5)
        .map(|k| cluster.join(format!("slurm-1/task-{k}.jsonl")))
        .collect();
    let lines: usize = task_files
        .iter()
        .map(|f| std::fs::read_to_string(f).unwrap().lines().count())
        .sum();
    assert_eq!(lines, 200);

    let local = results(&here);
    let slurm = results(&cluster);
    assert_eq!(local.len(), 200);
    assert_eq!(slurm.len(), 200);
    for (id, l) in &local {
        let s = slurm
            .get(id)
            .unwrap_or_else(|| panic!("run {id} has no result from Slurm"));
        assert_eq!(s["status"], "ok");
        assert_eq!(
            serde_json::to_string(&s["result"]).unwrap(),
            serde_json::to_string(&l["result"]).unwrap(),
            "run {id} differs between Slurm and here"
        );
    }
}
