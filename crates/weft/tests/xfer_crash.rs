//! Crash anywhere: `kill -9` of `weft send` or `weft recv` at random instants of a transfer
//! (picked from a seed), each followed at once by `weft send --resume` (after restarting
//! `weft recv` where it was the one killed): every file arrives identical, no part file or
//! journal is left once it is complete, and no resume is refused because the dead session
//! still holds the file. `bench/crash.sh` runs the same for 100 instants.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

mod common;

use common::Recv;

/// A 12 MiB file at 100 Mbit/s: about a second, over which the kills are spread.
const ARGS: [&str; 6] = [
    "--buffer-size",
    "1MiB",
    "--packet-size",
    "8000",
    "--rate",
    "100Mbps",
];

/// [`common::send_cmd`] at this file's pace.
fn send_cmd(port: u16, file: &Path, extra: &[&str]) -> Command {
    common::send_cmd(port, file, &[&ARGS[..], extra].concat())
}

fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// xorshift64: the instants, from the seed.
fn next(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

fn explain(out: &Output, recv: &Recv) -> String {
    format!(
        "{}\nreceiver: {}",
        String::from_utf8_lossy(&out.stderr),
        recv.log()
    )
}

#[test]
fn kill_9_at_ten_random_instants_then_resume_at_once_completes_every_time() {
    let src = tempfile::tempdir().unwrap();
    let dst = tempfile::tempdir().unwrap();
    let want = common::pseudo_random(12 << 20, 41);
    let file = src.path().join("big.bin");
    std::fs::write(&file, &want).unwrap();
    let mut recv = Recv::start(dst.path(), &[]);
    let seed: u64 = std::env::var("WEFT_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(6_221_104);
    let rounds: usize = std::env::var("WEFT_CRASH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10);
    let mut x = seed | 1;
    let start = Instant::now();
    for round in 0..rounds {
        let kill_receiver = next(&mut x) % 2 == 0;
        let at = Duration::from_millis(50 + next(&mut x) % 1100);
        let what = format!(
            "round {round} (seed {seed}): kill -9 of the {} after {at:?}",
            if kill_receiver { "receiver" } else { "sender" }
        );
        let _ = std::fs::remove_file(dst.path().join("big.bin"));
        let mut sender = send_cmd(recv.port, &file, &[])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(at);
        let finished = sender.try_wait().unwrap();
        if finished.is_none() {
            if kill_receiver {
                recv.child.kill().unwrap();
                recv.child.wait().unwrap();
                recv = Recv::start(dst.path(), &[]);
                // The sender notices by itself (the control connection closed).
                let st = sender.wait().unwrap();
                assert!(
                    !st.success(),
                    "{what}: the sender succeeded without its receiver"
                );
            } else {
                sender.kill().unwrap();
                sender.wait().unwrap();
            }
        }
        let out = send_cmd(recv.port, &file, &["--resume"]).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        // The kill came after the receiver put the file in place but before the sender heard
        // (or after the sender exited): nothing to resume, and the file is there already.
        let already = err.contains("already exists");
        assert!(
            out.status.success() || already,
            "{what}: the resume failed: {}",
            explain(&out, &recv)
        );
        assert!(
            std::fs::read(dst.path().join("big.bin")).unwrap() == want,
            "{what}: the file differs"
        );
        assert_eq!(
            listing(dst.path()),
            vec!["big.bin"],
            "{what}: something left beside the file"
        );
        assert!(
            start.elapsed() < Duration::from_secs(30 * rounds as u64),
            "{what}: too slow"
        );
    }
}
