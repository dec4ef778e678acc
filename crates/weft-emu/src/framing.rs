//! How many bytes a frame occupies on a link technology, and how long it takes to send.
//!
//! The emulator carries Ethernet frames between namespaces (veth). On an Ethernet-like link a frame
//! costs its own length (plus preamble and gap if asked); on an ATM link the IP packet inside is
//! carried as an AAL5 PDU — LLC/SNAP (8 bytes) + packet + AAL5 trailer (8 bytes), padded to whole
//! 48-byte cell payloads — and costs 53 bytes per cell at the link's *cell* rate. This is the
//! emulator's own small copy of the arithmetic; `weft-model`'s link technologies are the reference.

use serde::{Deserialize, Serialize};
use weft_model::{Duration, Rate};

/// Bytes of Ethernet header on the frames the emulator carries (no VLAN tag, no FCS).
pub const ETH_HEADER: usize = 14;
/// Bytes of an ATM cell on the wire.
pub const CELL_BYTES: u64 = 53;
/// Bytes of LLC/SNAP encapsulation (RFC 1483/2684) used by Classical IP over ATM.
pub const LLC_SNAP: u64 = 8;

/// The framing of a link.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", tag = "kind")]
pub enum Framing {
    /// Frames cost their length plus `overhead` bytes (preamble, FCS, gap: 24 for real Ethernet,
    /// 0 for an idealised link).
    Frame {
        /// Extra bytes per frame on the wire.
        overhead: u64,
    },
    /// Classical IP over ATM: the IP packet in an AAL5 PDU with LLC/SNAP, in 53-byte cells; the
    /// link's rate is the cell rate.
    Atm {
        /// Virtual path identifier (for captures).
        vpi: u8,
        /// Virtual channel identifier (for captures).
        vci: u16,
    },
}

impl Framing {
    /// Number of cells (ATM) or 1 (frames) that a frame of `frame_len` bytes (Ethernet header
    /// included) occupies.
    pub fn units(&self, frame_len: usize) -> u64 {
        match self {
            Framing::Frame { .. } => 1,
            Framing::Atm { .. } => aal5_cells(ip_len(frame_len)),
        }
    }

    /// Bytes a frame of `frame_len` bytes (Ethernet header included) occupies on the wire.
    pub fn wire_bytes(&self, frame_len: usize) -> u64 {
        match self {
            Framing::Frame { overhead } => frame_len as u64 + overhead,
            Framing::Atm { .. } => aal5_cells(ip_len(frame_len)) * CELL_BYTES,
        }
    }

    /// Time to serialise a frame of `frame_len` bytes at `rate` (the cell rate for ATM); zero for
    /// an unlimited rate (`None`).
    pub fn wire_time(&self, frame_len: usize, rate: Option<Rate>) -> Duration {
        match rate {
            None => Duration::ZERO,
            Some(r) => r.time_to_send(weft_model::Size(self.wire_bytes(frame_len))),
        }
    }

    /// Time of one unit (a cell for ATM; the whole frame otherwise) at `rate`.
    pub fn unit_time(&self, frame_len: usize, rate: Option<Rate>) -> Duration {
        match (self, rate) {
            (_, None) => Duration::ZERO,
            (Framing::Atm { .. }, Some(r)) => r.time_to_send(weft_model::Size(CELL_BYTES)),
            (Framing::Frame { .. }, Some(_)) => self.wire_time(frame_len, rate),
        }
    }

    /// True for ATM links.
    pub fn is_atm(&self) -> bool {
        matches!(self, Framing::Atm { .. })
    }
}

/// The IP packet length inside an Ethernet frame of `frame_len` bytes.
pub fn ip_len(frame_len: usize) -> u64 {
    frame_len.saturating_sub(ETH_HEADER) as u64
}

/// Cells needed for an IP packet of `ip_len` bytes in an LLC/SNAP AAL5 PDU.
pub fn aal5_cells(ip_len: u64) -> u64 {
    weft_model::tech::aal5_cells(ip_len + LLC_SNAP)
}

/// The payload rate (bits/s) left for `payload` bytes when each carries `header` bytes of
/// transport and IP headers, over an ATM link of cell rate `cell_rate` (the AAL5 payload bound).
pub fn aal5_payload_bound(cell_rate: Rate, payload: u64, header: u64) -> f64 {
    let cells = aal5_cells(payload + header);
    cell_rate.as_bps() as f64 * payload as f64 / (cells * CELL_BYTES) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clip_mtu_packet_costs_192_cells() {
        // 9180-byte IP packet + 8 LLC + 8 trailer = 9196 -> 192 cells (9216 bytes of payload).
        let f = Framing::Atm { vpi: 0, vci: 100 };
        assert_eq!(f.units(9180 + ETH_HEADER), 192);
        assert_eq!(f.wire_bytes(9180 + ETH_HEADER), 192 * 53);
        // A 40-byte ACK fits in one cell with LLC and trailer: 56 > 48, so two.
        assert_eq!(f.units(40 + ETH_HEADER), 2);
        assert_eq!(f.units(32 + ETH_HEADER), 1);
    }

    #[test]
    fn wire_time_at_cell_rate() {
        let f = Framing::Atm { vpi: 0, vci: 100 };
        let t = f.wire_time(9180 + ETH_HEADER, Some(Rate::mbps(26)));
        // 192 * 53 * 8 / 26e6 s = 3.131 ms
        assert_eq!(
            t.as_nanos(),
            (192u64 * 53 * 8 * 1_000_000_000).div_ceil(26_000_000)
        );
        assert_eq!(f.wire_time(100, None), Duration::ZERO);
        let e = Framing::Frame { overhead: 0 };
        assert_eq!(e.wire_time(1000, Some(Rate::mbps(8))).as_nanos(), 1_000_000);
    }

    #[test]
    fn payload_bound_for_udp() {
        // 1472-byte UDP payload + 28 header = 1500 IP -> 1516/48 -> 32 cells = 1696 bytes.
        let b = aal5_payload_bound(Rate::mbps(26), 1472, 28);
        assert!((b - 26e6 * 1472.0 / 1696.0).abs() < 1e-6);
    }
}
