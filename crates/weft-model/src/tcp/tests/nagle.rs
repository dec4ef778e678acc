//! Nagle's algorithm: small writes coalesce while data is unacknowledged.

use super::*;

/// Segments `a` sends for 200 writes of 10 bytes, one per millisecond, over a 50 ms round trip.
fn small_writes(nagle: bool) -> (usize, u64) {
    small_writes_with(Config {
        nagle,
        ..plain(1000)
    })
}

/// As [`small_writes`], `a` configured with `a`.
fn small_writes_with(a: Config) -> (usize, u64) {
    let (ab, ba) = clean(ms(25));
    let mut s = pair(a, plain(1000), ab, ba);
    let mut writes = 0;
    s.run_until(at_ms(1000), |s| {
        while writes < 200 && s.now >= at_ms(100 + writes) {
            assert_eq!(s.a.send(10), 10);
            writes += 1;
        }
        let r = s.b.readable();
        s.b.recv(r as usize);
    });
    (
        data_segments(&s.trace, Dir::AtoB).len(),
        s.b.stats().bytes_read,
    )
}

#[test]
fn nagle_coalesces_small_writes_into_one_segment_per_round_trip() {
    let (with, bytes) = small_writes(true);
    assert_eq!(bytes, 2000);
    // The first write goes at once; the rest wait for an ACK: about one segment per 50 ms.
    assert!((4..=6).contains(&with), "{with} segments with Nagle");
    let (without, bytes) = small_writes(false);
    assert_eq!(bytes, 2000);
    assert_eq!(without, 200, "one segment per write without Nagle");
}

/// When the server (b, 200 ms delayed ACKs) has all of a 1500-byte message that a writes in one
/// call as a 1000-byte and a 500-byte segment, 10 ms each way.
fn message_arrives(minshall: bool) -> Instant {
    let a = Config {
        mss: 1000,
        initial_window: 4,
        nagle_minshall: minshall,
        ..Config::default()
    };
    let b = Config {
        mss: 1000,
        ..Config::default()
    };
    let (ab, ba) = clean(ms(10));
    let mut s = pair(a, b, ab, ba);
    let (mut sent, mut done) = (false, None);
    s.run_until(at_ms(1000), |s| {
        if !sent && s.now >= at_ms(100) {
            assert_eq!(s.a.send(1500), 1500);
            sent = true;
        }
        if done.is_none() && s.b.readable() == 1500 {
            done = Some(s.now);
        }
    });
    done.expect("the message arrived")
}

#[test]
fn bsd_nagle_holds_a_message_tail_for_the_delayed_ack_and_minshall_does_not() {
    // 4.4BSD: the 500-byte tail waits for the ACK of the lone full segment, which b delays
    // 200 ms: 110 + 200 + 10 (ACK back) + 10 (tail there).
    assert_eq!(message_arrives(false), at_ms(330));
    // Linux (Minshall): the tail follows at once, no short segment being unacknowledged.
    assert_eq!(message_arrives(true), at_ms(110));
}

#[test]
fn minshall_nagle_still_coalesces_small_writes() {
    let (segments, bytes) = small_writes_with(Config {
        nagle_minshall: true,
        ..plain(1000)
    });
    assert_eq!(bytes, 2000);
    assert!((4..=6).contains(&segments), "{segments} segments");
}
