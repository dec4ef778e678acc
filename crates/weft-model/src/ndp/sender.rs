//! The sending end of an NDP flow.

use std::collections::VecDeque;

use super::{Kind, Packet};
use crate::time::Duration;

/// Counters of a sender (of NDP, and of DCQCN: [`crate::dcqcn::Sender`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SenderStats {
    /// Data packets sent, retransmissions included.
    pub sent: u64,
    /// Packets sent again (after a NACK or a time-out; DCQCN's go-back-N counts every packet
    /// it sends again).
    pub retransmitted: u64,
    /// NACKs received (NDP: packets that arrived trimmed; DCQCN: a gap that sends the flow
    /// back to the packet named).
    pub nacks: u64,
    /// Retransmission time-outs.
    pub timeouts: u64,
}

/// The sending end of one NDP flow of a given size: a first window at once, then one packet
/// per pull; NACKed packets first, new ones after.
#[derive(Clone, Debug)]
pub struct Sender {
    flow: u32,
    size: u64,
    mss: u32,
    packets: u32,
    next_new: u32,
    acked: Vec<bool>,
    acked_count: u32,
    rtx: VecDeque<u32>,
    in_rtx: Vec<bool>,
    /// Packets it may send now (the first window, then what pulls granted).
    credit: u64,
    pulls_seen: u64,
    rto: u64,
    /// The last instant (ns) it heard from the receiver or started the flow.
    progress: u64,
    done_at: Option<u64>,
    /// Counters.
    pub stats: SenderStats,
}

impl Sender {
    /// Flow `flow` of `size` bytes in packets of at most `mss` bytes of payload, starting with
    /// `window` packets, sending again what is unacknowledged `rto` after the receiver was last
    /// heard from; started at `now` (ns).
    pub fn new(flow: u32, size: u64, mss: u32, window: u32, rto: Duration, now: u64) -> Self {
        let mss = mss.max(1);
        let packets = size.div_ceil(u64::from(mss)).clamp(1, u64::from(u32::MAX)) as u32;
        Sender {
            flow,
            size,
            mss,
            packets,
            next_new: 0,
            acked: vec![false; packets as usize],
            acked_count: 0,
            rtx: VecDeque::new(),
            in_rtx: vec![false; packets as usize],
            credit: u64::from(window.max(1)),
            pulls_seen: 0,
            rto: rto.as_nanos().max(1),
            progress: now,
            done_at: None,
            stats: SenderStats::default(),
        }
    }

    /// The flow's number.
    pub fn flow(&self) -> u32 {
        self.flow
    }

    /// When the last packet was acknowledged (ns), once it has been.
    pub fn done_at(&self) -> Option<u64> {
        self.done_at
    }

    /// A packet of the receiver's arrives at `now` (ns).
    pub fn handle(&mut self, now: u64, p: &Packet) {
        if p.flow != self.flow {
            return;
        }
        self.progress = now;
        match p.kind {
            Kind::Ack { seq } => {
                if let Some(a) = self.acked.get_mut(seq as usize).filter(|a| !**a) {
                    *a = true;
                    self.acked_count += 1;
                    if self.acked_count == self.packets {
                        self.done_at = Some(now);
                    }
                }
            }
            Kind::Nack { seq } => {
                self.stats.nacks += 1;
                self.queue_again(seq);
            }
            Kind::Pull { count } => {
                if count > self.pulls_seen {
                    self.credit += count - self.pulls_seen;
                    self.pulls_seen = count;
                }
            }
            Kind::Data { .. } => {}
        }
    }

    /// The next data packet to send at `now` (ns), if it has credit and something to send.
    pub fn poll_transmit(&mut self, _now: u64) -> Option<Packet> {
        if self.credit == 0 || self.done_at.is_some() {
            return None;
        }
        let seq = loop {
            match self.rtx.pop_front() {
                Some(s) => {
                    self.in_rtx[s as usize] = false;
                    if !self.acked[s as usize] {
                        self.stats.retransmitted += 1;
                        break s;
                    }
                }
                None if self.next_new < self.packets => {
                    self.next_new += 1;
                    break self.next_new - 1;
                }
                None => {
                    // Nothing to send: the pull is spent.
                    self.credit = 0;
                    return None;
                }
            }
        };
        self.credit -= 1;
        self.stats.sent += 1;
        let start = u64::from(seq) * u64::from(self.mss);
        let len = (self.size - start).min(u64::from(self.mss)) as u32;
        Some(Packet {
            flow: self.flow,
            kind: Kind::Data {
                seq,
                len,
                packets: self.packets,
            },
        })
    }

    /// When it next has something to do without new input (ns): at once while it has credit
    /// and packets, the retransmission time-out while packets are unacknowledged.
    pub fn poll_timeout(&self) -> Option<u64> {
        if self.done_at.is_some() {
            return None;
        }
        if self.credit > 0 && (!self.rtx.is_empty() || self.next_new < self.packets) {
            return Some(self.progress);
        }
        (self.next_new > 0).then_some(self.progress + self.rto)
    }

    /// Time passes to `now` (ns): past the time-out, every packet sent and not acknowledged is
    /// sent again.
    pub fn handle_timeout(&mut self, now: u64) {
        if self.done_at.is_some() || now < self.progress + self.rto || self.next_new == 0 {
            return;
        }
        self.stats.timeouts += 1;
        self.progress = now;
        for seq in 0..self.next_new {
            if !self.acked[seq as usize] && !self.in_rtx[seq as usize] {
                self.queue_again(seq);
                self.credit += 1;
            }
        }
    }

    fn queue_again(&mut self, seq: u32) {
        let i = seq as usize;
        if i < self.acked.len() && !self.acked[i] && !self.in_rtx[i] {
            self.in_rtx[i] = true;
            self.rtx.push_back(seq);
        }
    }
}
