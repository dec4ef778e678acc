//! NDP (Handley et al., SIGCOMM 2017), the receiver-driven transport of trimming fabrics and the
//! model of Ultra Ethernet's: sans-IO, with explicit nanosecond time, in the shape of
//! [`crate::tcp::Connection`] (handle input, poll output, poll timeout).
//!
//! A sender ([`Sender`]) starts a flow with a first window of packets at line rate, sprayed by
//! the fabric over every path; after that it sends one packet per pull. A receiving host
//! ([`Receiver`]) answers every data packet with an ACK and every trimmed header (a switch cut
//! the packet's payload: [`crate::net::TrimQueue`]) with a NACK, at once, and asks for one
//! packet more per arrival with a pull; its pull pacer sends the pulls of all its flows in turn
//! at the pace of its own link, one data packet's time apart, so that the senders together never
//! send it more than its link carries. A NACKed packet is sent again on the sender's next pull;
//! a packet whose header was lost too is sent again after a retransmission time-out.
//!
//! Control packets (ACK, NACK, pull) and headers travel in the fabric's priority class
//! ([`CONTROL_DSCP`]).

mod receiver;
mod sender;
#[cfg(test)]
mod tests;

pub use receiver::{FlowDone, Receiver};
pub use sender::{Sender, SenderStats};

/// Bytes of NDP header on every packet (htsim's `NdpPacket::ACKSIZE`): a data packet is this
/// plus its payload, a control packet or a trimmed header this alone (IP and Ethernet aside).
pub const HEADER_BYTES: u32 = 64;

/// The DSCP of NDP's control packets: CS7, the priority class that trimming queues serve first
/// ([`crate::net::HEADER_CLASS`]).
pub const CONTROL_DSCP: u8 = 56;

/// Packets of a first window, as htsim's NDP examples run (`-cwnd 23`).
pub const DEFAULT_WINDOW: u32 = 23;

/// What an NDP packet says; `seq` numbers a flow's packets from 0.
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
    /// Packet `seq` arrived whole.
    Ack {
        /// The packet's number.
        seq: u32,
    },
    /// Packet `seq` arrived trimmed: send it again.
    Nack {
        /// The packet's number.
        seq: u32,
    },
    /// The receiver's `count`-th pull of the flow (cumulative, so a lost pull is made up by the
    /// next): the sender may send as many packets as the count has grown by.
    Pull {
        /// Pulls sent so far on the flow, this one included.
        count: u64,
    },
}

/// One NDP packet of flow `flow` (the flow's number at both ends).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Packet {
    /// The flow it belongs to.
    pub flow: u32,
    /// What it says.
    pub kind: Kind,
}

impl Packet {
    /// Bytes of NDP header and payload it occupies whole.
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
