//! Any bytes as an IPv4 packet and as a TCP header: parsing must never panic; what parses must
//! emit and parse back to the same segment; and a connection fed the parsed segments (in any
//! state it can reach) must never panic either.
#![no_main]

use libfuzzer_sys::fuzz_target;
use weft_model::Instant;
use weft_model::tcp::ipv4::Ipv4Repr;
use weft_model::tcp::{Config, Connection, Segment, SeqNum};

const A: [u8; 4] = [10, 0, 0, 1];
const B: [u8; 4] = [10, 0, 0, 2];

fuzz_target!(|data: &[u8]| {
    let _ = Ipv4Repr::parse(data);
    let _ = Segment::parse(data, Some((A, B)));
    if let Ok((seg, payload)) = Segment::parse(data, None) {
        let mut buf = vec![0u8; seg.header_len() + payload.len()];
        if let Ok(n) = seg.emit(payload, (A, B), &mut buf) {
            let (back, p) =
                Segment::parse(&buf[..n], Some((A, B))).expect("emitted segment parses");
            let mut expect = seg;
            expect.sack.truncate(seg.sack_blocks_on_wire().unwrap_or(0));
            assert_eq!(back, expect);
            assert_eq!(p, payload);
        }
    }
    // Segments of a length-prefixed stream, fed to a listener and to a connecting end.
    let mut server = Connection::listen(Config::default(), 80, SeqNum(7));
    let mut client = Connection::connect(Config::linux(), 1000, 80, SeqNum(9), Instant::ZERO);
    let mut rest = data;
    let mut now = Instant::ZERO;
    while let Some((&n, tail)) = rest.split_first() {
        let (chunk, tail) = tail.split_at((n as usize).min(tail.len()));
        rest = tail;
        now = Instant(now.0 + 1_000_000 * u64::from(n));
        if let Ok((seg, _)) = Segment::parse(chunk, None) {
            for c in [&mut server, &mut client] {
                c.handle_segment(now, &seg);
                c.send(1000);
                let r = c.readable() as usize;
                c.recv(r);
                while c.poll_transmit(now).is_some() {}
                if c.poll_timeout().is_some_and(|t| t <= now) {
                    c.handle_timeout(now);
                }
            }
        }
    }
});
