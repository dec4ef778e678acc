//! Traffic sources for slotted runs: each decides, slot by slot, whether a cell arrives at its
//! input and where it goes. Every source owns its own seeded generator.

use weft_model::fabric::Rng;

/// Where a source's cells go.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Dest {
    /// Uniformly over `n` outputs.
    Uniform(u16),
    /// Always output `o`.
    Fixed(u16),
    /// Output `port` with probability `fraction`, otherwise uniformly over `n` outputs.
    Hotspot {
        /// The hot output.
        port: u16,
        /// Probability a cell goes to the hot output.
        fraction: f64,
        /// Outputs in all.
        n: u16,
    },
}

impl Dest {
    fn pick(&self, rng: &mut Rng) -> u16 {
        match *self {
            Dest::Uniform(n) => rng.below(u64::from(n.max(1))) as u16,
            Dest::Fixed(o) => o,
            Dest::Hotspot { port, fraction, n } => {
                if rng.chance(fraction) {
                    port
                } else {
                    rng.below(u64::from(n.max(1))) as u16
                }
            }
        }
    }
}

/// The kinds of traffic a source can make.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Pattern {
    /// A cell every slot (saturated input).
    Saturated(Dest),
    /// A cell each slot with probability `p`; each cell is a frame of its own.
    Bernoulli {
        /// Load: probability of a cell per slot.
        p: f64,
        /// Destinations.
        dest: Dest,
    },
    /// Bursts of back-to-back cells to one destination, of geometric length with mean `burst`,
    /// separated by geometric idle periods so the long-run load is `p`. A burst is one frame.
    OnOff {
        /// Long-run load (cells per slot).
        p: f64,
        /// Mean burst length in cells.
        burst: f64,
        /// Destinations (one per burst).
        dest: Dest,
    },
    /// Frames of `cells` cells sent at a fixed rate of `p` cells per slot, evenly spaced.
    Frames {
        /// Rate in cells per slot (0..=1).
        p: f64,
        /// Cells per frame (an AAL5 frame segmented).
        cells: u32,
        /// Destinations (one per frame).
        dest: Dest,
    },
}

/// A cell a source made in one slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arrival {
    /// Output it is for.
    pub dst: u16,
    /// Frame number within the source's flow.
    pub frame: u32,
    /// Cells in its frame.
    pub frame_cells: u32,
    /// Last cell of its frame.
    pub eof: bool,
}

/// A traffic source with its own generator.
#[derive(Clone, Debug)]
pub struct Source {
    pattern: Pattern,
    rng: Rng,
    /// Cells left in the current burst or frame, and its destination.
    left: u32,
    cur_cells: u32,
    cur_dst: u16,
    frame: u32,
    idle: u64,
    credit: f64,
    /// Frames started so far.
    pub frames_started: u64,
}

impl Source {
    /// A source of `pattern` drawing from `rng`.
    pub fn new(pattern: Pattern, rng: Rng) -> Self {
        Source {
            pattern,
            rng,
            left: 0,
            cur_cells: 0,
            cur_dst: 0,
            frame: 0,
            idle: 0,
            credit: 0.0,
            frames_started: 0,
        }
    }

    fn single(&mut self, dest: Dest) -> Arrival {
        self.frame = self.frame.wrapping_add(1);
        self.frames_started += 1;
        Arrival {
            dst: dest.pick(&mut self.rng),
            frame: self.frame,
            frame_cells: 1,
            eof: true,
        }
    }

    fn next_of_frame(&mut self) -> Arrival {
        self.left -= 1;
        Arrival {
            dst: self.cur_dst,
            frame: self.frame,
            frame_cells: self.cur_cells,
            eof: self.left == 0,
        }
    }

    fn start_frame(&mut self, cells: u32, dest: Dest) {
        self.frame = self.frame.wrapping_add(1);
        self.frames_started += 1;
        self.cur_cells = cells.max(1);
        self.left = self.cur_cells;
        self.cur_dst = dest.pick(&mut self.rng);
    }

    /// The cell arriving in this slot, if any.
    pub fn poll(&mut self) -> Option<Arrival> {
        match self.pattern {
            Pattern::Saturated(dest) => Some(self.single(dest)),
            Pattern::Bernoulli { p, dest } => {
                if self.rng.chance(p) {
                    Some(self.single(dest))
                } else {
                    None
                }
            }
            Pattern::OnOff { p, burst, dest } => {
                if self.left == 0 {
                    if self.idle > 0 {
                        self.idle -= 1;
                        return None;
                    }
                    let b = self.rng.geometric(burst).min(u64::from(u32::MAX)) as u32;
                    self.start_frame(b, dest);
                    // Idle after the burst: geometric on 0.. with mean burst * (1 - p) / p.
                    let mean_off = if p > 0.0 {
                        burst * (1.0 - p) / p
                    } else {
                        f64::MAX
                    };
                    self.idle = self.rng.geometric(mean_off + 1.0) - 1;
                }
                Some(self.next_of_frame())
            }
            Pattern::Frames { p, cells, dest } => {
                self.credit += p;
                if self.credit < 1.0 {
                    return None;
                }
                self.credit -= 1.0;
                if self.left == 0 {
                    self.start_frame(cells, dest);
                }
                Some(self.next_of_frame())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(p: Pattern, slots: usize) -> f64 {
        let mut s = Source::new(p, Rng::new(9));
        (0..slots).filter(|_| s.poll().is_some()).count() as f64 / slots as f64
    }

    #[test]
    fn sources_make_their_load() {
        let d = Dest::Uniform(4);
        assert!((load(Pattern::Bernoulli { p: 0.3, dest: d }, 200_000) - 0.3).abs() < 0.005);
        let onoff = Pattern::OnOff {
            p: 0.5,
            burst: 10.0,
            dest: d,
        };
        assert!((load(onoff, 400_000) - 0.5).abs() < 0.02);
        let frames = Pattern::Frames {
            p: 0.25,
            cells: 7,
            dest: d,
        };
        assert!((load(frames, 100_000) - 0.25).abs() < 0.001);
    }

    #[test]
    fn frames_end_with_eof_and_hotspot_is_hot() {
        let mut s = Source::new(
            Pattern::Frames {
                p: 1.0,
                cells: 3,
                dest: Dest::Hotspot {
                    port: 2,
                    fraction: 0.5,
                    n: 4,
                },
            },
            Rng::new(1),
        );
        let cells: Vec<Arrival> = (0..3000).filter_map(|_| s.poll()).collect();
        assert!(cells.chunks(3).all(|f| !f[0].eof && !f[1].eof && f[2].eof));
        assert!(cells.chunks(3).all(|f| f[0].dst == f[2].dst));
        let hot = cells.iter().filter(|a| a.dst == 2).count() as f64 / 3000.0;
        assert!((hot - 0.625).abs() < 0.05, "{hot}");
    }
}
