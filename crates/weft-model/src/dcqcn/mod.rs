//! DCQCN (Zhu et al., "Congestion Control for Large-Scale RDMA Deployments", SIGCOMM 2015): the
//! rate control of RoCEv2, sans-IO with explicit nanosecond time, in the shape of
//! [`crate::ndp`] and [`crate::tcp::Connection`] (handle input, poll output, poll timeout).
//!
//! Three parts, as the paper names them:
//! - the **congestion point**, the switch, marks ECN with a RED-style probability between
//!   `Kmin` and `Kmax` ([`crate::net::RedSpec`]);
//! - the **notification point**, the receiver ([`Receiver`]), sends the sender a congestion
//!   notification packet (CNP) when a marked packet arrives, at most one per flow per
//!   [`Params::cnp_interval`]; it acknowledges in order and asks for a go-back-N retransmission
//!   (a NACK naming the packet it expects) when one is missing;
//! - the **reaction point**, the sender ([`Sender`], its rate in [`RateControl`]), starts at line
//!   rate, cuts its rate on each CNP by `alpha / 2` and raises `alpha`, lets `alpha` decay while
//!   no CNP comes, and recovers its rate in stages counted by a timer and a byte counter: fast
//!   recovery towards the rate before the cut, then additive, then hyper increase of the target.
//!
//! Packets travel in a lossless class over PFC ([`crate::net::PfcIngress`]); CNPs, ACKs and
//! NACKs in the priority class [`CONTROL_DSCP`].

mod rate;
mod receiver;
mod sender;
#[cfg(test)]
mod tests;

pub use crate::ndp::{FlowDone, SenderStats};
pub use rate::{Params, REFERENCE_LINE, RateControl, RateStats, slowdown};
pub use receiver::{Receiver, ReceiverStats};
pub use sender::{DEFAULT_RTO, Sender};

/// Bytes of RoCEv2 transport header on every packet (the base transport header, 12 B, and the
/// invariant CRC, 4 B, over UDP): a data packet is this plus its payload.
pub const HEADER_BYTES: u32 = 16;

/// The DSCP of control packets (CNPs, ACKs, NACKs): CS6, served before data.
pub const CONTROL_DSCP: u8 = 48;

/// The DSCP of data packets: CS3, the lossless class RoCE deployments give PFC.
pub const DATA_DSCP: u8 = 24;

/// What a DCQCN packet says; `seq` numbers a flow's packets from 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Payload: packet `seq` of a flow of `packets` packets, `len` bytes of it.
    Data {
        /// The packet's number.
        seq: u32,
        /// Bytes of payload.
        len: u32,
        /// Packets in the flow.
        packets: u32,
    },
    /// Every packet before `next` has arrived.
    Ack {
        /// The packet the receiver expects next.
        next: u32,
    },
    /// A packet arrived out of order: go back to `next` and send on from it.
    Nack {
        /// The packet the receiver expects next.
        next: u32,
    },
    /// A congestion notification: a packet of the flow arrived marked.
    Cnp,
}

/// One DCQCN packet of flow `flow` (the flow's number at both ends: its queue pair).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Packet {
    /// The flow it belongs to.
    pub flow: u32,
    /// What it says.
    pub kind: Kind,
}

impl Packet {
    /// Bytes of transport header and payload it occupies.
    pub fn len(&self) -> u32 {
        match self.kind {
            Kind::Data { len, .. } => HEADER_BYTES + len,
            _ => HEADER_BYTES,
        }
    }

    /// True for a packet with no payload: a control packet.
    pub fn is_empty(&self) -> bool {
        !matches!(self.kind, Kind::Data { .. })
    }
}
