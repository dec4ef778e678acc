//! The slotted engine: when every port runs at one rate, time advances one cell time per step.
//! Each slot, every source may offer one cell to its input, then the fabric moves cells and every
//! output sends at most one.

use weft_model::fabric::{FabricCounters, Slotted};

use crate::cell::SimCell;
use crate::metrics::{FrameTracker, Histogram};
use crate::source::Source;

/// Run length and sampling of a slotted run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlottedConfig {
    /// Slots measured.
    pub slots: u64,
    /// Slots run before measuring (queues fill towards their steady state).
    pub warmup: u64,
    /// Record the fabric's occupancy every this many slots (0: never).
    pub sample_every: u64,
}

impl SlottedConfig {
    /// `slots` measured slots after a warm-up of a tenth of that (at most 100 000), occupancy
    /// sampled about 200 times.
    pub fn new(slots: u64) -> Self {
        SlottedConfig {
            slots,
            warmup: (slots / 10).min(100_000),
            sample_every: (slots / 200).max(1),
        }
    }
}

/// What a slotted run measured (counts over the measured slots unless noted).
#[derive(Clone, Debug)]
pub struct SlottedResult {
    /// Slots measured.
    pub slots: u64,
    /// Cells offered by each source.
    pub per_input_offered: Vec<u64>,
    /// Cells sent by each output.
    pub per_output_delivered: Vec<u64>,
    /// Delay from arrival slot to departure slot (0: left in the slot it arrived), for cells that
    /// arrived after the warm-up.
    pub delay: Histogram,
    /// Frames the sources started (whole run).
    pub frames_sent: u64,
    /// Receiver-side reassembly (whole run).
    pub frames: FrameTracker,
    /// `(slot, cells held in the fabric)` samples.
    pub occupancy: Vec<(u64, u64)>,
    /// Fabric counters at the end of the whole run (warm-up included).
    pub counters: FabricCounters,
    /// Cells offered over the whole run.
    pub offered_total: u64,
}

impl SlottedResult {
    /// Cells sent per output per slot, averaged over `outputs` outputs.
    pub fn throughput(&self, outputs: usize) -> f64 {
        let d: u64 = self.per_output_delivered.iter().sum();
        d as f64 / (self.slots as f64 * outputs.max(1) as f64)
    }

    /// Delivered over offered in the measured slots.
    pub fn delivered_fraction(&self) -> f64 {
        let o: u64 = self.per_input_offered.iter().sum();
        let d: u64 = self.per_output_delivered.iter().sum();
        if o == 0 { 1.0 } else { d as f64 / o as f64 }
    }

    /// Fraction of offered cells dropped over the whole run.
    pub fn cell_loss(&self) -> f64 {
        if self.offered_total == 0 {
            0.0
        } else {
            self.counters.dropped as f64 / self.offered_total as f64
        }
    }
}

/// Runs `fabric` fed by `sources` (source `i` feeds input `i`, as flow `i`); `progress(slot)` is
/// called every 65536 slots.
pub fn run_slotted<F: Slotted<SimCell>>(
    fabric: &mut F,
    sources: &mut [Source],
    outputs: usize,
    cfg: SlottedConfig,
    mut progress: impl FnMut(u64),
) -> SlottedResult {
    let mut per_input = vec![0u64; sources.len()];
    let mut per_output = vec![0u64; outputs];
    let mut delay = Histogram::new();
    let mut frames = FrameTracker::default();
    let mut occupancy = Vec::new();
    let mut offered_total = 0;
    let total = cfg.warmup + cfg.slots;
    for slot in 0..total {
        let measure = slot >= cfg.warmup;
        for (i, s) in sources.iter_mut().enumerate() {
            if let Some(a) = s.poll() {
                offered_total += 1;
                if measure {
                    per_input[i] += 1;
                }
                let cell = SimCell {
                    src: i as u16,
                    dst: a.dst,
                    flow: i as u32,
                    frame: a.frame,
                    frame_cells: a.frame_cells,
                    eof: a.eof,
                    born: slot,
                    bytes: weft_model::cell::CELL_BYTES as u32,
                };
                fabric.offer(i, cell);
            }
        }
        fabric.step(&mut |o, c: SimCell| {
            frames.deliver(&c);
            if measure {
                if let Some(d) = per_output.get_mut(o) {
                    *d += 1;
                }
                if c.born >= cfg.warmup {
                    delay.record(slot - c.born);
                }
            }
        });
        if cfg.sample_every > 0 && slot % cfg.sample_every == 0 {
            occupancy.push((slot, fabric.counters().held));
        }
        if slot & 0xffff == 0xffff {
            progress(slot + 1);
        }
    }
    progress(total);
    SlottedResult {
        slots: cfg.slots,
        per_input_offered: per_input,
        per_output_delivered: per_output,
        delay,
        frames_sent: sources.iter().map(|s| s.frames_started).sum(),
        frames,
        occupancy,
        counters: fabric.counters(),
        offered_total,
    }
}
