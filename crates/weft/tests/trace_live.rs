//! `weft trace live` on `lo`: a bounded run with packet capture, and an interrupted run that
//! keeps every bin it wrote.
#![allow(clippy::unwrap_used)] // Tests: a failed unwrap is a failed test.

use std::io::{BufRead, BufReader, Read};
use std::net::UdpSocket;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

mod common;
use common::weft;

fn lines_of(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

#[test]
fn live_sampling_of_lo_with_duration_and_capture() {
    let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut child = weft()
        .args([
            "trace",
            "live",
            "lo",
            "--bin",
            "200ms",
            "--duration",
            "1s",
            "--link-rate",
            "1Gbps",
            "--smooth",
            "600ms",
            "--capture",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Send only once the first bin is out: packets sent before the sampler read its baseline
    // counters would not be counted.
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    out.read_line(&mut first).unwrap();
    let t0 = Instant::now();
    let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut sent = 0u64;
    while !first.is_empty() && t0.elapsed() < Duration::from_millis(500) {
        tx.send_to(&[7u8; 1000], rx.local_addr().unwrap()).unwrap();
        sent += 1000;
        std::thread::sleep(Duration::from_millis(2));
    }
    let mut rest = String::new();
    out.read_to_string(&mut rest).unwrap();
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    if !o.status.success() && err.contains("ermission") {
        weft_testutil::skip(&format!("AF_PACKET needs CAP_NET_RAW: {err}"));
        return;
    }
    assert!(o.status.success(), "{err}");
    assert!(sent > 0, "no bin before the end of the run");
    let lines = lines_of(&(first + &rest));
    assert_eq!(lines.len(), 6, "{lines:?}");
    let bins = &lines[..5];
    let bytes: u64 = bins.iter().map(|b| b["bytes"].as_u64().unwrap()).sum();
    // lo counts every packet as sent and as received.
    assert!(bytes >= 2 * sent, "{bytes} < 2 x {sent}");
    for (i, b) in bins.iter().enumerate() {
        assert_eq!(b["type"], "bin");
        assert_eq!(b["bin"], i);
    }
    let cap: u64 = bins
        .iter()
        .map(|b| b["capture_bytes"].as_u64().unwrap())
        .sum();
    assert!(cap >= sent, "captured {cap} < sent {sent}");
    // Captured once per packet but counted twice (sent, received) by the counters of lo.
    assert!(
        cap * 4 < bytes * 3,
        "captured {cap} vs counters {bytes}: loopback counted twice?"
    );
    assert_eq!(lines[5]["type"], "summary");
    assert_eq!(lines[5]["interrupted"], false);
}

#[test]
fn live_run_interrupted_keeps_its_bins() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("live.jsonl");
    let child = weft()
        .args([
            "trace",
            "live",
            "lo",
            "--bin",
            "100ms",
            "--link-rate",
            "1Gbps",
            "-o",
            f.to_str().unwrap(),
        ])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(750));
    // Lines are flushed as they are written: some are there before the interrupt.
    let before = std::fs::read_to_string(&f)
        .unwrap_or_default()
        .lines()
        .count();
    assert!(before >= 3, "only {before} lines after 750 ms");
    let _ = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let lines = lines_of(&std::fs::read_to_string(&f).unwrap());
    let last = lines.last().unwrap();
    assert_eq!(last["type"], "summary");
    assert_eq!(last["interrupted"], true);
    assert!(lines.len() > before);
}
