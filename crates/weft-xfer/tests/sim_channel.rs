//! The protocol core over a deterministic simulated network in virtual time (the harness is in
//! `harness/`): reliable delivery, SBTP and MBTP loss accounting, pipelining, rate control over
//! a lossy bottleneck, and the receiver's and sender's answers to hand-made messages.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions

mod harness;

use harness::{ChannelCfg, Outcome, adaptive_from_1gbps, cfg, data, fresh_meta, lossy, run};
use proptest::prelude::*;
use weft_model::{Duration, Instant, Rate};
use weft_xfer::proto::{
    RateMode, Receiver, ReceiverConfig, ReceiverEvent, Sender, SenderEvent, buffers_in,
};
use weft_xfer::wire::{Control, Mode};

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, .. ProptestConfig::default() })]

    /// Reliable mode delivers every byte exactly at 0, 1, 5 and 20% loss with 2% duplication and
    /// reordering (up to 2 ms of jitter on 5 ms), fixed or adaptive rate, several files.
    #[test]
    fn reliable_delivers_every_byte(
        loss in prop::sample::select(vec![0u64, 10_000, 50_000, 200_000]),
        sizes in prop::collection::vec(0usize..300_000, 1..4),
        packet in 500u32..3000,
        buffers in 2u32..90,
        window in 1u32..5,
        adaptive in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let files: Vec<Vec<u8>> = sizes.iter().enumerate().map(|(i, n)| data(*n, seed ^ i as u64)).collect();
        let rate = if adaptive {
            RateMode::Adaptive { initial: Rate::mbps(50), min: Rate::mbps(1), max: Rate::mbps(500), loss_threshold_ppm: 300_000 }
        } else {
            RateMode::Fixed(Rate::mbps(100))
        };
        let o = run(Mode::Reliable, &files, 1, cfg(Mode::Reliable, packet, packet * buffers, window, rate), lossy(loss), seed);
        prop_assert_eq!(&o.files, &files);
        prop_assert!(o.oks.iter().all(|k| *k));
        let ss = o.senders[0].stats();
        let rs = o.receivers[0].stats();
        prop_assert_eq!(ss.bytes_done, files.iter().map(|f| f.len() as u64).sum::<u64>());
        prop_assert_eq!(rs.packets_lost, 0);
        prop_assert_eq!(rs.hash_failures, 0);
        // Every datagram sent was either kept once, or counted as a duplicate, or lost/stray.
        prop_assert!(rs.packets_received <= ss.packets_sent);
        if loss == 0 {
            prop_assert_eq!(ss.packets_retransmitted, 0);
        }
    }

    /// SBTP: loss accounting is exact (lost = datagrams the channel dropped with no copy
    /// delivered), lost ranges are zero-filled and every other byte is right.
    #[test]
    fn sbtp_loss_accounting_is_exact(
        loss in prop::sample::select(vec![0u64, 10_000, 50_000, 200_000]),
        size in 1usize..400_000,
        packet in 500u32..9000,
        seed in any::<u64>(),
    ) {
        let files = vec![data(size, seed)];
        let o = run(Mode::Sbtp, &files, 1, cfg(Mode::Sbtp, packet, packet * 7, 1, RateMode::Unlimited), lossy(loss), seed);
        check_unreliable(&o, &files, packet)?;
    }

    /// MBTP with three receiver sessions sharing one file: exact loss accounting as for SBTP, and
    /// every buffer went to exactly one session.
    #[test]
    fn mbtp_loss_accounting_is_exact(
        loss in prop::sample::select(vec![0u64, 50_000, 200_000]),
        size in 1usize..400_000,
        seed in any::<u64>(),
    ) {
        let files = vec![data(size, seed)];
        let o = run(Mode::Mbtp, &files, 3, cfg(Mode::Mbtp, 1000, 8000, 1, RateMode::Unlimited), lossy(loss), seed);
        check_unreliable(&o, &files, 1000)?;
        let done: u64 = o.senders.iter().map(|s| s.stats().buffers_done).sum();
        prop_assert_eq!(done, buffers_in(size as u64, 8000));
    }
}

