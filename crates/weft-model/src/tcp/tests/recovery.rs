//! Loss recovery: fast retransmit on three duplicate ACKs, NewReno's partial acknowledgements,
//! and SACK recovering several losses in one round trip.

use std::collections::HashMap;

use super::*;
use crate::tcp::{CcAlgorithm, Flags};

const ISS_A: u32 = 0xffff_ff00;
const MSS: u64 = 1000;

/// A 100 ms round trip, windows out of the way, slow start up to 20 segments.
fn cfg(cc: CcAlgorithm, sack: bool) -> Config {
    Config {
        cc,
        sack,
        window_scale: Some(8),
        send_buffer: 4 << 20,
        recv_buffer: 4 << 20,
        initial_ssthresh: Some(20 * MSS),
        ..plain(MSS as u16)
    }
}

/// Result of a transfer of 400 segments in which the first transmission of each listed segment
/// (by index, 0 = first data segment) is lost.
struct Run {
    sim: Sim<Connection, Connection>,
    /// When the first lost segment was sent.
    lost_at: Instant,
    /// When the receiver had everything up to the last lost segment.
    repaired_at: Instant,
}

fn run(cc: CcAlgorithm, sack: bool, lost: &[u64]) -> Run {
    run_dropping(cc, sack, lost, 1)
}

/// As [`run`], but the first `times` transmissions of each listed segment are lost.
fn run_dropping(cc: CcAlgorithm, sack: bool, lost: &[u64], times: usize) -> Run {
    let (ab, ba) = clean(ms(50));
    let mut s = pair(cfg(cc, sack), cfg(cc, sack), ab, ba);
    let mut left: HashMap<u64, usize> = lost.iter().map(|&i| (i, times)).collect();
    s.drop_if = Box::new(move |d, seg| {
        let index = u64::from(seg.seq.0.wrapping_sub(ISS_A.wrapping_add(1))) / MSS;
        match left.get_mut(&index) {
            Some(n) if d == Dir::AtoB && seg.len > 0 && *n > 0 => {
                *n -= 1;
                true
            }
            _ => false,
        }
    });
    let last = lost.iter().max().copied().unwrap_or(0);
    let mut repaired_at = None;
    let mut app = bulk(400 * MSS, false);
    s.run_until(at_ms(20_000), |s| {
        app(s);
        if repaired_at.is_none() && s.b.stats().bytes_delivered > (last + 1) * MSS {
            repaired_at = Some(s.now);
        }
    });
    let first = lost.iter().min().copied().unwrap_or(0);
    let lost_at = data_segments(&s.trace, Dir::AtoB)
        .iter()
        .find(|(_, seg)| u64::from(seg.seq.0.wrapping_sub(ISS_A.wrapping_add(1))) == first * MSS)
        .map(|x| x.0)
        .unwrap_or(Instant::ZERO);
    assert_eq!(s.b.stats().bytes_delivered, 400 * MSS, "everything arrives");
    Run {
        sim: s,
        lost_at,
        repaired_at: repaired_at.unwrap_or(Instant(u64::MAX)),
    }
}

#[test]
fn three_duplicate_acks_trigger_a_fast_retransmit() {
    let r = run(CcAlgorithm::Reno, false, &[60]);
    let st = r.sim.a.stats();
    assert_eq!(st.fast_retransmits, 1);
    assert_eq!(st.timeouts, 0);
    assert_eq!(st.segments_retransmitted, 1);
    // Duplicate ACKs come back one round trip after the loss; the timer (at least 200 ms) never
    // fires.
    let took = r.repaired_at - r.lost_at;
    assert!(took < ms(160), "repaired {took} after the loss");
    // The window was halved once.
    let flight_at_loss = 20 * MSS;
    assert!(r.sim.a.ssthresh() >= flight_at_loss / 2 && r.sim.a.ssthresh() < flight_at_loss);
}

#[test]
fn newreno_repairs_three_losses_with_partial_acks_and_one_reduction() {
    let nr = run(CcAlgorithm::NewReno, false, &[60, 62, 64]);
    let st = nr.sim.a.stats();
    assert_eq!(st.fast_retransmits, 1, "one recovery episode");
    assert_eq!(
        st.partial_acks, 2,
        "each later hole announced by a partial ACK"
    );
    assert_eq!(st.timeouts, 0);
    assert_eq!(st.segments_retransmitted, 3);
    // Reno leaves recovery at the first partial ACK and needs more: another fast retransmit
    // (another halving) or a timeout.
    let reno = run(CcAlgorithm::Reno, false, &[60, 62, 64]);
    let rs = reno.sim.a.stats();
    assert!(
        rs.fast_retransmits + rs.timeouts >= 2,
        "Reno: {} fast retransmits, {} timeouts",
        rs.fast_retransmits,
        rs.timeouts
    );
    assert!(nr.repaired_at < reno.repaired_at);
}

