//! Link technologies with every overhead explicit: what a datagram of `n` bytes costs on the wire.
//!
//! A [`Tech`] is a link as configured: the physical rates ([`Tech::line_rate`], the signalling
//! rate, and [`Tech::rate`], what is left for frames or cells after SONET/PLCP/line-coding
//! overhead), the [`Framing`] (a frame format with preamble, header, trailer, gap and minimum size,
//! or ATM cells carrying AAL5), the [`Encap`]sulation of IP inside the frame or AAL5 PDU
//! (LLC/SNAP, NULL, LANE) and the IP [`Tech::mtu`]. Presets come from [`Tech::preset`]
//! (see [`PRESETS`]); every field can then be overridden.
//!
//! The three questions other parts of weft ask:
//! - [`aal5_cells`]: how many cells an AAL5 PDU of `n` bytes needs (8-byte trailer, padding to
//!   whole 48-byte cell payloads);
//! - [`Tech::wire_time`]: how long a datagram of `n` bytes occupies the link (on ATM, whole cells);
//! - [`Tech::datagram_rate`] / [`Tech::goodput`]: the rate left for IP packets of a given size, and
//!   for the transport payload inside them.
//!
//! Sizes are in bytes, rates in bits per second, times in nanoseconds. Integer arithmetic is used
//! for byte and cell counts; rates derived from them are rounded down to whole bits per second.

mod presets;

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::time::Duration;
use crate::units::{Rate, Size};

pub use presets::PRESETS;

/// Bytes in an ATM cell (5 header + 48 payload).
pub const CELL_BYTES: u64 = 53;
/// Payload bytes in an ATM cell.
pub const CELL_PAYLOAD_BYTES: u64 = 48;
/// Header bytes in an ATM cell.
pub const CELL_HEADER_BYTES: u64 = 5;
/// Bytes of the AAL5 CPCS trailer (UU, CPI, length, CRC-32).
pub const AAL5_TRAILER_BYTES: u64 = 8;
/// Largest AAL5 CPCS-SDU in bytes (the length field is 16 bits).
pub const AAL5_MAX_SDU_BYTES: u64 = 65_535;
/// Bytes of an IPv4 header without options.
pub const IPV4_HEADER_BYTES: u64 = 20;
/// Bytes of a TCP header without options.
pub const TCP_HEADER_BYTES: u64 = 20;
/// Bytes of a UDP header.
pub const UDP_HEADER_BYTES: u64 = 8;

/// Number of cells an AAL5 CPCS-SDU of `sdu_bytes` bytes occupies: the SDU plus the 8-byte
/// trailer, padded up to whole 48-byte cell payloads. `sdu_bytes` includes any LLC/SNAP or LANE
/// header in front of the IP datagram. An empty SDU still takes one cell.
pub const fn aal5_cells(sdu_bytes: u64) -> u64 {
    (sdu_bytes + AAL5_TRAILER_BYTES).div_ceil(CELL_PAYLOAD_BYTES)
}

/// Bytes of padding AAL5 adds to an SDU of `sdu_bytes` bytes (0..=47).
pub const fn aal5_pad(sdu_bytes: u64) -> u64 {
    aal5_cells(sdu_bytes) * CELL_PAYLOAD_BYTES - sdu_bytes - AAL5_TRAILER_BYTES
}

/// Bytes of link time an IP datagram of `datagram` bytes occupies under `framing` with `encap`:
/// preamble, header, padding to the minimum frame, trailer and gap; on ATM, whole 53-byte cells
/// of the AAL5 PDU. [`Tech::wire_bytes`] and the switch's links (`crate::net`) both charge this.
pub const fn wire_bytes(framing: Framing, encap: Encap, datagram: u64) -> u64 {
    let sdu = datagram + encap.header_bytes();
    match framing {
        Framing::Cells => aal5_cells(sdu) * CELL_BYTES,
        Framing::Frame(f) => {
            let frame = f.header + sdu + f.trailer;
            let frame = if frame < f.min_frame {
                f.min_frame
            } else {
                frame
            };
            f.preamble + frame + f.gap
        }
    }
}

/// How IP datagrams are carried inside a frame or AAL5 PDU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Encap {
    /// Nothing in front of the datagram: VC multiplexing on ATM (RFC 1483 "NULL"), or an
    /// Ethernet II frame whose EtherType is part of the MAC header.
    Null,
    /// An 8-byte LLC/SNAP header (RFC 1483/1577 default for Classical IP, RFC 1188 for FDDI,
    /// IEEE 802.3 + SNAP on Ethernet).
    LlcSnap,
    /// LAN Emulation: a 2-byte LE header followed by a 14-byte Ethernet MAC header (no FCS,
    /// no preamble; the AAL5 CRC covers the frame).
    Lane,
}

