//! 400 corrupted captures through the `weft trace` commands: every one ends with a result or a
//! clear error (exit 0 or 1), never a panic, a signal or a hang. The library's parsers are
//! fuzzed (fuzz/); this is the whole program, as a user runs it.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions

mod common;

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::weft;
use weft_model::fabric::Rng;
use weft_trace::decode::linktype;
use weft_trace::synth::{L4, PcapWriter, PcapngWriter, ethernet_frame, ipv4_packet};

const CAPTURES: usize = 400;

/// Frames of every kind the decoders look into: UDP, TCP with options, ICMP, IP fragments.
fn frames() -> Vec<Vec<u8>> {
    let (a, b) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2));
    let mut v = Vec::new();
    for i in 0..20u16 {
        v.push(ethernet_frame(&ipv4_packet(
            a,
            b,
            i,
            L4::Udp(5000 + i, 53),
            &[7; 60],
        )));
        v.push(ethernet_frame(&ipv4_packet(b, a, i, L4::Icmp, &[1; 30])));
        let mut frag = ipv4_packet(a, b, 900 + i, L4::Udp(6000, 2049), &[2; 100]);
        frag[6] = 0x20; // more fragments
        v.push(ethernet_frame(&frag));
    }
    v
}

fn base_pcap() -> Vec<u8> {
    let mut w = PcapWriter::new(Vec::new(), linktype::ETHERNET, true, false).unwrap();
    for (i, f) in frames().iter().enumerate() {
        w.write(1_000_000 * i as u64, f.len() as u32, f).unwrap();
    }
    w.into_inner()
}

fn base_pcapng() -> Vec<u8> {
    let mut w = PcapngWriter::new(Vec::new(), false).unwrap();
    let i = w.add_interface(linktype::ETHERNET, 9).unwrap();
    for (k, f) in frames().iter().enumerate() {
        w.write_epb(i, 1000 * k as u64, f.len() as u32, f).unwrap();
    }
    w.into_inner()
}

/// A copy of `base` with a few bytes changed, and sometimes cut short or with a block repeated.
fn mutate(base: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut b = base.to_vec();
    let below = |rng: &mut Rng, n: usize| rng.below(n.max(1) as u64) as usize;
    for _ in 0..1 + below(rng, 12) {
        let at = below(rng, b.len());
        b[at] = rng.next_u64() as u8;
    }
    match below(rng, 4) {
        0 => b.truncate(1 + below(rng, b.len())),
        1 => {
            let at = below(rng, b.len());
            let chunk = b[at..(at + 64).min(b.len())].to_vec();
            b.splice(at..at, chunk);
        }
        _ => {}
    }
    b
}

/// Runs `weft ARGS`, killing it after 20 s; returns its exit code (`None`: killed by a signal)
/// and its stderr.
fn run_bounded(args: &[&str]) -> (Option<i32>, String) {
    let mut child = weft()
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            let out = child.wait_with_output().unwrap();
            return (
                out.status.code(),
                String::from_utf8_lossy(&out.stderr).into_owned(),
            );
        }
        if t.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("weft {args:?} hung");
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn check(args: &[&str]) {
    let (code, err) = run_bounded(args);
    assert!(
        matches!(code, Some(0 | 1)) && !err.contains("panicked"),
        "weft {args:?}: exit {code:?}\n{err}"
    );
}

fn write_all(dir: &Path) -> Vec<PathBuf> {
    let mut rng = Rng::new(0x5eed_cafe_f00d_d00d);
    let bases = [base_pcap(), base_pcapng()];
    (0..CAPTURES)
        .map(|i| {
            let p = dir.join(format!("c{i}.cap"));
            std::fs::write(&p, mutate(&bases[i % 2], &mut rng)).unwrap();
            p
        })
        .collect()
}

#[test]
fn four_hundred_corrupted_captures_end_in_a_result_or_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let files = write_all(dir.path());
    // Two workers: each capture through one analysis, in turn (flows, util, latency).
    std::thread::scope(|s| {
        for half in files.chunks(CAPTURES / 2) {
            s.spawn(move || {
                for (i, f) in half.iter().enumerate() {
                    let f = f.to_str().unwrap();
                    match i % 3 {
                        0 => check(&["trace", "flows", f, "--json"]),
                        1 => check(&["trace", "util", f, "--link-rate", "1Gbps", "--bin", "1s"]),
                        _ => {
                            let other = half[(i + 1) % half.len()].to_str().unwrap();
                            check(&["trace", "latency", f, other]);
                        }
                    }
                }
            });
        }
    });
}