fn check_unreliable(o: &Outcome, files: &[Vec<u8>], packet: u32) -> Result<(), TestCaseError> {
    let lost: u64 = o.receivers.iter().map(|r| r.stats().packets_lost).sum();
    let lost_tx: u64 = o.senders.iter().map(|s| s.stats().packets_lost).sum();
    prop_assert_eq!(lost, o.dropped.len() as u64);
    prop_assert_eq!(lost_tx, lost);
    let gap_packets: u64 = o
        .gaps
        .iter()
        .map(|(_, _, a, b)| (b - a).div_ceil(packet) as u64)
        .sum();
    prop_assert_eq!(gap_packets, lost);
    let mut expect = files[0].clone();
    for (_, off, a, b) in &o.gaps {
        for x in &mut expect[*off as usize + *a as usize..*off as usize + *b as usize] {
            *x = 0;
        }
    }
    prop_assert_eq!(&o.files[0], &expect);
    prop_assert!(o.oks[0]);
    Ok(())
}

#[test]
fn pipelining_keeps_the_network_busy() {
    // 8 buffers of 100 kB at 100 Mbit/s: 8 ms of data each; the disk takes 6 ms per buffer. With
    // one buffer in flight (SBTP-like) the sender waits for every write and every round trip;
    // with four it does not.
    let files = vec![data(800_000, 1)];
    let ch = ChannelCfg {
        delay: Duration::from_millis(1),
        ctl_delay: Duration::from_millis(1),
        disk: Duration::from_millis(6),
        ..ChannelCfg::default()
    };
    let rate = RateMode::Fixed(Rate::mbps(100));
    let one = run(
        Mode::Reliable,
        &files,
        1,
        cfg(Mode::Reliable, 1000, 100_000, 1, rate),
        ch,
        7,
    );
    let four = run(
        Mode::Reliable,
        &files,
        1,
        cfg(Mode::Reliable, 1000, 100_000, 4, rate),
        ch,
        7,
    );
    assert_eq!(one.files, files);
    assert_eq!(four.files, files);
    let wire = Rate::mbps(100)
        .time_to_send(weft_model::Size(800 * 1048))
        .as_nanos();
    // Pipelined: within 25% of pure wire time (plus a few round trips); stop-and-wait: well over.
    assert!(
        four.end.as_nanos() < wire + wire / 4 + 10_000_000,
        "{:?} vs {wire}",
        four.end
    );
    assert!(
        one.end.as_nanos() > wire + 8 * 8_000_000,
        "{:?} vs {wire}",
        one.end
    );
}

/// A reliable receiver of session 9 granting `window` buffers, of files and buffers up to 1 MiB,
/// for a sender of protocol 5 (`arrival_reports`) or older.
fn receiver_for(window: u32, arrival_reports: bool) -> Receiver {
    Receiver::new(ReceiverConfig {
        mode: Mode::Reliable,
        session: 9,
        window,
        max_buffer: 1 << 20,
        max_packet: 9000,
        max_file: 1 << 20,
        settle: Duration::from_millis(1),
        arrival_reports,
    })
}

/// A reliable receiver of session 9 for a sender of protocol 5, granting `window` buffers.
fn reliable_receiver(window: u32) -> Receiver {
    receiver_for(window, true)
}

/// A reliable receiver of session 9 granting `window` buffers, that has accepted file 0 (10
/// bytes in one buffer of two 5-byte packets) and been told to expect buffer 0, "0123456789".
fn one_buffer_receiver(window: u32) -> Receiver {
    expecting_one_buffer(reliable_receiver(window))
}

/// `r` once it has accepted file 0 and been told to expect buffer 0 (see above).
fn expecting_one_buffer(mut r: Receiver) -> Receiver {
    let t = Instant::ZERO;
    r.handle_control(
        t,
        Control::FileOffer {
            file: 0,
            size: 10,
            buffer_size: 10,
            packet_size: 5,
            resume: false,
            hash: [0; 32],
            name: "x".into(),
        },
    )
    .unwrap();
    r.accept_file(Instant::ZERO, 0, Vec::new()).unwrap();
    r.handle_control(
        t,
        Control::Start {
            buf: 0,
            file: 0,
            index: 0,
            size: 10,
            packet_size: 5,
            hash: *blake3::hash(b"0123456789").as_bytes(),
        },
    )
    .unwrap();
    r
}

/// A data datagram of `session` for `buffer` at byte `offset`, carrying `payload`.
fn dg(session: u64, buffer: u32, offset: u32, payload: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    weft_xfer::wire::DataRepr {
        session,
        buffer,
        offset,
    }
    .emit(payload, &mut v);
    v
}

