//! Any bytes into the control-protocol parsers: the frame view, the message representation
//! (including the relay request and report, types 10 and 11), the stream reader, the data hello
//! and the UDP header. None may panic; whatever parses must re-emit to bytes that parse to the
//! same message, and a relay request goes through the agent's checks without panicking. The tags
//! of protocol 2 (keyed connections): any bytes opened as a tagged frame give an error, never a
//! panic, and a message sealed by one end opens at the other to the same message.
#![no_main]

use libfuzzer_sys::fuzz_target;
use weft_probe::auth::{Key, Role};
use weft_probe::control::{open_tagged, seal_tagged};
use weft_probe::proto::{Frame, Hello, Message, read_message};
use weft_probe::server::Limits;

fuzz_target!(|data: &[u8]| {
    let max = 64 * 1024;
    let f = Frame::new_unchecked(data);
    let _ = (f.magic(), f.version(), f.msg_type(), f.body_len(), f.body());
    if let Ok(m) = Message::parse_bytes(data, max) {
        let again =
            Message::parse_bytes(&m.to_bytes(), u32::MAX).expect("re-emitted message parses");
        assert_eq!(again.msg_type(), m.msg_type());
        // Arbitrary JSON numbers (in `Ext`) may be normalised once (a 70-digit integer becomes
        // the nearest float, printed shorter); after that, with serde_json's exact float
        // parsing (`float_roundtrip`, enabled by weft-probe), emit is a fixpoint.
        let third = Message::parse_bytes(&again.to_bytes(), u32::MAX).expect("parses again");
        assert_eq!(third.to_bytes(), again.to_bytes());
        let key = Key::from_derived([3; 32]);
        let mut tx = key.frames(Role::Client, &[1; 16], &[2; 16], 0);
        let mut rx = key.frames(Role::Server, &[1; 16], &[2; 16], 0);
        let mut sealed = m.to_bytes();
        seal_tagged(&mut tx, &mut sealed);
        open_tagged(&mut rx, &mut sealed).expect("a sealed message opens");
        assert_eq!(sealed, m.to_bytes());
        if let Message::Relay(spec) = &m {
            let _ = weft_probe::relay::agent::check(spec, &Limits::default());
        }
    }
    let mut r = data;
    let mut buf = Vec::new();
    while let Ok(_m) = read_message(&mut r, &mut buf, max) {}
    if let Ok(h) = Hello::parse(data) {
        assert_eq!(Hello::parse(&h.emit()).ok(), Some(h));
    }
    // A tput datagram's header (its number and send time), as the bulk sink reads it.
    for len in [weft_model::app::Tag::STAMPED_LEN, 8, 4] {
        if let Some(t) = weft_model::app::Tag::read(data, len) {
            let mut b = [0u8; weft_model::app::Tag::STAMPED_LEN];
            t.write(&mut b);
            assert_eq!(weft_model::app::Tag::read(&b, len), Some(t));
        }
    }
    let key = Key::from_derived([3; 32]);
    let mut rx = key.frames(Role::Server, &[1; 16], &[2; 16], 0);
    let _ = open_tagged(&mut rx, &mut data.to_vec());
});
