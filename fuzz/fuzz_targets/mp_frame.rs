//! Any bytes into the message-passing parsers: the rank frame header and hello payload, the
//! daemon packet header, a daemon's datagram input and its rank-stream input (which must never
//! consume more than it was given), and an mp request body through its checks. None may panic;
//! whatever parses must re-emit to the same bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use weft_model::Instant;
use weft_probe::mp::MpSpec;
use weft_probe::mp::pvmd::packet::PacketHeader;
use weft_probe::mp::pvmd::{CoreConfig, DaemonCore};
use weft_probe::mp::wire::{Header, emit_hello, parse_hello};

fuzz_target!(|data: &[u8]| {
    if let Ok(h) = Header::parse(data) {
        assert_eq!(Header::parse(&h.emit()), Ok(h));
    }
    if let Some((r, d)) = parse_hello(data) {
        assert_eq!(parse_hello(&emit_hello(r, d)), Some((r, d)));
    }
    if let Ok((h, payload)) = PacketHeader::parse(data) {
        let mut again = vec![0u8; data.len()];
        h.emit_into(&mut again);
        again[weft_probe::mp::pvmd::packet::HEADER_LEN..].copy_from_slice(payload);
        assert_eq!(again, data);
    }
    let cfg = CoreConfig {
        me: 0,
        ranks: 3,
        fragment: 2048,
        window: 4,
        give_up: weft_model::Duration::from_secs(1),
        token: 7,
    };
    let mut d = DaemonCore::new(cfg);
    let _ = d.handle_datagram(Instant(1), data);
    if let Ok(used) = d.task_input(data) {
        assert!(used <= data.len());
    }
    d.handle_timeout(Instant(2_000_000_000));
    while d.poll_transmit(Instant(2_000_000_000)).is_some() {}
    if let Ok(spec) = serde_json::from_slice::<MpSpec>(data) {
        let _ = spec.check(1 << 24);
        let _ = spec.digest();
    }
});
