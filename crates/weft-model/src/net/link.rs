//! One link as the switch runs it: rate, propagation delay, framing (frames, or AAL5 in ATM
//! cells), MTU, the switch's output queue onto it, faults, and the traffic contract of the
//! circuit it carries: a host's VC where it enters its switch, or a path between switches (a
//! VP into another network) at the upstream switch's output. The same description drives the
//! simulator and the emulator.

use serde::{Deserialize, Serialize};

use super::faults::Faults;
use super::frame::ETH_HEADER;
use crate::queue::{Buffer, Capacity, DropPolicy};
use crate::shaper::{AbrParams, VcContract};
use crate::tech::{self, CELL_BYTES, Encap, FrameFormat, Framing, Tech};
use crate::time::Duration;
use crate::units::Rate;

pub use crate::vc::Vc;

/// One link. Rate, delay, framing and faults apply in both directions; `buffer` and `drop` are
/// the switch's output queue onto the link; `ingress_buffer` stands for a host's own interface
/// queue (the host's side of the link sends no faster than its rate).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LinkSpec {
    /// Line rate (the cell rate on ATM); `None` is unlimited.
    pub rate: Option<Rate>,
    /// One-way propagation delay.
    pub delay: Duration,
    /// IP MTU in bytes.
    pub mtu: u32,
    /// How frames occupy the line.
    pub framing: Framing,
    /// How IP is carried in the frame or AAL5 PDU (Classical IP over ATM: LLC/SNAP).
    pub encap: Encap,
    /// The circuit's VPI/VCI on ATM links (captures).
    #[serde(default)]
    pub vc: Vc,
    /// The switch's output queue onto this link.
    pub buffer: Buffer,
    /// Drop policy of that queue.
    pub drop: DropPolicy<Buffer>,
    /// Loss, corruption, duplication and reordering, each direction independently.
    #[serde(default)]
    pub faults: Faults,
    /// Bytes a host may have waiting for the line before its frames are dropped.
    pub ingress_buffer: u64,
    /// The traffic contract of the circuit on this link. On a host's link, enforced on its cells
    /// as they enter the switch: shaped (delayed until they conform) or policed (non-conforming
    /// cells dropped, which discards their frame, or tagged). On a link between switches,
    /// enforced on the cells the upstream switch sends onto it: shaped by that switch's output
    /// (the cells wait in its queue), or policed where they enter the next switch (the usage
    /// parameter control at the edge of another network). ATM links only; `None`: no contract.
    #[serde(default)]
    pub contract: Option<VcContract>,
    /// Selective discard in the switch's output queue onto this link: while the queue holds at
    /// least this share of its capacity, cells of tagged frames (CLP = 1) are dropped. ATM
    /// links only; `None`: tagged cells are queued like the others.
    #[serde(default)]
    pub clp_threshold: Option<f64>,
    /// ECN marking in the switch's output queue onto this link, a step threshold K as DCTCP
    /// uses: a frame that finds the queue holding at least this much is marked Congestion
    /// Experienced if it is ECN-capable ([`super::Frame::mark_ce`]); one that is not passes
    /// unmarked (the queue's limit still drops it). Ethernet links only; `None`: no marking.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ecn_threshold: Option<Buffer>,
    /// RED-style ECN marking in the switch's output queue onto this link, as DCQCN's switches
    /// mark ([`super::RedSpec`]: never below `kmin` bytes, always above `kmax`, a linear ramp to
    /// `pmax` between), on the bytes a frame finds queued. Ethernet links only; `None`: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ecn_red: Option<super::RedSpec>,
    /// Packet trimming in the switch's output queue onto this link (NDP, Ultra Ethernet): a
    /// frame that finds the queue full is cut to its headers, which go ahead of the queued data
    /// in a priority queue ([`super::TrimQueue`]). Ethernet links only; false: tail drop.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub trim: bool,
    /// Priority flow control on this link (802.1Qbb, [`super::PfcSpec`]): the switch's input
    /// from it counts what came in per class and pauses the far end at XOFF, and the switch's
    /// output onto it holds its frames while the far end pauses it. Ethernet links only;
    /// `None`: lossy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pfc: Option<super::PfcSpec>,
    /// EFCI marking in the switch's output queue onto this link: while the queue holds at
    /// least this share of its capacity, the cells it takes in are marked EFCI (explicit
    /// forward congestion indication), which an ABR destination returns to its source as CI.
    /// ATM links only; `None`: no marking.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub efci_threshold: Option<f64>,
    /// Explicit-rate feedback from the switch's output queue onto this link: it offers its
    /// ABR circuits this share of the line's cell rate, divided equally among those whose RM
    /// cells it has seen, and lowers the explicit rate of the RM cells that pass to it. ATM
    /// links only; `None`: it leaves the explicit rate alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub abr_er: Option<f64>,
    /// On a host's link: the host's adapter is an ABR source ([`crate::shaper::AbrSource`]),
    /// pacing its cells at its allowed rate and moving that rate on the feedback of the RM
    /// cells its destinations return. ATM links only; `None`: cells go at the line rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub abr: Option<AbrParams>,
}

