//! Spurious time-outs: a message whose ACK a queue holds past the timer (nothing lost) is sent
//! again; with timestamps the ACK of the original shows the time-out was spurious and the
//! window it cut comes back (Eifel detection, RFC 3522, with Linux's undo).

use super::*;

/// `a` sends 100 kB, sits idle, then sends one 24-byte message at 1 s whose ACK, like
/// everything `b` sends from then until 1.4 s, waits in a queue until 1.4 s (order kept):
/// past the 200 ms minimum time-out of a 20 ms round trip. Returns `a` as it ends and the
/// threshold it had just before the message.
fn held_ack(timestamps: bool) -> (Connection, u64) {
    let cfg = Config {
        nagle: false,
        timestamps,
        ..Config::linux()
    };
    let (ab, ba) = clean(ms(10));
    let mut s = pair(cfg.clone(), cfg, ab, ba);
    s.hold_if = Box::new(|d, _, now| {
        let (from, until) = (at_ms(1000), at_ms(1400));
        if d == Dir::BtoA && now >= from && now < until {
            until - now
        } else {
            Duration::ZERO
        }
    });
    let mut app = bulk(100_000, false);
    s.run_until(at_ms(999), &mut app);
    assert_eq!(s.a.stats().bytes_acked, 100_000);
    let before = s.a.ssthresh();
    let mut sent = false;
    s.run_until(at_ms(2000), |s| {
        if !sent {
            assert_eq!(s.a.send(24), 24);
            sent = true;
        }
        let r = s.b.readable();
        s.b.recv(r as usize);
    });
    assert_eq!(s.a.stats().bytes_acked, 100_024, "delivered");
    assert_eq!(s.a.stats().timeouts, 1, "the held ACK outlasted the timer");
    assert_eq!(s.a.timestamps_agreed(), timestamps);
    (s.a, before)
}

#[test]
fn a_timeout_whose_original_was_acknowledged_is_undone_with_timestamps() {
    let (a, ssthresh) = held_ack(true);
    assert_eq!(a.stats().spurious_timeouts, 1);
    assert_eq!(
        a.ssthresh(),
        ssthresh,
        "the threshold from before the time-out"
    );
    // The window the message left with (the initial one: it followed an idle second), not the
    // one segment a time-out leaves.
    let iw = 10 * u64::from(a.mss());
    assert!(a.cwnd() >= iw, "window {} below {iw}", a.cwnd());
    // Each segment carries the 12-byte option in place of payload, as Linux's do.
    assert_eq!(a.mss(), 1460 - 12);
}

#[test]
fn without_timestamps_a_spurious_timeout_cuts_the_window() {
    let (a, ssthresh) = held_ack(false);
    assert_eq!(a.stats().spurious_timeouts, 0);
    // The flight was one 24-byte segment: the threshold falls to its floor of two segments.
    assert!(ssthresh > 1 << 30);
    assert_eq!(a.ssthresh(), 2 * 1460);
    assert_eq!(a.mss(), 1460);
}
