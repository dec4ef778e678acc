use super::*;
use crate::units::Rate;

const LINE: Rate = Rate::mbps(10_000);
const P: Params = Params::PAPER;

fn data(flow: u32, seq: u32, packets: u32) -> Packet {
    Packet {
        flow,
        kind: Kind::Data {
            seq,
            len: 1_000,
            packets,
        },
    }
}

#[test]
fn a_cnp_cuts_the_rate_by_half_alpha_and_raises_alpha() {
    let mut r = RateControl::new(P, LINE, 0);
    assert_eq!(r.rate(), 10e9);
    r.handle_cnp(1_000);
    // alpha starts at 1: the first cut halves the rate; the target keeps the old rate.
    assert_eq!(r.rate(), 5e9);
    assert_eq!(r.target(), 10e9);
    assert_eq!(r.alpha(), 1.0);
    // Alpha decays by (1 - g) for each period without a CNP (not the first: it had one), and
    // the next cut is smaller.
    r.handle_timeout(1_000 + 10 * P.alpha_period);
    let a = r.alpha();
    assert!((a - (1.0 - P.g).powi(9)).abs() < 1e-12, "{a}");
    let before = r.rate();
    r.handle_cnp(1_000 + 10 * P.alpha_period);
    assert!((r.rate() - before * (1.0 - a / 2.0)).abs() < 1.0);
    assert!((r.alpha() - ((1.0 - P.g) * a + P.g)).abs() < 1e-12);
}

#[test]
fn fast_recovery_halves_the_gap_to_the_target_then_the_target_rises() {
    let mut r = RateControl::new(P, LINE, 0);
    r.handle_cnp(0);
    r.handle_cnp(0);
    // 10 -> 5 -> 2.5 Gbit/s with alpha near 1; the target is 5 Gbit/s.
    let (rt, rc0) = (r.target(), r.rate());
    assert!(
        (rt - 5e9).abs() < 1e7 && (rc0 - 2.5e9).abs() < 2e7,
        "{rt} {rc0}"
    );
    // Five timer periods of fast recovery: the gap halves each time, the target stays.
    for k in 1..=5 {
        r.handle_timeout(k * P.increase_period);
        let gap = (rt - rc0) / f64::from(1u32 << k);
        assert!((rt - r.rate() - gap).abs() < 1.0, "stage {k}");
        assert_eq!(r.target(), rt);
    }
    // Past fast recovery (the byte counter still in it) the target rises additively.
    r.handle_timeout(6 * P.increase_period);
    assert!((r.target() - (rt + P.additive)).abs() < 1.0);
    assert_eq!(r.stats.increases, 6);
}

#[test]
fn the_byte_counter_raises_the_rate_without_the_timer() {
    let mut r = RateControl::new(P, LINE, 0);
    r.handle_cnp(0);
    let cut = r.rate();
    r.on_sent(P.byte_counter - 1);
    assert_eq!(r.rate(), cut);
    r.on_sent(1);
    assert!((r.rate() - (cut + 10e9) / 2.0).abs() < 1.0);
    assert_eq!(r.target(), 10e9);
}

#[test]
fn once_both_counters_are_past_fast_recovery_the_target_rises_by_the_hyper_step() {
    let mut r = RateControl::new(P, LINE, 0);
    r.handle_cnp(0);
    r.handle_cnp(0);
    let rt = r.target();
    assert_eq!(rt, 5e9);
    // Six timer events: five of fast recovery, one additive.
    r.handle_timeout(6 * P.increase_period);
    assert!((r.target() - (rt + P.additive)).abs() < 1.0);
    // Seven byte-counter events: six additive (the byte counter's own fast recovery is past
    // as the timer's is), then both are past by one: one hyper step.
    r.on_sent(7 * P.byte_counter);
    let want = rt + 7.0 * P.additive + P.hyper;
    assert!((r.target() - want).abs() < 1.0, "{} {want}", r.target());
}

#[test]
fn the_sender_paces_packets_at_its_rate() {
    let mut s = Sender::new(0, 100_000, 1_000, 50, LINE, P, 0);
    assert!(s.poll_transmit(0).is_some());
    // 1050 bytes at 10 Gbit/s: 840 ns.
    assert!(s.poll_transmit(839).is_none());
    assert_eq!(s.poll_timeout(), Some(840));
    assert!(s.poll_transmit(840).is_some());
    s.handle(
        900,
        &Packet {
            flow: 0,
            kind: Kind::Cnp,
        },
    );
    // Halved to 5 Gbit/s: the next gap is 1680 ns.
    assert!(s.poll_transmit(1_680).is_some());
    assert!(s.poll_transmit(1_680 + 1_679).is_none());
    assert!(s.poll_transmit(1_680 + 1_680).is_some());
}

