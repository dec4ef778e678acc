//! A set of disjoint half-open ranges of sequence positions with a fixed capacity: the
//! receiver's out-of-order segments and the sender's SACK scoreboard.
//!
//! Held in one sorted vector that grows on demand up to its limit and keeps its allocation; a
//! connection rarely has more than a handful of holes, so a binary search and a short shift beat
//! any tree, and once grown the set never allocates again.

/// Disjoint, non-adjacent `[start, end)` ranges of `u64` positions, sorted, at most `capacity`.
#[derive(Clone, Debug)]
pub struct RangeSet {
    ranges: Vec<(u64, u64)>,
    capacity: usize,
}

impl RangeSet {
    /// An empty set that will hold at most `capacity` ranges (allocated as they come).
    pub fn with_capacity(capacity: usize) -> Self {
        RangeSet {
            ranges: Vec::new(),
            capacity,
        }
    }

    /// Adds `[start, end)`, merging it with every range it overlaps or touches. Returns false,
    /// and leaves the set unchanged, when the result would need more ranges than the capacity.
    pub fn insert(&mut self, start: u64, end: u64) -> bool {
        if start >= end {
            return true;
        }
        // First range whose end reaches `start` (it may merge), and first whose start lies
        // beyond `end` (it cannot).
        let lo = self.ranges.partition_point(|&(_, e)| e < start);
        let hi = self.ranges.partition_point(|&(s, _)| s <= end);
        if lo == hi {
            if self.ranges.len() == self.capacity {
                return false;
            }
            self.ranges.insert(lo, (start, end));
            return true;
        }
        let merged = (start.min(self.ranges[lo].0), end.max(self.ranges[hi - 1].1));
        self.ranges[lo] = merged;
        self.ranges.drain(lo + 1..hi);
        true
    }

    /// Forgets `[start, end)`. A range that holds it strictly inside is split in two; if the set
    /// is full the part above `end` is forgotten too (never more than was held).
    pub fn remove(&mut self, start: u64, end: u64) {
        if start >= end {
            return;
        }
        let lo = self.ranges.partition_point(|&(_, e)| e <= start);
        let hi = self.ranges.partition_point(|&(s, _)| s < end);
        if lo >= hi {
            return;
        }
        let (first_s, _) = self.ranges[lo];
        let (_, last_e) = self.ranges[hi - 1];
        self.ranges.drain(lo..hi);
        let mut at = lo;
        if first_s < start {
            self.ranges.insert(at, (first_s, start));
            at += 1;
        }
        if last_e > end && self.ranges.len() < self.capacity {
            self.ranges.insert(at, (end, last_e));
        }
    }

    /// Forgets everything below `pos`, cutting a range that straddles it.
    pub fn remove_below(&mut self, pos: u64) {
        let n = self.ranges.partition_point(|&(_, e)| e <= pos);
        self.ranges.drain(..n);
        if let Some(first) = self.ranges.first_mut() {
            first.0 = first.0.max(pos);
        }
    }

    /// Removes and returns the first range if it starts at or before `pos`.
    pub fn pop_first_from(&mut self, pos: u64) -> Option<(u64, u64)> {
        match self.ranges.first() {
            Some(&(s, _)) if s <= pos => Some(self.ranges.remove(0)),
            _ => None,
        }
    }

    /// The range holding `pos`, if any.
    pub fn containing(&self, pos: u64) -> Option<(u64, u64)> {
        let i = self.ranges.partition_point(|&(_, e)| e <= pos);
        self.ranges.get(i).copied().filter(|&(s, _)| s <= pos)
    }

    /// Total positions held at or above `pos`.
    pub fn len_from(&self, pos: u64) -> u64 {
        self.ranges
            .iter()
            .rev()
            .take_while(|&&(_, e)| e > pos)
            .map(|&(s, e)| e - s.max(pos))
            .sum()
    }

    /// Total positions held in `[from, to)`.
    pub fn len_within(&self, from: u64, to: u64) -> u64 {
        self.ranges
            .iter()
            .map(|&(s, e)| e.min(to).saturating_sub(s.max(from)))
            .sum()
    }

    /// The ranges, lowest first.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (u64, u64)> + '_ {
        self.ranges.iter().copied()
    }

    /// The lowest range, if any.
    pub fn first(&self) -> Option<(u64, u64)> {
        self.ranges.first().copied()
    }

    /// The highest position held plus one, if any.
    pub fn end(&self) -> Option<u64> {
        self.ranges.last().map(|r| r.1)
    }

    /// Number of ranges.
    pub fn len(&self) -> usize {
        self.ranges.len()
    }

    /// True when nothing is held.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Forgets everything.
    pub fn clear(&mut self) {
        self.ranges.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &RangeSet) -> Vec<(u64, u64)> {
        s.iter().collect()
    }

    #[test]
    fn merges_overlapping_and_touching_ranges() {
        let mut s = RangeSet::with_capacity(4);
        assert!(s.insert(10, 20));
        assert!(s.insert(30, 40));
        assert!(s.insert(20, 25)); // touches the first
        assert_eq!(v(&s), vec![(10, 25), (30, 40)]);
        assert!(s.insert(5, 35)); // swallows both
        assert_eq!(v(&s), vec![(5, 40)]);
        assert!(s.insert(50, 60));
        assert!(s.insert(70, 80));
        assert!(s.insert(90, 95));
        assert!(!s.insert(100, 110), "a fifth range does not fit");
        assert_eq!(s.len(), 4);
        assert!(s.insert(60, 70), "merging needs no new slot");
        assert_eq!(v(&s), vec![(5, 40), (50, 80), (90, 95)]);
    }

    #[test]
    fn removes_and_splits() {
        let mut s = RangeSet::with_capacity(3);
        s.insert(10, 20);
        s.insert(30, 40);
        s.remove(12, 15);
        assert_eq!(v(&s), vec![(10, 12), (15, 20), (30, 40)]);
        s.remove(18, 35);
        assert_eq!(v(&s), vec![(10, 12), (15, 18), (35, 40)]);
        s.remove(36, 37); // full: the part above is forgotten
        assert_eq!(v(&s), vec![(10, 12), (15, 18), (35, 36)]);
        s.remove(0, 100);
        assert!(s.is_empty());
    }

    #[test]
    fn queries_and_removal() {
        let mut s = RangeSet::with_capacity(8);
        s.insert(10, 20);
        s.insert(30, 40);
        assert_eq!(s.containing(15), Some((10, 20)));
        assert_eq!(s.containing(20), None);
        assert_eq!(s.len_from(15), 15);
        assert_eq!(s.len_within(15, 35), 10);
        assert_eq!(s.pop_first_from(9), None);
        s.remove_below(15);
        assert_eq!(v(&s), vec![(15, 20), (30, 40)]);
        assert_eq!(s.pop_first_from(15), Some((15, 20)));
        s.remove_below(100);
        assert!(s.is_empty());
    }
}
