//! Nagle's algorithm: small writes coalesce while data is unacknowledged.

use super::*;

/// Segments `a` sends for 200 writes of 10 bytes, one per millisecond, over a 50 ms round trip.
fn small_writes(nagle: bool) -> (usize, u64) {
    let a = Config {
        nagle,
        ..plain(1000)
    };
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