impl Encap {
    /// Bytes this encapsulation puts in front of each IP datagram.
    pub const fn header_bytes(self) -> u64 {
        match self {
            Encap::Null => 0,
            Encap::LlcSnap => 8,
            Encap::Lane => 2 + 14,
        }
    }

    /// The name used in scenario files and on the command line.
    pub const fn name(self) -> &'static str {
        match self {
            Encap::Null => "null",
            Encap::LlcSnap => "llc-snap",
            Encap::Lane => "lane",
        }
    }
}

impl FromStr for Encap {
    type Err = TechError;
    /// Parses `null` (also `vc-mux`, `none`), `llc-snap` (also `llc`, `snap`) and `lane`.
    fn from_str(s: &str) -> Result<Self, TechError> {
        match s.to_ascii_lowercase().as_str() {
            "null" | "vc-mux" | "vcmux" | "none" => Ok(Encap::Null),
            "llc-snap" | "llc/snap" | "llcsnap" | "llc" | "snap" => Ok(Encap::LlcSnap),
            "lane" => Ok(Encap::Lane),
            _ => Err(TechError::UnknownEncap(s.to_string())),
        }
    }
}

impl fmt::Display for Encap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The byte layout of one frame of a frame-based technology, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct FrameFormat {
    /// Bytes sent before the frame proper (Ethernet preamble + SFD: 8; FDDI preamble: 8).
    pub preamble: u64,
    /// MAC header bytes (Ethernet: 14; FDDI SD+FC+DA+SA: 14).
    pub header: u64,
    /// Bytes after the payload (Ethernet FCS: 4; FDDI FCS + ED + FS: 6).
    pub trailer: u64,
    /// Idle bytes that must follow every frame (Ethernet inter-frame gap: 12).
    pub gap: u64,
    /// Smallest frame, header + payload + trailer, that may be sent; shorter ones are padded
    /// (Ethernet: 64; FDDI: 0).
    pub min_frame: u64,
}

/// How a technology puts datagrams on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Framing {
    /// Frames of the given format.
    Frame(FrameFormat),
    /// 53-byte ATM cells carrying AAL5 PDUs; a datagram occupies whole cells.
    Cells,
}

/// Which transport carries the payload inside IP, for goodput.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Transport {
    /// TCP with `options` bytes of options per segment (12 with timestamps).
    Tcp {
        /// Option bytes in every segment.
        options: u64,
    },
    /// UDP.
    Udp,
    /// Raw IP: the payload is everything after the IP header.
    Ip,
}

impl Transport {
    /// Bytes of IP plus transport header in each datagram.
    pub const fn header_bytes(self) -> u64 {
        IPV4_HEADER_BYTES
            + match self {
                Transport::Tcp { options } => TCP_HEADER_BYTES + options,
                Transport::Udp => UDP_HEADER_BYTES,
                Transport::Ip => 0,
            }
    }

    /// The name used on the command line.
    pub fn name(self) -> String {
        match self {
            Transport::Tcp { options: 0 } => "tcp".into(),
            Transport::Tcp { options: 12 } => "tcp-ts".into(),
            Transport::Tcp { options } => format!("tcp+{options}"),
            Transport::Udp => "udp".into(),
            Transport::Ip => "ip".into(),
        }
    }
}

impl FromStr for Transport {
    type Err = TechError;
    /// Parses `tcp`, `tcp-ts` (12 bytes of timestamp option), `udp`, `ip`.
    fn from_str(s: &str) -> Result<Self, TechError> {
        match s.to_ascii_lowercase().as_str() {
            "tcp" => Ok(Transport::Tcp { options: 0 }),
            "tcp-ts" | "tcp+ts" => Ok(Transport::Tcp { options: 12 }),
            "udp" => Ok(Transport::Udp),
            "ip" | "raw" => Ok(Transport::Ip),
            _ => Err(TechError::UnknownTransport(s.to_string())),
        }
    }
}

/// An unknown technology, encapsulation or transport name, or a datagram that cannot be carried.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TechError {
    /// No preset has this name.
    #[error("unknown link technology {0:?}: expected one of {list}", list = presets::names())]
    UnknownTech(String),
    /// No encapsulation has this name.
    #[error("unknown encapsulation {0:?}: expected null, llc-snap or lane")]
    UnknownEncap(String),
    /// No transport has this name.
    #[error("unknown transport {0:?}: expected tcp, tcp-ts, udp or ip")]
    UnknownTransport(String),
    /// A datagram no larger than its own headers.
    #[error(
        "a datagram of {size} bytes cannot hold the {headers} bytes of IP and transport headers"
    )]
    TooSmall {
        /// Datagram size in bytes.
        size: u64,
        /// Header bytes needed.
        headers: u64,
    },
}

