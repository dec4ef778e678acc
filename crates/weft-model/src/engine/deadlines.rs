//! One deadline per member of a fixed set (the applications of the simulated hosts, the ports of
//! a switch): the earliest first, ties in the order the deadlines were set, as
//! [`super::EventQueue`] orders its items. A member moved to a new deadline moves in place
//! (an indexed heap), so the queue never holds more entries than members: a member that is
//! rescheduled on every segment (a TCP timer re-armed by each acknowledgement) would otherwise
//! leave an entry behind each time, and every pop would sift through thousands of them.

use crate::time::Instant;

/// Position of a member that has no deadline.
const NONE: u32 = u32::MAX;

#[derive(Clone, Copy, Debug)]
struct Entry {
    at: u64,
    /// When the deadline was set (a counter): the order among equal deadlines.
    seq: u64,
    member: u32,
}

impl Entry {
    #[inline]
    fn before(&self, o: &Entry) -> bool {
        (self.at, self.seq) < (o.at, o.seq)
    }
}

/// The deadlines of members `0..n`, each `None` or one instant.
#[derive(Clone, Debug, Default)]
pub struct Deadlines {
    heap: Vec<Entry>,
    /// Where each member's entry is in `heap` (`NONE`: no deadline).
    pos: Vec<u32>,
    seq: u64,
}

impl Deadlines {
    /// `n` members, none with a deadline.
    pub fn new(n: usize) -> Self {
        Deadlines {
            heap: Vec::with_capacity(n),
            pos: vec![NONE; n],
            seq: 0,
        }
    }

    /// Member `member`'s deadline.
    pub fn get(&self, member: usize) -> Option<Instant> {
        let p = *self.pos.get(member)?;
        (p != NONE).then(|| Instant(self.heap[p as usize].at))
    }

    /// Sets member `member`'s deadline to `at` (`None`: no deadline). Setting the deadline it
    /// already has changes nothing, not even its place among equal deadlines. Members beyond
    /// those given to [`Deadlines::new`] are added.
    pub fn set(&mut self, member: usize, at: Option<Instant>) {
        if member >= self.pos.len() {
            self.pos.resize(member + 1, NONE);
        }
        let p = self.pos[member];
        match (p != NONE, at) {
            (false, None) => {}
            (true, None) => self.remove_at(p as usize),
            (false, Some(at)) => {
                self.seq += 1;
                let i = self.heap.len();
                self.heap.push(Entry {
                    at: at.0,
                    seq: self.seq,
                    member: member as u32,
                });
                self.pos[member] = i as u32;
                self.sift_up(i);
            }
            (true, Some(at)) => {
                let i = p as usize;
                let old = self.heap[i].at;
                if old == at.0 {
                    return;
                }
                self.seq += 1;
                self.heap[i].at = at.0;
                self.heap[i].seq = self.seq;
                if at.0 < old {
                    self.sift_up(i);
                } else {
                    // A later deadline and a later number: it can only move down.
                    self.sift_down(i);
                }
            }
        }
    }

    /// The earliest deadline and its member.
    #[inline]
    pub fn peek(&self) -> Option<(Instant, usize)> {
        self.heap
            .first()
            .map(|e| (Instant(e.at), e.member as usize))
    }

    /// The earliest deadline.
    #[inline]
    pub fn peek_time(&self) -> Option<Instant> {
        self.heap.first().map(|e| Instant(e.at))
    }

    /// The member with the earliest deadline if that is at or before `now`, left in place: the
    /// caller then gives it its next deadline with [`Deadlines::renew`] (one move in the heap
    /// where [`Deadlines::pop_due`] and [`Deadlines::set`] would make two).
    #[inline]
    pub fn peek_due(&self, now: Instant) -> Option<usize> {
        let e = self.heap.first()?;
        (e.at <= now.0).then_some(e.member as usize)
    }

    /// Gives `member` the deadline `at` as if it had none before (`None`: it has none): unlike
    /// [`Deadlines::set`], an unchanged deadline goes behind the others due at the same instant.
    /// The same as [`Deadlines::pop_due`] then [`Deadlines::set`] on the member it returned.
    pub fn renew(&mut self, member: usize, at: Option<Instant>) {
        let Some(&p) = self.pos.get(member) else {
            return self.set(member, at);
        };
        if p == NONE {
            return self.set(member, at);
        }
        let i = p as usize;
        match at {
            None => self.remove_at(i),
            Some(at) => {
                self.seq += 1;
                let e = &mut self.heap[i];
                let earlier = at.0 < e.at;
                e.at = at.0;
                e.seq = self.seq;
                if earlier {
                    self.sift_up(i);
                } else {
                    self.sift_down(i);
                }
            }
        }
    }

    /// Takes the earliest deadline if it is at or before `now`: the member then has none.
    #[inline]
    pub fn pop_due(&mut self, now: Instant) -> Option<(Instant, usize)> {
        let (at, member) = self.peek()?;
        if at > now {
            return None;
        }
        self.remove_at(0);
        Some((at, member))
    }

