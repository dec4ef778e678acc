//! Slow start and congestion avoidance, counted in segments per round trip.

use super::*;

/// Data segments `a` sent in each round trip of `rtt`, the handshake's being round 0.
fn per_round(s: &Sim<Connection, Connection>, rtt: Duration, rounds: usize) -> Vec<usize> {
    let mut counts = vec![0; rounds];
    for (t, _) in data_segments(&s.trace, Dir::AtoB) {
        let r = (t.as_nanos() / rtt.as_nanos()) as usize;
        if r < rounds {
            counts[r] += 1;
        }
    }
    counts
}

/// A long fat pipe: 100 ms round trip, no bottleneck, windows scaled out of the way.
fn long_fat(ssthresh: Option<u64>) -> Sim<Connection, Connection> {
    long_fat_with(Config {
        initial_ssthresh: ssthresh,
        ..plain(1000)
    })
}

fn long_fat_with(base: Config) -> Sim<Connection, Connection> {
    let cfg = Config {
        window_scale: Some(8),
        send_buffer: 4 << 20,
        recv_buffer: 4 << 20,
        ..base
    };
    let (ab, ba) = clean(ms(50));
    pair(cfg.clone(), cfg, ab, ba)
}

#[test]
fn slow_start_doubles_every_round_trip() {
    let mut s = long_fat(None);
    s.run_until(at_ms(800), bulk(10 << 20, false));
    assert_eq!(
        per_round(&s, ms(100), 8),
        vec![0, 1, 2, 4, 8, 16, 32, 64],
        "one segment per ACK: the window doubles each round trip"
    );
    let mut s = long_fat_with(Config {
        initial_window: 4,
        ..plain(1000)
    });
    s.run_until(at_ms(500), bulk(10 << 20, false));
    assert_eq!(per_round(&s, ms(100), 5), vec![0, 4, 8, 16, 32]);
}

#[test]
fn congestion_avoidance_adds_one_segment_per_round_trip() {
    let mut s = long_fat(Some(8000));
    s.run_until(at_ms(1600), bulk(10 << 20, false));
    let c = per_round(&s, ms(100), 16);
    assert_eq!(&c[..5], &[0, 1, 2, 4, 8], "slow start up to ssthresh");
    let steps: Vec<i64> = c[5..]
        .windows(2)
        .map(|w| w[1] as i64 - w[0] as i64)
        .collect();
    assert!(
        steps.iter().all(|&d| (0..=2).contains(&d)),
        "linear growth, not doubling: {c:?}"
    );
    let growth: i64 = steps.iter().sum();
    assert!(
        (9..=11).contains(&growth),
        "about one segment per round trip over {} rounds: {c:?}",
        steps.len()
    );
}

/// Segments `a` sends in the round trip after an idle period of 3 s that follows 300 segments.
fn first_round_after_idle(idle_restart: bool) -> usize {
    let mut s = long_fat_with(Config {
        idle_restart,
        ..plain(1000)
    });
    let mut app = bulk(300_000, false);
    s.run_until(at_ms(2000), &mut app);
    assert_eq!(s.b.stats().bytes_read, 300_000);
    assert!(s.a.cwnd() > 100_000, "the window grew: {}", s.a.cwnd());
    s.run_until(at_ms(5000), |_| {});
    let mut again = bulk(300_000, false);
    s.run_until(at_ms(5050), &mut again);
    data_segments(&s.trace, Dir::AtoB)
        .iter()
        .filter(|(t, _)| *t >= at_ms(5000))
        .count()
}

#[test]
fn an_idle_connection_restarts_from_the_initial_window() {
    assert_eq!(
        first_round_after_idle(true),
        1,
        "RFC 5681 4.1 restart window"
    );
    assert!(
        first_round_after_idle(false) > 100,
        "a whole window's burst without it"
    );
}