/// A link technology as configured: rates, framing, encapsulation and MTU.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Tech {
    /// Preset name this was built from (`oc3c`, `ethernet10`, ...), or a user-chosen name.
    pub name: String,
    /// Signalling rate on the medium, bits/s (OC-3c: 155.52 Mbit/s; TAXI and FDDI: 125 Mbaud).
    pub line_rate: Rate,
    /// Rate available to frames or to the cell stream after physical-layer overhead, bits/s
    /// (OC-3c: 149.76 Mbit/s of SPE payload; DS-3 PLCP: 40.704; E3 G.832: 33.92). A shaped
    /// virtual path is modelled by lowering this rate.
    pub rate: Rate,
    /// How datagrams are framed.
    pub framing: Framing,
    /// How IP is encapsulated in the frame or AAL5 PDU.
    pub encap: Encap,
    /// Largest IP datagram, bytes.
    pub mtu: Size,
}

impl Tech {
    /// The preset named `name` (case-insensitive; see [`PRESETS`] for names and aliases).
    pub fn preset(name: &str) -> Result<Tech, TechError> {
        presets::lookup(name).ok_or_else(|| TechError::UnknownTech(name.to_string()))
    }

    /// Whether datagrams travel as ATM cells.
    pub const fn is_cells(&self) -> bool {
        matches!(self.framing, Framing::Cells)
    }

    /// Bytes handed to the frame or AAL5 for an IP datagram of `datagram` bytes
    /// (the datagram plus the encapsulation header).
    pub const fn sdu_bytes(&self, datagram: u64) -> u64 {
        datagram + self.encap.header_bytes()
    }

    /// Cells a datagram of `datagram` bytes occupies, or `None` on a frame-based technology.
    pub const fn cells(&self, datagram: u64) -> Option<u64> {
        match self.framing {
            Framing::Cells => Some(aal5_cells(self.sdu_bytes(datagram))),
            Framing::Frame(_) => None,
        }
    }

    /// Bytes of link time a datagram of `datagram` bytes occupies, everything included:
    /// preamble, header, padding to the minimum frame, trailer and gap; on ATM, whole 53-byte cells.
    pub const fn wire_bytes(&self, datagram: u64) -> u64 {
        wire_bytes(self.framing, self.encap, datagram)
    }

    /// Time a datagram of `datagram` bytes occupies the link at [`Tech::rate`], rounded up to the
    /// nanosecond. For long runs compute `rate.time_to_send(n * wire_bytes)` instead of adding.
    pub fn wire_time(&self, datagram: u64) -> Duration {
        self.rate.time_to_send(Size(self.wire_bytes(datagram)))
    }

    /// Time one cell occupies the link, rounded up to the nanosecond (`None` if not ATM).
    pub fn cell_time(&self) -> Option<Duration> {
        self.is_cells()
            .then(|| self.rate.time_to_send(Size(CELL_BYTES)))
    }

    /// Rate of IP datagram bytes when datagrams of `datagram` bytes are sent back to back:
    /// `rate * datagram / wire_bytes(datagram)`, bits/s, rounded down.
    pub fn datagram_rate(&self, datagram: u64) -> Rate {
        self.scaled(datagram, self.wire_bytes(datagram))
    }

    /// Rate of transport payload (TCP or UDP data) when datagrams of `datagram` bytes are sent
    /// back to back, bits/s, rounded down.
    pub fn goodput(&self, datagram: u64, transport: Transport) -> Result<Rate, TechError> {
        let headers = transport.header_bytes();
        if datagram <= headers {
            return Err(TechError::TooSmall {
                size: datagram,
                headers,
            });
        }
        Ok(self.scaled(datagram - headers, self.wire_bytes(datagram)))
    }

    /// Transport payload rate with datagrams of the full MTU.
    pub fn goodput_at_mtu(&self, transport: Transport) -> Result<Rate, TechError> {
        self.goodput(self.mtu.0, transport)
    }

    /// Rate of cell payload (48 of every 53 bytes), bits/s, or [`Tech::rate`] if not ATM.
    pub fn cell_payload_rate(&self) -> Rate {
        if self.is_cells() {
            self.scaled(CELL_PAYLOAD_BYTES, CELL_BYTES)
        } else {
            self.rate
        }
    }

    /// `rate * num / den`, rounded down, without overflow.
    fn scaled(&self, num: u64, den: u64) -> Rate {
        if den == 0 {
            return Rate(0);
        }
        Rate((self.rate.0 as u128 * num as u128 / den as u128) as u64)
    }
}

