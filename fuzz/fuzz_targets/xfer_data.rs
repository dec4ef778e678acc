//! Data datagrams of weft-xfer: any bytes are either refused by the view or accepted, and a
//! receiver with a buffer open takes any datagram without panicking, keeping its counters whole.
#![no_main]

use libfuzzer_sys::fuzz_target;
use weft_model::{Duration, Instant};
use weft_xfer::proto::{Receiver, ReceiverConfig};
use weft_xfer::wire::{Control, DataPacket, DataRepr, Mode};

fuzz_target!(|data: &[u8]| {
    if let Ok(p) = DataPacket::new_checked(data) {
        let r = DataRepr::parse(&p);
        let mut out = Vec::new();
        r.emit(p.payload(), &mut out);
        assert_eq!(out, data);
    }
    let mut rx = Receiver::new(ReceiverConfig {
        mode: Mode::Sbtp,
        session: 7,
        window: 1,
        max_buffer: 1 << 16,
        max_packet: 1 << 12,
        max_file: 1 << 20,
        settle: Duration::from_millis(1),
        arrival_reports: true,
    });
    let t = Instant(1);
    let offer = Control::FileOffer {
        file: 0,
        size: 700,
        buffer_size: 500,
        packet_size: 64,
        resume: false,
        hash: [0; 32],
        name: "f".into(),
    };
    if rx.handle_control(t, offer).is_err() {
        return;
    }
    if rx.accept_file(t, 0, Vec::new()).is_err() {
        return;
    }
    let start = Control::Start {
        buf: 0,
        file: 0,
        index: 0,
        size: 500,
        packet_size: 64,
        hash: [0; 32],
    };
    if rx.handle_control(t, start).is_err() {
        return;
    }
    // Feed the input as several datagrams, also with the session and buffer forced to match so
    // that the offset and length checks are reached.
    for chunk in data.chunks(97) {
        rx.handle_datagram(t, chunk);
        if chunk.len() >= 20 {
            let mut v = chunk.to_vec();
            v[..4].copy_from_slice(b"WF\x01\x00");
            v[4..12].copy_from_slice(&7u64.to_be_bytes());
            v[12..16].copy_from_slice(&0u32.to_be_bytes());
            // With a kernel arrival instant too, as the driver passes on protocol 5.
            rx.handle_datagram_at(t, Some(t), &v);
        }
    }
    let s = rx.stats();
    assert!(s.packets_received <= 8);
    let _ = rx.handle_control(
        t,
        Control::End {
            buf: 0,
            round: 0,
            sent: 8,
        },
    );
    rx.handle_timeout(Instant(10_000_000));
    while rx.poll_event().is_some() {}
});
