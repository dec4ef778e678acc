//! A peer that stays connected but makes no progress (SIGSTOP: a frozen VM, a process stuck in
//! the kernel; its kernel still acknowledges the control connection, so TCP's user time-out and
//! keepalives never fire) is noticed within max(10 round trips, 5 s) by the end that waits on
//! it, which fails with exit code 1 saying so; the part file and journal stay for `--resume`,
//! nothing appears under the final name. A peer that is slow but progressing (a receiver
//! stopped and continued over and over, each stop shorter than the bound) is never cut off.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

mod common;

use common::{Recv, SLOW, send_cmd};

/// The default bound on loopback (10 round trips are far below 5 s).
const DEFAULT_BOUND: Duration = Duration::from_secs(5);

/// Slack for a loaded machine: waking, exiting, the receiver's clean-up.
const SLACK: Duration = Duration::from_millis(2500);

fn signal(pid: u32, sig: &str) {
    let _ = Command::new("kill").args([sig, &pid.to_string()]).status();
}

/// Continues process `pid` when dropped (a stopped child must not outlive its test, nor be
/// killed while stopped and left a zombie by a test that failed).
struct ContOnDrop(u32);

impl Drop for ContOnDrop {
    fn drop(&mut self) {
        signal(self.0, "-CONT");
    }
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

fn assert_part_kept(dir: &Path) {
    assert!(
        !dir.join("big.bin").exists(),
        "nothing under the final name"
    );
    assert!(
        dir.join(".big.bin.weft-part").exists() && dir.join(".big.bin.weft-journal").exists(),
        "the part file and journal are kept"
    );
}

#[test]
fn a_stopped_receiver_fails_the_sender_within_the_bound_and_resume_completes() {
    let src = tempfile::tempdir().unwrap();
    let dst = tempfile::tempdir().unwrap();
    let want = common::pseudo_random(24 << 20, 31);
    let file = src.path().join("big.bin");
    std::fs::write(&file, &want).unwrap();
    let recv = Recv::start(dst.path(), &[]);
    let sender = send_cmd(recv.port, &file, &SLOW)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_journal(dst.path(), 3);
    signal(recv.child.id(), "-STOP");
    let stopped = Instant::now();
    let cont = ContOnDrop(recv.child.id());
    let out = sender.wait_with_output().unwrap();
    let took = stopped.elapsed();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "the sender fails: {err}");
    assert!(
        took < DEFAULT_BOUND + SLACK,
        "the sender took {took:?} to notice the stopped receiver (bound {DEFAULT_BOUND:?}): {err}"
    );
    assert!(
        took > DEFAULT_BOUND - Duration::from_millis(1000),
        "the sender gave up after {took:?}, well before the bound {DEFAULT_BOUND:?}: {err}"
    );
    assert!(
        err.contains("the receiver made no progress")
            && err.contains("5000 ms")
            && err.contains("--resume"),
        "the error says what happened: {err}"
    );
    assert_part_kept(dst.path());
    // Continued, the receiver lets go of the dead session at once: the resume completes.
    drop(cont);
    common::resume_send(&recv, &file);
    assert_eq!(std::fs::read(dst.path().join("big.bin")).unwrap(), want);
}

#[test]
fn a_stopped_sender_ends_the_receivers_session_within_the_bound() {
    let src = tempfile::tempdir().unwrap();
    let dst = tempfile::tempdir().unwrap();
    let want = common::pseudo_random(24 << 20, 32);
    let file = src.path().join("big.bin");
    std::fs::write(&file, &want).unwrap();
    // One session, a 2 s bound (the flag): the receiver exits when it gives up on this sender.
    let mut recv = Recv::start(dst.path(), &["--sessions", "1", "--stall-timeout", "2s"]);
    let mut sender = send_cmd(recv.port, &file, &SLOW)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for_journal(dst.path(), 3);
    signal(sender.id(), "-STOP");
    let stopped = Instant::now();
    let _cont = ContOnDrop(sender.id());
    let bound = Duration::from_secs(2);
    let status = loop {
        if let Some(st) = recv.child.try_wait().unwrap() {
            break st;
        }
        assert!(
            stopped.elapsed() < bound + SLACK,
            "the receiver still waits {:?} after the sender stopped: {}",
            bound + SLACK,
            recv.log()
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(
        stopped.elapsed() > bound - Duration::from_millis(500),
        "the receiver gave up after {:?}, before the bound",
        stopped.elapsed()
    );
    assert_eq!(status.code(), Some(1), "{}", recv.log());
    std::thread::sleep(Duration::from_millis(100));
    let log = recv.log();
    assert!(
        log.contains("the sender made no progress")
            && log.contains("2000 ms")
            && log.contains("--resume"),
        "the receiver says why: {log}"
    );
    assert_part_kept(dst.path());
    signal(sender.id(), "-CONT");
    let _ = sender.kill();
    let _ = sender.wait();
}

#[test]
fn a_receiver_throttled_to_a_crawl_is_never_cut_off() {
    let src = tempfile::tempdir().unwrap();
    let dst = tempfile::tempdir().unwrap();
    let want = common::pseudo_random(6 << 20, 33);
    let file = src.path().join("big.bin");
    std::fs::write(&file, &want).unwrap();
    let recv = Recv::start(dst.path(), &[]);
    let pid = recv.child.id();
    let _cont = ContOnDrop(pid);
    // Stopped 1.2 s of every 1.4 s: the transfer crawls for many times the 2 s bound, and no
    // stop lasts as long as the bound.
    let stop = Arc::new(AtomicBool::new(false));
    let s2 = stop.clone();
    let throttle = std::thread::spawn(move || {
        while !s2.load(Ordering::Relaxed) {
            signal(pid, "-STOP");
            std::thread::sleep(Duration::from_millis(1200));
            signal(pid, "-CONT");
            std::thread::sleep(Duration::from_millis(200));
        }
    });
    let start = Instant::now();
    let out = send_cmd(
        recv.port,
        &file,
        &[
            "--buffer-size",
            "256KiB",
            "--packet-size",
            "8000",
            "--rate",
            "10Mbps",
            "--stall-timeout",
            "2s",
            "--json",
        ],
    )
    .output()
    .unwrap();
    let took = start.elapsed();
    stop.store(true, Ordering::Relaxed);
    throttle.join().unwrap();
    signal(pid, "-CONT");
    assert!(
        out.status.success(),
        "the throttled transfer was cut off after {took:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        took > Duration::from_secs(4),
        "the transfer took {took:?}: not the crawl this test needs"
    );
    assert_eq!(std::fs::read(dst.path().join("big.bin")).unwrap(), want);
}
