//! A traffic contract enforced by a switch on one circuit or one path (the entry of its table
//! that [`crate::vc::ContractAt`] names): the cells of each train on it are judged at the
//! instants they arrive by the contract's GCRA pair ([`crate::shaper::DualGcra`]). Policed, the
//! cells that break it are dropped and the frame is damaged (only its cells that conformed
//! travel on, taking their room in the queues and lines downstream, and fail reassembly at the
//! far end; with partial packet discard, [`VcContract::ppd`], only those before the first broken
//! cell and the last) or, tagging, its cells all go on tagged CLP = 1; shaped, each cell waits in the
//! circuit's own queue until it conforms, so a shaped circuit does not hold up the others on
//! its output (a per-VC shaper, unlike a link's contract, which delays its whole queue).
//!
//! Sans-IO: the train carries its cells' arrival instants (ns), and the shaped train its
//! departures from the shaper; the cells of one frame are then spread evenly between the first
//! and the last (a shaped burst of `mbs` cells followed by cells at the sustainable rate is
//! kept as its first and last instants).

use super::train::Train;
use crate::shaper::{Fate, Policer, VcContract};

/// What a contract did to one train.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Verdict {
    /// Cells that broke a policed contract (dropped, or tagged).
    pub broken: u64,
    /// Cells a shaper held back.
    pub delayed: u64,
    /// How long the train's last cell was held by the shaper (ns).
    pub held_ns: u64,
    /// Cells partial packet discard dropped unjudged after a broken one.
    pub discarded: u64,
    /// Every cell of the train was dropped: nothing of it goes on.
    pub gone: bool,
}

/// One contract's state at a switch.
#[derive(Clone, Debug)]
pub struct Enforced {
    policer: Policer,
}

impl Enforced {
    /// The contract `terms`, with no cell seen yet.
    pub fn new(terms: VcContract) -> Self {
        Enforced {
            policer: Policer::new(terms),
        }
    }

    /// True if it polices by tagging (CLP = 1) rather than dropping.
    pub fn tags(&self) -> bool {
        self.policer.tags()
    }

