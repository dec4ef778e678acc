//! A trimming output queue, as NDP and Ultra Ethernet switches have: two classes on one line.
//! Whole frames wait in a data queue of bounded bytes; when it is full, a frame's payload is cut
//! off ([`Frame::trim`]) and its header waits in a priority queue instead, which the line serves
//! first, so that the receiver learns of the loss within a round trip. Frames of priority class
//! 7 (control packets and headers, [`super::TRIMMED_DSCP`]) always go to the priority queue.
//!
//! Its behaviour follows htsim's `CompositeQueue` (csg-htsim `sim/compositequeue.cpp`), the
//! queue of the NDP paper and of the Ultra Ethernet simulations: the data queue's bytes count
//! the frame on the line until its last bit has left; when a whole frame finds the data queue
//! full, half the time (a fair coin) the newest queued frame is trimmed instead and the arrival
//! takes its place, so that no arrival phase is always the one trimmed; the priority queue holds
//! at most twice the data queue's bytes and drops headers beyond that.
//!
//! Departure instants are decided when a frame starts on the line (which class goes next is not
//! known when a frame joins), so the queue is driven by explicit time: [`TrimQueue::arrive`] at
//! each arrival, [`TrimQueue::poll_start`] for each frame that starts by a given instant, and
//! [`TrimQueue::next_start`] for when to ask again.

use std::collections::VecDeque;

use serde::Serialize;

use super::frame::Frame;
use super::link::LinkSpec;
use super::serialiser::Serialiser;
use crate::rng::Rng;

/// The priority class whose frames always take the priority queue.
pub const HEADER_CLASS: u8 = 7;

/// What became of a frame offered to a [`TrimQueue`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrimVerdict {
    /// Queued whole in the data queue (another queued frame may have been trimmed for it).
    Queued,
    /// Cut to its header, which waits in the priority queue.
    Trimmed,
    /// Dropped: a header (or control frame) that found the priority queue full.
    Dropped,
}

/// Counters of a trimming queue.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TrimStats {
    /// Frames cut to their headers (the arrival, or a queued frame trimmed in its place).
    pub trimmed: u64,
    /// Headers and control frames dropped at a full priority queue.
    pub dropped: u64,
    /// Frames sent from the priority queue.
    pub headers_out: u64,
}

#[derive(Debug)]
struct Held<F> {
    frame: F,
    flow: u32,
    at: u64,
}

/// The two-class queue of one output port and its line.
#[derive(Debug)]
pub struct TrimQueue<F> {
    link: LinkSpec,
    line: Serialiser,
    rng: Rng,
    data: VecDeque<Held<F>>,
    headers: VecDeque<Held<F>>,
    /// Bytes in the data queue, the frame on the line included until `serving` ends.
    data_bytes: u64,
    header_bytes: u64,
    /// A data frame on the line: when its last bit leaves (ns) and its bytes.
    serving: Option<(u64, u64)>,
    /// Most bytes the data queue holds.
    limit: u64,
    /// Counters.
    pub stats: TrimStats,
}

impl<F: Frame> TrimQueue<F> {
    /// The queue onto `link` (its rate and framing), whose data queue holds `limit` bytes; `rng`
    /// tosses the coin that picks which frame a full data queue trims.
    pub fn new(link: &LinkSpec, limit: u64, rng: Rng) -> Self {
        TrimQueue {
            link: link.clone(),
            line: Serialiser::new(link.rate),
            rng,
            data: VecDeque::new(),
            headers: VecDeque::new(),
            data_bytes: 0,
            header_bytes: 0,
            serving: None,
            limit,
            stats: TrimStats::default(),
        }
    }

    /// Bytes in the data queue at the last instant the queue was told of, the frame on the line
    /// included.
    pub fn occupancy(&self) -> u64 {
        self.data_bytes
    }

