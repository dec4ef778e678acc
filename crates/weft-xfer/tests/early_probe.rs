//! The probe round before `Ready` (protocol 4): the sender's first buffer starts its probe train
//! with the file's offer, and the receiver keeps datagrams that come before their buffer's
//! `Start` (or while the file awaits the driver's answer) until the buffer is granted.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions

use weft_model::{Duration, Instant, Rate};
use weft_xfer::proto::{
    FileMeta, RateMode, Receiver, ReceiverConfig, ReceiverEvent, Sender, SenderConfig, SenderEvent,
};
use weft_xfer::wire::{Control, DataRepr, Mode, RefuseCode};

/// A sender of session 9 with the adaptive controller and a window of `window`, offering one
/// file of `size` bytes in buffers of 100 packets of 1000 bytes.
fn new_sender(window: u32, size: u64, early_probe: bool) -> Sender {
    let cfg = SenderConfig {
        mode: Mode::Reliable,
        packet_size: 1000,
        buffer_size: 100_000,
        window,
        rate: RateMode::Adaptive {
            initial: Rate::mbps(1000),
            min: Rate::mbps(1),
            max: Rate::mbps(10_000),
            loss_threshold_ppm: 20_000,
        },
        stripes: 1,
        burst: Duration::from_micros(20),
        early_probe,
    };
    let file = FileMeta {
        name: "f".into(),
        size,
        hash: [0; 32],
        resume: false,
    };
    Sender::new(cfg, 9, vec![file])
}

/// A sender offering a file of one buffer, the buffer handed to it.
fn sender(early_probe: bool) -> Sender {
    let mut s = new_sender(2, 100_000, early_probe);
    assert_eq!(s.poll_event(), Some(SenderEvent::NeedBuffer { file: 0 }));
    s.provide_buffer(0, Some((0, vec![7; 100_000]))).unwrap();
    s
}

/// The receiver's answers to the offer in `ctl` (what the sender sent): the file accepted and
/// its first buffer granted, at `t`. Returns the buffer.
fn accept_and_grant(s: &mut Sender, ctl: &[Control], t: Instant) -> u32 {
    let buf = ctl
        .iter()
        .find_map(|c| match c {
            Control::Start { buf, .. } => Some(*buf),
            _ => None,
        })
        .unwrap();
    let accept = Control::FileAccept {
        file: 0,
        have: Vec::new(),
    };
    s.handle_control(t, accept).unwrap();
    s.handle_control(t, Control::Ready { buf }).unwrap();
    buf
}

/// Every datagram the sender may send by `until` (the pacer given the time it asks for).
fn datagrams(s: &mut Sender, until: Instant) -> Vec<Vec<u8>> {
    let (mut out, mut now) = (Vec::new(), Instant::ZERO);
    loop {
        let mut d = Vec::new();
        while s.poll_transmit(now, &mut d).is_some() {
            out.push(std::mem::take(&mut d));
        }
        match s.poll_timeout() {
            Some(t) if t <= until => now = t.max(now + Duration::from_micros(1)),
            _ => return out,
        }
    }
}

#[test]
fn the_probe_train_leaves_before_ready_and_a_later_ready_changes_nothing() {
    let mut s = sender(true);
    let train = datagrams(&mut s, Instant(1_000_000_000));
    assert_eq!(train.len(), 64, "the probe round, before any answer");
    let ctl: Vec<Control> = std::iter::from_fn(|| s.poll_control()).collect();
    assert!(
        matches!(
            ctl.last(),
            Some(Control::End {
                round: 0,
                sent: 64,
                ..
            })
        ),
        "{ctl:?}"
    );
    accept_and_grant(&mut s, &ctl, Instant(2_000_000));
    assert!(datagrams(&mut s, Instant(1_000_000_000)).is_empty());
    // Without it (an older receiver), nothing leaves before Ready.
    let mut old = sender(false);
    assert!(datagrams(&mut old, Instant(1_000_000_000)).is_empty());
}

fn receiver() -> Receiver {
    Receiver::new(ReceiverConfig {
        mode: Mode::Reliable,
        session: 9,
        window: 2,
        max_buffer: 1 << 20,
        max_packet: 9000,
        max_file: 1 << 20,
        settle: Duration::from_millis(1),
        arrival_reports: true,
    })
}

/// The sender's probe round (datagrams, then its offer, `Start` and `End`), as a receiver gets
/// it when the datagrams overtake the control messages.
fn probe_round() -> (Vec<Vec<u8>>, Vec<Control>) {
    let mut s = sender(true);
    let train = datagrams(&mut s, Instant(1_000_000_000));
    (train, std::iter::from_fn(|| s.poll_control()).collect())
}

#[test]
fn datagrams_before_their_start_are_kept_until_the_file_is_accepted() {
    let (train, ctl) = probe_round();
    let mut r = receiver();
    let t = Instant::ZERO;
    for d in &train {
        r.handle_datagram(t, d);
    }
    for c in ctl {
        r.handle_control(t, c).unwrap();
    }
    assert_eq!(
        r.poll_control(),
        None,
        "nothing granted before the driver's answer"
    );
    assert!(matches!(
        r.poll_event(),
        Some(ReceiverEvent::Offer { file: 0, .. })
    ));
    r.accept_file(t, 0, Vec::new()).unwrap();
    let answers: Vec<Control> = std::iter::from_fn(|| r.poll_control()).collect();
    assert!(matches!(
        answers[..2],
        [Control::FileAccept { .. }, Control::Ready { .. }]
    ));
    assert_eq!(r.stats().packets_received, 64, "{:?}", r.stats());
    assert_eq!(r.stats().packets_stray, 0);
    // The round's End was held with its Start: once the settle time has passed, the report
    // names only what the sender held back (packets 64 to 100), nothing of the train.
    r.handle_timeout(Instant(2_000_000));
    assert!(
        matches!(r.poll_control(), Some(Control::Nack { missing, .. }) if missing == vec![(64, 100)])
    );
}

