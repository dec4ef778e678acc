//! A traffic contract enforced by a switch on one circuit or one path (the entry of its table
//! that [`crate::vc::ContractAt`] names): the cells of each train on it are judged at the
//! instants they arrive by the contract's GCRA pair ([`crate::shaper::DualGcra`]). Policed, the
//! cells that break it are counted and the frame is damaged (its cells that conformed travel on
//! and fail reassembly at the far end) or tagged CLP = 1; shaped, each cell waits in the
//! circuit's own queue until it conforms, so a shaped circuit does not hold up the others on
//! its output (a per-VC shaper, unlike a link's contract, which delays its whole queue).
//!
//! Sans-IO: the train carries its cells' arrival instants (ns), and the shaped train its
//! departures from the shaper; the cells of one frame are then spread evenly between the first
//! and the last (a shaped burst of `mbs` cells followed by cells at the sustainable rate is
//! kept as its first and last instants).

use super::train::Train;
use crate::shaper::{DualGcra, VcContract};
use crate::time::Instant;

/// What a contract did to one train.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Verdict {
    /// Cells that broke a policed contract (dropped, or tagged).
    pub broken: u64,
    /// Cells a shaper held back.
    pub delayed: u64,
    /// How long the train's last cell was held by the shaper (ns).
    pub held_ns: u64,
}

/// One contract's state at a switch.
#[derive(Clone, Debug)]
pub struct Enforced {
    terms: VcContract,
    gcra: DualGcra,
}

impl Enforced {
    /// The contract `terms`, with no cell seen yet.
    pub fn new(terms: VcContract) -> Self {
        Enforced {
            gcra: terms.gcra(),
            terms,
        }
    }

    /// True if it polices by tagging (CLP = 1) rather than dropping.
    pub fn tags(&self) -> bool {
        self.terms.police && self.terms.tag
    }

    /// Enforces the contract on the cells of `t`: policed, marks it damaged (or tagged) if a
    /// cell breaks it; shaped, moves its cells to when they conform.
    pub fn apply<F>(&mut self, t: &mut Train<F>) -> Verdict {
        let mut v = Verdict::default();
        let units = t.units.max(1);
        if self.terms.police {
            for k in 0..units {
                if !self.gcra.police(Instant(t.first + k * t.spacing)) {
                    v.broken += 1;
                }
            }
            if v.broken > 0 {
                if self.terms.tag {
                    t.tagged = true;
                } else {
                    t.damaged = true;
                }
            }
            return v;
        }
        let (mut first, mut last) = (0, 0);
        let mut prev = 0;
        for k in 0..units {
            let at = t.first + k * t.spacing;
            let out = self.gcra.earliest(Instant(at.max(prev))).as_nanos();
            self.gcra.police(Instant(out));
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
        VcContract {
            pcr: Rate::mbps(26),
            scr: None,
            mbs: 1,
            // A policer's microsecond of tolerance absorbs the rounding of cell times to ns.
            cdvt: Duration(if police { 1_000 } else { 0 }),
            police,
            tag,
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