#[test]
fn datagrams_of_another_session_or_buffer_are_ignored() {
    let mut r = one_buffer_receiver(2);
    let t = Instant::ZERO;
    r.handle_datagram(t, &dg(8, 0, 0, b"01234"));
    r.handle_datagram(t, &dg(9, 0, 3, b"34567"));
    r.handle_datagram(t, &dg(9, 0, 5, b"567"));
    r.handle_datagram(t, b"garbage");
    let s = r.stats().clone();
    assert_eq!(
        (s.packets_received, s.packets_stray, s.packets_bad),
        (0, 1, 3)
    );
    r.handle_datagram(t, &dg(9, 0, 0, b"01234"));
    r.handle_datagram(t, &dg(9, 0, 0, b"01234"));
    r.handle_datagram(t, &dg(9, 0, 5, b"56789"));
    assert_eq!((r.stats().packets_received, r.stats().packets_dup), (2, 1));
    // Protocol violations are errors, not panics.
    assert!(r.handle_control(t, Control::Ready { buf: 0 }).is_err());
    assert!(
        r.handle_control(
            t,
            Control::End {
                buf: 77,
                round: 0,
                sent: 1
            }
        )
        .is_err()
    );
}

#[test]
fn adaptive_rate_fills_a_lossy_long_bottleneck() {
    // The benchmark's path in simulation: the AAL5 payload rate of OC-3c (135.63 Mbit/s), 17 ms
    // round trip, 1% random loss, a drop-tail queue of 256 KiB; the sender starts at 1 Gbit/s.
    let aal5 = Rate::bps(135_630_000);
    let files = vec![data(64 << 20, 11)];
    let ch = ChannelCfg {
        loss_ppm: 10_000,
        delay: Duration::from_micros(8_500),
        ctl_delay: Duration::from_micros(8_500),
        disk: Duration::from_millis(2),
        bottleneck: Some((aal5, 256 << 10)),
        ..ChannelCfg::default()
    };
    let rate = adaptive_from_1gbps();
    let o = run(
        Mode::Reliable,
        &files,
        1,
        cfg(Mode::Reliable, 8952, 4 << 20, 4, rate),
        ch,
        3,
    );
    assert_eq!(o.files, files);
    assert!(o.oks[0]);
    let goodput = Rate::from_bytes_over(64 << 20, o.end - Instant::ZERO);
    let share = goodput.as_bps() as f64 / aal5.as_bps() as f64;
    eprintln!(
        "simulated goodput {goodput:?} = {:.1}% of the AAL5 payload rate",
        share * 100.0
    );
    // Target of the issue: >= 90% of the AAL5 payload rate; this run gives 96-97% (headers,
    // set-up, the probe/drain cycle and the last buffer's recovery round cost the rest).
    assert!(
        share >= 0.94,
        "goodput {:.1}% of the bottleneck",
        share * 100.0
    );
}

/// The report says when the round reached the host (the arrival instants the driver passes)
/// apart from when it was read, to a sender of protocol 5; an older sender's report has only
/// the read rate (its format has no room for more).
#[test]
fn reports_carry_the_arrival_rate_to_senders_of_protocol_5() {
    for v5 in [true, false] {
        let mut r = expecting_one_buffer(receiver_for(1, v5));
        while r.poll_control().is_some() {}
        while r.poll_event().is_some() {}
        // Both read at 10 ms (the receiver was late), having arrived 1 ms apart.
        let read = Instant(10_000_000);
        r.handle_datagram_at(read, Some(Instant(0)), &dg(9, 0, 0, b"01234"));
        r.handle_datagram_at(read, Some(Instant(1_000_000)), &dg(9, 0, 5, b"56789"));
        let end = Control::End {
            buf: 0,
            round: 0,
            sent: 2,
        };
        r.handle_control(read, end).unwrap();
        let Some(ReceiverEvent::Write { seq, .. }) = r.poll_event() else {
            panic!("the buffer is complete")
        };
        r.buffer_written(seq);
        let Some(Control::Done {
            rx_rate,
            arrival_rate,
            ..
        }) = r.poll_control()
        else {
            panic!("Done")
        };
        // 5 bytes (the second datagram's) in 1 ms; read at one instant, the read rate is unknown.
        assert_eq!(rx_rate, 0);
        assert_eq!(arrival_rate, v5.then_some(40_000));
    }
}

