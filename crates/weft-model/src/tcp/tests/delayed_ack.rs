//! Delayed ACKs: held for the timer when alone, sent at once for every second segment.

use super::*;
use crate::tcp::Flags;

#[test]
fn a_lone_segment_is_acknowledged_when_the_timer_expires() {
    let (ab, ba) = clean(ms(10));
    let mut s = pair(Config::default(), Config::default(), ab, ba);
    let mut sent = false;
    s.run_until(at_ms(1000), |s| {
        if !sent && s.now >= at_ms(100) {
            s.a.send(100);
            sent = true;
        }
        let r = s.b.readable();
        s.b.recv(r as usize);
    });
    let acks: Vec<Instant> = s
        .trace
        .iter()
        .filter(|(t, d, seg)| *d == Dir::BtoA && *t > at_ms(50) && seg.has(Flags::ACK))
        .map(|x| x.0)
        .collect();
    // Data arrives at 110 ms; the ACK waits the full 200 ms.
    assert_eq!(acks, vec![at_ms(310)]);
    assert_eq!(s.b.stats().delayed_acks, 1);
}

#[test]
fn every_second_full_segment_is_acknowledged_at_once() {
    // A buffer large enough that b need not read: no window updates, only the ACK rule.
    let cfg = Config {
        mss: 1460,
        window_scale: Some(8),
        send_buffer: 4 << 20,
        recv_buffer: 4 << 20,
        ..Config::default()
    };
    let (ab, ba) = clean(ms(10));
    let mut s = pair(cfg.clone(), cfg, ab, ba);
    let mut written = 0;
    s.run_until(at_ms(3000), |s| {
        if written < 2 << 20 {
            written += s.a.send((2 << 20) - written);
        }
    });
    assert_eq!(s.b.readable(), 2 << 20);
    let data = data_segments(&s.trace, Dir::AtoB).len() as f64;
    let acks = s.b.stats().pure_acks_sent as f64;
    let ratio = acks / data;
    assert!(
        (0.45..=0.55).contains(&ratio),
        "{acks} ACKs for {data} segments"
    );
    assert!(
        s.b.stats().delayed_acks <= 5,
        "the timer rarely fires in bulk transfer: {}",
        s.b.stats().delayed_acks
    );
}

#[test]
fn a_segment_that_fills_a_hole_is_acknowledged_at_once() {
    let (ab, ba) = clean(ms(10));
    let a = Config {
        initial_window: 4,
        ..Config::default()
    };
    let mut s = pair(a, Config::default(), ab, ba);
    let mut dropped = false;
    s.drop_if = Box::new(move |d, seg| {
        let drop = d == Dir::AtoB && seg.len > 0 && !dropped;
        dropped |= drop;
        drop
    });
    let mut sent = false;
    s.run_until(at_ms(5000), |s| {
        if !sent && s.now >= at_ms(100) {
            // Four segments of 536 in one initial window; the first is lost.
            s.a.send(2144);
            sent = true;
        }
    });
    assert_eq!(s.b.readable(), 2144);
    // Three segments arrive above the hole (three duplicate ACKs: a fast retransmit). The
    // retransmission arrives 10 ms after it is sent and is acknowledged on arrival, not
    // 200 ms later: the sender must learn at once that the hole is filled.
    let first = s.trace[0].2.seq.add(1);
    let retx = data_segments(&s.trace, Dir::AtoB)
        .into_iter()
        .filter(|(_, seg)| seg.seq == first)
        .nth(1)
        .expect("a retransmission")
        .0;
    let ack = s
        .trace
        .iter()
        .find(|(t, d, _)| *d == Dir::BtoA && *t >= retx + ms(10))
        .expect("an ACK")
        .0;
    assert_eq!(ack, retx + ms(10));
}