    /// Enforces the contract on the cells of `t`: policed, drops the cells that break it (the
    /// train keeps the others and is damaged; [`Verdict::gone`] if none is left) or tags it;
    /// shaped, moves its cells to when they conform.
    pub fn apply<F>(&mut self, t: &mut Train<F>) -> Verdict {
        let mut v = Verdict::default();
        let units = t.units.max(1);
        if self.policer.tags() {
            v.broken = (0..units)
                .filter(|&k| {
                    self.policer.judge(t.first + k * t.spacing, k, units, false) == Fate::Broken
                })
                .count() as u64;
            t.tagged |= v.broken > 0;
            return v;
        }
        if self.policer.polices() {
            // The instants of the first and the last cell that pass, and how many pass.
            let mut kept: Option<(u64, u64)> = None;
            let mut passed = 0;
            for k in 0..units {
                let at = t.first + k * t.spacing;
                match self.policer.judge(at, k, units, v.broken > 0) {
                    Fate::Passed => {
                        passed += 1;
                        kept = Some((kept.map_or(at, |(f, _)| f), at));
                    }
                    Fate::Broken => v.broken += 1,
                    Fate::Discarded => v.discarded += 1,
                }
            }
            if v.broken == 0 {
                return v;
            }
            t.damaged = true;
            let Some((first, last)) = kept else {
                v.gone = true;
                return v;
            };
            // What goes on: the cells that passed, spread evenly from the first to the last.
            t.units = passed;
            t.spacing = if passed > 1 {
                (last - first) / (passed - 1)
            } else {
                0
            };
            t.first = last - t.spacing * (passed - 1);
            return v;
        }
        let (mut first, mut last) = (0, 0);
        let mut prev = 0;
        for k in 0..units {
            let at = t.first + k * t.spacing;
            let out = self.policer.shape(at.max(prev));
            if out > at {
                v.delayed += 1;
            }
            if k == 0 {
                first = out;
            }
            (last, prev) = (out, out);
        }
        v.held_ns = last - t.last();
        if v.delayed > 0 {
            t.first = first;
            t.spacing = if units > 1 {
                (last - first) / (units - 1)
            } else {
                0
            };
            // The even spacing rounds down: the last cell leaves when the shaper let it.
            t.first = last - t.spacing * (units - 1);
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Duration;
    use crate::units::Rate;

    fn terms(police: bool, tag: bool) -> VcContract {
        ppd_terms(police, tag, false)
    }

    fn ppd_terms(police: bool, tag: bool, ppd: bool) -> VcContract {
        VcContract {
            // A policer's microsecond of tolerance absorbs the rounding of cell times to ns.
            cdvt: Duration(if police { 1_000 } else { 0 }),
            police,
            tag,
            ppd,
            ..VcContract::peak(Rate::mbps(26))
        }
    }

    /// A 10-cell frame at OC-3c's cell time (2830 ns apart) arriving at `at`.
    fn train(at: u64) -> Train<()> {
        Train::between((), at, at + 9 * 2830, 10, 0, 0)
    }

    /// One cell per 16.308 us at 26 Mbit/s of cells.
    const GAP: u64 = 16_308;

    #[test]
    fn a_policed_circuit_damages_a_frame_faster_than_its_peak_rate() {
        let mut e = Enforced::new(terms(true, false));
        let mut t = train(0);
        let v = e.apply(&mut t);
        // The first cell conforms; the other nine come 2.83 us apart, under the 16.3 us
        // increment less the 1 us tolerance, so most break it.
        assert!(v.broken >= 8, "{v:?}");
        assert!(t.damaged && !t.tagged);
        // Cells at the contract's pace pass untouched.
        let mut e = Enforced::new(terms(true, false));
        let mut ok = Train::between((), 0, 9 * GAP, 10, 0, 0);
        assert_eq!(e.apply(&mut ok).broken, 0);
        assert!(!ok.damaged);
    }

    /// Ten cells at twice the contract's peak rate, from `at`.
    fn twice_the_peak(at: u64) -> Train<()> {
        Train::between((), at, at + 9 * GAP / 2, 10, 0, 0)
    }

    #[test]
    fn a_policed_frame_carries_only_its_conforming_cells_on() {
        let mut e = Enforced::new(terms(true, false));
        let mut t = twice_the_peak(0);
        let v = e.apply(&mut t);
        // Every other cell comes half an increment early and is dropped; the five others go on
        // (damaged), at the instants they came, and fill the queues downstream as five cells.
        assert_eq!((v.broken, v.discarded, v.gone), (5, 0, false));
        assert!(t.damaged);
        assert_eq!((t.units, t.first, t.spacing), (5, 0, GAP));
        // A train all of whose cells break the contract is gone: the first train's credit is
        // still in use when these three come.
        let mut u = Train::between((), 100, 300, 3, 0, 0);
        let v = e.apply(&mut u);
        assert_eq!((v.broken, v.gone), (3, true));
    }

    #[test]
    fn partial_packet_discard_drops_the_rest_of_a_broken_frame_but_its_last_cell() {
        let mut e = Enforced::new(ppd_terms(true, false, true));
        let mut t = twice_the_peak(0);
        let v = e.apply(&mut t);
        // The first cell passes, the second breaks the contract, the next seven are dropped
        // unjudged and the last, which ends the frame, is judged: on time, it passes.
        assert_eq!((v.broken, v.discarded, v.gone), (1, 7, false));
        assert!(t.damaged);
        assert_eq!((t.units, t.first, t.last()), (2, 0, 9 * GAP / 2));
        // Without PPD the four cells after the broken one that came on time went on as well.
        let mut plain = twice_the_peak(0);
        Enforced::new(terms(true, false)).apply(&mut plain);
        assert_eq!(plain.units, 5);
    }

    #[test]
    fn tagging_marks_instead_of_damaging() {
        let mut e = Enforced::new(terms(true, true));
        let mut t = train(0);
        assert!(e.apply(&mut t).broken > 0);
        assert!(t.tagged && !t.damaged);
    }

    #[test]
    fn a_shaped_circuit_spaces_its_cells_at_the_peak_rate_across_frames() {
        let mut e = Enforced::new(terms(false, false));
        let mut a = train(0);
        let mut b = train(0);
        e.apply(&mut a);
        let v = e.apply(&mut b);
        assert!(!a.damaged && !b.damaged);
        // Twenty cells, one per increment (the GCRA rounds the increment up to whole ns), the
        // first at once.
        let inc = 1_000_000_000u64.div_ceil(26_000_000 / 424);
        assert_eq!((a.first, a.spacing, a.last()), (0, inc, 9 * inc));
        assert_eq!((b.first, b.spacing, b.last()), (10 * inc, inc, 19 * inc));
        assert_eq!(v.delayed, 10);
        assert_eq!(v.held_ns, 19 * inc - 9 * 2830);
    }
}
