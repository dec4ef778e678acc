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
//! The same queue holds the frames of a lossless (PFC) output that its downstream neighbour
//! may pause ([`TrimQueue::handle_pause`]): a frame of a paused class waits at the head of the
//! data queue until the class resumes or its pause runs out, while the priority queue (class 7,
//! which PFC leaves lossy) still goes. Without trimming (`trim = false` on the link) a full data
//! queue drops the arrival, as a tail-drop queue does.
//!
//! Departure instants are decided when a frame starts on the line (which class goes next is not
//! known when a frame joins), so the queue is driven by explicit time: [`TrimQueue::arrive`] at
//! each arrival, [`TrimQueue::poll_start`] for each frame that starts by a given instant, and
//! [`TrimQueue::next_start`] for when to ask again.

use std::collections::VecDeque;

use serde::Serialize;

use super::frame::Frame;
use super::link::LinkSpec;
use super::pfc::{PauseFrame, PfcEgress};
use super::serialiser::Serialiser;
use super::train::Counted;
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
    /// What a lossless input counted of it, released when it starts.
    counted: Option<Counted>,
}

/// A frame that starts on the line ([`TrimQueue::poll_start`]).
#[derive(Debug)]
pub struct Started<F> {
    /// When its last bit leaves (ns).
    pub dep: u64,
    /// The frame (trimmed or not).
    pub frame: F,
    /// Its flow.
    pub flow: u32,
    /// What a lossless input counted of it (its port, class and bytes as it came in), for
    /// that input to release.
    pub counted: Option<Counted>,
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
    /// Most bytes the priority queue holds: twice the data queue's first limit.
    header_limit: u64,
    /// A full data queue trims (else it drops the arrival).
    trims: bool,
    /// The last instant a resume lifted a pause (ns).
    lifted: u64,
    /// The pause state its downstream neighbour sets (a lossless link: [`LinkSpec::pfc`]).
    pause: Option<PfcEgress>,
    /// Counters.
    pub stats: TrimStats,
}

