//! The one event queue of weft: items ordered by the instant they are due, ties broken by the
//! order they were pushed, so that a run is a pure function of its inputs. The engine's
//! scheduler, a link's pending cell trains and a fabric's arrivals all use it.
//!
//! Most of what a simulation schedules is pushed in time order (a line's departures, a link's
//! deliveries): those items join a sorted run at the back of a deque, pushed and popped in
//! constant time without moving anything. Only an item due earlier than the run's last goes into
//! a binary heap. The earliest item is the earlier of the two fronts, ties to the smaller push
//! number, so the order is exactly that of one heap of (due, push number).

use std::cmp::Ordering;
use std::collections::binary_heap::PeekMut;
use std::collections::{BinaryHeap, VecDeque};

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

/// Which of the two stores holds the earliest item.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Front {
    Run,
    Heap,
}

/// A min-queue of items by due instant, first-in first-out among equal instants.
pub struct EventQueue<T> {
    /// Items pushed in order of their due instants (so sorted by due instant, then push number).
    run: VecDeque<Entry<T>>,
    /// Items pushed out of order.
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
            .field("len", &self.len())
            .field("next", &self.peek_time())
            .finish()
    }
}

impl<T> EventQueue<T> {
    /// An empty queue.
    pub fn new() -> Self {
        EventQueue {
            run: VecDeque::new(),
            heap: BinaryHeap::new(),
            seq: 0,
        }
    }

    /// Adds `item`, due at `at`.
    #[inline]
    pub fn push(&mut self, at: Instant, item: T) {
        self.seq += 1;
        let e = Entry {
            at,
            seq: self.seq,
            item,
        };
        if self.run.back().is_none_or(|b| b.at <= at) {
            self.run.push_back(e);
        } else {
            self.heap.push(e);
        }
    }

    /// The store whose first item is the earliest, if any item is held.
    #[inline]
    fn front(&self) -> Option<Front> {
        match (self.run.front(), self.heap.peek()) {
            (Some(r), Some(h)) => Some(if (r.at, r.seq) < (h.at, h.seq) {
                Front::Run
            } else {
                Front::Heap
            }),
            (Some(_), None) => Some(Front::Run),
            (None, Some(_)) => Some(Front::Heap),
            (None, None) => None,
        }
    }

    /// When the earliest item is due.
    #[inline]
    pub fn peek_time(&self) -> Option<Instant> {
        match (self.run.front(), self.heap.peek()) {
            (Some(r), Some(h)) => Some(r.at.min(h.at)),
            (r, h) => r.or(h).map(|e| e.at),
        }
    }

    /// The earliest item and when it is due.
    pub fn peek(&self) -> Option<(Instant, &T)> {
        let e = match self.front()? {
            Front::Run => self.run.front()?,
            Front::Heap => self.heap.peek()?,
        };
        Some((e.at, &e.item))
    }

    /// Takes the earliest item.
    #[inline]
    pub fn pop(&mut self) -> Option<(Instant, T)> {
        let e = match self.front()? {
            Front::Run => self.run.pop_front()?,
            Front::Heap => self.heap.pop()?,
        };
        Some((e.at, e.item))
    }

    /// Takes the earliest item if it is due at or before `now`.
    #[inline]
    pub fn pop_due(&mut self, now: Instant) -> Option<(Instant, T)> {
        if self.peek_time()? <= now {
            self.pop()
        } else {
            None
        }
    }

    /// Works on the earliest item in place: `f` gets its due instant and the item and returns
    /// `Some(later)` to keep it, due at `later` (not earlier than before), or `None` to remove
    /// it. It keeps its place among items due at the same instant as if it had been pushed
    /// when it first was. Returns what `f` was given back, if there was an item.
    pub fn update_top<R>(
        &mut self,
        f: impl FnOnce(Instant, &mut T) -> (Option<Instant>, R),
    ) -> Option<R> {
        match self.front()? {
            Front::Heap => {
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
            Front::Run => {
                let top = self.run.front_mut()?;
                let at = top.at;
                let (keep, r) = f(at, &mut top.item);
                match keep {
                    // Still no later than the next in the run: it stays first.
                    Some(later) if self.run.get(1).is_none_or(|n| later.max(at) <= n.at) => {
                        if let Some(top) = self.run.front_mut() {
                            top.at = later.max(at);
                        }
                    }
                    Some(later) => {
                        if let Some(mut e) = self.run.pop_front() {
                            e.at = later.max(at);
                            self.heap.push(e);
                        }
                    }
                    None => {
                        self.run.pop_front();
                    }
                }
                Some(r)
            }
        }
    }

    /// Items held.
    pub fn len(&self) -> usize {
        self.run.len() + self.heap.len()
    }

    /// True when nothing is held.
    pub fn is_empty(&self) -> bool {
        self.run.is_empty() && self.heap.is_empty()
    }

    /// Every item held, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (Instant, &T)> {
        self.run
            .iter()
            .chain(self.heap.iter())
            .map(|e| (e.at, &e.item))
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

    /// The queue against a plain list kept sorted by (due, push number), over a seeded mix of
    /// pushes in and out of order, pops and in-place updates.
    #[test]
    fn same_order_as_one_sorted_list() {
        use crate::rng::Rng;
        let mut rng = Rng::new(11);
        let mut q = EventQueue::new();
        let mut list: Vec<(u64, u64, u32)> = Vec::new();
        let (mut seq, mut now) = (0u64, 0u64);
        for step in 0..20_000u32 {
            match rng.below(10) {
                0..=4 => {
                    // Mostly in order, sometimes earlier than the last push, sometimes a tie.
                    let at = now + rng.below(50);
                    seq += 1;
                    q.push(Instant(at), step);
                    list.push((at, seq, step));
                }
                5..=7 => {
                    list.sort_unstable();
                    let want = (!list.is_empty()).then(|| list.remove(0));
                    let got = q.pop();
                    assert_eq!(got, want.map(|(at, _, x)| (Instant(at), x)), "step {step}");
                    if let Some((at, _, _)) = want {
                        now = now.max(at);
                    }
                }
                8 => {
                    list.sort_unstable();
                    let later = rng.below(3) * 20;
                    let keep = rng.below(4) > 0;
                    let got =
                        q.update_top(|at, x| (keep.then_some(Instant(at.0 + later)), (at, *x)));
                    match list.first_mut() {
                        None => assert_eq!(got, None),
                        Some(first) => {
                            assert_eq!(got, Some((Instant(first.0), first.2)), "step {step}");
                            if keep {
                                first.0 += later;
                            } else {
                                list.remove(0);
                            }
                        }
                    }
                }
                _ => {
                    list.sort_unstable();
                    assert_eq!(q.peek_time(), list.first().map(|e| Instant(e.0)));
                    assert_eq!(q.len(), list.len());
                }
            }
        }
    }
}
