//! Faults on a link direction, as middleware around a port (smoltcp's `phy::FaultInjector`):
//! each frame leaving the line may be lost, corrupted, duplicated or held back behind later
//! frames. The simulator and the emulator inject them with the same code and the same seeded
//! draws.

use serde::{Deserialize, Serialize};

use super::frame::Frame;
use crate::rng::Rng;
use crate::time::Duration;

/// Probabilities (0..=1) of each fault per frame, and how long a reordered frame is held back.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Faults {
    /// Frame lost.
    #[serde(default)]
    pub loss: f64,
    /// Frame delivered with a bit flipped (the receiver's checksum drops it).
    #[serde(default)]
    pub corrupt: f64,
    /// Frame delivered twice.
    #[serde(default)]
    pub duplicate: f64,
    /// Frame held back by `reorder_delay`, so later frames overtake it.
    #[serde(default)]
    pub reorder: f64,
    /// How long a reordered frame is held back.
    #[serde(default)]
    pub reorder_delay: Duration,
}

impl Faults {
    /// True when no fault can happen.
    pub fn is_none(&self) -> bool {
        self.loss <= 0.0 && self.corrupt <= 0.0 && self.duplicate <= 0.0 && self.reorder <= 0.0
    }

    /// The first probability outside 0..=1, by name.
    pub fn invalid(&self) -> Option<(&'static str, f64)> {
        [
            ("loss", self.loss),
            ("corrupt", self.corrupt),
            ("duplicate", self.duplicate),
            ("reorder", self.reorder),
        ]
        .into_iter()
        .find(|(_, p)| !(0.0..=1.0).contains(p))
    }
}

/// What a fault injector did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FaultStats {
    /// Frames lost.
    pub lost: u64,
    /// Frames corrupted.
    pub corrupted: u64,
    /// Frames duplicated (the extra copies).
    pub duplicated: u64,
    /// Frames held back.
    pub reordered: u64,
}

/// Applies [`Faults`] to the frames of one link direction, with its own seeded generator.
#[derive(Clone, Debug)]
pub struct FaultInjector {
    faults: Faults,
    rng: Rng,
    /// What it did so far.
    pub stats: FaultStats,
}

impl FaultInjector {
    /// An injector of `faults` drawing from `rng`.
    pub fn new(faults: Faults, rng: Rng) -> Self {
        FaultInjector {
            faults,
            rng,
            stats: FaultStats::default(),
        }
    }

    /// True if the frame is lost (drawn first, so that a link with loss only draws once per
    /// frame).
    #[inline]
    pub fn lose(&mut self) -> bool {
        let lost = self.faults.loss > 0.0 && self.rng.chance(self.faults.loss);
        self.stats.lost += u64::from(lost);
        lost
    }

    /// Passes a frame due at `due` (ns) through the other faults: `emit(due, frame)` is called
    /// once, twice (duplicated) or with a later `due` (held back). Call after [`Self::lose`].
    #[inline]
    pub fn pass<F: Frame>(&mut self, due: u64, frame: F, emit: &mut impl FnMut(u64, F)) {
        let f = self.faults;
        if f.corrupt <= 0.0 && f.duplicate <= 0.0 && f.reorder <= 0.0 {
            return emit(due, frame);
        }
        self.pass_faulty(due, frame, emit);
    }

    fn pass_faulty<F: Frame>(&mut self, due: u64, mut frame: F, emit: &mut impl FnMut(u64, F)) {
        let f = self.faults;
        if f.corrupt > 0.0 && self.rng.chance(f.corrupt) {
            frame.corrupt(&mut self.rng);
            self.stats.corrupted += 1;
        }
        let dup = f.duplicate > 0.0 && self.rng.chance(f.duplicate);
        let late = f.reorder > 0.0 && self.rng.chance(f.reorder);
        let at = if late {
            self.stats.reordered += 1;
            due + f.reorder_delay.as_nanos()
        } else {
            due
        };
        if dup {
            self.stats.duplicated += 1;
            emit(at, frame.clone());
        }
        emit(at, frame);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(f: Faults, seed: u64) -> (Vec<(u64, Vec<u8>)>, FaultStats) {
        let mut inj = FaultInjector::new(f, Rng::new(seed));
        let mut out = Vec::new();
        for k in 0..10_000u64 {
            if inj.lose() {
                continue;
            }
            inj.pass(k, vec![0u8; 64], &mut |t, fr| out.push((t, fr)));
        }
        (out, inj.stats)
    }

    #[test]
    fn each_fault_happens_at_its_rate_and_is_seeded() {
        let f = Faults {
            loss: 0.1,
            corrupt: 0.05,
            duplicate: 0.02,
            reorder: 0.03,
            reorder_delay: Duration(5),
        };
        let (out, st) = run(f, 7);
        assert_eq!(run(f, 7).0, out, "same seed, same faults");
        let near = |n: u64, p: f64, of: f64| (n as f64 - p * of).abs() < 5.0 * (p * of).sqrt();
        assert!(near(st.lost, 0.1, 10_000.0), "{st:?}");
        let kept = 10_000.0 - st.lost as f64;
        assert!(near(st.corrupted, 0.05, kept), "{st:?}");
        assert!(near(st.duplicated, 0.02, kept), "{st:?}");
        assert!(near(st.reordered, 0.03, kept), "{st:?}");
        assert_eq!(out.len() as u64, 10_000 - st.lost + st.duplicated);
        let damaged = out
            .iter()
            .filter(|(_, f)| f.iter().any(|&b| b != 0))
            .count() as u64;
        assert!(
            damaged >= st.corrupted,
            "duplicates of a corrupted frame are corrupted too"
        );
        let held = out.windows(2).filter(|w| w[1].0 < w[0].0).count();
        assert!(held > 0, "held-back frames come out after later ones");
    }

    #[test]
    fn no_faults_pass_everything_untouched() {
        let (out, st) = run(Faults::default(), 1);
        assert_eq!(out.len(), 10_000);
        assert_eq!(st, FaultStats::default());
        assert!(Faults::default().is_none());
        assert_eq!(
            Faults {
                loss: 1.5,
                ..Faults::default()
            }
            .invalid(),
            Some(("loss", 1.5))
        );
    }
}
