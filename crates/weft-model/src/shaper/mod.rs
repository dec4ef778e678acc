//! Traffic contracts: the Generic Cell Rate Algorithm (ITU-T I.371 / ATM Forum TM 4.0, virtual
//! scheduling form) for peak and sustainable cell rates, a token bucket for frames, a shaper
//! element that delays cells until they conform, and ABR's rate-controlled source ([`abr`]).

pub mod abr;
pub mod contract;
pub mod policer;
pub mod token_bucket;

use std::collections::VecDeque;

use crate::element::{Element, PortId};
use crate::time::{Duration, Instant};

pub use abr::{AbrDestination, AbrParams, AbrSource, AbrStats, RmCell};
pub use contract::VcContract;
pub use policer::{Fate, Policer};
pub use token_bucket::TokenBucket;

/// GCRA(T, tau) by virtual scheduling: a cell arriving at `t` conforms if `t >= TAT - tau`; a
/// conforming cell moves the theoretical arrival time to `max(t, TAT) + T`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gcra {
    increment: Duration,
    limit: Duration,
    tat: Instant,
}

impl Gcra {
    /// GCRA with increment `increment` (1 / rate) and limit `limit` (tolerance).
    pub fn new(increment: Duration, limit: Duration) -> Self {
        Gcra {
            increment,
            limit,
            tat: Instant::ZERO,
        }
    }

    /// Peak-cell-rate policing: `T = 1 / PCR` (`pcr` in cells per second), `tau` = CDVT.
    pub fn peak(pcr: u64, cdvt: Duration) -> Self {
        Gcra::new(Duration(1_000_000_000u64.div_ceil(pcr.max(1))), cdvt)
    }

    /// Sustainable-rate policing: `Ts = 1 / SCR`, `tau_s = (MBS - 1)(Ts - T) + CDVT` with
    /// `T = 1 / PCR` (rates in cells per second, `mbs` in cells).
    pub fn sustainable(scr: u64, pcr: u64, mbs: u64, cdvt: Duration) -> Self {
        let ts = 1_000_000_000u64.div_ceil(scr.max(1));
        let t = 1_000_000_000u64.div_ceil(pcr.max(1));
        let bt = mbs.saturating_sub(1) * ts.saturating_sub(t);
        Gcra::new(Duration(ts), Duration(bt) + cdvt)
    }

    /// True if a cell at `now` would conform (does not change state).
    pub fn conforms(&self, now: Instant) -> bool {
        now.0 + self.limit.0 >= self.tat.0
    }

    /// Polices a cell arriving at `now`: true and state updated if it conforms, false otherwise.
    pub fn police(&mut self, now: Instant) -> bool {
        if !self.conforms(now) {
            return false;
        }
        self.tat = Instant(self.tat.0.max(now.0)) + self.increment;
        true
    }

    /// The earliest instant at or after `now` at which a cell would conform.
    pub fn earliest(&self, now: Instant) -> Instant {
        Instant(now.0.max(self.tat.0.saturating_sub(self.limit.0)))
    }
}

/// A cell stream under both a peak (PCR, CDVT) and a sustainable (SCR, MBS) contract: a cell
/// conforms only if it conforms to both.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DualGcra {
    /// The peak-rate GCRA.
    pub peak: Gcra,
    /// The sustainable-rate GCRA.
    pub sustainable: Gcra,
}

impl DualGcra {
    /// Contracts for `pcr` and `scr` cells per second, `mbs` cells of burst, `cdvt` tolerance.
    pub fn new(pcr: u64, scr: u64, mbs: u64, cdvt: Duration) -> Self {
        DualGcra {
            peak: Gcra::peak(pcr, cdvt),
            sustainable: Gcra::sustainable(scr, pcr, mbs, cdvt),
        }
    }

    /// Polices a cell at `now`; state changes only if it conforms to both.
    pub fn police(&mut self, now: Instant) -> bool {
        if self.peak.conforms(now) && self.sustainable.conforms(now) {
            self.peak.police(now);
            self.sustainable.police(now);
            true
        } else {
            false
        }
    }

    /// The earliest instant at or after `now` at which a cell conforms to both.
    pub fn earliest(&self, now: Instant) -> Instant {
        self.peak.earliest(now).max(self.sustainable.earliest(now))
    }
}

/// A shaper: holds cells and releases each at the earliest instant its contract allows, so the
/// output always conforms. Input port 0, output port 0.
#[derive(Clone, Debug)]
pub struct Shaper<T> {
    contract: DualGcra,
    held: VecDeque<T>,
    next: Option<Instant>,
}

impl<T> Shaper<T> {
    /// A shaper to `contract`.
    pub fn new(contract: DualGcra) -> Self {
        Shaper {
            contract,
            held: VecDeque::new(),
            next: None,
        }
    }

    /// Cells held.
    pub fn len(&self) -> usize {
        self.held.len()
    }

    /// True when no cell is held.
    pub fn is_empty(&self) -> bool {
        self.held.is_empty()
    }
}

impl<T> Element<T> for Shaper<T> {
    fn handle_input(&mut self, now: Instant, _port: PortId, item: T) {
        self.held.push_back(item);
        if self.next.is_none() {
            self.next = Some(self.contract.earliest(now));
        }
    }

    fn poll_output(&mut self, now: Instant) -> Option<(PortId, T)> {
        let due = self.next?;
        if due > now {
            return None;
        }
        let item = self.held.pop_front()?;
        self.contract.police(due);
        self.next = if self.held.is_empty() {
            None
        } else {
            Some(self.contract.earliest(due))
        };
        Some((0, item))
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.next
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peak_gcra_passes_cells_at_the_rate_and_not_faster() {
        let mut g = Gcra::peak(1_000_000, Duration::ZERO); // one cell per microsecond
        assert!(g.police(Instant(0)));
        assert!(!g.police(Instant(500)));
        assert!(g.police(Instant(1000)));
        assert!(g.police(Instant(5000)));
        assert!(!g.police(Instant(5999)));
    }

    #[test]
    fn sustainable_gcra_allows_a_burst_of_mbs_at_peak_rate() {
        // PCR 1 cell/us, SCR 1 cell/10us, MBS 5: five back-to-back cells at PCR pass, the sixth not.
        let mut c = DualGcra::new(1_000_000, 100_000, 5, Duration::ZERO);
        let passed: Vec<bool> = (0..6).map(|i| c.police(Instant(i * 1000))).collect();
        assert_eq!(passed, [true, true, true, true, true, false]);
        // After a long pause the burst is available again.
        assert!(c.police(Instant(1_000_000)));
    }

    #[test]
    fn shaper_output_conforms() {
        let contract = DualGcra::new(1_000_000, 250_000, 3, Duration::ZERO);
        let mut s = Shaper::new(contract);
        for _ in 0..20 {
            s.handle_input(Instant(0), 0, ());
        }
        let mut police = contract;
        let mut n = 0;
        while let Some(t) = s.poll_timeout() {
            assert!(s.poll_output(t).is_some());
            assert!(police.police(t), "cell {n} at {t:?} does not conform");
            n += 1;
        }
        assert_eq!(n, 20);
    }
}