/// An Ethernet frame format that charges a frame its own length and nothing more (an idealised
/// link, as a veth is).
pub const IDEAL_ETHERNET: FrameFormat = FrameFormat {
    preamble: 0,
    header: ETH_HEADER as u64,
    trailer: 0,
    gap: 0,
    min_frame: 0,
};

impl LinkSpec {
    /// An idealised Ethernet link (a frame costs its length) at `rate` with `delay`, MTU 1500, a
    /// 1 MiB output buffer and tail drop.
    pub fn ethernet(rate: Option<Rate>, delay: Duration) -> Self {
        LinkSpec {
            rate,
            delay,
            mtu: 1500,
            framing: Framing::Frame(IDEAL_ETHERNET),
            encap: Encap::Null,
            vc: Vc::default(),
            buffer: Buffer::bytes(1 << 20),
            drop: DropPolicy::Tail,
            faults: Faults::default(),
            ingress_buffer: 4 << 20,
            contract: None,
            clp_threshold: None,
            ecn_threshold: None,
            ecn_red: None,
            trim: false,
            pfc: None,
            efci_threshold: None,
            abr_er: None,
            abr: None,
        }
    }

    /// A Classical IP over ATM link (LLC/SNAP, MTU 9180) at cell rate `rate` with `delay`, on
    /// VPI/VCI `vpi`/`vci`, a 4096-cell buffer and tail drop.
    pub fn atm(rate: Option<Rate>, delay: Duration, vpi: u8, vci: u16) -> Self {
        LinkSpec {
            rate,
            delay,
            mtu: 9180,
            framing: Framing::Cells,
            encap: Encap::LlcSnap,
            vc: Vc { vpi, vci },
            buffer: Buffer::cells(4096),
            drop: DropPolicy::Tail,
            faults: Faults::default(),
            ingress_buffer: 4 << 20,
            contract: None,
            clp_threshold: None,
            ecn_threshold: None,
            ecn_red: None,
            trim: false,
            pfc: None,
            efci_threshold: None,
            abr_er: None,
            abr: None,
        }
    }

    /// A link of technology `tech` (its rate, framing, encapsulation and MTU) with `delay`, the
    /// defaults of [`LinkSpec::ethernet`] or [`LinkSpec::atm`] otherwise.
    pub fn from_tech(tech: &Tech, delay: Duration) -> Self {
        let mut l = if tech.is_cells() {
            LinkSpec::atm(Some(tech.rate), delay, 0, 100)
        } else {
            LinkSpec::ethernet(Some(tech.rate), delay)
        };
        l.framing = tech.framing;
        l.encap = tech.encap;
        l.mtu = tech.mtu.0.clamp(68, 65_000) as u32;
        l
    }

    /// True on ATM links.
    #[inline]
    pub fn is_atm(&self) -> bool {
        matches!(self.framing, Framing::Cells)
    }

    /// Cells (ATM) or 1 (frames) that a frame of `frame_len` bytes (Ethernet header included)
    /// occupies.
    #[inline]
    pub fn units(&self, frame_len: usize) -> u64 {
        match self.framing {
            Framing::Cells => tech::aal5_cells(ip_len(frame_len) + self.encap.header_bytes()),
            Framing::Frame(_) => 1,
        }
    }

    /// Bytes of line time a frame of `frame_len` bytes (Ethernet header included) occupies.
    #[inline]
    pub fn wire_bytes(&self, frame_len: usize) -> u64 {
        tech::wire_bytes(self.framing, self.encap, ip_len(frame_len))
    }

    /// Bytes of line time of one unit: a cell on ATM, the frame otherwise.
    pub fn unit_bytes(&self, frame_len: usize) -> u64 {
        match self.framing {
            Framing::Cells => CELL_BYTES,
            Framing::Frame(_) => self.wire_bytes(frame_len),
        }
    }

    /// Cells and bytes of an MTU-sized frame (the size buffers given in frames stand for).
    pub fn mtu_frame(&self) -> (u64, u64) {
        let len = self.mtu as usize + ETH_HEADER;
        (self.units(len), len as u64)
    }

    /// The output queue's capacity and drop policy, in cells on ATM and in bytes or frames
    /// otherwise.
    pub fn queue(&self) -> (Capacity, DropPolicy) {
        let (cells, bytes) = self.mtu_frame();
        let cap = self.buffer.capacity(self.is_atm(), cells);
        (cap, self.drop.resolve(cap, cells, bytes))
    }

