//! The connection manager's control messages as bytes, sans-IO: what a switch and its manager
//! say to each other (the handshake that proves the key, the switch's hello, the manager's push
//! of a whole table and the traffic contracts the switch enforces, the switch's acknowledgement). The bytes come from the network and are
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
//!   | -- Hello { switch, held, contracts } ----> |   (tagged from here on)
//!   | <------- Push { entries, contracts } ----- |   only if it lacks any of either
//!   | -- Ack { held, contracts } --------------> |
//! ```

use super::Vc;
use super::contract::PortContract;
use super::plan::Entry;
use crate::shaper::VcContract;
use crate::time::Duration;
use crate::units::Rate;

/// The protocol's version, the first byte of every message (2: pushes carry contracts, hellos
/// and acknowledgements count them).
pub const VERSION: u8 = 2;

/// The most entries, and the most contracts, one push carries.
pub const MAX_ITEMS: usize = 65_536;

/// The largest message accepted, bytes (a push of [`MAX_ITEMS`] entries and as many
/// contracts; the length prefix of a frame is checked against it before its bytes are read).
pub const MAX_MESSAGE: usize = 2 + 4 + MAX_ITEMS * ENTRY_LEN + 4 + MAX_ITEMS * CONTRACT_LEN;

/// Bytes of one entry on the wire.
pub const ENTRY_LEN: usize = 16;

/// Bytes of one contract on the wire: port (4), VPI (1), VCI (2), PCR (8, bit/s), SCR flag and
/// rate (1 + 8), MBS (8, cells), CDVT (8, ns), mode (1).
pub const CONTRACT_LEN: usize = 41;

/// The rates a contract may carry, bit/s (the scenario parser's bounds for `pcr` and `scr`).
pub const RATES: (u64, u64) = (1, 10_000_000_000_000);

/// The most MBS a contract may carry, cells (the scenario parser's bound).
pub const MAX_MBS: u64 = 1 << 32;

/// The most CDVT a contract may carry, ns (an hour, the scenario parser's bound).
pub const MAX_CDVT_NS: u64 = 3_600_000_000_000;