#[test]
fn a_buffer_failing_its_hash_is_received_again_and_done_waits_for_the_write() {
    let mut r = one_buffer_receiver(1);
    let t = Instant::ZERO;
    let h = *blake3::hash(b"0123456789").as_bytes();
    let dg = |offset: u32, p: &[u8]| dg(9, 0, offset, p);
    while r.poll_control().is_some() {}
    while r.poll_event().is_some() {}
    // A flipped byte the UDP checksum missed.
    r.handle_datagram(t, &dg(0, b"01X34"));
    r.handle_datagram(t, &dg(5, b"56789"));
    r.set_socket_drops(3);
    let end = |round| Control::End {
        buf: 0,
        round,
        sent: 2,
    };
    r.handle_control(t, end(0)).unwrap();
    let Some(ReceiverEvent::Write { data, verify, .. }) = r.poll_event() else {
        panic!("a complete buffer is handed out to be checked and written")
    };
    assert_eq!(verify, Some(h));
    assert_ne!(*blake3::hash(&data).as_bytes(), h);
    assert_eq!(r.poll_control(), None, "no Done before the check");
    r.buffer_corrupt(0, data);
    assert_eq!(
        r.poll_control(),
        Some(Control::Nack {
            buf: 0,
            round: 0,
            rx_rate: 0,
            drops: 3,
            missing: vec![(0, 2)],
            arrival_rate: Some(0),
        })
    );
    assert_eq!(r.stats().hash_failures, 1);
    r.handle_datagram(t, &dg(0, b"01234"));
    r.handle_datagram(t, &dg(5, b"56789"));
    r.handle_control(t, end(1)).unwrap();
    let Some(ReceiverEvent::Write {
        seq, data, verify, ..
    }) = r.poll_event()
    else {
        panic!("the buffer again")
    };
    assert_eq!(data, b"0123456789");
    assert_eq!(verify, Some(h));
    assert_eq!(r.poll_control(), None);
    r.buffer_written(seq);
    assert!(matches!(
        r.poll_control(),
        Some(Control::Done {
            buf: 0,
            received: 2,
            lost: 0,
            drops: 0,
            ..
        })
    ));
}

#[test]
fn buffers_pipelined_behind_an_offer_wait_for_the_answer() {
    let rate = RateMode::Fixed(Rate::mbps(100));
    let mut s = Sender::new(
        cfg(Mode::Reliable, 5, 10, 2, rate),
        9,
        vec![fresh_meta("a", 10), fresh_meta("b", 10)],
    );
    let mut r = reliable_receiver(2);
    let t = Instant::ZERO;
    // A fresh file: its buffers are asked for, started and ended before any answer.
    let hand_over = |s: &mut Sender, file: u32| {
        assert_eq!(s.poll_event(), Some(SenderEvent::NeedBuffer { file }));
        s.provide_buffer(file, Some((0, b"0123456789".to_vec())))
            .unwrap();
        assert_eq!(s.poll_event(), Some(SenderEvent::NeedBuffer { file }));
        s.provide_buffer(file, None).unwrap();
        std::iter::from_fn(|| s.poll_control()).collect::<Vec<_>>()
    };
    let sent = hand_over(&mut s, 0);
    let kinds: Vec<&str> = sent
        .iter()
        .map(|c| match c {
            Control::FileOffer { .. } => "offer",
            Control::Start { .. } => "start",
            Control::FileEnd { .. } => "end",
            _ => "other",
        })
        .collect();
    assert_eq!(kinds, ["offer", "start", "end"]);
    // The receiver holds the Start and the FileEnd while the driver decides...
    for c in sent {
        r.handle_control(t, c).unwrap();
    }
    assert!(matches!(
        r.poll_event(),
        Some(ReceiverEvent::Offer { file: 0, .. })
    ));
    assert_eq!(r.poll_control(), None, "no Ready before the answer");
    assert_eq!(r.poll_event(), None, "no FileEnd before the answer");
    // ...and drops them when it refuses the file; the sender drops its buffers and goes on.
    r.reject_file(0, weft_xfer::wire::RefuseCode::Exists, "exists".into());
    let reject = r.poll_control().unwrap();
    assert_eq!(r.poll_control(), None);
    s.handle_control(t, reject).unwrap();
    assert!(matches!(
        s.poll_event(),
        Some(SenderEvent::FileRejected { file: 0, .. })
    ));
    let sent = hand_over(&mut s, 1);
    assert!(
        matches!(sent[0], Control::FileOffer { file: 1, .. }),
        "{sent:?}"
    );
    for c in sent {
        r.handle_control(t, c).unwrap();
    }
    assert!(matches!(
        r.poll_event(),
        Some(ReceiverEvent::Offer { file: 1, .. })
    ));
    // Accepted: the held Start is granted, and the FileEnd waits for the buffer.
    r.accept_file(t, 1, Vec::new()).unwrap();
    assert!(matches!(
        r.poll_control(),
        Some(Control::FileAccept { file: 1, .. })
    ));
    assert!(matches!(r.poll_control(), Some(Control::Ready { .. })));
    assert_eq!(r.poll_event(), None);
}

