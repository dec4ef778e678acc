//! A capture with a known load per bin must give exactly the utilisation, histogram, threshold
//! fractions, smoothed series and runs that the load implies.
#![allow(clippy::unwrap_used)] // Tests: a failed unwrap is a failed test.

mod common;

use weft_model::{Duration, Rate};
use weft_trace::CaptureReader;
use weft_trace::tech::Framing;
use weft_trace::util::{UtilConfig, UtilReport};

/// Percent load of each 10 s bin on a 10 Mbit/s link.
const LOADS: [u64; 10] = [5, 15, 35, 55, 25, 45, 95, 0, 10, 30];
const T0: u64 = 1_000_000_000 * 1_000_000_000;

/// 1% of a 10 s bin at 10 Mbit/s is 125,000 bytes: 100 wire frames of 1250 bytes.
fn capture(frame_len: usize) -> Vec<u8> {
    let mut recs = Vec::new();
    for (b, &load) in LOADS.iter().enumerate() {
        let n = load * 100;
        for k in 0..n {
            let t = T0 + b as u64 * 10_000_000_000 + k * (10_000_000_000 / n.max(1));
            recs.push((t, common::udp_frame(frame_len, 40_000, 2049)));
        }
    }
    common::pcap_of(&recs)
}

fn analyse(bytes: Vec<u8>, framing: Framing) -> UtilReport {
    let mut r = CaptureReader::new(std::io::Cursor::new(bytes)).unwrap();
    let cfg = UtilConfig {
        smooth: Duration::from_secs(30),
        above: vec![30.0, 50.0],
        ..UtilConfig::sandia(Rate(10_000_000), framing)
    };
    let o = weft_trace::analyse_util(&mut r, cfg);
    assert!(!o.partial());
    o.result
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-12
}

fn check(r: &UtilReport) {
    assert_eq!(r.samples.len(), 10);
    assert_eq!(r.start_ns, T0);
    assert_eq!(r.smooth_bins, 3);
    for (s, &load) in r.samples.iter().zip(&LOADS) {
        assert!(close(s.util, load as f64 / 100.0), "{} vs {load}", s.util);
    }
    assert!(close(r.mean_util, 0.315), "{}", r.mean_util);
    assert!(close(r.peak_util, 0.95));
    // 5,0 | 15,10 | 25 | 35,30 | 45 | 55 | - | - | - | 95
    assert_eq!(r.histogram, [2, 2, 1, 2, 1, 1, 0, 0, 0, 1]);
    assert!(close(r.histogram_frac[3], 0.2));
    let expect_smooth = [
        5.0,
        10.0,
        55.0 / 3.0,
        35.0,
        115.0 / 3.0,
        125.0 / 3.0,
        55.0,
        140.0 / 3.0,
        35.0,
        40.0 / 3.0,
    ];
    for (s, e) in r.samples.iter().zip(expect_smooth) {
        assert!(
            (s.util_smooth * 100.0 - e).abs() < 1e-9,
            "{} vs {e}",
            s.util_smooth
        );
    }
    let a30 = &r.above[0];
    assert_eq!(a30.threshold_pct, 30.0);
    assert!(close(a30.frac_time_raw, 0.4), "30% is not above 30%");
    assert!(close(a30.frac_time_smooth, 0.6));
    assert_eq!(a30.runs_count, 1);
    assert_eq!(a30.longest_runs[0].start_ns, T0 + 30_000_000_000);
    assert_eq!(a30.longest_runs[0].duration_ns, 60_000_000_000);
    let a50 = &r.above[1];
    assert!(close(a50.frac_time_raw, 0.2));
    assert!(close(a50.frac_time_smooth, 0.1));
    assert_eq!(a50.longest_runs[0].duration_ns, 10_000_000_000);
    assert_eq!(r.mix.udp.packets, 31_500);
    assert_eq!(r.mix.nfs.packets, 31_500);
    assert_eq!(r.mix.top_ports[0].port, 2049);
    assert_eq!(r.talkers[0].addr.to_string(), "10.0.0.1");
    assert_eq!(r.talkers[0].tx_packets, 31_500);
}

#[test]
fn exact_figures_from_recorded_lengths() {
    let r = analyse(capture(1250), Framing::Captured);
    check(&r);
    assert_eq!(r.wire_bytes, 31_500 * 1250);
}

#[test]
fn ethernet10_charges_preamble_fcs_and_gap() {
    // 1226 captured bytes + FCS 4 + preamble 8 + gap 12 = 1250 on the wire.
    let t = weft_model::Tech::preset("ethernet10").unwrap();
    assert_eq!(t.rate, Rate(10_000_000));
    let r = analyse(capture(1226), Framing::preset("ethernet10").unwrap());
    check(&r);
    assert_eq!(r.bytes, 31_500 * 1226);
    assert_eq!(r.wire_bytes, 31_500 * 1250);
}

#[test]
fn framing_of_small_frames_and_cells() {
    let f = common::udp_frame(60, 1, 2);
    let info = weft_trace::decode(1, &f);
    let f = |name: &str| Framing::preset(name).unwrap();
    assert_eq!(f("ethernet10").wire_bytes(1, 60, &info), 84);
    assert_eq!(f("ethernet10").wire_bytes(1, 1514, &info), 84);
    let big = common::udp_frame(1514, 1, 2);
    let big_info = weft_trace::decode(1, &big);
    assert_eq!(f("ethernet10").wire_bytes(1, 1514, &big_info), 1538);
    // IP length 46: AAL5 with LLC/SNAP is 46 + 8 + 8 = 62 bytes -> 2 cells.
    assert_eq!(f("oc3c").wire_bytes(1, 60, &info), 106);
    // FDDI: preamble 8, SD/FC/addresses 14, LLC/SNAP 8, FCS/ED/FS 6.
    assert_eq!(f("fddi").wire_bytes(1, 60, &info), 46 + 36);
    assert_eq!(Framing::Captured.wire_bytes(1, 60, &info), 60);
}

#[test]
fn a_wild_timestamp_is_counted_out_of_range_not_allocated() {
    let recs = vec![
        (T0, common::udp_frame(1250, 1, 2)),
        // 100 years later: far beyond the bin limit.
        (
            T0 + 100 * 365 * 86_400 * 1_000_000_000,
            common::udp_frame(1250, 1, 2),
        ),
        // Before the first bin.
        (T0 - 20_000_000_000, common::udp_frame(1250, 1, 2)),
        (T0 + 10_000_000_000, common::udp_frame(1250, 1, 2)),
    ];
    let r = analyse(common::pcap_of(&recs), Framing::Captured);
    assert_eq!(r.out_of_range_packets, 2);
    assert_eq!(r.packets, 2);
    assert_eq!(r.samples.len(), 2);
}
