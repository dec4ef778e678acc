//! The sending end of a DCQCN flow: packets paced at the rate control's rate, go-back-N on a
//! NACK or a time-out.

use super::rate::{Params, RateControl};
use super::{Kind, Packet};
use crate::ndp::SenderStats;
use crate::time::Duration;
use crate::units::Rate;

/// The retransmission time-out of a sender unless told otherwise: a millisecond, chosen (not
/// a NIC's figure) so that go-back-N on NACKs, not the timer, repairs what a lossy fabric drops;
/// over PFC nothing is dropped and it never fires.
pub const DEFAULT_RTO: Duration = Duration::from_millis(1);

/// The sending end of one flow of a given size.
#[derive(Clone, Debug)]
pub struct Sender {
    flow: u32,
    size: u64,
    mss: u32,
    packets: u32,
    /// Bytes each packet occupies on the wire beyond its payload (headers, framing): what the
    /// pacer spaces packets by.
    overhead: u32,
    /// The next packet to send, and the first not yet acknowledged.
    next: u32,
    una: u32,
    /// Packets below this were sent before (a packet sent again below it is a retransmission).
    high: u32,
    /// When the pacer lets the next packet go (ns).
    next_send: u64,
    rto: u64,
    /// The last instant (ns) the sender made progress (started, or a new ACK).
    progress: u64,
    done_at: Option<u64>,
    /// The flow's rate.
    pub rate: RateControl,
    /// Counters.
    pub stats: SenderStats,
}

impl Sender {
    /// Flow `flow` of `size` bytes in packets of at most `mss` bytes of payload, each `overhead`
    /// bytes more on the wire, on a line of `line`, with DCQCN's `params`; started at `now` (ns).
    /// What is unacknowledged [`DEFAULT_RTO`] after the last progress is sent again from the
    /// first ([`Sender::with_rto`] to change it).
    pub fn new(
        flow: u32,
        size: u64,
        mss: u32,
        overhead: u32,
        line: Rate,
        params: Params,
        now: u64,
    ) -> Self {
        let mss = mss.max(1);
        let packets = size.div_ceil(u64::from(mss)).clamp(1, u64::from(u32::MAX)) as u32;
        Sender {
            flow,
            size,
            mss,
            packets,
            overhead,
            next: 0,
            una: 0,
            high: 0,
            next_send: now,
            rto: DEFAULT_RTO.as_nanos(),
            progress: now,
            done_at: None,
            rate: RateControl::new(params, line, now),
            stats: SenderStats::default(),
        }
    }

    /// The same sender with a retransmission time-out of `rto`.
    pub fn with_rto(mut self, rto: Duration) -> Self {
        self.rto = rto.as_nanos().max(1);
        self
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
        if p.flow != self.flow || self.done_at.is_some() {
            return;
        }
        match p.kind {
            Kind::Ack { next } => self.acked(now, next),
            Kind::Nack { next } => {
                self.stats.nacks += 1;
                self.acked(now, next);
                // Go back: everything from the packet the receiver expects is sent again.
                if next < self.next {
                    self.next = next;
                }
            }
            Kind::Cnp => {
                self.rate.handle_timeout(now);
                self.rate.handle_cnp(now);
            }
            Kind::Data { .. } => {}
        }
    }

    fn acked(&mut self, now: u64, next: u32) {
        if next > self.una && next <= self.packets {
            self.una = next;
            self.progress = now;
            self.next = self.next.max(next);
            if self.una == self.packets {
                self.done_at = Some(now);
            }
        }
    }

    /// The next data packet at `now` (ns), if the pacer allows one and something is left.
    pub fn poll_transmit(&mut self, now: u64) -> Option<Packet> {
        if self.done_at.is_some() || self.next >= self.packets || self.next_send > now {
            return None;
        }
        let seq = self.next;
        self.next += 1;
        if seq < self.high {
            self.stats.retransmitted += 1;
        }
        self.high = self.high.max(self.next);
        self.stats.sent += 1;
        let start = u64::from(seq) * u64::from(self.mss);
        let len = (self.size - start).min(u64::from(self.mss)) as u32;
        let wire = u64::from(len + self.overhead);
        self.rate.on_sent(wire);
        // The next packet leaves when this one has, at the current rate.
        self.next_send = now.max(self.next_send) + self.rate.time_for(wire);
        Some(Packet {
            flow: self.flow,
            kind: Kind::Data {
                seq,
                len,
                packets: self.packets,
            },
        })
    }

    /// When it next has something to do without new input (ns): the pacer's next slot while
    /// packets are left, the rate's timers, and the retransmission time-out.
    pub fn poll_timeout(&self) -> Option<u64> {
        if self.done_at.is_some() {
            return None;
        }
        let send = (self.next < self.packets).then_some(self.next_send);
        let rto = (self.high > self.una).then_some(self.progress + self.rto);
        [send, rto, self.rate.poll_timeout()]
            .into_iter()
            .flatten()
            .min()
    }

    /// Time passes to `now` (ns): the rate's timers run, and past the time-out the sender goes
    /// back to the first unacknowledged packet.
    pub fn handle_timeout(&mut self, now: u64) {
        if self.done_at.is_some() {
            return;
        }
        self.rate.handle_timeout(now);
        if self.high > self.una && now >= self.progress + self.rto {
            self.stats.timeouts += 1;
            self.progress = now;
            self.next = self.una;
        }
    }
}