#[test]
fn no_more_than_a_window_of_starts_is_held_before_the_answer() {
    let mut r = reliable_receiver(2);
    let t = Instant::ZERO;
    let offer = Control::FileOffer {
        file: 0,
        size: 100,
        buffer_size: 10,
        packet_size: 5,
        resume: false,
        hash: [0; 32],
        name: "x".into(),
    };
    r.handle_control(t, offer).unwrap();
    let start = |buf: u32| Control::Start {
        buf,
        file: 0,
        index: buf,
        size: 10,
        packet_size: 5,
        hash: [0; 32],
    };
    // The window, and the file's end, are held; one more Start is a protocol error.
    for buf in 0..2 {
        r.handle_control(t, start(buf)).unwrap();
    }
    r.handle_control(
        t,
        Control::FileEnd {
            file: 0,
            digest: [0; 32],
        },
    )
    .unwrap();
    assert!(r.handle_control(t, start(2)).is_err());
}

#[test]
fn an_accept_claiming_buffers_of_a_fresh_file_is_refused() {
    let rate = RateMode::Fixed(Rate::mbps(100));
    let mut s = Sender::new(
        cfg(Mode::Reliable, 5, 10, 2, rate),
        9,
        vec![fresh_meta("a", 10)],
    );
    assert_eq!(s.poll_event(), Some(SenderEvent::NeedBuffer { file: 0 }));
    let accept = Control::FileAccept {
        file: 0,
        have: vec![(0, 1)],
    };
    assert!(s.handle_control(Instant::ZERO, accept).is_err());
}

#[test]
fn the_probe_round_is_a_short_train_of_small_or_large_datagrams() {
    // (payload bytes per datagram, datagrams in the first buffer's probe round)
    for (packet, want) in [(1000u32, 64u32), (9132, 64), (40_000, 16), (65_000, 16)] {
        let size = 100 * packet as u64;
        let mut s = Sender::new(
            cfg(
                Mode::Reliable,
                packet,
                size as u32,
                2,
                adaptive_from_1gbps(),
            ),
            9,
            vec![fresh_meta("a", size)],
        );
        let t = Instant::ZERO;
        assert_eq!(s.poll_event(), Some(SenderEvent::NeedBuffer { file: 0 }));
        s.provide_buffer(0, Some((0, vec![7u8; size as usize])))
            .unwrap();
        let accept = Control::FileAccept {
            file: 0,
            have: Vec::new(),
        };
        s.handle_control(t, accept).unwrap();
        let buf = std::iter::from_fn(|| s.poll_control())
            .find_map(|c| match c {
                Control::Start { buf, .. } => Some(buf),
                _ => None,
            })
            .unwrap();
        s.handle_control(t, Control::Ready { buf }).unwrap();
        // Send until the round's End: the pacer is given all the time it asks for.
        let (mut sent, mut now, mut out) = (0u32, t, Vec::new());
        let end = loop {
            while s.poll_transmit(now, &mut out).is_some() {
                out.clear();
                sent += 1;
            }
            if let Some(c) =
                std::iter::from_fn(|| s.poll_control()).find(|c| matches!(c, Control::End { .. }))
            {
                break c;
            }
            now = s
                .poll_timeout()
                .unwrap()
                .max(now + Duration::from_micros(1));
        };
        assert_eq!(sent, want, "packet size {packet}");
        assert!(
            matches!(end, Control::End { round: 0, sent: n, .. } if n == want),
            "{end:?}"
        );
    }
}