impl fmt::Display for Tech {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({} line, {} {}, {} encapsulation, MTU {} B)",
            self.name,
            self.line_rate,
            self.rate,
            if self.is_cells() {
                "cell stream"
            } else {
                "frames"
            },
            self.encap,
            self.mtu.0
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aal5_cell_counts() {
        assert_eq!(aal5_cells(0), 1);
        assert_eq!(aal5_cells(40), 1); // 40 + 8 = 48 exactly
        assert_eq!(aal5_cells(41), 2);
        // 9180-byte CLIP datagram + LLC/SNAP 8 + trailer 8 = 9196 -> 192 cells (9216 bytes).
        assert_eq!(aal5_cells(9188), 192);
        assert_eq!(aal5_pad(9188), 20);
        assert_eq!(aal5_pad(40), 0);
    }

    #[test]
    fn ethernet_frame_on_the_wire() {
        let e = Tech::preset("ethernet10").unwrap();
        // 1500-byte datagram: 8 + 14 + 1500 + 4 + 12 = 1538 bytes.
        assert_eq!(e.wire_bytes(1500), 1538);
        // A 20-byte datagram is padded to the 64-byte minimum frame: 8 + 64 + 12.
        assert_eq!(e.wire_bytes(20), 84);
        assert_eq!(e.wire_time(1500), Duration::from_nanos(1_230_400));
        // TCP over 10 Mbit/s Ethernet: 1460/1538 of 10 Mbit/s.
        assert_eq!(
            e.goodput(1500, Transport::Tcp { options: 0 }).unwrap(),
            Rate(9_492_847)
        );
    }

    #[test]
    fn atm_datagram_occupies_whole_cells() {
        let oc3 = Tech::preset("oc3c").unwrap();
        assert_eq!(oc3.mtu, Size(9180));
        assert_eq!(oc3.cells(9180), Some(192));
        assert_eq!(oc3.wire_bytes(9180), 192 * 53);
        // One cell of 53 bytes at 149.76 Mbit/s is 2831.2 ns; 192 cells is exact from the total.
        assert_eq!(oc3.cell_time(), Some(Duration(2832)));
        assert_eq!(oc3.wire_time(9180), Duration(543_590));
        assert_eq!(oc3.cell_payload_rate(), Rate(135_631_698));
        // NULL encapsulation saves the 8 bytes, which here still needs 192 cells.
        let mut null = oc3.clone();
        null.encap = Encap::Null;
        assert_eq!(null.cells(9180), Some(192));
        assert_eq!(null.cells(9176 + 8), Some(192));
    }

    #[test]
    fn small_datagrams_are_rejected_for_goodput() {
        let oc3 = Tech::preset("oc3c").unwrap();
        assert!(oc3.goodput(40, Transport::Tcp { options: 0 }).is_err());
        assert!(oc3.goodput(41, Transport::Tcp { options: 0 }).is_ok());
    }

    proptest::proptest! {
        #[test]
        fn cells_hold_the_pdu_with_less_than_a_cell_to_spare(n in 0u64..200_000) {
            let c = aal5_cells(n);
            proptest::prop_assert!(c * CELL_PAYLOAD_BYTES >= n + AAL5_TRAILER_BYTES);
            proptest::prop_assert!(c * CELL_PAYLOAD_BYTES < n + AAL5_TRAILER_BYTES + CELL_PAYLOAD_BYTES);
            proptest::prop_assert_eq!(aal5_pad(n), c * CELL_PAYLOAD_BYTES - n - AAL5_TRAILER_BYTES);
        }

        #[test]
        fn wire_cost_never_falls_as_datagrams_grow(n in 41u64..9180, idx in 0usize..PRESETS.len()) {
            let t = PRESETS[idx].tech();
            proptest::prop_assert!(t.wire_bytes(n + 1) >= t.wire_bytes(n));
            proptest::prop_assert!(t.wire_bytes(n) > n);
            let g = t.goodput(n, Transport::Udp).unwrap();
            proptest::prop_assert!(g < t.rate);
        }
    }

    #[test]
    fn names_parse() {
        assert_eq!("LLC-SNAP".parse::<Encap>().unwrap(), Encap::LlcSnap);
        assert_eq!("vc-mux".parse::<Encap>().unwrap(), Encap::Null);
        assert!("ppp".parse::<Encap>().is_err());
        assert_eq!(
            "tcp-ts".parse::<Transport>().unwrap(),
            Transport::Tcp { options: 12 }
        );
        let err = Tech::preset("token-ring").unwrap_err().to_string();
        assert!(err.contains("oc3c"), "{err}");
    }
}
