//! The retransmission timer: its minimum, BSD's 500 ms ticks, exponential backoff, giving up.

use super::*;
use crate::tcp::{Error, RtoConfig, State};

/// Times at which `a` sent its first data segment, when every data segment from `at_ms(100)` on
/// is lost, over a 20 ms round trip.
fn blackholed(rto: RtoConfig, until: u64) -> (Vec<Instant>, Sim<Connection, Connection>) {
    let cfg = Config {
        rto,
        max_retransmits: 5,
        ..plain(1000)
    };
    let (ab, ba) = clean(ms(10));
    let mut s = pair(cfg.clone(), cfg, ab, ba);
    s.drop_if = Box::new(|d, seg| d == Dir::AtoB && seg.len > 0);
    let mut sent = false;
    s.run_until(at_ms(until), |s| {
        if !sent && s.now >= at_ms(100) {
            s.a.send(500);
            sent = true;
        }
    });
    let times = data_segments(&s.trace, Dir::AtoB)
        .iter()
        .map(|x| x.0)
        .collect();
    (times, s)
}

fn gaps(times: &[Instant]) -> Vec<Duration> {
    times.windows(2).map(|w| w[1] - w[0]).collect()
}

#[test]
fn timeouts_back_off_exponentially_from_the_minimum() {
    let linux = RtoConfig {
        min: ms(200),
        ..RtoConfig::LINUX
    };
    let (times, s) = blackholed(linux, 20_000);
    assert_eq!(times[0], at_ms(100));
    // srtt 20 ms gives 20 + 4 * 10 = 60 ms, raised to the 200 ms minimum, then doubled.
    assert_eq!(
        gaps(&times),
        vec![ms(200), ms(400), ms(800), ms(1600), ms(3200)]
    );
    assert_eq!(s.a.stats().timeouts, 6);
    assert_eq!(
        s.a.state(),
        State::Closed,
        "gave up after 5 retransmissions"
    );
    assert_eq!(s.a.error(), Some(Error::TimedOut));
}

#[test]
fn bsd_timeouts_have_a_one_second_minimum_on_500_ms_ticks() {
    let (times, _) = blackholed(RtoConfig::BSD, 20_000);
    let g = gaps(&times);
    // Two ticks, four, eight: each fires on a tick boundary, up to one tick early.
    for (i, gap) in g.iter().take(3).enumerate() {
        let nominal = ms(1000 << i);
        assert!(
            *gap <= nominal && *gap > nominal - ms(500),
            "timeout {i}: {gap}"
        );
    }
    for t in &times[1..] {
        assert_eq!(t.as_nanos() % 500_000_000, 0, "on a tick: {t:?}");
    }
}
