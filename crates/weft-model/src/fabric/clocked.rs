//! Runs a [`Slotted`] fabric on nanosecond time, as an [`Element`]: slot `k` ends at
//! `origin + ceil(k * cell_bits * 1e9 / rate)`, computed from `k` each time so that an OC-3c cell
//! time of 2831.196 ns never accumulates rounding error.

use std::collections::VecDeque;
use std::marker::PhantomData;

use super::Slotted;
use crate::element::{Element, PortId};
use crate::time::Instant;
use crate::units::{Rate, Size};

/// A slotted fabric on a clock: cells offered during a slot cross the fabric when it ends.
#[derive(Clone, Debug)]
pub struct Clocked<F, T> {
    fabric: F,
    origin: Instant,
    /// Bits per cell times 1e9.
    cell_bit_ns: u128,
    rate: u128,
    /// The index of the slot whose end is the next boundary to process.
    next_slot: u64,
    out: VecDeque<(PortId, T)>,
    out_at: Instant,
    _cell: PhantomData<T>,
}

impl<F: Slotted<T>, T> Clocked<F, T> {
    /// Runs `fabric` with ports of `rate` carrying cells of `cell` bytes, slots counted from
    /// `origin`.
    pub fn new(fabric: F, rate: Rate, cell: Size, origin: Instant) -> Self {
        Clocked {
            fabric,
            origin,
            cell_bit_ns: u128::from(cell.as_bytes()) * 8 * 1_000_000_000,
            rate: u128::from(rate.as_bps().max(1)),
            next_slot: 1,
            out: VecDeque::new(),
            out_at: origin,
            _cell: PhantomData,
        }
    }

    /// The fabric.
    pub fn fabric(&self) -> &F {
        &self.fabric
    }

    /// The instant slot `k` ends.
    pub fn boundary(&self, k: u64) -> Instant {
        let ns = (u128::from(k) * self.cell_bit_ns).div_ceil(self.rate);
        Instant(
            self.origin
                .0
                .saturating_add(ns.min(u128::from(u64::MAX)) as u64),
        )
    }

    fn advance(&mut self, now: Instant) {
        while !self.fabric.is_idle() && self.boundary(self.next_slot) <= now {
            let at = self.boundary(self.next_slot);
            let out = &mut self.out;
            self.fabric.step(&mut |p, c| out.push_back((p, c)));
            self.out_at = at;
            self.next_slot += 1;
        }
        if self.fabric.is_idle() {
            // Skip the idle slots: the next boundary is the first one after `now`.
            let rel = u128::from(now.0.saturating_sub(self.origin.0));
            let k = (rel * self.rate / self.cell_bit_ns) as u64 + 1;
            self.next_slot = self.next_slot.max(k);
        }
    }
}

impl<F: Slotted<T>, T> Element<T> for Clocked<F, T> {
    fn handle_input(&mut self, now: Instant, port: PortId, item: T) {
        self.advance(now);
        self.fabric.offer(port, item);
    }

    fn poll_output(&mut self, now: Instant) -> Option<(PortId, T)> {
        self.advance(now);
        self.out.pop_front()
    }

    fn poll_timeout(&self) -> Option<Instant> {
        if !self.out.is_empty() {
            Some(self.out_at)
        } else if self.fabric.is_idle() {
            None
        } else {
            Some(self.boundary(self.next_slot))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fabric::{Contention, InputFifo, Rng, Routed};
    use crate::queue::{Capacity, DropPolicy, Queued};

    #[derive(Debug, PartialEq)]
    struct C(usize);
    impl crate::WireLen for C {
        fn wire_len(&self) -> usize {
            53
        }
    }
    impl Queued for C {}
    impl Routed for C {
        fn output(&self) -> PortId {
            self.0
        }
    }

    #[test]
    fn cells_leave_at_slot_boundaries_one_per_output() {
        let f = InputFifo::new(
            2,
            2,
            Capacity::Cells(8),
            DropPolicy::Tail,
            Contention::RoundRobin,
            Rng::new(1),
        )
        .unwrap();
        // OC-3c cell stream: a slot is 2831.196 ns.
        let mut e = Clocked::new(f, Rate(149_760_000), Size(53), Instant::ZERO);
        e.handle_input(Instant(100), 0, C(1));
        e.handle_input(Instant(200), 1, C(1));
        assert_eq!(e.poll_timeout(), Some(Instant(2832)));
        assert_eq!(e.poll_output(Instant(2831)), None);
        assert_eq!(e.poll_output(Instant(2832)), Some((1, C(1))));
        assert_eq!(e.poll_output(Instant(2832)), None);
        // The loser of the contention goes one slot later, at ceil(2 x 2831.196).
        assert_eq!(e.poll_timeout(), Some(Instant(5663)));
        assert_eq!(e.poll_output(Instant(10_000)), Some((1, C(1))));
        assert_eq!(e.poll_timeout(), None);
        // After idling, slot boundaries stay on the original grid: slot 1000 ends at
        // ceil(1000 x 2831.196) = 2831197 ns, with no accumulated rounding.
        e.handle_input(Instant(2_830_000), 0, C(0));
        assert_eq!(e.poll_timeout(), Some(Instant(2_831_197)));
    }
}