    /// Members with a deadline.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// True when no member has a deadline.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    fn remove_at(&mut self, i: usize) {
        let gone = self.heap.swap_remove(i);
        self.pos[gone.member as usize] = NONE;
        if i < self.heap.len() {
            self.pos[self.heap[i].member as usize] = i as u32;
            // The entry moved here from the end may belong above or below.
            if i > 0 && self.heap[i].before(&self.heap[(i - 1) / 2]) {
                self.sift_up(i);
            } else {
                self.sift_down(i);
            }
        }
    }

    fn sift_up(&mut self, mut i: usize) {
        let e = self.heap[i];
        while i > 0 {
            let parent = (i - 1) / 2;
            if !e.before(&self.heap[parent]) {
                break;
            }
            self.put(i, self.heap[parent]);
            i = parent;
        }
        self.put(i, e);
    }

    fn sift_down(&mut self, mut i: usize) {
        let e = self.heap[i];
        let n = self.heap.len();
        loop {
            let mut child = 2 * i + 1;
            if child >= n {
                break;
            }
            if child + 1 < n && self.heap[child + 1].before(&self.heap[child]) {
                child += 1;
            }
            if !self.heap[child].before(&e) {
                break;
            }
            self.put(i, self.heap[child]);
            i = child;
        }
        self.put(i, e);
    }

    /// Places `e` at `i` and records where its member is.
    #[inline]
    fn put(&mut self, i: usize, e: Entry) {
        self.heap[i] = e;
        self.pos[e.member as usize] = i as u32;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    #[test]
    fn earliest_first_ties_in_the_order_set() {
        let mut d = Deadlines::new(4);
        d.set(2, Some(Instant(10)));
        d.set(0, Some(Instant(10)));
        d.set(1, Some(Instant(5)));
        d.set(3, Some(Instant(20)));
        // Setting the same deadline again keeps member 2 ahead of member 0.
        d.set(2, Some(Instant(10)));
        d.set(3, None);
        assert_eq!(d.get(3), None);
        let order: Vec<_> = std::iter::from_fn(|| d.pop_due(Instant(100))).collect();
        assert_eq!(order, [(Instant(5), 1), (Instant(10), 2), (Instant(10), 0)]);
        assert!(d.is_empty());
    }

    #[test]
    fn renew_is_a_pop_and_a_set() {
        let mut a = Deadlines::new(3);
        let mut b = Deadlines::new(3);
        for d in [&mut a, &mut b] {
            d.set(0, Some(Instant(10)));
            d.set(1, Some(Instant(10)));
            d.set(2, Some(Instant(30)));
        }
        // Member 0 is due; it stays due at 10 but goes behind member 1.
        assert_eq!(a.peek_due(Instant(10)), Some(0));
        a.renew(0, Some(Instant(10)));
        assert_eq!(b.pop_due(Instant(10)), Some((Instant(10), 0)));
        b.set(0, Some(Instant(10)));
        let drain =
            |d: &mut Deadlines| std::iter::from_fn(|| d.pop_due(Instant(99))).collect::<Vec<_>>();
        let order = drain(&mut a);
        assert_eq!(order, drain(&mut b));
        assert_eq!(order.iter().map(|x| x.1).collect::<Vec<_>>(), [1, 0, 2]);
    }

    /// Against a plain list of (deadline, number of the change, member), over a seeded mix of
    /// moves earlier and later, renewals, removals and pops.
    #[test]
    fn same_order_as_a_sorted_list() {
        let mut rng = Rng::new(5);
        let n = 40;
        let mut d = Deadlines::new(n);
        let mut list: Vec<Option<(u64, u64)>> = vec![None; n];
        let (mut seq, mut now) = (0u64, 0u64);
        for step in 0..50_000 {
            let m = rng.below(n as u64) as usize;
            match rng.below(9) {
                0..=4 => {
                    let at = now + rng.below(30);
                    d.set(m, Some(Instant(at)));
                    if list[m].is_none_or(|(t, _)| t != at) {
                        seq += 1;
                        list[m] = Some((at, seq));
                    }
                }
                5 => {
                    d.set(m, None);
                    list[m] = None;
                }
                6 => {
                    let at = (rng.below(4) > 0).then(|| now + rng.below(30));
                    d.renew(m, at.map(Instant));
                    list[m] = at.map(|t| {
                        seq += 1;
                        (t, seq)
                    });
                }
                _ => {
                    now += rng.below(3);
                    let want = (0..n)
                        .filter_map(|k| list[k].map(|(t, s)| (t, s, k)))
                        .min()
                        .filter(|&(t, _, _)| t <= now);
                    let got = d.pop_due(Instant(now));
                    assert_eq!(got, want.map(|(t, _, k)| (Instant(t), k)), "step {step}");
                    if let Some((_, _, k)) = want {
                        list[k] = None;
                    }
                }
            }
            assert_eq!(d.get(m), list[m].map(|(t, _)| Instant(t)));
        }
    }
}
