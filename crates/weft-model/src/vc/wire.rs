//! The connection manager's control messages as bytes, sans-IO: what a switch and its manager
//! say to each other (the handshake that proves the key, the switch's hello, the manager's push
//! of a whole table, the switch's acknowledgement). The bytes come from the network and are
//! untrusted: [`Msg::parse`] returns an error for anything that is not exactly one message, and
//! never panics (fuzzed: `fuzz/fuzz_targets/vc_control.rs`).
//!
//! A message is a version byte ([`VERSION`]), a type byte and its body; integers are big-endian.
//! On a stream each message travels in a frame (a 4-byte big-endian length, then the message,
//! then, after the handshake, a 16-byte tag: `weft_gate::auth::FrameAuth`); the length is
//! checked against [`MAX_MESSAGE`] before anything is read. The authentication is the agents'
//! (`weft_gate::auth`): the switch (the side that connects) sends a nonce, the manager a nonce,
//! the switch its MAC over both, the manager its own; every message after that is tagged.
//!
//! ```text
//! switch                                    manager
//!   | -- AuthHello { nonce } ------------------> |
//!   | <---------------- AuthChallenge { nonce } |
//!   | -- AuthProof { mac } --------------------> |
//!   | <------------------------- AuthOk { mac } |
//!   | -- Hello { switch, held } (tagged) ------> |
//!   | <----------------- Push { entries } ----- |   only if `held` is not its whole table
//!   | -- Ack { held } -------------------------> |
//! ```

use super::plan::Entry;

/// The protocol's version, the first byte of every message.
pub const VERSION: u8 = 1;

/// The largest message accepted, bytes (a push of 65536 entries; the length prefix of a frame
/// is checked against it before its bytes are read).
pub const MAX_MESSAGE: usize = 2 + 4 + 65_536 * ENTRY_LEN;

/// Bytes of one entry on the wire.
pub const ENTRY_LEN: usize = 16;

/// The longest switch name, bytes.
pub const MAX_NAME: usize = 255;

/// One control message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Msg {
    /// Switch -> manager: opens the handshake with the switch's random nonce.
    AuthHello {
        /// 16 random bytes.
        nonce: [u8; 16],
    },
    /// Manager -> switch: its own random nonce.
    AuthChallenge {
        /// 16 random bytes.
        nonce: [u8; 16],
    },
    /// Switch -> manager: its MAC over both nonces (it proves the key first).
    AuthProof {
        /// The MAC.
        mac: [u8; 32],
    },
    /// Manager -> switch: its MAC over both nonces.
    AuthOk {
        /// The MAC.
        mac: [u8; 32],
    },
    /// Switch -> manager: which switch this is, and how many entries its table holds now (0
    /// after a restart or after it lost its manager).
    Hello {
        /// The switch's name in the plan.
        switch: String,
        /// Entries it holds.
        held: u32,
    },
    /// Manager -> switch: its whole table, in place of whatever it holds.
    Push {
        /// The entries, in the database's port numbers.
        entries: Vec<Entry>,
    },
    /// Switch -> manager: the table is installed and holds `held` entries.
    Ack {
        /// Entries it holds.
        held: u32,
    },
}

