//! A VC contract enforced cell by cell: the one rule that a host's link, a switch's circuit or
//! path contract and a trunk's contract all apply. Shaped, a cell waits until it conforms;
//! policed, a cell that arrives early breaks the contract (it is dropped or, tagging, marked
//! CLP = 1), and with partial packet discard ([`VcContract::ppd`]) the cells of a frame after a
//! broken one are discarded unjudged, all but its last, which ends the AAL5 frame.
//!
//! Sans-IO: the callers give each cell's instant (ns) and its place in its frame, and keep the
//! counts and what becomes of the frame.

use super::{DualGcra, VcContract};
use crate::time::Instant;

/// What a policer does with one cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    /// It conforms (and takes the contract's credit).
    Passed,
    /// It breaks the contract: dropped, or tagged if the contract tags.
    Broken,
    /// Partial packet discard dropped it unjudged (an earlier cell of its frame broke the
    /// contract); it takes no credit.
    Discarded,
}

/// One contract's state: its terms and the GCRA pair that enforces them.
#[derive(Clone, Copy, Debug)]
pub struct Policer {
    terms: VcContract,
    gcra: DualGcra,
}

impl Policer {
    /// The contract `terms`, with no cell seen yet.
    pub fn new(terms: VcContract) -> Self {
        Policer {
            gcra: terms.gcra(),
            terms,
        }
    }

    /// True if it polices (judges cells as they come) rather than shapes.
    pub fn polices(&self) -> bool {
        self.terms.police
    }

    /// True if it polices by tagging (CLP = 1) rather than dropping.
    pub fn tags(&self) -> bool {
        self.terms.police && self.terms.tag
    }

    /// Shaping: the instant (ns) at or after `at` at which a cell conforms; the cell is taken
    /// then (it conforms by construction).
    pub fn shape(&mut self, at: u64) -> u64 {
        let out = self.gcra.earliest(Instant(at));
        self.gcra.police(out);
        out.as_nanos()
    }

    /// Policing: the fate of cell `k` (from 0) of a frame of `units` cells, seen whole at `at`
    /// (ns), `broken` if an earlier cell of the frame broke the contract.
    pub fn judge(&mut self, at: u64, k: u64, units: u64, broken: bool) -> Fate {
        let ppd = self.terms.ppd && !self.terms.tag;
        if ppd && broken && k + 1 < units {
            Fate::Discarded
        } else if self.gcra.police(Instant(at)) {
            Fate::Passed
        } else {
            Fate::Broken
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Duration;
    use crate::units::Rate;

    /// 26 Mbit/s of cells, one per 16.308 us, a microsecond of tolerance.
    fn terms(tag: bool, ppd: bool) -> VcContract {
        VcContract {
            cdvt: Duration(1_000),
            police: true,
            tag,
            ppd,
            ..VcContract::peak(Rate::mbps(26))
        }
    }

    const GAP: u64 = 16_308;

    /// The fates of a 10-cell frame at twice the peak rate.
    fn fates(p: &mut Policer) -> Vec<Fate> {
        let mut broken = false;
        (0..10)
            .map(|k| {
                let f = p.judge(k * GAP / 2, k, 10, broken);
                broken |= f == Fate::Broken;
                f
            })
            .collect()
    }

    #[test]
    fn cells_faster_than_the_peak_break_the_contract_every_other_one() {
        use Fate::{Broken as B, Passed as P};
        assert_eq!(
            fates(&mut Policer::new(terms(false, false))),
            [P, B, P, B, P, B, P, B, P, B]
        );
    }

    #[test]
    fn partial_packet_discard_drops_a_broken_frame_s_cells_unjudged_but_its_last() {
        use Fate::{Broken as B, Discarded as D, Passed as P};
        assert_eq!(
            fates(&mut Policer::new(terms(false, true))),
            [P, B, D, D, D, D, D, D, D, P]
        );
        // A tagging policer lets every cell on, so it never discards.
        use Fate::Broken;
        let tagged = fates(&mut Policer::new(terms(true, true)));
        assert_eq!(tagged.iter().filter(|&&f| f == Broken).count(), 5);
    }

    #[test]
    fn a_shaper_moves_each_cell_to_when_it_conforms() {
        let mut p = Policer::new(VcContract {
            police: false,
            cdvt: Duration::ZERO,
            ..terms(false, false)
        });
        let inc = 1_000_000_000u64.div_ceil(26_000_000 / 424);
        let out: Vec<u64> = (0..3).map(|_| p.shape(0)).collect();
        assert_eq!(out, [0, inc, 2 * inc]);
    }
}