#[test]
fn sack_repairs_several_losses_in_one_round_trip() {
    // Four holes in the round trip that sends segments 51 to 71, each with at least three
    // segments after it in the same round (RFC 6675 calls a hole lost once three segments
    // above it are SACKed).
    let lost = [55, 58, 61, 64];
    let sack = run(CcAlgorithm::NewReno, true, &lost);
    let newreno = run(CcAlgorithm::NewReno, false, &lost);
    assert!(sack.sim.a.sack_enabled());
    let (st, nt) = (sack.sim.a.stats(), newreno.sim.a.stats());
    assert_eq!((st.fast_retransmits, st.timeouts), (1, 0));
    assert_eq!(st.segments_retransmitted, 4, "each hole sent once");
    let sack_took = sack.repaired_at - sack.lost_at;
    let newreno_took = newreno.repaired_at - newreno.lost_at;
    // Detection takes a round trip; SACK then sends all four holes at once, NewReno one per
    // round trip.
    assert!(sack_took < ms(250), "SACK took {sack_took}");
    assert!(
        newreno_took >= ms(400),
        "NewReno took {newreno_took}, {} partial ACKs",
        nt.partial_acks
    );
    // The SACK blocks on the wire name the segments above the holes.
    let blocks = sack
        .sim
        .trace
        .iter()
        .filter(|(_, d, s)| *d == Dir::BtoA && s.has(Flags::ACK) && !s.sack.is_empty())
        .count();
    assert!(blocks > 0);
}

#[test]
fn a_lost_retransmission_is_sent_again_without_waiting_for_the_timer() {
    // The retransmission of 55 is lost too. Segments sent after it (new data, and the other
    // holes' retransmissions) are SACKed, which says it was lost.
    let r = run_dropping(CcAlgorithm::NewReno, true, &[55, 58], 2);
    let st = r.sim.a.stats();
    assert_eq!(st.timeouts, 0, "no timeout: {st:?}");
    assert!(st.lost_retransmissions >= 1);
    assert_eq!(st.segments_retransmitted, 4, "two holes, each sent twice");
}

#[test]
fn proportional_rate_reduction_paces_sending_after_a_burst_loss() {
    // An initial window of 40 segments whose first 30 are lost: the 10 that arrive are SACKed,
    // and every unSACKed segment below them is lost at once, so the pipe collapses to nothing.
    // RFC 6675 alone would send cwnd - pipe = ssthresh (20 segments) on one ACK; PRR's
    // slow-start bound sends at most what each ACK delivered plus one segment.
    let c = Config {
        initial_window: 40,
        ..cfg(CcAlgorithm::NewReno, true)
    };
    let (ab, ba) = clean(ms(50));
    let mut s = pair(c.clone(), c, ab, ba);
    let mut seen = 0u64;
    s.drop_if = Box::new(move |d, seg| {
        let index = u64::from(seg.seq.0.wrapping_sub(ISS_A.wrapping_add(1))) / MSS;
        let first = index < 30 && seen & (1 << index) == 0;
        if d == Dir::AtoB && seg.len > 0 && first {
            seen |= 1 << index;
            return true;
        }
        false
    });
    let mut app = bulk(400 * MSS, false);
    let (mut last_sent, mut last_rcvd, mut burst) = (0, 0, 0);
    s.run_until(at_ms(3000), |s| {
        app(s);
        let st = s.a.stats();
        if st.segments_received != last_rcvd {
            burst = burst.max(st.data_segments_sent - last_sent);
            last_rcvd = st.segments_received;
        }
        last_sent = st.data_segments_sent;
    });
    assert_eq!(s.a.stats().fast_retransmits, 1, "{:?}", s.a.stats());
    assert!(burst <= 3, "{burst} segments sent on one ACK");
    assert_eq!(s.b.stats().bytes_delivered, 400 * MSS);
}

#[test]
fn after_a_timeout_sacked_segments_are_not_sent_again() {
    // Holes at 55, 57, 59 and 61; the peer SACKs 56, 58 and 60 and the third duplicate ACK
    // starts recovery. From then until the timer fires, every ACK and every retransmission is
    // lost, so the timeout goes back to 55 with that scoreboard. Going back with a window of
    // two after the first ACK, the sender sends 57 and then 59, skipping 58.
    let c = cfg(CcAlgorithm::NewReno, true);
    let (ab, ba) = clean(ms(50));
    let mut s = pair(c.clone(), c, ab, ba);
    let mut sent55 = 0;
    s.drop_if = Box::new(move |d, seg| {
        let index = u64::from(seg.seq.0.wrapping_sub(ISS_A.wrapping_add(1))) / MSS;
        match d {
            Dir::AtoB if seg.len > 0 && index == 55 => {
                sent55 += 1;
                sent55 <= 2
            }
            Dir::AtoB if seg.len > 0 && [57, 59, 61].contains(&index) => sent55 <= 2,
            Dir::BtoA => sent55 == 2,
            _ => false,
        }
    });
    s.run_until(at_ms(5000), bulk(400 * MSS, false));
    let st = s.a.stats();
    assert_eq!((st.fast_retransmits, st.timeouts), (1, 1), "{st:?}");
    assert_eq!(s.b.stats().bytes_delivered, 400 * MSS);
    let sent = |i: u64| {
        data_segments(&s.trace, Dir::AtoB)
            .iter()
            .filter(|(_, seg)| u64::from(seg.seq.0.wrapping_sub(ISS_A.wrapping_add(1))) == i * MSS)
            .count()
    };
    assert_eq!(sent(55), 3);
    assert_eq!(sent(58), 1, "SACKed before the timeout: not sent again");
    assert!(sent(59) >= 2);
}