    /// True if nothing waits in either queue.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty() && self.headers.is_empty()
    }

    /// Frame `frame` of flow `flow` arrives at `now` (ns, not earlier than any instant the queue
    /// was told of). Call [`TrimQueue::poll_start`] with `now` first, so that what started
    /// before it has left the queues, and again after, to start it at once on an idle line.
    pub fn arrive(&mut self, now: u64, mut frame: F, flow: u32) -> TrimVerdict {
        self.release(now);
        let len = frame.frame_len() as u64;
        if frame.priority() != HEADER_CLASS && !frame.is_trimmed() {
            if self.data_bytes + len <= self.limit {
                self.push_data(now, frame, flow, len);
                return TrimVerdict::Queued;
            }
            // Full: trim the newest waiting frame in its place half the time (htsim's coin), or
            // the arrival.
            if !self.data.is_empty() && self.rng.below(2) == 0 {
                if let Some(mut old) = self.data.pop_back() {
                    self.data_bytes -= old.frame.frame_len() as u64;
                    old.frame.trim();
                    self.stats.trimmed += 1;
                    // The booted header does not count as this call's verdict: the arrival
                    // is queued whole.
                    let _ = self.push_header(old.at, old.frame, old.flow);
                    if self.data_bytes + len <= self.limit {
                        self.push_data(now, frame, flow, len);
                        return TrimVerdict::Queued;
                    }
                }
            }
            frame.trim();
            self.stats.trimmed += 1;
            return match self.push_header(now, frame, flow) {
                TrimVerdict::Queued => TrimVerdict::Trimmed,
                v => v,
            };
        }
        self.push_header(now, frame, flow)
    }

    /// The next frame to start on the line at or before `now` (ns): the priority queue's head
    /// if it has one, else the data queue's; with the instant its last bit leaves (ns) and its
    /// flow. `None` while the line is busy past `now` or both queues are empty.
    pub fn poll_start(&mut self, now: u64) -> Option<(u64, F, u32)> {
        self.release(now);
        if self.line.free_at() > now {
            return None;
        }
        let (held, data) = match self.headers.pop_front() {
            Some(h) => (h, false),
            None => (self.data.pop_front()?, true),
        };
        let len = held.frame.frame_len() as u64;
        let dep = self.line.send(held.at, self.link.wire_bytes(len as usize));
        if data {
            self.serving = Some((dep, len));
        } else {
            self.header_bytes -= len;
            self.stats.headers_out += 1;
        }
        Some((dep, held.frame, held.flow))
    }

    /// When a frame next starts on the line (ns): when it is free, if anything waits.
    pub fn next_start(&self) -> Option<u64> {
        (!self.is_empty()).then(|| self.line.free_at())
    }

    fn release(&mut self, now: u64) {
        if let Some((dep, len)) = self.serving
            && dep <= now
        {
            self.data_bytes -= len;
            self.serving = None;
        }
    }

    fn push_data(&mut self, at: u64, frame: F, flow: u32, len: u64) {
        self.data_bytes += len;
        self.data.push_back(Held { frame, flow, at });
    }

    fn push_header(&mut self, at: u64, frame: F, flow: u32) -> TrimVerdict {
        let len = frame.frame_len() as u64;
        if self.header_bytes + len > 2 * self.limit {
            self.stats.dropped += 1;
            return TrimVerdict::Dropped;
        }
        self.header_bytes += len;
        self.headers.push_back(Held { frame, flow, at });
        TrimVerdict::Queued
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::Ecn;
    use crate::time::Duration;
    use crate::units::Rate;

    /// An IPv4/UDP frame of `len` bytes with DSCP `dscp`.
    fn frame(len: usize, dscp: u8) -> Vec<u8> {
        let mut f = vec![0u8; len];
        f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
        f[14] = 0x45;
        f[15] = (dscp << 2) | Ecn::Ect0 as u8;
        f[16..18].copy_from_slice(&((len - 14) as u16).to_be_bytes());
        f[23] = 17;
        f
    }

    /// 10 Gbit/s, 1514-byte frames: 1211.2 ns each.
    fn queue(frames: u64) -> TrimQueue<Vec<u8>> {
        let link = LinkSpec::ethernet(Some(Rate::mbps(10_000)), Duration::ZERO);
        TrimQueue::new(&link, frames * 1514, Rng::new(7))
    }

    /// Everything that starts by `now`, in order: (departure, trimmed, flow).
    fn drain(q: &mut TrimQueue<Vec<u8>>, now: u64) -> Vec<(u64, bool, u32)> {
        let mut out = Vec::new();
        while let Some((dep, f, flow)) = q.poll_start(now) {
            out.push((dep, f.is_trimmed(), flow));
        }
        out
    }

    #[test]
    fn a_full_data_queue_trims_and_the_header_overtakes_the_queued_data() {
        let mut q = queue(4);
        // Ten frames at once onto a 4-frame queue: four queued, six trimmed (the coin picks
        // which), none dropped.
        let (mut verdicts, mut out) = (Vec::new(), Vec::new());
        for i in 0..10 {
            verdicts.push(q.arrive(0, frame(1514, 0), i));
            out.extend(drain(&mut q, 0));
        }
        assert_eq!(q.stats.trimmed, 6);
        assert_eq!(q.stats.dropped, 0);
        assert!(!verdicts.contains(&TrimVerdict::Dropped));
        out.extend(drain(&mut q, u64::MAX));
        // The first frame was on the line already; then every header, then the data.
        let trimmed: Vec<bool> = out.iter().map(|o| o.1).collect();
        let mut want = vec![false];
        want.extend([true; 6]);
        want.extend([false; 3]);
        assert_eq!(trimmed, want);
        // A frame takes 1211.2 ns of line, a header of 42 bytes 33.6 ns: the six are through
        // 201.6 ns after the first frame, ahead of three whole frames that a plain FIFO would
        // have sent first (instants rounded up to the nanosecond).
        assert_eq!(out[0].0, 1212);
        assert_eq!(out[6].0, 1413);
        assert_eq!(out[9].0, 5047);
    }

    #[test]
    fn without_room_for_headers_they_are_dropped() {
        // A one-frame queue holds 1514 bytes of data and 3028 of headers: 72 headers of 42.
        let mut q = queue(1);
        for i in 0..200 {
            q.arrive(0, frame(1514, 0), i);
            drain(&mut q, 0);
        }
        assert_eq!(q.stats.trimmed, 199);
        assert_eq!(q.stats.dropped, 199 - 3028 / 42);
    }

    #[test]
    fn control_frames_take_the_priority_queue_untrimmed() {
        let mut q = queue(4);
        q.arrive(0, frame(1514, 0), 0);
        let mut out = drain(&mut q, 0);
        assert_eq!(out.len(), 1, "the first starts at once");
        q.arrive(0, frame(1514, 0), 0);
        // CS7 (DSCP 56): class 7, not trimmed.
        assert_eq!(q.arrive(0, frame(64, 56), 1), TrimVerdict::Queued);
        out.extend(drain(&mut q, u64::MAX));
        assert_eq!(out.iter().map(|o| o.2).collect::<Vec<_>>(), [0, 1, 0]);
        assert_eq!(q.stats.trimmed, 0);
        assert_eq!(q.stats.headers_out, 1);
    }

    #[test]
    fn the_frame_on_the_line_counts_until_it_has_left() {
        let mut q = queue(1);
        assert_eq!(q.arrive(0, frame(1514, 0), 0), TrimVerdict::Queued);
        assert_eq!(drain(&mut q, 0).len(), 1);
        // Still on the line at 1 us: the next is trimmed; gone at 1.3 us: the next is queued.
        assert_eq!(q.arrive(1_000, frame(1514, 0), 0), TrimVerdict::Trimmed);
        drain(&mut q, 1_300);
        assert_eq!(q.arrive(1_300, frame(1514, 0), 0), TrimVerdict::Queued);
    }
}
