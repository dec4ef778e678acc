//! The receive window: the 1995 clamp at 65,535 bytes, window scaling, and a closed window
//! reopened through zero-window probes.

use super::*;
use crate::tcp::State;

/// Bytes `b` received in order between `from` and `to` (ms) of a bulk transfer with a receive
/// buffer of `rcvbuf` bytes, scaling offered by both ends or neither, over a 20 ms round trip.
fn goodput(rcvbuf: u32, scale: Option<u8>) -> f64 {
    let cfg = Config {
        recv_buffer: rcvbuf,
        send_buffer: 1 << 20,
        window_scale: scale,
        ..plain(1460)
    };
    let (ab, ba) = clean(ms(10));
    let mut s = pair(cfg.clone(), cfg, ab, ba);
    let mut app = bulk(1 << 30, false);
    s.run_until(at_ms(1000), &mut app);
    let start = s.b.stats().bytes_delivered;
    s.run_until(at_ms(3000), &mut app);
    (s.b.stats().bytes_delivered - start) as f64 / 2.0
}

#[test]
fn without_scaling_the_window_is_clamped_to_64k() {
    // 44 full segments fit in 65,535 bytes; the 1,295 left over are never sent alone
    // (sender silly-window avoidance), so each 20 ms round trip carries 64,240 bytes.
    let per_rtt = (65_535 / 1460 * 1460) as f64;
    let clamped = goodput(128 * 1024, None);
    assert!(
        (clamped / (per_rtt / 0.020) - 1.0).abs() < 0.01,
        "{clamped} B/s, expected {} B/s",
        per_rtt / 0.020
    );
    // The same buffer with RFC 7323 scaling doubles it: 89 segments of 1460 per round trip.
    let scaled = goodput(128 * 1024, Some(2));
    let per_rtt_scaled = (131_072 / 1460 * 1460) as f64;
    assert!(
        (scaled / (per_rtt_scaled / 0.020) - 1.0).abs() < 0.01,
        "{scaled} B/s, expected {} B/s",
        per_rtt_scaled / 0.020
    );
    // A 35,600-byte buffer (Digital UNIX 3.2c's default, the EBN study's run 0) is below the
    // clamp: 24 segments per round trip.
    let small = goodput(35_600, None);
    assert!(
        (small / (24.0 * 1460.0 / 0.020) - 1.0).abs() < 0.01,
        "{small}"
    );
}

#[test]
fn a_closed_window_is_probed_and_reopened() {
    let cfg = Config {
        recv_buffer: 4000,
        ..plain(1000)
    };
    let (ab, ba) = clean(ms(10));
    let mut s = pair(cfg.clone(), cfg, ab, ba);
    let mut written = 0;
    // b reads nothing for 3 s: the window closes at 4000 bytes.
    s.run_until(at_ms(3000), |s| {
        if written < 20_000 {
            written += s.a.send(20_000 - written);
        }
    });
    assert_eq!(s.b.readable(), 4000);
    assert_eq!(s.a.peer_window(), 0);
    let probes = s.a.stats().window_probes;
    assert!(probes >= 2, "probes while closed: {probes}");
    // b reads once; the window update is sent. Even if it were lost, the probes would find it.
    s.run_until(at_ms(6000), |s| {
        let r = s.b.readable();
        s.b.recv(r as usize);
    });
    assert_eq!(s.b.stats().bytes_read, 20_000);
    assert_eq!(s.a.state(), State::Established);
}
