//! The emulator's view of a topology: hosts on a star around one userspace switch, each joined to
//! it by one link with a rate, a delay, a buffer and a framing. Scenario files are translated into
//! this (see [`crate::scenario`]); tests build it directly.

use std::net::Ipv4Addr;

use serde::{Deserialize, Serialize};
use weft_model::{Duration, Rate};

use crate::framing::Framing;

/// What an egress queue does when it is full (or, for EPD, filling).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", tag = "kind")]
pub enum DropPolicy {
    /// Drop whatever arrives when the queue is full (on ATM: single cells, which corrupts frames).
    Tail,
    /// Partial packet discard: after one cell of a frame is lost, drop the rest of that frame.
    Ppd,
    /// Early packet discard: refuse a whole frame when its first cell finds `threshold` cells or
    /// more queued; otherwise as PPD.
    Epd {
        /// Queue occupancy (cells) at or above which new frames are refused.
        threshold: u64,
    },
}

/// The size of a queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Buffer {
    /// Bytes of frames (Ethernet header included).
    Bytes(u64),
    /// Whole frames.
    Frames(u64),
    /// ATM cells (on a frame link: 53-byte units).
    Cells(u64),
}

/// One host's link to the switch. Rate, delay, loss and framing apply in both directions; the
/// buffer is the switch's output queue towards the host; `ingress_buffer` stands for the host's own
/// interface queue (the veth is infinitely fast, the emulated link is not).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LinkSpec {
    /// Line rate (the cell rate on ATM); `None` is unlimited.
    pub rate: Option<Rate>,
    /// One-way propagation delay.
    pub delay: Duration,
    /// IP MTU in bytes, set on the host's interface.
    pub mtu: u32,
    /// How frames occupy the line.
    pub framing: Framing,
    /// The switch's output queue towards the host.
    pub buffer: Buffer,
    /// Drop policy of that queue.
    pub drop: DropPolicy,
    /// Probability (0..1) that a frame is lost on the line, each direction, independently.
    pub loss: f64,
    /// Bytes the host may have waiting for the line before its frames are dropped.
    pub ingress_buffer: u64,
    /// The traffic contract of the host's VC, enforced on its cells as they enter the switch:
    /// shaped (delayed until they conform) or policed (non-conforming cells dropped, which
    /// discards their frame). ATM links only; `None`: no contract.
    #[serde(default)]
    pub contract: Option<weft_model::shaper::VcContract>,
}

impl LinkSpec {
    /// An Ethernet-framed link (no preamble/gap counted) at `rate` with `delay`, MTU 1500, a
    /// 1 MiB output buffer and tail drop.
    pub fn ethernet(rate: Option<Rate>, delay: Duration) -> Self {
        LinkSpec {
            rate,
            delay,
            mtu: 1500,
            framing: Framing::Frame { overhead: 0 },
            buffer: Buffer::Bytes(1 << 20),
            drop: DropPolicy::Tail,
            loss: 0.0,
            ingress_buffer: 4 << 20,
            contract: None,
        }
    }

    /// A Classical IP over ATM link (MTU 9180) at cell rate `rate` with `delay`, VPI/VCI for
    /// captures, a 4096-cell buffer and tail drop.
    pub fn atm(rate: Option<Rate>, delay: Duration, vpi: u8, vci: u16) -> Self {
        LinkSpec {
            rate,
            delay,
            mtu: 9180,
            framing: Framing::Atm { vpi, vci },
            buffer: Buffer::Cells(4096),
            drop: DropPolicy::Tail,
            loss: 0.0,
            ingress_buffer: 4 << 20,
            contract: None,
        }
    }
}

/// How the switch moves frames from inputs to outputs.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum FabricKind {
    /// Frames go straight to their output queue (infinite speed-up).
    OutputQueued,
    /// One FIFO cell queue per input; only head cells contend (head-of-line blocking).
    InputFifo {
        /// How an output picks among contending inputs.
        contention: weft_model::fabric::Contention,
    },
    /// Virtual output queues scheduled by iSLIP.
    VoqIslip {
        /// iSLIP iterations per cell time.
        iterations: u32,
    },
}

/// The switch fabric ([`crate::fabric_stage`]).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct FabricSpec {
    /// Which fabric.
    pub kind: FabricKind,
    /// Port rate of the fabric (bit/s): one cell per input and per output per cell time.
    pub rate: Rate,
    /// Input buffer (per input for a FIFO fabric, per virtual output queue for iSLIP), in cells.
    pub buffer_cells: u64,
    /// Drop policy of the input buffers (FIFO fabric).
    pub drop: DropPolicy,
}

