//! The three-way handshake, option negotiation and connection refusal.

use super::*;
use crate::tcp::{Error, Flags, RtoConfig, State};

#[test]
fn three_way_handshake_negotiates_the_smaller_mss() {
    let a = Config {
        mss: 1460,
        window_scale: Some(7),
        sack: true,
        ..Config::default()
    };
    let b = Config {
        mss: 1000,
        ..Config::default()
    };
    let (ab, ba) = clean(ms(10));
    let mut s = pair(a, b, ab, ba);
    s.run_until(at_ms(25), |_| {});
    assert_eq!(s.a.state(), State::Established, "SYN-ACK back at 20 ms");
    assert_eq!(s.b.state(), State::SynReceived);
    s.run_until(at_ms(100), |_| {});
    assert_eq!(s.b.state(), State::Established);
    let t = &s.trace;
    let (syn, syn_ack, ack) = (t[0].2, t[1].2, t[2].2);
    assert_eq!((t[0].0, t[1].0, t[2].0), (at_ms(0), at_ms(10), at_ms(20)));
    assert_eq!(syn.flags, Flags::SYN);
    assert_eq!(
        (syn.mss, syn.window_scale, syn.sack_permitted),
        (Some(1460), Some(7), true)
    );
    assert_eq!(syn_ack.flags, Flags::SYN.with(Flags::ACK));
    assert_eq!(syn_ack.ack, syn.seq.add(1));
    // b offers neither scaling nor SACK, so its SYN-ACK carries neither and neither is used.
    assert_eq!(
        (syn_ack.mss, syn_ack.window_scale, syn_ack.sack_permitted),
        (Some(1000), None, false)
    );
    assert_eq!(ack.flags, Flags::ACK);
    assert_eq!(ack.ack, syn_ack.seq.add(1));
    assert_eq!((s.a.mss(), s.b.mss()), (1000, 1000));
    assert_eq!(s.a.window_scales(), (0, 0));
    assert!(!s.a.sack_enabled() && !s.b.sack_enabled());
    assert_eq!(s.trace.len(), 3, "nothing else is sent");
}

#[test]
fn scaling_and_sack_when_both_offer() {
    let b = Config {
        window_scale: Some(3),
        ..Config::linux()
    };
    let (ab, ba) = clean(ms(1));
    let mut s = pair(Config::linux(), b, ab, ba);
    s.run_until(at_ms(10), |_| {});
    assert_eq!(s.a.window_scales(), (3, 7));
    assert_eq!(s.b.window_scales(), (7, 3));
    assert!(s.a.sack_enabled() && s.b.sack_enabled());
    // Both offered timestamps too: 12 bytes of every segment are the option.
    assert!(s.a.timestamps_agreed() && s.b.timestamps_agreed());
    assert_eq!(s.a.mss(), 1448);
}

#[test]
fn a_syn_without_mss_option_means_536() {
    let mut b = Connection::listen(
        Config {
            mss: 1460,
            ..Config::default()
        },
        80,
        SeqNum(1),
    );
    let syn = Segment {
        src_port: 4000,
        dst_port: 80,
        seq: SeqNum(100),
        flags: Flags::SYN,
        window: 8192,
        ..Default::default()
    };
    b.handle_segment(Instant::ZERO, &syn);
    let syn_ack = b.poll_transmit(Instant::ZERO).unwrap();
    assert_eq!(syn_ack.dst_port, 4000);
    assert_eq!(syn_ack.mss, Some(1460), "offers its own");
    assert_eq!(b.mss(), 536, "but sends no more than RFC 1122's default");
}

#[test]
fn a_lost_syn_is_sent_again_after_the_initial_timeout() {
    let (ab, ba) = clean(ms(10));
    let a = Config {
        rto: RtoConfig::BSD,
        ..Config::default()
    };
    let mut s = pair(a, Config::default(), ab, ba);
    let mut dropped = false;
    s.drop_if = Box::new(move |d, seg| {
        let drop = d == Dir::AtoB && seg.has(Flags::SYN) && !dropped;
        dropped |= drop;
        drop
    });
    s.run_until(at_ms(5000), |_| {});
    let syns: Vec<Instant> = s
        .trace
        .iter()
        .filter(|(_, d, seg)| *d == Dir::AtoB && seg.has(Flags::SYN))
        .map(|x| x.0)
        .collect();
    // 4.4BSD: 3 s before any sample, counted in 500 ms ticks from t = 0.
    assert_eq!(syns, vec![at_ms(0), at_ms(3000)]);
    assert_eq!(s.a.state(), State::Established);
    assert_eq!(s.a.stats().timeouts, 1);
    assert_eq!(s.a.srtt(), None, "Karn: no sample from a retransmitted SYN");
}

#[test]
fn a_closed_port_refuses_with_a_reset() {
    let (ab, ba) = clean(ms(1));
    let mut s = pair(Config::default(), Config::default(), ab, ba);
    s.b.close(); // the listener goes away: closed
    s.run_until(at_ms(100), |_| {});
    assert_eq!(s.b.state(), State::Closed);
    assert_eq!(s.a.state(), State::Closed);
    assert_eq!(s.a.error(), Some(Error::Refused));
    let rst = s.trace[1].2;
    assert!(rst.has(Flags::RST) && rst.has(Flags::ACK));
}