/// A contract's mode byte: police (else shape), tag (with police), PPD (with police, not tag).
const MODE_POLICE: u8 = 1;
const MODE_TAG: u8 = 2;
const MODE_PPD: u8 = 4;

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
    /// Switch -> manager: which switch this is, and how many entries its table holds and
    /// contracts it enforces now (0 and 0 after a restart or after it lost its manager).
    Hello {
        /// The switch's name in the plan.
        switch: String,
        /// Entries it holds.
        held: u32,
        /// Contracts it enforces.
        contracts: u32,
    },
    /// Manager -> switch: its whole table and its contracts, in place of whatever it holds.
    Push {
        /// The entries, in the database's port numbers.
        entries: Vec<Entry>,
        /// The contracts, in the database's port numbers.
        contracts: Vec<PortContract>,
    },
    /// Switch -> manager: the table is installed and holds `held` entries, and it enforces
    /// `contracts` contracts.
    Ack {
        /// Entries it holds.
        held: u32,
        /// Contracts it enforces.
        contracts: u32,
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
            Msg::Hello {
                switch,
                held,
                contracts,
            } => {
                out.push(T_HELLO);
                // Names longer than MAX_NAME are cut at a character boundary.
                let mut n = switch.len().min(MAX_NAME);
                while !switch.is_char_boundary(n) {
                    n -= 1;
                }
                out.push(n as u8);
                out.extend_from_slice(&switch.as_bytes()[..n]);
                out.extend_from_slice(&held.to_be_bytes());
                out.extend_from_slice(&contracts.to_be_bytes());
            }
            Msg::Push { entries, contracts } => {
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
                out.extend_from_slice(&(contracts.len() as u32).to_be_bytes());
                for c in contracts {
                    put_contract(&mut out, c);
                }
            }
            Msg::Ack { held, contracts } => {
                out.push(T_ACK);
                out.extend_from_slice(&held.to_be_bytes());
                out.extend_from_slice(&contracts.to_be_bytes());
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
                    contracts: r.u32("contracts")?,
                }
            }
            T_PUSH => {
                let n = r.u32("entry count")? as usize;
                // The counts must fit the bytes that follow before anything is allocated.
                if n > MAX_ITEMS || r.0.len() < n * ENTRY_LEN + 4 {
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
                let m = r.u32("contract count")? as usize;
                if m > MAX_ITEMS || r.0.len() != m * CONTRACT_LEN {
                    return Err(WireError::Field(
                        "contract count does not match the message length",
                    ));
                }
                let mut contracts = Vec::with_capacity(m);
                for _ in 0..m {
                    contracts.push(r.contract()?);
                }
                Msg::Push { entries, contracts }
            }
            T_ACK => Msg::Ack {
                held: r.u32("held")?,
                contracts: r.u32("contracts")?,
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

/// A contract's [`CONTRACT_LEN`] bytes.
fn put_contract(out: &mut Vec<u8>, c: &PortContract) {
    let k = &c.contract;
    out.extend_from_slice(&c.in_port.to_be_bytes());
    out.push(c.label.vpi);
    out.extend_from_slice(&c.label.vci.to_be_bytes());
    out.extend_from_slice(&k.pcr.as_bps().to_be_bytes());
    out.push(u8::from(k.scr.is_some()));
    out.extend_from_slice(&k.scr.map_or(0, Rate::as_bps).to_be_bytes());
    out.extend_from_slice(&k.mbs.to_be_bytes());
    out.extend_from_slice(&k.cdvt.as_nanos().to_be_bytes());
    let mut mode = 0;
    for (on, bit) in [
        (k.police, MODE_POLICE),
        (k.tag, MODE_TAG),
        (k.ppd, MODE_PPD),
    ] {
        if on {
            mode |= bit;
        }
    }
    out.push(mode);
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

    fn u64(&mut self, what: &'static str) -> Result<u64, WireError> {
        Ok(u64::from_be_bytes(self.array(what)?))
    }

    /// A rate in [`RATES`].
    fn rate(&mut self, what: &'static str) -> Result<Rate, WireError> {
        let r = self.u64(what)?;
        if !(RATES.0..=RATES.1).contains(&r) {
            return Err(WireError::Field("a contract's rate is out of range"));
        }
        Ok(Rate::bps(r))
    }

    fn contract(&mut self) -> Result<PortContract, WireError> {
        let in_port = self.u32("contract port")?;
        let vpi = self.u8("contract VPI")?;
        let vci = u16::from_be_bytes(self.array("contract VCI")?);
        let pcr = self.rate("PCR")?;
        let scr = match self.u8("SCR flag")? {
            0 if self.u64("SCR")? == 0 => None,
            1 => Some(self.rate("SCR")?),
            _ => return Err(WireError::Field("SCR flag is neither 0 (with SCR 0) nor 1")),
        };
        if scr.is_some_and(|s| s > pcr) {
            return Err(WireError::Field("a contract's SCR is above its PCR"));
        }
        let mbs = self.u64("MBS")?;
        if !(1..=MAX_MBS).contains(&mbs) {
            return Err(WireError::Field("a contract's MBS is out of range"));
        }
        let cdvt = self.u64("CDVT")?;
        if cdvt > MAX_CDVT_NS {
            return Err(WireError::Field("a contract's CDVT is out of range"));
        }
        let mode = self.u8("contract mode")?;
        let (police, tag, ppd) = (
            mode & MODE_POLICE != 0,
            mode & MODE_TAG != 0,
            mode & MODE_PPD != 0,
        );
        if mode & !(MODE_POLICE | MODE_TAG | MODE_PPD) != 0
            || ((tag || ppd) && !police)
            || (tag && ppd)
        {
            return Err(WireError::Field(
                "a contract's mode is not shape, police, police and tag, or police and PPD",
            ));
        }
        Ok(PortContract {
            in_port,
            label: Vc::new(vpi, vci),
            contract: VcContract {
                pcr,
                scr,
                mbs,
                cdvt: Duration(cdvt),
                police,
                tag,
                ppd,
            },
        })
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

    /// A contract on port 3, `label`, with every field set apart from the others.
    fn contract(label: Vc, scr: Option<u64>, mode: (bool, bool, bool)) -> PortContract {
        PortContract {
            in_port: 3,
            label,
            contract: VcContract {
                pcr: Rate::bps(26_000_000),
                scr: scr.map(Rate::bps),
                mbs: 32,
                cdvt: Duration(1_500),
                police: mode.0,
                tag: mode.1,
                ppd: mode.2,
            },
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
                contracts: 1,
            },
            Msg::Push {
                entries: vec![entry(Some(138)), entry(None)],
                contracts: vec![
                    contract(Vc::new(0, 138), None, (true, false, false)),
                    contract(Vc::new(5, 0), Some(10_000_000), (false, false, false)),
                    contract(Vc::new(0, 139), None, (true, true, false)),
                    contract(Vc::new(0, 140), Some(1), (true, false, true)),
                ],
            },
            Msg::Push {
                entries: vec![entry(None)],
                contracts: vec![],
            },
            Msg::Push {
                entries: vec![],
                contracts: vec![],
            },
            Msg::Ack {
                held: 2,
                contracts: 4,
            },
        ]
    }

    fn push(contracts: Vec<PortContract>) -> Vec<u8> {
        Msg::Push {
            entries: vec![entry(Some(138))],
            contracts,
        }
        .emit()
    }

    #[test]
    fn every_message_parses_back_to_itself() {
        for m in all() {
            assert_eq!(Msg::parse(&m.emit()), Ok(m.clone()), "{m:?}");
        }
        let one = push(vec![contract(Vc::new(0, 138), None, (true, false, false))]);
        assert_eq!(one.len(), 2 + 4 + ENTRY_LEN + 4 + CONTRACT_LEN);
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
                    "contract count does not match the message length",
                )),
                _ => Err(WireError::Trailing(1)),
            };
            assert_eq!(Msg::parse(&longer), want, "{m:?}");
        }
    }

    #[test]
    fn wrong_version_type_count_flag_and_name_are_errors() {
        let mut b = Msg::Ack {
            held: 1,
            contracts: 0,
        }
        .emit();
        b[0] = 1;
        assert_eq!(Msg::parse(&b), Err(WireError::Version(1)));
        assert_eq!(Msg::parse(&[VERSION, 99]), Err(WireError::Type(99)));
        // A count of 2^32 - 1 entries, or of contracts, with none behind it: refused before
        // allocating.
        assert!(matches!(
            Msg::parse(&[VERSION, T_PUSH, 255, 255, 255, 255]),
            Err(WireError::Field(_))
        ));
        assert!(matches!(
            Msg::parse(&[VERSION, T_PUSH, 0, 0, 0, 0, 255, 255, 255, 255]),
            Err(WireError::Field(_))
        ));
        let mut p = push(vec![]);
        p[2 + 4 + 5] = 2; // the in-VCI flag
        assert!(matches!(Msg::parse(&p), Err(WireError::Field(_))));
        let mut h = Msg::Hello {
            switch: "ab".into(),
            held: 0,
            contracts: 0,
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
    fn a_contract_the_switch_could_not_enforce_is_refused() {
        let ok = push(vec![contract(
            Vc::new(0, 138),
            Some(1_000),
            (true, false, false),
        )]);
        assert!(Msg::parse(&ok).is_ok());
        // Offsets in the contract: PCR at 7, SCR flag 15, SCR 16, MBS 24, CDVT 32, mode 40.
        let at = 2 + 4 + ENTRY_LEN + 4;
        let bad = |k: usize, bytes: &[u8]| {
            let mut b = ok.clone();
            b[at + k..at + k + bytes.len()].copy_from_slice(bytes);
            Msg::parse(&b)
        };
        let field = |r: Result<Msg, WireError>| matches!(r, Err(WireError::Field(_)));
        assert!(field(bad(7, &0u64.to_be_bytes())), "PCR 0");
        assert!(field(bad(7, &u64::MAX.to_be_bytes())), "PCR too high");
        assert!(
            field(bad(16, &100_000_000u64.to_be_bytes())),
            "SCR above PCR"
        );
        assert!(field(bad(15, &[2])), "SCR flag");
        assert!(field(bad(15, &[0])), "no SCR, yet a rate");
        assert!(field(bad(24, &0u64.to_be_bytes())), "MBS 0");
        assert!(field(bad(24, &u64::MAX.to_be_bytes())), "MBS too high");
        assert!(field(bad(32, &u64::MAX.to_be_bytes())), "CDVT too long");
        for mode in [MODE_TAG, MODE_PPD, MODE_POLICE | MODE_TAG | MODE_PPD, 8] {
            assert!(field(bad(40, &[mode])), "mode {mode}");
        }
    }

    #[test]
    fn a_long_name_is_cut_at_a_character() {
        let m = Msg::Hello {
            switch: "é".repeat(200),
            held: 0,
            contracts: 0,
        };
        let Ok(Msg::Hello { switch, .. }) = Msg::parse(&m.emit()) else {
            panic!("does not parse")
        };
        assert_eq!(switch, "é".repeat(127));
    }
}