impl Default for FabricSpec {
    fn default() -> Self {
        FabricSpec {
            kind: FabricKind::OutputQueued,
            rate: Rate::bps(0),
            buffer_cells: 0,
            drop: DropPolicy::Tail,
        }
    }
}

/// A host of the emulation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HostSpec {
    /// Name, unique in the topology: letters, digits, `_` and `.`; at most 32 characters.
    pub name: String,
    /// Address; assigned from 10.77.0.0/16 when `None`.
    pub addr: Option<Ipv4Addr>,
    /// Its link to the switch.
    pub link: LinkSpec,
}

/// A star of hosts around one userspace switch.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Topology {
    /// The hosts, each with its link.
    pub hosts: Vec<HostSpec>,
    /// Seed of the random loss generators.
    pub seed: u64,
    /// The switch fabric (default: output-queued).
    #[serde(default)]
    pub fabric: FabricSpec,
}

/// A topology that cannot be built.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum TopologyError {
    /// A host name is empty, too long or uses characters other than letters, digits, `_`, `.`.
    #[error("host name {0:?} is not usable: use 1-32 letters, digits, '_' or '.'")]
    BadName(String),
    /// Two hosts share a name.
    #[error("two hosts are named {0:?}")]
    Duplicate(String),
    /// An MTU outside 68..=65000.
    #[error("host {0}: MTU {1} is outside 68..=65000")]
    BadMtu(String, u32),
    /// A loss probability outside 0..1.
    #[error("host {0}: loss {1} is not a probability")]
    BadLoss(String, f64),
    /// A VC contract on a link that does not carry cells.
    #[error("host {0}: a VC contract (pcr/scr) needs an ATM link")]
    ContractNeedsCells(String),
    /// Fewer than two hosts or more than 250.
    #[error("a topology needs 2 to 250 hosts, not {0}")]
    HostCount(usize),
}

impl Topology {
    /// Checks names, MTUs and probabilities.
    pub fn validate(&self) -> Result<(), TopologyError> {
        if self.hosts.len() < 2 || self.hosts.len() > 250 {
            return Err(TopologyError::HostCount(self.hosts.len()));
        }
        let mut seen = std::collections::HashSet::new();
        for h in &self.hosts {
            let ok = !h.name.is_empty()
                && h.name.len() <= 32
                && h.name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
            if !ok {
                return Err(TopologyError::BadName(h.name.clone()));
            }
            if !seen.insert(h.name.as_str()) {
                return Err(TopologyError::Duplicate(h.name.clone()));
            }
            if !(68..=65000).contains(&h.link.mtu) {
                return Err(TopologyError::BadMtu(h.name.clone(), h.link.mtu));
            }
            if !(0.0..=1.0).contains(&h.link.loss) {
                return Err(TopologyError::BadLoss(h.name.clone(), h.link.loss));
            }
            if h.link.contract.is_some() && !h.link.framing.is_atm() {
                return Err(TopologyError::ContractNeedsCells(h.name.clone()));
            }
        }
        Ok(())
    }

    /// The address of host `i`: as given, or 10.77.0.(i+1).
    pub fn addr_of(&self, i: usize) -> Ipv4Addr {
        self.hosts
            .get(i)
            .and_then(|h| h.addr)
            .unwrap_or(Ipv4Addr::new(10, 77, (i / 250) as u8, (i % 250 + 1) as u8))
    }

    /// The MAC address given to host `i`'s interface (locally administered, unique in the run).
    pub fn mac_of(i: usize) -> [u8; 6] {
        [0x02, 0x77, 0x65, 0x66, (i >> 8) as u8, i as u8]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two() -> Topology {
        let l = LinkSpec::ethernet(None, Duration::ZERO);
        Topology {
            hosts: vec![
                HostSpec {
                    name: "a".into(),
                    addr: None,
                    link: l.clone(),
                },
                HostSpec {
                    name: "b".into(),
                    addr: Some(Ipv4Addr::new(192, 168, 9, 9)),
                    link: l,
                },
            ],
            seed: 1,
            fabric: FabricSpec::default(),
        }
    }

    #[test]
    fn validates_and_assigns() {
        let t = two();
        t.validate().unwrap();
        assert_eq!(t.addr_of(0), Ipv4Addr::new(10, 77, 0, 1));
        assert_eq!(t.addr_of(1), Ipv4Addr::new(192, 168, 9, 9));
        let mut bad = two();
        bad.hosts[1].name = "a".into();
        assert_eq!(bad.validate(), Err(TopologyError::Duplicate("a".into())));
        bad.hosts[1].name = "x/y".into();
        assert!(matches!(bad.validate(), Err(TopologyError::BadName(_))));
        let mut m = two();
        m.hosts[0].link.mtu = 10;
        assert!(matches!(m.validate(), Err(TopologyError::BadMtu(..))));
    }
}