#[test]
fn the_receiver_sends_at_most_one_cnp_per_interval_per_flow() {
    let mut r = Receiver::new(P.cnp_interval);
    let cnps = |r: &mut Receiver, now| {
        std::iter::from_fn(|| r.poll_transmit(now))
            .filter(|p| p.kind == Kind::Cnp)
            .count()
    };
    r.handle(0, &data(0, 0, 100), true);
    r.handle(10, &data(0, 1, 100), true);
    r.handle(20, &data(1, 0, 100), true);
    assert_eq!(cnps(&mut r, 20), 2);
    r.handle(49_999, &data(0, 2, 100), true);
    assert_eq!(cnps(&mut r, 49_999), 0);
    r.handle(50_000, &data(0, 3, 100), true);
    r.handle(50_001, &data(0, 4, 100), false);
    assert_eq!(cnps(&mut r, 50_001), 1);
    assert_eq!((r.stats.marked, r.stats.cnps), (5, 3));
}

/// Sender and receiver joined by a line that loses the data packets whose numbers are in
/// `lose` the first time they are sent; the sender's and the receiver's ends.
fn transfer(packets: u32, lose: &[u32]) -> (Sender, Receiver) {
    let mut s = Sender::new(0, u64::from(packets) * 1_000, 1_000, 0, LINE, P, 0);
    let mut r = Receiver::new(P.cnp_interval);
    let mut lost = vec![false; packets as usize];
    let mut now = 0;
    while s.done_at().is_none() && now < 1_000_000_000 {
        s.handle_timeout(now);
        while let Some(p) = s.poll_transmit(now) {
            let Kind::Data { seq, .. } = p.kind else {
                continue;
            };
            if lose.contains(&seq) && !lost[seq as usize] {
                lost[seq as usize] = true;
                continue;
            }
            r.handle(now, &p, false);
        }
        while let Some(c) = r.poll_transmit(now) {
            s.handle(now, &c);
        }
        now = s.poll_timeout().unwrap_or(now + 1).max(now + 1);
    }
    (s, r)
}

#[test]
fn go_back_n_sends_again_from_the_packet_the_receiver_nacks() {
    let (s, r) = transfer(100, &[]);
    assert_eq!(s.stats.retransmitted, 0);
    assert_eq!(r.done()[0].bytes, 100_000);
    // Packet 10 lost: the receiver discards 11 and NACKs 10 once; the sender goes back to 10
    // and sends again everything from it that it had sent (10 and 11: the NACK comes back
    // before 12 leaves).
    let (s, r) = transfer(100, &[10]);
    assert_eq!(r.done().len(), 1);
    assert_eq!(r.done()[0].bytes, 100_000);
    assert_eq!(s.stats.nacks, 1);
    assert_eq!(s.stats.timeouts, 0);
    assert_eq!(s.stats.retransmitted, 2);
    assert_eq!(r.stats.out_of_order, 1);
}

#[test]
fn a_lost_last_packet_is_sent_again_after_the_time_out() {
    let (s, r) = transfer(20, &[19]);
    assert_eq!(r.done().len(), 1);
    assert_eq!(s.stats.timeouts, 1);
    assert_eq!(s.stats.nacks, 0);
    // Sent 19 at about 19 x 800 ns, timed out a millisecond later.
    assert!(s.done_at().is_some_and(|t| t >= DEFAULT_RTO.as_nanos()));
}

#[test]
fn on_a_line_a_hundred_times_slower_the_dynamics_are_a_hundred_times_slower() {
    assert_eq!(slowdown(LINE), 1.0);
    assert_eq!(slowdown(Rate::mbps(40_000)), 1.0);
    assert_eq!(Params::PAPER.slowed(slowdown(LINE)), Params::PAPER);
    let slow = slowdown(Rate::mbps(100));
    assert_eq!(slow, 100.0);
    let p = Params::PAPER.slowed(slow);
    assert_eq!(p.increase_period, 100 * Params::PAPER.increase_period);
    assert_eq!(p.alpha_period, 100 * Params::PAPER.alpha_period);
    assert_eq!(p.cnp_interval, 100 * Params::PAPER.cnp_interval);
    assert_eq!(p.byte_counter, Params::PAPER.byte_counter);
    assert!((p.hyper - 2e6).abs() < 1e-6 && (p.additive - 0.4e6).abs() < 1e-6);
    assert!((p.min_rate - 0.1e6).abs() < 1e-6);
    // The same cut and recovery, a hundred times later, at a hundredth of the rate.
    let (mut fast, mut slowed) = (
        RateControl::new(Params::PAPER, LINE, 0),
        RateControl::new(p, Rate::mbps(100), 0),
    );
    fast.handle_cnp(0);
    slowed.handle_cnp(0);
    for k in 1..=20u64 {
        fast.handle_timeout(k * 55_000);
        slowed.handle_timeout(k * 5_500_000);
        assert!((fast.rate() / 100.0 - slowed.rate()).abs() < 1e-3 * slowed.rate());
    }
}
