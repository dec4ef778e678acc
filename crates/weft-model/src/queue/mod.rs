//! Queues with a buffer in cells, frames or bytes, and the drop policies of ATM switches: tail
//! drop, Partial Packet Discard (PPD) and Early Packet Discard (EPD, with a threshold).
//!
//! [`Queue`] is the buffer alone (no time); [`port::Port`] is a buffer drained by a line at a
//! rate, an [`Element`](crate::Element).

mod buffer;
pub mod port;

use std::collections::VecDeque;

use rustc_hash::FxHashMap;

use serde::{Deserialize, Serialize};

use crate::element::WireLen;

pub use buffer::{Buffer, BufferUnit};
pub use port::Port;

/// What a queue needs to know about an item: its size, the flow (virtual circuit) it belongs to,
/// and whether it ends a frame. A whole frame is its own end; an AAL5 cell ends its frame when its
/// end-of-frame bit is set.
pub trait Queued: WireLen {
    /// The flow (virtual circuit) whose frames the item belongs to; frames of one flow arrive in
    /// order and never interleave.
    fn flow(&self) -> u32 {
        0
    }
    /// True if this item is the last (or only) one of its frame.
    fn end_of_frame(&self) -> bool {
        true
    }
}

impl Queued for Vec<u8> {}

impl Queued for crate::cell::Cell {
    fn flow(&self) -> u32 {
        (u32::from(self.header.vpi) << 16) | u32::from(self.header.vci)
    }
    fn end_of_frame(&self) -> bool {
        self.header.end_of_frame()
    }
}

/// How much a queue holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Capacity {
    /// At most this many cells (items).
    Cells(u64),
    /// At most this many frames; for queues whose items are whole frames (one item per frame).
    Frames(u64),
    /// At most this many bytes of items (by [`WireLen`]).
    Bytes(u64),
}

/// What a queue does when a cell arrives that it cannot, or should not, hold. The EPD threshold
/// is a `T`: a count in the unit of the queue's [`Capacity`] once resolved (`u64`, the default),
/// or a [`Buffer`] as a user writes it (scenario files, link specifications).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "policy")]
pub enum DropPolicy<T = u64> {
    /// Drop whatever does not fit.
    Tail,
    /// Partial Packet Discard: after dropping a cell, drop the rest of its frame too, but keep the
    /// end-of-frame cell (if it fits) so the receiver can still find the frame boundary.
    Ppd,
    /// Early Packet Discard: refuse a whole new frame when occupancy is at or above `threshold`
    /// (in the unit of the [`Capacity`]); falls back to PPD when the buffer fills mid-frame.
    Epd {
        /// Occupancy at which new frames are refused.
        threshold: T,
    },
}

/// Why an item was dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropReason {
    /// It did not fit in the buffer.
    Full,
    /// It belonged to a frame already partly dropped (PPD).
    Partial,
    /// Its frame was refused at the EPD threshold.
    Early,
}

/// Running counts of what happened to items offered to a queue. Every offered item is either
/// queued or dropped; every queued item is later dequeued or still held.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueCounters {
    /// Items offered.
    pub offered: u64,
    /// Items accepted into the buffer.
    pub queued: u64,
    /// Items taken out.
    pub dequeued: u64,
    /// Items dropped because they did not fit.
    pub dropped_full: u64,
    /// Items dropped by Partial Packet Discard.
    pub dropped_partial: u64,
    /// Items dropped by Early Packet Discard.
    pub dropped_early: u64,
    /// Largest number of items held at once.
    pub max_items: u64,
    /// Largest number of bytes held at once.
    pub max_bytes: u64,
}

impl QueueCounters {
    /// All drops.
    pub fn dropped(&self) -> u64 {
        self.dropped_full + self.dropped_partial + self.dropped_early
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Discard {
    #[default]
    None,
    Partial,
    Early,
}

/// The drop-policy state of one flow's frame in progress (whether a frame is under way, and
/// whether the rest of it is being discarded). A queue keeps one per flow; a caller that knows
/// which frame an item belongs to may keep it itself ([`Queue::offer_in`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct FlowState {
    mid_frame: bool,
    discard: Discard,
}

/// A FIFO buffer with a capacity and a drop policy.
#[derive(Clone, Debug)]
pub struct Queue<T> {
    items: VecDeque<T>,
    bytes: u64,
    capacity: Capacity,
    policy: DropPolicy,
    flows: FxHashMap<u32, FlowState>,
    counters: QueueCounters,
}

impl<T: Queued> Queue<T> {
    /// An empty queue.
    pub fn new(capacity: Capacity, policy: DropPolicy) -> Self {
        Queue {
            items: VecDeque::new(),
            bytes: 0,
            capacity,
            policy,
            flows: FxHashMap::default(),
            counters: QueueCounters::default(),
        }
    }