    /// The ECN marking threshold in the unit of the queue's capacity (bytes or frames), on an
    /// Ethernet link that has one.
    pub fn ecn_limit(&self) -> Option<u64> {
        let (cells, bytes) = self.mtu_frame();
        let (cap, _) = self.queue();
        self.ecn_threshold
            .filter(|_| !self.is_atm())
            .map(|k| k.in_unit_of(cap, cells, bytes))
    }

    /// The shortest time in which frames arriving on this line can be told apart by the switch:
    /// a cell time on ATM, the time of the smallest possible frame (an empty IP datagram)
    /// otherwise; zero on an unlimited line. Arrivals within one such slot are simultaneous and
    /// are served in a fair order.
    pub fn slot(&self) -> Duration {
        match self.rate.filter(|r| r.as_bps() > 0) {
            None => Duration::ZERO,
            Some(r) => {
                let unit = match self.framing {
                    Framing::Cells => CELL_BYTES,
                    Framing::Frame(_) => tech::wire_bytes(self.framing, self.encap, 20),
                };
                // Rounded down, so that every frame takes at least one slot.
                Duration((unit as u128 * 8_000_000_000 / u128::from(r.as_bps())) as u64)
            }
        }
    }
}

/// The IP packet length inside an Ethernet frame of `frame_len` bytes.
pub fn ip_len(frame_len: usize) -> u64 {
    frame_len.saturating_sub(ETH_HEADER) as u64
}

/// The payload rate (bits/s) left for `payload` bytes when each carries `header` bytes of
/// transport and IP headers, over an ATM link of cell rate `cell_rate` with LLC/SNAP (the AAL5
/// payload bound).
pub fn aal5_payload_bound(cell_rate: Rate, payload: u64, header: u64) -> f64 {
    let cells = tech::aal5_cells(payload + header + Encap::LlcSnap.header_bytes());
    cell_rate.as_bps() as f64 * payload as f64 / (cells * CELL_BYTES) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clip_mtu_packet_costs_192_cells() {
        let l = LinkSpec::atm(Some(Rate::mbps(26)), Duration::ZERO, 0, 100);
        // 9180-byte IP packet + 8 LLC + 8 trailer = 9196 -> 192 cells (9216 bytes of payload).
        assert_eq!(l.units(9180 + ETH_HEADER), 192);
        assert_eq!(l.wire_bytes(9180 + ETH_HEADER), 192 * 53);
        // A 40-byte ACK with LLC and trailer: 56 > 48, so two cells; 32 bytes fit in one.
        assert_eq!(l.units(40 + ETH_HEADER), 2);
        assert_eq!(l.units(32 + ETH_HEADER), 1);
        assert_eq!(l.mtu_frame(), (192, 9194));
    }

    #[test]
    fn ideal_ethernet_charges_the_frame_length() {
        let e = LinkSpec::ethernet(Some(Rate::mbps(8)), Duration::ZERO);
        assert_eq!(e.wire_bytes(1000), 1000);
        assert_eq!(e.units(1000), 1);
        // Real Ethernet: preamble, FCS, gap, padding to 64 bytes.
        let t = LinkSpec::from_tech(&Tech::preset("ethernet100").unwrap(), Duration::ZERO);
        assert_eq!(t.wire_bytes(ETH_HEADER + 20), 8 + 64 + 12);
        assert_eq!(t.wire_bytes(1514), 8 + 1518 + 12);
    }

    #[test]
    fn queues_resolve_in_the_link_unit() {
        let mut l = LinkSpec::atm(None, Duration::ZERO, 0, 1);
        l.buffer = Buffer::frames(2);
        l.drop = DropPolicy::Epd {
            threshold: Buffer::frames(1),
        };
        assert_eq!(
            l.queue(),
            (Capacity::Cells(384), DropPolicy::Epd { threshold: 192 })
        );
    }

    #[test]
    fn slots_are_a_cell_or_the_smallest_frame() {
        let a = LinkSpec::atm(Some(Rate::bps(149_760_000)), Duration::ZERO, 0, 1);
        assert_eq!(a.slot(), Duration(2831));
        let e = LinkSpec::ethernet(Some(Rate::mbps(100)), Duration::ZERO);
        // 34 bytes at 100 Mbit/s.
        assert_eq!(e.slot(), Duration(2720));
        assert_eq!(
            LinkSpec::ethernet(None, Duration::ZERO).slot(),
            Duration::ZERO
        );
    }

    #[test]
    fn payload_bound_for_udp() {
        // 1472-byte UDP payload + 28 header = 1500 IP -> 1516/48 -> 32 cells = 1696 bytes.
        let b = aal5_payload_bound(Rate::mbps(26), 1472, 28);
        assert!((b - 26e6 * 1472.0 / 1696.0).abs() < 1e-6);
    }
}
