//! ECN (RFC 3168) and DCTCP (RFC 8257): negotiation, the receiver's echo, the sender's once-per-
//! window reduction, and DCTCP's cut in proportion to the marked fraction.

use super::*;
use crate::tcp::{CcAlgorithm, Flags};
use crate::units::Rate;

fn ecn(cc: CcAlgorithm) -> Config {
    Config {
        mss: 1460,
        window_scale: Some(8),
        send_buffer: 4 << 20,
        recv_buffer: 4 << 20,
        sack: true,
        cc,
        ecn: true,
        byte_counting: true,
        initial_window: 10,
        ..plain(1460)
    }
}

/// A 1 Gbit/s bottleneck of 50 us each way (a round trip of 8.6 segments), a queue of
/// `limit` segments marking from `k` queued.
fn bottleneck(a: Config, b: Config, limit: usize, k: Option<usize>) -> Sim<Connection, Connection> {
    let mut ab = PipeConfig::delay(Duration::from_micros(50));
    ab.rate = Some(Rate(1_000_000_000));
    ab.queue = limit;
    ab.ecn_k = k;
    let ba = PipeConfig::delay(Duration::from_micros(50));
    pair(a, b, ab, ba)
}

/// Bytes `b` received in `total` milliseconds of bulk transfer, and the largest queue seen.
fn run(s: &mut Sim<Connection, Connection>, total_ms: u64) -> u64 {
    s.app_tick = Duration::from_micros(100);
    s.run_until(at_ms(total_ms), bulk(1 << 40, false));
    s.b.stats().bytes_delivered
}

#[test]
fn ecn_is_agreed_only_when_both_ends_offer_it() {
    for (a, b, agreed) in [
        (true, true, true),
        (true, false, false),
        (false, true, false),
    ] {
        let ca = Config {
            ecn: a,
            ..plain(1000)
        };
        let cb = Config {
            ecn: b,
            ..plain(1000)
        };
        let (ab, ba) = clean(ms(1));
        let mut s = pair(ca, cb, ab, ba);
        s.run_until(at_ms(10), |_| {});
        assert_eq!(s.a.ecn_enabled(), agreed, "{a} {b}");
        assert_eq!(s.b.ecn_enabled(), agreed, "{a} {b}");
        let syn = s.trace[0].2;
        assert_eq!(syn.has(Flags::ECE) && syn.has(Flags::CWR), a);
    }
}

#[test]
fn a_marking_queue_holds_dctcp_without_loss() {
    let cfg = ecn(CcAlgorithm::Dctcp);
    let mut s = bottleneck(cfg.clone(), cfg, 200, Some(20));
    let bytes = run(&mut s, 50);
    assert_eq!(
        s.queue_drops(Dir::AtoB),
        0,
        "marks, not drops, hold the window"
    );
    assert!(s.b.stats().ce_received > 0);
    assert!(s.a.stats().ecn_reductions > 10, "{:?}", s.a.stats());
    assert_eq!(s.a.stats().segments_retransmitted, 0);
    // Marks without an echo leave the window to grow into the queue's limit.
    let mut deaf = ecn(CcAlgorithm::Dctcp);
    deaf.ecn = false;
    let mut s = bottleneck(deaf.clone(), deaf, 200, Some(20));
    run(&mut s, 50);
    assert!(s.queue_drops(Dir::AtoB) > 0);
    // 50 ms at 1 Gbit/s is 6.25 MB of line; DCTCP keeps it nearly full.
    assert!(bytes > 5_800_000, "{bytes}");
}

#[test]
fn dctcp_cuts_by_the_marked_fraction_where_rfc3168_halves() {
    // K of 2 segments, far below the round trip's 8.6: halving on each echo empties the pipe,
    // DCTCP's small cuts keep it full (the DCTCP paper's figure 1 in miniature).
    let dctcp = ecn(CcAlgorithm::Dctcp);
    let mut s = bottleneck(dctcp.clone(), dctcp, 200, Some(2));
    let d = run(&mut s, 50);
    let alpha = s.a.dctcp_alpha().expect("a runs DCTCP");
    let reno = ecn(CcAlgorithm::NewReno);
    let mut s = bottleneck(reno.clone(), reno, 200, Some(2));
    let r = run(&mut s, 50);
    assert!(s.a.stats().ecn_reductions > 10);
    assert!(alpha < 0.5, "alpha {alpha}");
    assert!(d as f64 > 1.1 * r as f64, "DCTCP {d} bytes, RFC 3168 {r}");
}

