use super::*;
use crate::time::Duration;

const RTO: Duration = Duration::from_millis(1);

fn data(flow: u32, seq: u32, packets: u32) -> Packet {
    Packet {
        flow,
        kind: Kind::Data {
            seq,
            len: 1000,
            packets,
        },
    }
}

/// Everything `s` sends at `now`: the packets' numbers.
fn sends(s: &mut Sender, now: u64) -> Vec<u32> {
    let mut v = Vec::new();
    while let Some(p) = s.poll_transmit(now) {
        match p.kind {
            Kind::Data { seq, .. } => v.push(seq),
            k => panic!("a sender sent {k:?}"),
        }
    }
    v
}

fn pull(flow: u32, count: u64) -> Packet {
    Packet {
        flow,
        kind: Kind::Pull { count },
    }
}

#[test]
fn a_sender_sends_its_first_window_then_one_packet_per_pull() {
    let mut s = Sender::new(1, 10_000, 1000, 3, RTO, 0);
    assert_eq!(s.poll_timeout(), Some(0));
    assert_eq!(sends(&mut s, 0), [0, 1, 2]);
    assert_eq!(sends(&mut s, 10), [] as [u32; 0]);
    s.handle(20, &pull(1, 1));
    assert_eq!(sends(&mut s, 20), [3]);
    // Pull 2 was lost: pull 3 makes up for it.
    s.handle(30, &pull(1, 3));
    assert_eq!(sends(&mut s, 30), [4, 5]);
    // An old pull, reordered, grants nothing.
    s.handle(40, &pull(1, 2));
    assert_eq!(sends(&mut s, 40), [] as [u32; 0]);
    // Another flow's pull is not this one's.
    s.handle(50, &pull(2, 9));
    assert_eq!(sends(&mut s, 50), [] as [u32; 0]);
}

#[test]
fn a_nacked_packet_goes_again_on_the_next_pull_before_new_data() {
    let mut s = Sender::new(1, 10_000, 1000, 3, RTO, 0);
    sends(&mut s, 0);
    s.handle(
        5,
        &Packet {
            flow: 1,
            kind: Kind::Nack { seq: 1 },
        },
    );
    s.handle(6, &pull(1, 2));
    assert_eq!(sends(&mut s, 6), [1, 3]);
    assert_eq!((s.stats.nacks, s.stats.retransmitted), (1, 1));
}

#[test]
fn what_is_lost_whole_goes_again_after_the_time_out() {
    let mut s = Sender::new(1, 2_000, 1000, 2, RTO, 0);
    assert_eq!(sends(&mut s, 0), [0, 1]);
    s.handle(
        100,
        &Packet {
            flow: 1,
            kind: Kind::Ack { seq: 0 },
        },
    );
    // Packet 1 and its header were dropped: nothing comes back for it.
    let t = s.poll_timeout().unwrap();
    assert_eq!(t, 100 + RTO.as_nanos());
    s.handle_timeout(t - 1);
    assert_eq!(sends(&mut s, t - 1), [] as [u32; 0]);
    s.handle_timeout(t);
    assert_eq!(sends(&mut s, t), [1]);
    assert_eq!(s.stats.timeouts, 1);
    s.handle(
        t + 100,
        &Packet {
            flow: 1,
            kind: Kind::Ack { seq: 1 },
        },
    );
    assert_eq!(s.done_at(), Some(t + 100));
    assert_eq!(s.poll_timeout(), None);
}

/// Everything `r` sends by `until`, polling at its deadlines: (instant, packet).
fn receiver_out(r: &mut Receiver, until: u64) -> Vec<(u64, Kind)> {
    let mut out = Vec::new();
    while let Some(t) = r.poll_timeout().filter(|&t| t <= until) {
        while let Some(p) = r.poll_transmit(t) {
            out.push((t, p.kind));
        }
    }
    out
}

