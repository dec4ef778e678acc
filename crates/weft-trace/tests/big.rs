//! Multi-gigabyte captures generated on the fly (never stored) are read in constant memory and
//! give the exact figures their pattern implies. Both run by default (a few seconds each).
#![allow(clippy::unwrap_used)] // Tests: a failed unwrap is a failed test.

use weft_model::{Duration, Rate};
use weft_trace::CaptureReader;
use weft_trace::synth::SyntheticPcap;
use weft_trace::tech::Framing;
use weft_trace::util::UtilConfig;

fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// `seconds` seconds of 1250-byte frames every 10 µs: 1 Gbit/s, 10% of 10 Gbit/s, in 1 s bins.
fn stream(seconds: u64) {
    let packets = seconds * 100_000;
    let start = 1_700_000_000_000_000_000;
    let g = SyntheticPcap::new(packets, 1250, start, 10_000, 200);
    let total = g.total_len();
    let before = peak_rss_kib();
    let mut r = CaptureReader::new(g).unwrap();
    let cfg = UtilConfig {
        bin: Duration::from_secs(1),
        smooth: Duration::from_secs(5),
        ..UtilConfig::sandia(Rate(10_000_000_000), Framing::Captured)
    };
    let o = weft_trace::analyse_util(&mut r, cfg);
    let after = peak_rss_kib();
    assert!(!o.partial(), "{:?}", o.error);
    assert_eq!(o.bytes_read, total);
    let rep = o.result;
    assert_eq!(rep.packets, packets);
    assert_eq!(rep.bytes, packets * 1250);
    assert_eq!(rep.samples.len() as u64, seconds);
    for s in &rep.samples {
        assert_eq!(s.packets, 100_000);
        assert!((s.util - 0.1).abs() < 1e-12, "{}", s.util);
    }
    assert_eq!(rep.histogram[1], seconds);
    assert_eq!(rep.hosts_seen, 201);
    // Constant memory: the peak resident set grows by far less than the capture.
    if before > 0 {
        let grown_mib = (after.saturating_sub(before)) / 1024;
        assert!(
            grown_mib < 64,
            "peak RSS grew by {grown_mib} MiB reading {} MiB",
            total >> 20
        );
    }
}

#[test]
fn one_gigabyte_streamed_in_constant_memory() {
    stream(8); // 800,000 records, 1.01 GB
}

#[test]
fn four_gigabytes_streamed_in_constant_memory() {
    stream(32); // 3,200,000 records, 4.05 GB
}
