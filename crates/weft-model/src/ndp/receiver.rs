//! The receiving host of NDP flows: ACKs and NACKs at once, pulls paced at its link's rate.

use std::collections::VecDeque;

use rustc_hash::FxHashMap;

use super::{Kind, Packet};

/// A flow that has arrived whole.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowDone {
    /// The flow's number.
    pub flow: u32,
    /// Bytes of payload it delivered.
    pub bytes: u64,
    /// When its last packet arrived (ns).
    pub at: u64,
}

#[derive(Clone, Debug, Default)]
struct Flow {
    got: Vec<bool>,
    received: u32,
    bytes: u64,
    pulls: u64,
    done: bool,
}

/// Every NDP flow into one host, with the host's pull pacer.
#[derive(Clone, Debug)]
pub struct Receiver {
    flows: FxHashMap<u32, Flow>,
    /// ACKs and NACKs to send, at once.
    control: VecDeque<Packet>,
    /// Flows owed a pull, one entry per pull, in the order they were asked for.
    pulls: VecDeque<u32>,
    /// Nanoseconds between pulls: a full data packet's time on the host's link.
    pace: u64,
    /// When the pacer may send its next pull (ns).
    next_pull: u64,
    /// The last instant it was told of (ns).
    now: u64,
    done: Vec<FlowDone>,
    /// Trimmed headers received.
    pub trimmed: u64,
}

impl Receiver {
    /// A host whose pull pacer sends a pull every `pace` ns (a full packet's time on its link).
    pub fn new(pace: u64) -> Self {
        Receiver {
            flows: FxHashMap::default(),
            control: VecDeque::new(),
            pulls: VecDeque::new(),
            pace,
            next_pull: 0,
            now: 0,
            done: Vec::new(),
            trimmed: 0,
        }
    }

    /// The flows that have arrived whole, in the order they did.
    pub fn done(&self) -> &[FlowDone] {
        &self.done
    }

    /// A data packet arrives at `now` (ns), whole or (`trimmed`) as its header alone.
    pub fn handle(&mut self, now: u64, p: &Packet, trimmed: bool) {
        self.now = self.now.max(now);
        let Kind::Data { seq, len, packets } = p.kind else {
            return;
        };
        let f = self.flows.entry(p.flow).or_default();
        if f.got.is_empty() {
            f.got = vec![false; packets as usize];
        }
        let Some(got) = f.got.get_mut(seq as usize) else {
            return;
        };
        if trimmed {
            self.trimmed += 1;
            self.control.push_back(Packet {
                flow: p.flow,
                kind: Kind::Nack { seq },
            });
        } else {
            self.control.push_back(Packet {
                flow: p.flow,
                kind: Kind::Ack { seq },
            });
            if *got {
                return;
            }
            *got = true;
            f.received += 1;
            f.bytes += u64::from(len);
            if f.received as usize == f.got.len() {
                f.done = true;
                self.done.push(FlowDone {
                    flow: p.flow,
                    bytes: f.bytes,
                    at: now,
                });
                return;
            }
        }
        if !f.done {
            self.pulls.push_back(p.flow);
        }
    }

    /// The next packet to send at `now` (ns): an ACK or NACK, or a pull when the pacer allows.
    pub fn poll_transmit(&mut self, now: u64) -> Option<Packet> {
        self.now = self.now.max(now);
        if let Some(c) = self.control.pop_front() {
            return Some(c);
        }
        if self.next_pull > now {
            return None;
        }
        while let Some(flow) = self.pulls.pop_front() {
            let Some(f) = self.flows.get_mut(&flow).filter(|f| !f.done) else {
                continue;
            };
            f.pulls += 1;
            self.next_pull = now + self.pace;
            return Some(Packet {
                flow,
                kind: Kind::Pull { count: f.pulls },
            });
        }
        None
    }

    /// When it next has a packet to send without new input (ns).
    pub fn poll_timeout(&self) -> Option<u64> {
        if !self.control.is_empty() {
            return Some(self.now);
        }
        (!self.pulls.is_empty()).then(|| self.next_pull.max(self.now))
    }
}
