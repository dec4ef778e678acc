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
    let cfg = Config {
        mss: 1460,
        ..Config::default()
    };
    let (ab, ba) = clean(ms(10));
    let mut s = pair(cfg.clone(), cfg, ab, ba);
    s.run_until(at_ms(3000), bulk(2 << 20, false));
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