/// Why bytes are not a message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// Fewer bytes than the message needs.
    #[error("truncated message ({0})")]
    Truncated(&'static str),
    /// Bytes after the message's end.
    #[error("{0} bytes after the end of the message")]
    Trailing(usize),
    /// Another version of the protocol.
    #[error("protocol version {0}, expected {VERSION}")]
    Version(u8),
    /// A type this version does not have.
    #[error("unknown message type {0}")]
    Type(u8),
    /// Longer than [`MAX_MESSAGE`].
    #[error("message of {0} bytes, more than {MAX_MESSAGE}")]
    TooLong(usize),
    /// A field with a value it cannot have.
    #[error("bad field: {0}")]
    Field(&'static str),
}

const T_AUTH_HELLO: u8 = 1;
const T_AUTH_CHALLENGE: u8 = 2;
const T_AUTH_PROOF: u8 = 3;
const T_AUTH_OK: u8 = 4;
const T_HELLO: u8 = 5;
const T_PUSH: u8 = 6;
const T_ACK: u8 = 7;

impl Msg {
    /// The message's bytes (version, type, body).
    pub fn emit(&self) -> Vec<u8> {
        let mut out = vec![VERSION];
        match self {
            Msg::AuthHello { nonce } => {
                out.push(T_AUTH_HELLO);
                out.extend_from_slice(nonce);
            }
            Msg::AuthChallenge { nonce } => {
                out.push(T_AUTH_CHALLENGE);
                out.extend_from_slice(nonce);
            }
            Msg::AuthProof { mac } => {
                out.push(T_AUTH_PROOF);
                out.extend_from_slice(mac);
            }
            Msg::AuthOk { mac } => {
                out.push(T_AUTH_OK);
                out.extend_from_slice(mac);
            }
            Msg::Hello { switch, held } => {
                out.push(T_HELLO);
                // Names longer than MAX_NAME are cut at a character boundary.
                let mut n = switch.len().min(MAX_NAME);
                while !switch.is_char_boundary(n) {
                    n -= 1;
                }
                out.push(n as u8);
                out.extend_from_slice(&switch.as_bytes()[..n]);
                out.extend_from_slice(&held.to_be_bytes());
            }
            Msg::Push { entries } => {
                out.push(T_PUSH);
                out.extend_from_slice(&(entries.len() as u32).to_be_bytes());
                for e in entries {
                    out.extend_from_slice(&e.in_port.to_be_bytes());
                    out.push(e.in_vpi);
                    put_vci(&mut out, e.in_vci);
                    out.extend_from_slice(&e.out_port.to_be_bytes());
                    out.push(e.out_vpi);
                    put_vci(&mut out, e.out_vci);
                }
            }
            Msg::Ack { held } => {
                out.push(T_ACK);
                out.extend_from_slice(&held.to_be_bytes());
            }
        }
        out
    }

    /// The message `b` holds, all of it; an error for anything else.
    pub fn parse(b: &[u8]) -> Result<Msg, WireError> {
        if b.len() > MAX_MESSAGE {
            return Err(WireError::TooLong(b.len()));
        }
        let mut r = Reader(b);
        let v = r.u8("version")?;
        if v != VERSION {
            return Err(WireError::Version(v));
        }
        let m = match r.u8("type")? {
            T_AUTH_HELLO => Msg::AuthHello {
                nonce: r.array("nonce")?,
            },
            T_AUTH_CHALLENGE => Msg::AuthChallenge {
                nonce: r.array("nonce")?,
            },
            T_AUTH_PROOF => Msg::AuthProof {
                mac: r.array("mac")?,
            },
            T_AUTH_OK => Msg::AuthOk {
                mac: r.array("mac")?,
            },
            T_HELLO => {
                let n = r.u8("name length")? as usize;
                let name = r.take(n, "switch name")?;
                let switch = std::str::from_utf8(name)
                    .map_err(|_| WireError::Field("switch name is not UTF-8"))?
                    .to_owned();
                Msg::Hello {
                    switch,
                    held: r.u32("held")?,
                }
            }
            T_PUSH => {
                let n = r.u32("entry count")? as usize;
                // The count must match the bytes that follow before anything is allocated.
                if r.0.len() != n.saturating_mul(ENTRY_LEN) {
                    return Err(WireError::Field(
                        "entry count does not match the message length",
                    ));
                }
                let mut entries = Vec::with_capacity(n);
                for _ in 0..n {
                    entries.push(Entry {
                        in_port: r.u32("in port")?,
                        in_vpi: r.u8("in VPI")?,
                        in_vci: r.vci()?,
                        out_port: r.u32("out port")?,
                        out_vpi: r.u8("out VPI")?,
                        out_vci: r.vci()?,
                    });
                }
                Msg::Push { entries }
            }
            T_ACK => Msg::Ack {
                held: r.u32("held")?,
            },
            t => return Err(WireError::Type(t)),
        };
        if !r.0.is_empty() {
            return Err(WireError::Trailing(r.0.len()));
        }
        Ok(m)
    }
}

/// A VCI as a flag byte (0: none, a path entry; 1: the VCI follows) and two bytes.
fn put_vci(out: &mut Vec<u8>, vci: Option<u16>) {
    out.push(u8::from(vci.is_some()));
    out.extend_from_slice(&vci.unwrap_or(0).to_be_bytes());
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], WireError> {
        if self.0.len() < n {
            return Err(WireError::Truncated(what));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], WireError> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N, what)?);
        Ok(a)
    }

    fn u8(&mut self, what: &'static str) -> Result<u8, WireError> {
        Ok(self.array::<1>(what)?[0])
    }

    fn u32(&mut self, what: &'static str) -> Result<u32, WireError> {
        Ok(u32::from_be_bytes(self.array(what)?))
    }

    fn vci(&mut self) -> Result<Option<u16>, WireError> {
        let flag = self.u8("VCI flag")?;
        let v = u16::from_be_bytes(self.array("VCI")?);
        match (flag, v) {
            (0, 0) => Ok(None),
            (1, v) => Ok(Some(v)),
            _ => Err(WireError::Field("VCI flag is neither 0 (with VCI 0) nor 1")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(vci: Option<u16>) -> Entry {
        Entry {
            in_port: 3,
            in_vpi: 0,
            in_vci: vci,
            out_port: 70_000,
            out_vpi: 9,
            out_vci: vci.map(|v| v + 1),
        }
    }

    fn all() -> Vec<Msg> {
        vec![
            Msg::AuthHello { nonce: [1; 16] },
            Msg::AuthChallenge { nonce: [2; 16] },
            Msg::AuthProof { mac: [3; 32] },
            Msg::AuthOk { mac: [4; 32] },
            Msg::Hello {
                switch: "asx2".into(),
                held: 7,
            },
            Msg::Push {
                entries: vec![entry(Some(138)), entry(None)],
            },
            Msg::Push { entries: vec![] },
            Msg::Ack { held: 2 },
        ]
    }

    #[test]
    fn every_message_parses_back_to_itself() {
        for m in all() {
            assert_eq!(Msg::parse(&m.emit()), Ok(m.clone()), "{m:?}");
        }
        let push = Msg::Push {
            entries: vec![entry(Some(138))],
        }
        .emit();
        assert_eq!(push.len(), 2 + 4 + ENTRY_LEN);
    }

    #[test]
    fn every_cut_and_every_extra_byte_is_refused() {
        for m in all() {
            let b = m.emit();
            for n in 0..b.len() {
                assert!(Msg::parse(&b[..n]).is_err(), "{m:?} cut at {n}");
            }
            let mut longer = b.clone();
            longer.push(0);
            let want = match m {
                // A push's count no longer matches its length.
                Msg::Push { .. } => Err(WireError::Field(
                    "entry count does not match the message length",
                )),
                _ => Err(WireError::Trailing(1)),
            };
            assert_eq!(Msg::parse(&longer), want, "{m:?}");
        }
    }

    #[test]
    fn wrong_version_type_count_flag_and_name_are_errors() {
        let mut b = Msg::Ack { held: 1 }.emit();
        b[0] = 2;
        assert_eq!(Msg::parse(&b), Err(WireError::Version(2)));
        assert_eq!(Msg::parse(&[VERSION, 99]), Err(WireError::Type(99)));
        // A count of 2^32 - 1 entries with none behind it: refused before allocating.
        assert!(matches!(
            Msg::parse(&[VERSION, T_PUSH, 255, 255, 255, 255]),
            Err(WireError::Field(_))
        ));
        let mut p = Msg::Push {
            entries: vec![entry(None)],
        }
        .emit();
        p[2 + 4 + 5] = 2; // the in-VCI flag
        assert!(matches!(Msg::parse(&p), Err(WireError::Field(_))));
        let mut h = Msg::Hello {
            switch: "ab".into(),
            held: 0,
        }
        .emit();
        h[3] = 0xff;
        assert!(matches!(Msg::parse(&h), Err(WireError::Field(_))));
        assert_eq!(
            Msg::parse(&vec![VERSION; MAX_MESSAGE + 1]),
            Err(WireError::TooLong(MAX_MESSAGE + 1))
        );
    }

    #[test]
    fn a_long_name_is_cut_at_a_character() {
        let m = Msg::Hello {
            switch: "é".repeat(200),
            held: 0,
        };
        let Ok(Msg::Hello { switch, .. }) = Msg::parse(&m.emit()) else {
            panic!("does not parse")
        };
        assert_eq!(switch, "é".repeat(127));
    }
}