#[test]
fn a_receiver_acks_at_once_and_paces_its_pulls_one_packet_time_apart() {
    let mut r = Receiver::new(1_000);
    // Four packets of two flows arrive together.
    for (flow, seq) in [(1, 0), (2, 0), (1, 1), (2, 1)] {
        r.handle(0, &data(flow, seq, 10), false);
    }
    let out = receiver_out(&mut r, u64::MAX);
    let acks: Vec<u64> = out
        .iter()
        .filter(|o| matches!(o.1, Kind::Ack { .. }))
        .map(|o| o.0)
        .collect();
    assert_eq!(acks, [0; 4]);
    let pulls: Vec<(u64, Kind)> = out
        .into_iter()
        .filter(|o| matches!(o.1, Kind::Pull { .. }))
        .collect();
    assert_eq!(
        pulls,
        [
            (0, Kind::Pull { count: 1 }),
            (1_000, Kind::Pull { count: 1 }),
            (2_000, Kind::Pull { count: 2 }),
            (3_000, Kind::Pull { count: 2 }),
        ]
    );
}

#[test]
fn a_trimmed_header_is_nacked_and_pulled_for_and_the_flow_completes_once() {
    let mut r = Receiver::new(1_000);
    r.handle(0, &data(1, 0, 2), false);
    r.handle(10, &data(1, 1, 2), true);
    let kinds: Vec<Kind> = receiver_out(&mut r, u64::MAX)
        .into_iter()
        .map(|o| o.1)
        .collect();
    assert_eq!(
        kinds,
        [
            Kind::Ack { seq: 0 },
            Kind::Nack { seq: 1 },
            Kind::Pull { count: 1 },
            Kind::Pull { count: 2 },
        ]
    );
    assert_eq!(r.trimmed, 1);
    assert!(r.done().is_empty());
    r.handle(5_000, &data(1, 1, 2), false);
    // A duplicate does not complete it twice, and a done flow is pulled no more.
    r.handle(6_000, &data(1, 1, 2), false);
    assert_eq!(
        r.done(),
        [FlowDone {
            flow: 1,
            bytes: 2_000,
            at: 5_000
        }]
    );
    let kinds: Vec<Kind> = receiver_out(&mut r, u64::MAX)
        .into_iter()
        .map(|o| o.1)
        .collect();
    assert_eq!(kinds, [Kind::Ack { seq: 1 }, Kind::Ack { seq: 1 }]);
}

#[test]
fn sender_and_receiver_finish_a_flow_through_a_path_that_trims() {
    // One flow of 20 packets; the path trims every third data packet sent and delays
    // everything by 500 ns each way.
    let mut s = Sender::new(7, 20_000, 1000, 4, RTO, 0);
    let mut r = Receiver::new(800);
    let mut to_r: Vec<(u64, Packet, bool)> = Vec::new();
    let mut to_s: Vec<(u64, Packet)> = Vec::new();
    let mut sent = 0u32;
    let mut now = 0;
    while s.done_at().is_none() && now < 1_000_000 {
        s.handle_timeout(now);
        while let Some(p) = s.poll_transmit(now) {
            sent += 1;
            to_r.push((now + 500, p, sent % 3 == 0));
        }
        for (_, p, trimmed) in to_r.iter().filter(|x| x.0 == now) {
            r.handle(now, p, *trimmed);
        }
        while let Some(p) = r.poll_transmit(now) {
            to_s.push((now + 500, p));
        }
        for (_, p) in to_s.iter().filter(|x| x.0 == now) {
            s.handle(now, p);
        }
        now += 1;
    }
    assert!(s.done_at().is_some(), "the flow did not finish");
    assert_eq!(r.done().len(), 1);
    assert_eq!(r.done()[0].bytes, 20_000);
    assert!(s.stats.nacks > 0 && s.stats.nacks == s.stats.retransmitted);
    assert_eq!(s.stats.timeouts, 0);
}