/// `a` and `b` connected by hand (no pipes): SYN, SYN-ACK, ACK.
fn handshake(a: Config, b: Config) -> (Connection, Connection) {
    let t = Instant::ZERO;
    let mut a = Connection::connect(a, 1000, 80, SeqNum(1), t);
    let mut b = Connection::listen(b, 80, SeqNum(5000));
    for _ in 0..2 {
        while let Some(seg) = a.poll_transmit(t) {
            b.handle_segment(t, &seg);
        }
        while let Some(seg) = b.poll_transmit(t) {
            a.handle_segment(t, &seg);
        }
    }
    (a, b)
}

/// The ECE flags of the ACKs `b` sends for data segments from `a` marked as `marks` says,
/// handling each and polling after each.
fn echoes(cc: CcAlgorithm, delayed: bool, marks: &[bool]) -> Vec<bool> {
    let mut cfg = ecn(cc);
    if delayed {
        cfg.delayed_ack = Some(ms(40));
    }
    let (mut a, mut b) = handshake(cfg.clone(), cfg);
    assert!(a.ecn_enabled() && b.ecn_enabled());
    a.send(1460 * marks.len());
    let t = at_ms(1);
    let segs: Vec<Segment> = std::iter::from_fn(|| a.poll_transmit(t)).collect();
    assert_eq!(segs.len(), marks.len());
    let mut out = Vec::new();
    for (seg, &ce) in segs.iter().zip(marks) {
        b.handle_segment_ecn(t, seg, ce);
        out.extend(std::iter::from_fn(|| b.poll_transmit(t)).map(|s| s.has(Flags::ECE)));
    }
    out
}

#[test]
fn rfc3168_receivers_echo_until_cwr_and_dctcp_receivers_echo_each_mark() {
    // RFC 3168: one mark latches ECE on every later ACK (no CWR came).
    assert_eq!(
        echoes(CcAlgorithm::NewReno, false, &[false, true, false, false]),
        vec![false, true, true, true]
    );
    // DCTCP: each ACK says whether what it acknowledges was marked.
    assert_eq!(
        echoes(CcAlgorithm::Dctcp, false, &[false, true, false, false]),
        vec![false, true, false, false]
    );
    // With delayed ACKs (one per two segments), a change of mark acknowledges the segment
    // held before it at once with the old mark, then the new one with the new mark (RFC 8257
    // 3.2); unchanged marks go back to one ACK per two segments.
    assert_eq!(
        echoes(
            CcAlgorithm::Dctcp,
            true,
            &[false, true, true, true, false, false]
        ),
        vec![false, true, true, false]
    );
}

#[test]
fn the_sender_reduces_once_per_window_and_says_cwr() {
    let cfg = ecn(CcAlgorithm::NewReno);
    let (mut a, mut b) = handshake(cfg.clone(), cfg);
    a.send(1460 * 10);
    let t = at_ms(1);
    let segs: Vec<Segment> = std::iter::from_fn(|| a.poll_transmit(t)).collect();
    assert_eq!(segs.len(), 10);
    let cwnd = a.cwnd();
    for seg in &segs {
        b.handle_segment_ecn(t, seg, true);
        while let Some(ack) = b.poll_transmit(t) {
            a.handle_segment(t, &ack);
        }
    }
    // Ten echoes of one window: one reduction, to half the flight.
    assert_eq!(a.stats().ecn_reductions, 1);
    assert!(a.cwnd() < cwnd, "{} -> {}", cwnd, a.cwnd());
    a.send(1460);
    let next = a.poll_transmit(t).expect("new data");
    assert!(next.has(Flags::CWR));
}
