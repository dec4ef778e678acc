//! A host's transmit path for an application with several connections: one small queue per
//! flow, the flows taking turns at the pace of the host's link in bursts of up to
//! [`BURST`] bytes. This is what Linux's TCP small queues make of a host's sockets: each keeps
//! at most a couple of TSO/GSO packets (up to 64 KiB each) below TCP, so the line interleaves
//! the sockets by such bursts. Without it every segment a connection's window allows goes at
//! once into the one FIFO of the host's link, and a short message on another connection waits
//! behind a whole megabyte (90 ms at 100 Mbit/s) that the real host would have let it pass
//! after one burst.
//!
//! The link still serialises what it is handed; the NIC only hands it a frame when the line
//! is free, so the link's own queue stays empty. Time comes only from the caller.

use std::collections::VecDeque;

use weft_model::Instant;
use weft_model::net::{Frame, LinkSpec, Serialiser};

use super::frame::SimFrame;

/// Frames a flow may hold in its queue before its connection is asked for more (TCP small
/// queues' floor of two packets; the flow's connection is asked again each time the line
/// takes one).
pub const FLOW_FRAMES: usize = 2;

/// Bytes of frames a flow sends in one turn at the line while it has more (the largest
/// TSO/GSO packet Linux hands a device, 64 KiB).
pub const BURST: u64 = 64 << 10;

/// The transmit path of one host: per-flow queues and the line they share.
#[derive(Debug)]
pub struct Nic {
    link: LinkSpec,
    line: Serialiser,
    queues: Vec<VecDeque<SimFrame>>,
    /// The flow whose turn it is.
    turn: usize,
    /// Bytes it sent in this turn.
    sent: u64,
}

impl Nic {
    /// A path onto `link` for `flows` flows.
    pub fn new(link: LinkSpec, flows: usize) -> Self {
        Nic {
            line: Serialiser::new(link.rate),
            link,
            queues: vec![VecDeque::new(); flows],
            turn: 0,
            sent: 0,
        }
    }

    /// True if flow `flow` may queue another frame.
    pub fn has_room(&self, flow: usize) -> bool {
        self.queues.get(flow).is_some_and(|q| q.len() < FLOW_FRAMES)
    }

    /// Queues `frame` on flow `flow` (beyond its room if need be: a connection's output is
    /// never dropped here).
    pub fn push(&mut self, flow: usize, frame: SimFrame) {
        if let Some(q) = self.queues.get_mut(flow) {
            q.push_back(frame);
        }
    }

    /// The next frame for the line at `now`, if the line is free and a flow has one: the flow
    /// whose turn it is until it has sent [`BURST`] bytes or has nothing queued, then the next
    /// one with something, in order.
    pub fn pop(&mut self, now: Instant) -> Option<SimFrame> {
        if self.line.free_at() > now.0 {
            return None;
        }
        let n = self.queues.len();
        let keep = self.sent < BURST && self.queues.get(self.turn).is_some_and(|q| !q.is_empty());
        if !keep {
            let next = (1..=n)
                .map(|k| (self.turn + k) % n)
                .find(|&q| !self.queues[q].is_empty())?;
            self.turn = next;
            self.sent = 0;
        }
        let f = self.queues[self.turn].pop_front()?;
        self.sent += f.frame_len() as u64;
        self.line.send(now.0, self.link.wire_bytes(f.frame_len()));
        Some(f)
    }

    /// When a queued frame can next go, if one is queued.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.queues
            .iter()
            .any(|q| !q.is_empty())
            .then(|| Instant(self.line.free_at()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use weft_model::{Duration, Rate};

    fn frame(dst: usize, ip_len: u32) -> SimFrame {
        SimFrame::udp(0, dst, ip_len, 0, 0)
    }

    #[test]
    fn flows_take_turns_by_bursts_at_the_line_rate() {
        let link = LinkSpec::ethernet(Some(Rate::mbps(100)), Duration::ZERO);
        let mut nic = Nic::new(link, 2);
        nic.push(0, frame(1, 1486));
        nic.push(0, frame(1, 1486));
        assert!(!nic.has_room(0), "two frames fill a flow");
        assert!(nic.has_room(1));
        nic.push(1, frame(2, 100));
        let t0 = Instant::ZERO;
        assert_eq!(nic.pop(t0).map(|f| f.dst), Some(1));
        // The line is busy for the 1500-byte frame: 120 us at 100 Mbit/s.
        assert_eq!(nic.pop(t0), None);
        let free = nic.poll_timeout().expect("frames wait");
        assert_eq!(free, Instant(120_000));
        // The first flow's burst goes on while it has frames; then the other flow's turn.
        assert_eq!(nic.pop(free).map(|f| f.dst), Some(1));
        let free = nic.poll_timeout().expect("a frame waits");
        assert_eq!(nic.pop(free).map(|f| f.dst), Some(2));
        assert_eq!(nic.poll_timeout(), None);
    }

    #[test]
    fn a_long_flow_yields_after_a_burst() {
        let mut nic = Nic::new(LinkSpec::ethernet(None, Duration::ZERO), 2);
        for _ in 0..50 {
            nic.push(0, frame(1, 1486));
        }
        nic.push(1, frame(2, 100));
        let order: Vec<u16> =
            std::iter::from_fn(|| nic.pop(Instant::ZERO).map(|f| f.dst)).collect();
        assert_eq!(order.len(), 51);
        // 44 frames of 1500 bytes reach 64 KiB: the short flow goes 45th, not 51st.
        assert_eq!(order.iter().position(|&d| d == 2), Some(44));
    }
}
