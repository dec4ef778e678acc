//! The receiving host of DCQCN flows, the notification point: in-order delivery with go-back-N
//! NACKs, and CNPs for marked packets, at most one per flow per interval.

use std::collections::VecDeque;

use rustc_hash::FxHashMap;

use super::{Kind, Packet};
use crate::ndp::FlowDone;

#[derive(Clone, Debug, Default)]
struct Flow {
    /// The packet expected next.
    expected: u32,
    bytes: u64,
    /// A NACK for `expected` has been sent (one per gap).
    nacked: bool,
    /// When the last CNP went (ns).
    last_cnp: Option<u64>,
    done: bool,
}

/// Counters of a receiver.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReceiverStats {
    /// Data packets that arrived marked Congestion Experienced.
    pub marked: u64,
    /// CNPs sent.
    pub cnps: u64,
    /// Data packets discarded out of order (go-back-N keeps none).
    pub out_of_order: u64,
}

/// Every DCQCN flow into one host.
#[derive(Clone, Debug)]
pub struct Receiver {
    flows: FxHashMap<u32, Flow>,
    /// ACKs, NACKs and CNPs to send, at once.
    control: VecDeque<Packet>,
    /// Nanoseconds between two CNPs of one flow, at least.
    cnp_interval: u64,
    now: u64,
    done: Vec<FlowDone>,
    /// Counters.
    pub stats: ReceiverStats,
}

impl Receiver {
    /// A host that sends at most one CNP per flow every `cnp_interval` ns
    /// ([`super::Params::cnp_interval`]).
    pub fn new(cnp_interval: u64) -> Self {
        Receiver {
            flows: FxHashMap::default(),
            control: VecDeque::new(),
            cnp_interval,
            now: 0,
            done: Vec::new(),
            stats: ReceiverStats::default(),
        }
    }

    /// The flows that have arrived whole, in the order they did.
    pub fn done(&self) -> &[FlowDone] {
        &self.done
    }

    /// A data packet arrives at `now` (ns), marked Congestion Experienced if `ce`.
    pub fn handle(&mut self, now: u64, p: &Packet, ce: bool) {
        self.now = self.now.max(now);
        let Kind::Data { seq, len, packets } = p.kind else {
            return;
        };
        let f = self.flows.entry(p.flow).or_default();
        if ce {
            self.stats.marked += 1;
            if f.last_cnp.is_none_or(|t| now >= t + self.cnp_interval) {
                f.last_cnp = Some(now);
                self.stats.cnps += 1;
                self.control.push_back(Packet {
                    flow: p.flow,
                    kind: Kind::Cnp,
                });
            }
        }
        if f.done {
            return;
        }
        let reply = if seq == f.expected {
            f.expected += 1;
            f.bytes += u64::from(len);
            f.nacked = false;
            Some(Kind::Ack { next: f.expected })
        } else if seq > f.expected {
            self.stats.out_of_order += 1;
            (!std::mem::replace(&mut f.nacked, true)).then_some(Kind::Nack { next: f.expected })
        } else {
            // A packet sent again after a go-back that had arrived before.
            Some(Kind::Ack { next: f.expected })
        };
        if let Some(kind) = reply {
            self.control.push_back(Packet { flow: p.flow, kind });
        }
        if f.expected == packets {
            f.done = true;
            self.done.push(FlowDone {
                flow: p.flow,
                bytes: f.bytes,
                at: now,
            });
        }
    }

    /// The next control packet to send at `now` (ns).
    pub fn poll_transmit(&mut self, now: u64) -> Option<Packet> {
        self.now = self.now.max(now);
        self.control.pop_front()
    }

    /// When it next has a packet to send without new input (ns).
    pub fn poll_timeout(&self) -> Option<u64> {
        (!self.control.is_empty()).then_some(self.now)
    }
}
