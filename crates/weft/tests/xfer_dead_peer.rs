//! A peer that vanishes mid-transfer is found fast: when `weft recv` is killed (SIGKILL), the
//! sender fails within max(3 x RTO, 2 s) with an error that says so, nothing appears under the
//! final name, and `--resume` completes from the part file; and the same the other way round
//! (the sender killed: the receiver gives up as fast and keeps the part file).

#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;

use common::{Recv, WEFT};

/// The bound on loopback, where 3 x RTO is far below the 2 s floor, plus slack for a loaded
/// machine (process exit, the receiver's clean-up).
const BOUND: Duration = Duration::from_millis(2000 + 1500);

/// A 24 MiB file paced at 60 Mbit/s: over three seconds, so the kill lands mid-transfer.
const SLOW: [&str; 6] = [
    "--buffer-size",
    "1MiB",
    "--packet-size",
    "8000",
    "--rate",
    "60Mbps",
];

fn data(seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..24 << 20)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn send_cmd(port: u16, file: &Path, extra: &[&str]) -> Command {
    let mut c = Command::new(WEFT);
    c.arg("send")
        .arg(file)
        .arg("127.0.0.1")
        .args(["--port", &port.to_string(), "--no-progress"])
        .args(extra);
    c
}

/// Waits until the receiver's journal lists at least `n` buffers (so data is on disk).
fn wait_for_journal(dir: &Path, n: usize) {
    let j = dir.join(".big.bin.weft-journal");
    let start = Instant::now();
    while !std::fs::read_to_string(&j).is_ok_and(|t| t.lines().count() > n) {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "no progress in the journal"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Resumes the transfer into `dir` with a fresh receiver and checks the file arrived whole.
fn resume_completes(dir: &Path, file: &Path, want: &[u8]) {
    let recv = Recv::start(dir, &[]);
    let out = send_cmd(
        recv.port,
        file,
        &[&SLOW[..4], &["--resume", "--json"]].concat(),
    )
    .output()
    .unwrap();
    assert!(
        out.status.success(),
        "resume: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        recv.log()
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        doc["samples"][0]["resumed_buffers"].as_u64().unwrap() >= 3,
        "{doc}"
    );
    assert_eq!(std::fs::read(dir.join("big.bin")).unwrap(), want);
}

#[test]
fn a_killed_receiver_fails_the_sender_fast_and_clearly_and_resume_completes() {
    let src = tempfile::tempdir().unwrap();
    let dst = tempfile::tempdir().unwrap();
    let want = data(21);
    let file = src.path().join("big.bin");
    std::fs::write(&file, &want).unwrap();
    let mut recv = Recv::start(dst.path(), &[]);
    let sender = send_cmd(recv.port, &file, &SLOW)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_journal(dst.path(), 3);
    recv.child.kill().unwrap(); // SIGKILL: no goodbye
    let killed = Instant::now();
    recv.child.wait().unwrap();
    let out = sender.wait_with_output().unwrap();
    let took = killed.elapsed();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "the sender must fail: {err}");
    assert!(
        took < BOUND,
        "the sender took {took:?} to notice (bound {BOUND:?}): {err}"
    );
    assert!(
        err.contains("receiver closed the control connection mid-transfer")
            && err.contains("--resume"),
        "the error names the cause: {err}"
    );
    assert!(
        !dst.path().join("big.bin").exists(),
        "nothing under the final name"
    );
    assert!(
        dst.path().join(".big.bin.weft-part").exists(),
        "the part file is kept"
    );
    resume_completes(dst.path(), &file, &want);
}

#[test]
fn a_killed_sender_ends_the_receivers_session_fast_and_keeps_the_part_file() {
    let src = tempfile::tempdir().unwrap();
    let dst = tempfile::tempdir().unwrap();
    let want = data(22);
    let file = src.path().join("big.bin");
    std::fs::write(&file, &want).unwrap();
    // One session: the receiver exits when it gives up on this sender.
    let mut recv = Recv::start(dst.path(), &["--sessions", "1"]);
    let mut sender = send_cmd(recv.port, &file, &SLOW)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for_journal(dst.path(), 3);
    sender.kill().unwrap();
    let killed = Instant::now();
    sender.wait().unwrap();
    loop {
        if recv.child.try_wait().unwrap().is_some() {
            break;
        }
        assert!(
            killed.elapsed() < BOUND,
            "the receiver still waits {BOUND:?} after the sender died: {}",
            recv.log()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    // Its log thread may still be catching up with the last lines.
    std::thread::sleep(Duration::from_millis(100));
    let log = recv.log();
    assert!(
        log.contains("the sender went away mid-transfer") && log.contains("--resume"),
        "the receiver says why: {log}"
    );
    assert!(
        !dst.path().join("big.bin").exists(),
        "nothing under the final name"
    );
    assert!(
        dst.path().join(".big.bin.weft-part").exists(),
        "the part file is kept"
    );
    resume_completes(dst.path(), &file, &want);
}
