//! Control messages of weft-xfer: any bytes either fail to parse or parse to a message that
//! re-emits to a frame that parses back to the same message; parsed messages fed to the
//! receiver and sender state machines give errors, never panics. The frame tag check of an
//! authenticated channel refuses arbitrary bytes without panicking, and accepts what its peer
//! sealed.
#![no_main]

use libfuzzer_sys::fuzz_target;
use weft_model::{Duration, Instant};
use weft_xfer::auth::{Key, Role};
use weft_xfer::proto::{FileMeta, RateMode, Receiver, ReceiverConfig, Sender, SenderConfig};
use weft_xfer::wire::control::{FRAME_HEADER_LEN, frame_len};
use weft_xfer::wire::{Control, Mode};

fuzz_target!(|data: &[u8]| {
    let _ = frame_len(data);
    let key = Key::from_derived([7; 32]);
    let mut peer = key.frames(Role::Client, &[1; 16], &[2; 16], 3);
    let mut me = key.frames(Role::Server, &[1; 16], &[2; 16], 3);
    let _ = me.clone().open(data);
    let mut rx = Receiver::new(ReceiverConfig {
        mode: Mode::Reliable,
        session: 1,
        window: 2,
        max_buffer: 1 << 16,
        max_packet: 1 << 12,
        max_file: 1 << 20,
        settle: Duration::from_millis(1),
        // Protocol 5: its `Nack` and `Done` carry the arrival rate (message types 21 and 22).
        arrival_reports: true,
    });
    let mut tx = Sender::new(
        SenderConfig {
            mode: Mode::Reliable,
            packet_size: 100,
            buffer_size: 1000,
            window: 2,
            rate: RateMode::Unlimited,
            stripes: 2,
            burst: Duration::ZERO,
            early_probe: true,
        },
        1,
        vec![FileMeta {
            name: "f".into(),
            size: 2500,
            hash: [0; 32],
            resume: false,
        }],
    );
    // The input is a sequence of frames: [len u16][body].
    let mut rest = data;
    let mut t = 0u64;
    while rest.len() >= 2 {
        let n = u16::from_be_bytes([rest[0], rest[1]]) as usize;
        let body = &rest[2..];
        let body = &body[..n.min(body.len())];
        rest = &rest[2 + body.len()..];
        t += 1000;
        if let Ok(m) = Control::parse(body) {
            let mut out = Vec::new();
            m.emit(&mut out);
            assert_eq!(frame_len(&out).ok().flatten(), Some(out.len()));
            assert_eq!(Control::parse(&out[FRAME_HEADER_LEN..]).as_ref(), Ok(&m));
            peer.seal(&mut out, 0);
            let opened = me.open(&out[FRAME_HEADER_LEN..]).map(Control::parse);
            assert_eq!(opened, Ok(Ok(m.clone())));
            let _ = rx.handle_control(Instant(t), m.clone());
            let _ = tx.handle_control(Instant(t), m);
            while rx.poll_event().is_some() {}
            while rx.poll_control().is_some() {}
            rx.handle_timeout(Instant(t));
            let mut buf = Vec::new();
            while tx.poll_transmit(Instant(t), &mut buf).is_some() {
                buf.clear();
            }
        }
    }
});