    /// Offers an item; it is queued or dropped (and counted either way).
    pub fn offer(&mut self, item: T) -> Result<(), DropReason> {
        self.counters.offered += 1;
        let eof = item.end_of_frame();
        let fits = self.fits(&item);
        let occupancy = self.occupancy();
        let policy = self.policy;
        // One lookup per item: a flow's state stays in the table once seen (flows are few:
        // the circuits through one queue).
        let st = self.flows.entry(item.flow()).or_default();
        let result = decide(policy, st, eof, fits, occupancy);
        if eof {
            *st = FlowState::default();
        } else if result.is_ok() {
            st.mid_frame = true;
        }
        self.admit(item, result)
    }

    /// As [`Queue::offer`], with the state of the item's frame kept by the caller instead of
    /// the queue's table (one state per frame in progress; a fresh one for each new frame).
    pub fn offer_in(&mut self, item: T, st: &mut FlowState) -> Result<(), DropReason> {
        self.counters.offered += 1;
        let eof = item.end_of_frame();
        let result = decide(self.policy, st, eof, self.fits(&item), self.occupancy());
        if eof {
            *st = FlowState::default();
        } else if result.is_ok() {
            st.mid_frame = true;
        }
        self.admit(item, result)
    }

    fn admit(&mut self, item: T, result: Result<(), DropReason>) -> Result<(), DropReason> {
        match result {
            Ok(()) => {
                self.bytes += item.wire_len() as u64;
                self.items.push_back(item);
                let c = &mut self.counters;
                c.queued += 1;
                c.max_items = c.max_items.max(self.items.len() as u64);
                c.max_bytes = c.max_bytes.max(self.bytes);
                Ok(())
            }
            Err(reason) => {
                let c = &mut self.counters;
                match reason {
                    DropReason::Full => c.dropped_full += 1,
                    DropReason::Partial => c.dropped_partial += 1,
                    DropReason::Early => c.dropped_early += 1,
                }
                Err(reason)
            }
        }
    }

    fn fits(&self, item: &T) -> bool {
        match self.capacity {
            Capacity::Cells(n) | Capacity::Frames(n) => (self.items.len() as u64) < n,
            Capacity::Bytes(n) => self.bytes + item.wire_len() as u64 <= n,
        }
    }

    /// Takes the item at the head.
    pub fn dequeue(&mut self) -> Option<T> {
        let item = self.items.pop_front()?;
        self.bytes -= item.wire_len() as u64;
        self.counters.dequeued += 1;
        Some(item)
    }

    /// The item at the head.
    pub fn peek(&self) -> Option<&T> {
        self.items.front()
    }

    /// Occupancy in the unit of the capacity (items, or bytes).
    pub fn occupancy(&self) -> u64 {
        match self.capacity {
            Capacity::Bytes(_) => self.bytes,
            _ => self.items.len() as u64,
        }
    }

    /// Items held.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// True when nothing is held.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Bytes held.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The capacity.
    pub fn capacity(&self) -> Capacity {
        self.capacity
    }

    /// True if the queue is at or over its capacity (for [`Capacity::Bytes`], if no further
    /// byte fits).
    pub fn is_full(&self) -> bool {
        match self.capacity {
            Capacity::Cells(n) | Capacity::Frames(n) => self.items.len() as u64 >= n,
            Capacity::Bytes(n) => self.bytes >= n,
        }
    }

    /// What has happened so far.
    pub fn counters(&self) -> &QueueCounters {
        &self.counters
    }
}

/// Whether an item of a flow in state `st` goes in, updating `st`: `eof` if it ends its frame,
/// `fits` if the buffer has room for it, `occupancy` the buffer's fill in its unit.
fn decide(
    policy: DropPolicy,
    st: &mut FlowState,
    eof: bool,
    fits: bool,
    occupancy: u64,
) -> Result<(), DropReason> {
    match st.discard {
        Discard::Early => return Err(DropReason::Early),
        Discard::Partial if !eof => return Err(DropReason::Partial),
        // The end-of-frame cell of a partly dropped frame goes in if it fits.
        Discard::Partial => return if fits { Ok(()) } else { Err(DropReason::Full) },
        Discard::None => {}
    }
    if let DropPolicy::Epd { threshold } = policy {
        if !st.mid_frame && occupancy >= threshold {
            st.discard = Discard::Early;
            return Err(DropReason::Early);
        }
    }
    if fits {
        return Ok(());
    }
    if policy != DropPolicy::Tail {
        st.discard = Discard::Partial;
    }
    Err(DropReason::Full)
}

#[cfg(test)]
mod tests;
