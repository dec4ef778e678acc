//! The one event heap of weft: items ordered by the instant they are due, ties broken by the order
//! they were pushed, so that a run is a pure function of its inputs. The engine's scheduler, a
//! link's pending cell trains and a fabric's arrivals all use it.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::collections::binary_heap::PeekMut;

use crate::time::Instant;

struct Entry<T> {
    at: Instant,
    seq: u64,
    item: T,
}

impl<T> PartialEq for Entry<T> {
    fn eq(&self, o: &Self) -> bool {
        (self.at, self.seq) == (o.at, o.seq)
    }
}
impl<T> Eq for Entry<T> {}
impl<T> PartialOrd for Entry<T> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl<T> Ord for Entry<T> {
    // Reversed: `BinaryHeap` is a max-heap and the earliest entry must be on top.
    fn cmp(&self, o: &Self) -> Ordering {
        (o.at, o.seq).cmp(&(self.at, self.seq))
    }
}

/// A min-heap of items by due instant, first-in first-out among equal instants.
pub struct EventQueue<T> {
    heap: BinaryHeap<Entry<T>>,
    seq: u64,
}

impl<T> Default for EventQueue<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> std::fmt::Debug for EventQueue<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventQueue")
            .field("len", &self.heap.len())
            .field("next", &self.peek_time())
            .finish()
    }
}

impl<T> EventQueue<T> {
    /// An empty queue.
    pub fn new() -> Self {
        EventQueue {
            heap: BinaryHeap::new(),
            seq: 0,
        }
    }

    /// Adds `item`, due at `at`.
    pub fn push(&mut self, at: Instant, item: T) {
        self.seq += 1;
        self.heap.push(Entry {
            at,
            seq: self.seq,
            item,
        });
    }

    /// When the earliest item is due.
    pub fn peek_time(&self) -> Option<Instant> {
        self.heap.peek().map(|e| e.at)
    }

    /// The earliest item and when it is due.
    pub fn peek(&self) -> Option<(Instant, &T)> {
        self.heap.peek().map(|e| (e.at, &e.item))
    }

    /// Takes the earliest item.
    pub fn pop(&mut self) -> Option<(Instant, T)> {
        self.heap.pop().map(|e| (e.at, e.item))
    }

    /// Takes the earliest item if it is due at or before `now`.
    pub fn pop_due(&mut self, now: Instant) -> Option<(Instant, T)> {
        if self.peek_time()? <= now {
            self.pop()
        } else {
            None
        }
    }

    /// Works on the earliest item in place: `f` gets its due instant and the item and returns
    /// `Some(later)` to keep it, due at `later` (not earlier than before), or `None` to remove
    /// it. One sift instead of a pop and a push. Returns what `f` was given back, if there was an
    /// item.
    pub fn update_top<R>(
        &mut self,
        f: impl FnOnce(Instant, &mut T) -> (Option<Instant>, R),
    ) -> Option<R> {
        let mut top = self.heap.peek_mut()?;
        let at = top.at;
        let (keep, r) = f(at, &mut top.item);
        match keep {
            Some(later) => top.at = later.max(at),
            None => {
                PeekMut::pop(top);
            }
        }
        Some(r)
    }

    /// Items held.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// True when nothing is held.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Every item held, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (Instant, &T)> {
        self.heap.iter().map(|e| (e.at, &e.item))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn earliest_first_and_fifo_among_ties() {
        let mut q = EventQueue::new();
        q.push(Instant(30), "c");
        q.push(Instant(10), "a1");
        q.push(Instant(10), "a2");
        q.push(Instant(20), "b");
        assert_eq!(q.pop_due(Instant(5)), None);
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).map(|(_, s)| s).collect();
        assert_eq!(order, ["a1", "a2", "b", "c"]);
    }

    #[test]
    fn update_top_reschedules_or_removes() {
        let mut q = EventQueue::new();
        q.push(Instant(1), 1u32);
        q.push(Instant(5), 2u32);
        // Move the first item behind the second; then remove the second.
        q.update_top(|_, x| {
            *x += 10;
            (Some(Instant(7)), ())
        });
        assert_eq!(q.peek(), Some((Instant(5), &2)));
        q.update_top(|_, _| (None, ()));
        assert_eq!(q.pop(), Some((Instant(7), 11)));
        assert!(q.is_empty());
    }
}
