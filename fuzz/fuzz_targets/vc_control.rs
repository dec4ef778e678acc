//! The connection manager's control channel (`weft_model::vc::wire`, `weft_emu::vc_control`)
//! reads frames from a socket anyone on the machine may connect to: any bytes must parse to one
//! message or return an error, never panic; a message that parses must emit to the same bytes
//! (the encoding is canonical) and, sealed by one end of a keyed channel, open at the other to
//! the same message; any bytes opened as a tagged frame give an error or a message, never a
//! panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use weft_emu::vc_control::{PROTOCOL, open_frame, seal_frame};
use weft_model::vc::wire::Msg;
use weft_probe::auth::{Key, Role};

fuzz_target!(|data: &[u8]| {
    let key = Key::from_derived([3; 32]).for_protocol(PROTOCOL);
    if let Ok(m) = Msg::parse(data) {
        assert_eq!(m.emit(), data, "the encoding is canonical");
        let mut tx = key.frames(Role::Client, &[1; 16], &[2; 16], 0);
        let mut rx = key.frames(Role::Server, &[1; 16], &[2; 16], 0);
        let f = seal_frame(Some(&mut tx), &m);
        assert_eq!(
            open_frame(Some(&mut rx), &f[4..]).expect("a sealed frame opens"),
            m
        );
    }
    let mut rx = key.frames(Role::Server, &[1; 16], &[2; 16], 0);
    let _ = open_frame(Some(&mut rx), data);
    let _ = open_frame(None, data);
});
