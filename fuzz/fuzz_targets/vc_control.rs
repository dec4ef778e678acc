//! The connection manager's control channel (`weft_model::vc::wire`, `weft_emu::vc_control`)
//! reads frames from a socket anyone on the machine may connect to: any bytes must parse to one
//! message or return an error, never panic; a message that parses must emit to the same bytes
//! (the encoding is canonical) and, sealed by one end of a keyed channel, open at the other to
//! the same message; any bytes opened as a tagged frame give an error or a message, never a
//! panic. A push that parses installs into a switch (its table and contracts, whatever their
//! terms within the parser's bounds) and a train of cells through each contract is policed or
//! shaped without a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use weft_emu::vc_control::{PROTOCOL, open_frame, seal_frame};
use weft_model::net::{Train, VcSwitch};
use weft_model::vc::Entry;
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
    if let Ok(Msg::Push { entries, contracts }) = Msg::parse(data) {
        // Database ports 0-3 are the switch's ports 0-3.
        let mut sw = VcSwitch::new(4, (0..4).map(|p| (p, p as usize)));
        let _ = sw.install(&entries, &contracts);
        // A table that switches every contract's label back out of its port, so that each
        // train reaches its contract.
        let through: Vec<Entry> = contracts
            .iter()
            .map(|c| {
                let vci = (c.label.vci != 0).then_some(c.label.vci);
                Entry {
                    in_port: c.in_port,
                    in_vpi: c.label.vpi,
                    in_vci: vci,
                    out_port: c.in_port,
                    out_vpi: c.label.vpi,
                    out_vci: vci,
                }
            })
            .collect();
        if sw.install(&through, &contracts).is_ok() {
            for c in &contracts {
                for at in [0, 1_000, u64::from(u32::MAX)] {
                    let mut t = Train::between((), at, at + 9 * 2_830, 10, 0, 0);
                    t.vc = c.label;
                    let _ = sw.route(c.in_port as usize, &mut t);
                }
            }
        }
    }
    let mut rx = key.frames(Role::Server, &[1; 16], &[2; 16], 0);
    let _ = open_frame(Some(&mut rx), data);
    let _ = open_frame(None, data);
});