impl<F: Frame> TrimQueue<F> {
    /// The queue onto `link` (its rate and framing), whose data queue holds `limit` bytes; `rng`
    /// tosses the coin that picks which frame a full data queue trims. It trims if the link
    /// does ([`LinkSpec::trim`]) and obeys pauses if the link is lossless ([`LinkSpec::pfc`]).
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
            header_limit: limit.saturating_mul(2),
            trims: link.trim,
            lifted: 0,
            pause: link
                .pfc
                .map(|_| PfcEgress::new(link.rate.unwrap_or(crate::units::Rate(u64::MAX)))),
            stats: TrimStats::default(),
        }
    }

    /// Bytes in the data queue at the last instant the queue was told of, the frame on the line
    /// included.
    pub fn occupancy(&self) -> u64 {
        self.data_bytes
    }

    /// Bytes waiting in either queue (not yet started on the line) at the last instant the
    /// queue was told of.
    pub fn waiting_bytes(&self) -> u64 {
        let serving = self.serving.map_or(0, |(_, len)| len);
        self.data_bytes - serving + self.header_bytes
    }

    /// From now on the data queue holds at most `limit` bytes (a shared buffer's dynamic
    /// threshold, [`super::SharedBuffer::limit_for`]); what it holds beyond stays. The priority
    /// queue keeps its bound.
    pub fn set_limit(&mut self, limit: u64) {
        self.limit = limit;
    }

    /// True if nothing waits in either queue.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty() && self.headers.is_empty()
    }

    /// Frame `frame` of flow `flow`, with what a lossless input counted of it, arrives at `now` (ns, not earlier
    /// than any instant the queue was told of). Call [`TrimQueue::poll_start`] with `now`
    /// first, so that what started before it has left the queues, and again after, to start it
    /// at once on an idle line.
    pub fn arrive(
        &mut self,
        now: u64,
        frame: F,
        flow: u32,
        counted: Option<Counted>,
    ) -> TrimVerdict {
        self.release(now);
        let mut held = Held {
            frame,
            flow,
            at: now,
            counted,
        };
        if held.frame.priority() == HEADER_CLASS || held.frame.is_trimmed() {
            return self.push_header(held);
        }
        let len = held.frame.frame_len() as u64;
        if self.data_bytes.saturating_add(len) <= self.limit {
            self.push_data(held);
            return TrimVerdict::Queued;
        }
        if !self.trims {
            self.stats.dropped += 1;
            return TrimVerdict::Dropped;
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
                let _ = self.push_header(old);
                if self.data_bytes.saturating_add(len) <= self.limit {
                    self.push_data(held);
                    return TrimVerdict::Queued;
                }
            }
        }
        held.frame.trim();
        self.stats.trimmed += 1;
        match self.push_header(held) {
            TrimVerdict::Queued => TrimVerdict::Trimmed,
            v => v,
        }
    }

    /// A pause frame from the far end of the line arrives at `now` (ns); ignored unless the
    /// link is lossless. Ask [`TrimQueue::next_start`] again after it.
    pub fn handle_pause(&mut self, now: u64, p: PauseFrame) {
        if let Some(g) = self.pause.as_mut() {
            if p.quanta == 0 && g.is_paused(now, p.class) {
                self.lifted = self.lifted.max(now);
            }
            g.handle_pause(now, p);
        }
    }

    /// Nanoseconds the line has spent paused up to `now`, over every class.
    pub fn paused_ns(&self, now: u64) -> u64 {
        self.pause.as_ref().map_or(0, |g| g.total_paused_ns(now))
    }

    /// True if a frame that came in by switch port `from` waits in the data queue (the
    /// wait-for graph of a PFC deadlock).
    pub fn holds_from(&self, from: u32) -> bool {
        self.data
            .iter()
            .any(|h| h.counted.is_some_and(|c| c.from == from))
    }

    /// True if the data queue's head may not start at `now` (ns): its class is paused.
    pub fn blocked(&self, now: u64) -> bool {
        self.head_paused(now)
    }

    fn head_paused(&self, now: u64) -> bool {
        match (&self.pause, self.data.front()) {
            (Some(g), Some(h)) => g.is_paused(now, h.frame.priority()),
            _ => false,
        }
    }

    /// When the data queue's head is free of its pause, if it is paused (ns).
    fn head_pause_end(&self) -> Option<u64> {
        let (g, h) = (self.pause.as_ref()?, self.data.front()?);
        g.paused_until(h.frame.priority())
    }

    /// The next frame to start on the line at or before `now` (ns): the priority queue's head
    /// if it has one, else the data queue's unless its class is paused. `None` while the line
    /// is busy past `now`, both queues are empty or the data queue's head is paused.
    pub fn poll_start(&mut self, now: u64) -> Option<Started<F>> {
        self.release(now);
        if self.line.free_at() > now {
            return None;
        }
        let (held, data) = match self.headers.pop_front() {
            Some(h) => (h, false),
            None if self.head_paused(now) => return None,
            None => (self.data.pop_front()?, true),
        };
        // A data frame held by a pause starts when it was lifted, not when it arrived.
        let at = if data {
            let ended = self
                .pause
                .as_ref()
                .and_then(|g| g.paused_until(held.frame.priority()));
            held.at
                .max(self.lifted)
                .max(ended.filter(|&e| e <= now).unwrap_or(0))
        } else {
            held.at
        };
        let len = held.frame.frame_len() as u64;
        let dep = self.line.send(at, self.link.wire_bytes(len as usize));
        if data {
            self.serving = Some((dep, len));
        } else {
            self.header_bytes -= len;
            self.stats.headers_out += 1;
        }
        Some(Started {
            dep,
            frame: held.frame,
            flow: held.flow,
            counted: held.counted,
        })
    }

    /// When a frame next starts on the line (ns): when it is free, if anything waits, or when
    /// the pause of the data queue's head runs out, if that is later.
    pub fn next_start(&self) -> Option<u64> {
        if !self.headers.is_empty() {
            return Some(self.line.free_at());
        }
        self.data.front()?;
        Some(self.line.free_at().max(self.head_pause_end().unwrap_or(0)))
    }

    fn release(&mut self, now: u64) {
        if let Some((dep, len)) = self.serving
            && dep <= now
        {
            self.data_bytes -= len;
            self.serving = None;
        }
    }

    fn push_data(&mut self, h: Held<F>) {
        self.data_bytes += h.frame.frame_len() as u64;
        self.data.push_back(h);
    }

    fn push_header(&mut self, h: Held<F>) -> TrimVerdict {
        let len = h.frame.frame_len() as u64;
        if self.header_bytes + len > self.header_limit {
            self.stats.dropped += 1;
            return TrimVerdict::Dropped;
        }
        self.header_bytes += len;
        self.headers.push_back(h);
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

    /// What the lossless input `port` counted of a 1514-byte class-0 frame.
    fn from_port(port: u32) -> Option<Counted> {
        Some(Counted {
            from: port,
            class: 0,
            bytes: 1514,
        })
    }

    /// 10 Gbit/s, 1514-byte frames: 1211.2 ns each.
    fn queue(frames: u64) -> TrimQueue<Vec<u8>> {
        let mut link = LinkSpec::ethernet(Some(Rate::mbps(10_000)), Duration::ZERO);
        link.trim = true;
        TrimQueue::new(&link, frames * 1514, Rng::new(7))
    }

    /// A lossless queue of `frames` frames at 10 Gbit/s (no trimming).
    fn lossless(frames: u64) -> TrimQueue<Vec<u8>> {
        let mut link = LinkSpec::ethernet(Some(Rate::mbps(10_000)), Duration::ZERO);
        link.pfc = Some(crate::net::PfcSpec {
            xoff: 20 * 1514,
            xon: 10 * 1514,
            headroom: 4 * 1514,
            classes: 0x7f,
        });
        TrimQueue::new(&link, frames * 1514, Rng::new(7))
    }

    /// Everything that starts by `now`, in order: (departure, trimmed, flow).
    fn drain(q: &mut TrimQueue<Vec<u8>>, now: u64) -> Vec<(u64, bool, u32)> {
        let mut out = Vec::new();
        while let Some(s) = q.poll_start(now) {
            out.push((s.dep, s.frame.is_trimmed(), s.flow));
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
            verdicts.push(q.arrive(0, frame(1514, 0), i, None));
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
            q.arrive(0, frame(1514, 0), i, None);
            drain(&mut q, 0);
        }
        assert_eq!(q.stats.trimmed, 199);
        assert_eq!(q.stats.dropped, 199 - 3028 / 42);
    }

    #[test]
    fn control_frames_take_the_priority_queue_untrimmed() {
        let mut q = queue(4);
        q.arrive(0, frame(1514, 0), 0, None);
        let mut out = drain(&mut q, 0);
        assert_eq!(out.len(), 1, "the first starts at once");
        q.arrive(0, frame(1514, 0), 0, None);
        // CS7 (DSCP 56): class 7, not trimmed.
        assert_eq!(q.arrive(0, frame(64, 56), 1, None), TrimVerdict::Queued);
        out.extend(drain(&mut q, u64::MAX));
        assert_eq!(out.iter().map(|o| o.2).collect::<Vec<_>>(), [0, 1, 0]);
        assert_eq!(q.stats.trimmed, 0);
        assert_eq!(q.stats.headers_out, 1);
    }

    #[test]
    fn the_frame_on_the_line_counts_until_it_has_left() {
        let mut q = queue(1);
        assert_eq!(q.arrive(0, frame(1514, 0), 0, None), TrimVerdict::Queued);
        assert_eq!(drain(&mut q, 0).len(), 1);
        // Still on the line at 1 us: the next is trimmed; gone at 1.3 us: the next is queued.
        assert_eq!(
            q.arrive(1_000, frame(1514, 0), 0, None),
            TrimVerdict::Trimmed
        );
        drain(&mut q, 1_300);
        assert_eq!(
            q.arrive(1_300, frame(1514, 0), 0, None),
            TrimVerdict::Queued
        );
    }

    #[test]
    fn a_paused_class_holds_its_frames_until_the_resume_and_control_frames_still_go() {
        let mut q = lossless(8);
        // Paused at 0 for the longest time (65535 quanta: 3.36 ms at 10 Gbit/s).
        q.handle_pause(
            0,
            PauseFrame {
                class: 0,
                quanta: crate::net::MAX_QUANTA,
            },
        );
        q.arrive(0, frame(1514, 0), 0, from_port(3));
        q.arrive(0, frame(1514, 0), 1, from_port(3));
        assert!(
            drain(&mut q, 5_000).is_empty(),
            "data waits while its class is paused"
        );
        assert_eq!(q.next_start(), Some(3_355_392));
        assert!(q.holds_from(3) && !q.holds_from(2));
        // A CS7 frame (class 7, not lossless) passes the paused data.
        q.arrive(5_000, frame(64, 56), 2, None);
        assert_eq!(drain(&mut q, 5_000), [(5_052, false, 2)]);
        // Resumed at 10 us: the two frames go from then, back to back.
        q.handle_pause(
            10_000,
            PauseFrame {
                class: 0,
                quanta: 0,
            },
        );
        assert_eq!(q.next_start(), Some(5_052));
        let out = drain(&mut q, 20_000);
        assert_eq!(
            out.iter().map(|o| o.0).collect::<Vec<_>>(),
            [11_212, 12_423]
        );
        assert_eq!(q.paused_ns(20_000), 10_000);
        // Without trimming, a full data queue drops the arrival.
        let mut q = lossless(1);
        q.handle_pause(
            0,
            PauseFrame {
                class: 0,
                quanta: crate::net::MAX_QUANTA,
            },
        );
        assert_eq!(q.arrive(0, frame(1514, 0), 0, None), TrimVerdict::Queued);
        assert_eq!(q.arrive(0, frame(1514, 0), 0, None), TrimVerdict::Dropped);
        assert_eq!(q.stats.trimmed, 0);
    }
}