/// Datagrams kept early count at the instants they arrived: the probe round's report gives
/// the rate they came at, not the instant they were fed in (all at once: an arrival rate
/// measured four times the path's, on the emulator, had the sender blast at 670 Mbit/s into
/// a 135 Mbit/s path).
#[test]
fn what_came_early_is_timed_as_it_arrived() {
    let (train, ctl) = probe_round();
    let mut r = receiver();
    // 64 datagrams of 1000 bytes, one every 100 us: 80 Mbit/s of payload.
    for (i, d) in train.iter().enumerate() {
        r.handle_datagram(Instant(100_000 * i as u64), d);
    }
    let t = Instant(20_000_000);
    for c in ctl {
        r.handle_control(t, c).unwrap();
    }
    while r.poll_event().is_some() {}
    r.accept_file(t, 0, Vec::new()).unwrap();
    r.handle_timeout(Instant(30_000_000));
    let rx = std::iter::from_fn(|| r.poll_control())
        .find_map(|c| match c {
            Control::Nack { rx_rate, .. } => Some(rx_rate),
            _ => None,
        })
        .unwrap();
    assert!(rx.abs_diff(80_000_000) < 2_000_000, "measured {rx} bit/s");
}

#[test]
fn a_refused_file_drops_what_came_early_and_its_round_end() {
    let (train, ctl) = probe_round();
    let mut r = receiver();
    let t = Instant::ZERO;
    for d in &train[..10] {
        r.handle_datagram(t, d);
    }
    for c in ctl {
        r.handle_control(t, c).unwrap();
    }
    r.reject_file(0, RefuseCode::Exists, "exists".into());
    for d in &train[10..] {
        r.handle_datagram(t, d);
    }
    assert!(matches!(r.poll_control(), Some(Control::FileReject { .. })));
    assert_eq!(r.poll_control(), None);
    assert_eq!(
        (r.stats().packets_received, r.stats().packets_stray),
        (0, 64)
    );
}

#[test]
fn what_is_kept_early_is_bounded() {
    let mut r = receiver();
    let t = Instant::ZERO;
    // 300 datagrams of 1000 bytes for buffers never started: at most 128 are kept.
    for i in 0..300u32 {
        let mut d = Vec::new();
        DataRepr {
            session: 9,
            buffer: 5 + i % 3,
            offset: 1000 * (i / 3),
        }
        .emit(&[1; 1000], &mut d);
        r.handle_datagram(t, &d);
    }
    assert_eq!(r.stats().packets_stray, 300 - 128);
}

/// Asks for buffers as the sender wants them (each a buffer of the file, in order), and says how
/// many it asked for.
fn hand_buffers(s: &mut Sender, next: &mut u32) -> u32 {
    let mut n = 0;
    while let Some(e) = s.poll_event() {
        if e == (SenderEvent::NeedBuffer { file: 0 }) {
            s.provide_buffer(0, Some((*next, vec![7; 100_000])))
                .unwrap();
            *next += 1;
            n += 1;
        }
    }
    n
}

/// A probe train that found a bottleneck is short, and a stall on the way can make it measure
/// the path at twice its rate: until a round of a whole buffer has reported (here the rest of
/// the probe buffer), the sender keeps two buffers in flight, not its window of eight (on the
/// emulator a train measured at four times the path had eight buffers blasted into it).
#[test]
fn after_a_train_that_found_a_bottleneck_two_buffers_fly_until_a_whole_round_confirms() {
    let mut s = new_sender(8, 2_000_000, true);
    let mut next = 0;
    assert_eq!(
        hand_buffers(&mut s, &mut next),
        1,
        "one buffer while probing"
    );
    let train = datagrams(&mut s, Instant(1_000_000_000));
    assert_eq!(train.len(), 64);
    let ctl: Vec<Control> = std::iter::from_fn(|| s.poll_control()).collect();
    let t = Instant(10_000_000);
    let buf = accept_and_grant(&mut s, &ctl, t);
    // The train came at 100 Mbit/s (by the kernel's clock too): a bottleneck.
    let nack = |round, rx_rate, missing| Control::Nack {
        buf,
        round,
        rx_rate,
        drops: 0,
        missing,
        arrival_rate: Some(rx_rate),
    };
    s.handle_control(t, nack(0, 100_000_000, vec![(64, 100)]))
        .unwrap();
    assert_eq!(hand_buffers(&mut s, &mut next), 1, "two in flight");
    // The rest of the probe buffer goes out and reports: the window opens.
    let mut now = t;
    loop {
        let mut d = Vec::new();
        while s.poll_transmit(now, &mut d).is_some() {
            d.clear();
        }
        let ended = std::iter::from_fn(|| s.poll_control())
            .any(|c| matches!(c, Control::End { buf: b, round: 1, .. } if b == buf));
        if ended {
            break;
        }
        now = s
            .poll_timeout()
            .unwrap()
            .max(now + Duration::from_micros(1));
    }
    s.handle_control(now, nack(1, 100_000_000, vec![(99, 100)]))
        .unwrap();
    assert_eq!(hand_buffers(&mut s, &mut next), 6, "the window of eight");
}
