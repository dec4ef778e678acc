//! CUBIC's window after a loss follows RFC 9438's W(t) = C (t - K)^3 + W_max.

use super::*;
use crate::tcp::CcAlgorithm;
use crate::tcp::cc::Controller;

const MSS: u64 = 1000;

#[test]
fn window_growth_follows_the_cubic_curve() {
    let cfg = Config {
        cc: CcAlgorithm::Cubic,
        window_scale: Some(8),
        send_buffer: 8 << 20,
        recv_buffer: 8 << 20,
        ..plain(MSS as u16)
    };
    let (ab, ba) = clean(ms(50));
    let mut s = pair(cfg.clone(), cfg, ab, ba);
    // One loss once the window passes 300 segments.
    let mut dropped = false;
    s.drop_if = Box::new(move |d, seg| {
        let idx = u64::from(seg.seq.0.wrapping_sub(0xffff_ff01)) / MSS;
        let drop = d == Dir::AtoB && seg.len > 0 && idx == 600 && !dropped;
        dropped |= drop;
        drop
    });
    let mut app = bulk(1 << 40, false);
    let mut samples: Vec<(Instant, f64)> = vec![];
    s.run_until(at_ms(12_000), |s| {
        app(s);
        samples.push((s.now, s.a.cwnd() as f64 / MSS as f64));
    });
    assert_eq!(s.a.stats().fast_retransmits, 1);
    assert_eq!(s.a.stats().timeouts, 0);
    let Controller::Cubic(c) = s.a.controller() else {
        panic!("not CUBIC")
    };
    let epoch = c.epoch_start().expect("in congestion avoidance");
    let w_max = c.w_max();
    // The window when the epoch began: NewReno's full acknowledgement leaves it at ssthresh,
    // beta times the flight at the loss.
    let w0 = s.a.ssthresh() as f64 / MSS as f64;
    assert!((w0 / w_max - 0.7).abs() < 0.01, "w0 {w0} of W_max {w_max}");
    // RFC 9438 equations (1) and (2), computed here from the observed W_max and start window.
    let k = ((w_max - w0) / 0.4).cbrt();
    let w = |t: f64| 0.4 * (t - k).powi(3) + w_max;
    let mut checked = 0;
    for &(t, cwnd) in samples.iter().filter(|(t, _)| *t > epoch) {
        let dt = (t - epoch).as_secs_f64();
        if dt > 1.6 * k {
            break;
        }
        // cwnd aims at W(t + RTT) and gets there within the round trip; without a bottleneck a
        // round's ACKs arrive together, so it moves in steps once per round trip. It lies
        // between W(t - RTT) and W(t + RTT) (W only grows), give or take a segment of rounding.
        let lo = w(dt - 0.1) - 1.0;
        let hi = w(dt + 0.1) + 1.0;
        assert!(
            (lo..=hi).contains(&cwnd),
            "t = {dt:.3} s: cwnd {cwnd:.2}, W(t) {:.2}, W(t + RTT) {:.2}",
            w(dt),
            w(dt + 0.1)
        );
        checked += 1;
    }
    assert!(checked > 1000, "{checked} samples checked");
    assert!(k > 4.0, "a long enough curve: K = {k}");
}
