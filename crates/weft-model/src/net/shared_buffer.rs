//! A switch buffer shared by its output queues, as merchant silicon has: one pool of bytes that
//! every Ethernet output queue of the switch draws on, each admitting a frame only while its own
//! queue is below `alpha` times the free pool (the dynamic threshold of Choudhury and Hahne,
//! "Dynamic queue length thresholds for shared-memory packet switches", IEEE/ACM Transactions on
//! Networking 6(2), 1998). One queue alone settles at `alpha / (1 + alpha)` of the pool and `n`
//! busy queues at `alpha / (1 + n alpha)` each, so some of the pool always stays free for a
//! queue that starts a burst; a fixed per-port buffer instead either wastes what idle ports
//! are given or lets one port hog it.
//!
//! The pool counts a frame from its admission until its last bit has left the line: a FIFO
//! queue knows that instant when it admits the frame ([`SharedBuffer::hold_until`]); a trimming
//! or lossless queue only when the frame starts, so until then it reports what it holds
//! waiting ([`SharedBuffer::set_waiting`]) and hands each frame over as it starts. The switch
//! lends the pool to the output it serves ([`SharedBuffer::lend_to`]): the queues are driven
//! one at a time, each at its own instants, and instants of different ports may be out of
//! order by up to a slot of arrivals ([`super::LinkSpec::slot`]), by which what left the
//! pool may be counted early. Nothing here reads a clock.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use serde::{Deserialize, Serialize};

/// The shared buffer of a switch.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SharedBufferSpec {
    /// Bytes of the pool (frames count from their Ethernet header, without preamble or gap).
    pub bytes: u64,
    /// A queue admits a frame while it holds fewer than `alpha` times the free bytes of the pool.
    pub alpha: f64,
}

/// The pool of one switch: bytes held, and when they leave.
#[derive(Clone, Debug)]
pub struct SharedBuffer {
    spec: SharedBufferSpec,
    /// Bytes held: waiting in held queues and queued or on the line behind a known departure.
    used: u64,
    /// Per port, the bytes its held queue keeps waiting (not yet started on the line).
    waiting: Vec<u64>,
    /// Frames whose departure is known: (last bit leaves, ns; port; bytes).
    leaving: BinaryHeap<Reverse<(u64, u32, u64)>>,
    /// The port the pool is lent to.
    port: u32,
    /// Most bytes held at once.
    pub max_used: u64,
}

impl SharedBuffer {
    /// The pool of `spec` for a switch of `ports` ports, empty.
    pub fn new(spec: SharedBufferSpec, ports: usize) -> Self {
        SharedBuffer {
            spec,
            used: 0,
            waiting: vec![0; ports],
            leaving: BinaryHeap::new(),
            port: 0,
            max_used: 0,
        }
    }

    /// Its size and threshold.
    pub fn spec(&self) -> SharedBufferSpec {
        self.spec
    }

    /// Lends the pool to the output of `port`: what it holds from now on is that port's.
    pub fn lend_to(&mut self, port: usize) {
        self.port = port as u32;
    }

    /// Bytes held, as of the last instant it was told of.
    pub fn used(&self) -> u64 {
        self.used
    }

    /// Frees what has left the lines by `now` (ns).
    pub fn advance(&mut self, now: u64) {
        while let Some(&Reverse((at, _, bytes))) = self.leaving.peek() {
            if at > now {
                break;
            }
            self.leaving.pop();
            self.used -= bytes;
        }
    }

    /// The dynamic threshold: `alpha` times the free bytes (rounded down).
    pub fn threshold(&self) -> u64 {
        let free = self.spec.bytes.saturating_sub(self.used);
        (self.spec.alpha * free as f64) as u64
    }

    /// Whether a queue holding `queued` bytes admits a frame of `len` bytes at `now` (ns): it is
    /// below the threshold, and the pool has room for the frame.
    pub fn admits(&mut self, now: u64, queued: u64, len: u64) -> bool {
        self.advance(now);
        queued < self.threshold() && self.used.saturating_add(len) <= self.spec.bytes
    }

    /// The most data bytes a queue holding `queued` bytes may hold with a frame of `len` bytes
    /// that arrives at `now` (ns), for a queue that admits while `queued + len` is within a
    /// limit ([`super::TrimQueue::set_limit`]): the same rule as [`SharedBuffer::admits`].
    pub fn limit_for(&mut self, now: u64, queued: u64, len: u64) -> u64 {
        self.advance(now);
        let below = self.threshold().saturating_add(len).saturating_sub(1);
        let room = queued.saturating_add(self.spec.bytes.saturating_sub(self.used));
        below.min(room)
    }

    /// The lent port holds `bytes` until `at` (ns), when their last bit leaves its line.
    pub fn hold_until(&mut self, at: u64, bytes: u64) {
        self.used += bytes;
        self.max_used = self.max_used.max(self.used);
        self.leaving.push(Reverse((at, self.port, bytes)));
    }

    /// The lent port keeps `bytes` waiting (not yet started) now.
    pub fn set_waiting(&mut self, bytes: u64) {
        let Some(w) = self.waiting.get_mut(self.port as usize) else {
            return;
        };
        self.used = self.used - *w + bytes;
        *w = bytes;
        self.max_used = self.max_used.max(self.used);
    }

    /// Frees at once everything `port` holds (it went down and lost it).
    pub fn forget_port(&mut self, port: usize) {
        let p = port as u32;
        let mut gone = 0;
        self.leaving.retain(|Reverse((_, q, bytes))| {
            if *q == p {
                gone += bytes;
            }
            *q != p
        });
        if let Some(w) = self.waiting.get_mut(port) {
            gone += std::mem::take(w);
        }
        self.used -= gone;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(bytes: u64, alpha: f64) -> SharedBuffer {
        SharedBuffer::new(SharedBufferSpec { bytes, alpha }, 4)
    }

    #[test]
    fn a_lone_queue_stops_at_alpha_over_one_plus_alpha_of_the_pool() {
        for (alpha, want) in [(1.0, 50_000), (0.125, 11_111), (4.0, 80_000)] {
            let mut p = pool(100_000, alpha);
            let mut q = 0;
            // Frames of one byte that never leave.
            while p.admits(0, q, 1) {
                p.hold_until(u64::MAX, 1);
                q += 1;
            }
            assert_eq!(q, want, "alpha {alpha}");
        }
    }

    #[test]
    fn what_has_left_the_line_is_free_again() {
        let mut p = pool(10_000, 1.0);
        p.hold_until(100, 4_000);
        p.lend_to(1);
        p.set_waiting(2_000);
        assert_eq!((p.used(), p.threshold()), (6_000, 4_000));
        p.advance(100);
        assert_eq!(p.used(), 2_000);
        p.lend_to(1);
        p.set_waiting(500);
        assert_eq!(p.used(), 500);
        p.hold_until(200, 1_000);
        p.forget_port(1);
        assert_eq!(p.used(), 0);
    }

    #[test]
    fn a_frame_finds_room_in_the_pool_or_is_refused() {
        // alpha 64 lets a queue reach the pool's end: the pool's size still bounds it.
        let mut p = pool(3_000, 64.0);
        assert!(p.admits(0, 0, 1_500));
        p.hold_until(10, 1_500);
        assert!(p.admits(0, 1_500, 1_500));
        p.hold_until(10, 1_500);
        assert!(!p.admits(0, 3_000, 64));
        // Nothing free: the threshold is zero, and the limit below what the queue holds.
        assert_eq!(p.limit_for(0, 3_000, 64), 63);
        assert!(p.admits(10, 0, 1_500));
    }
}
