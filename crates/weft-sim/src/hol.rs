//! The saturated input-queued FIFO experiment: every input always has a cell, each new head cell
//! goes to a uniformly chosen output, each output serves one contender per slot.
//!
//! With saturated inputs only the head cells matter (the cells behind them are independent and
//! uniform, so drawing a head's destination when it reaches the head is the same in distribution as
//! drawing it on arrival): the loop keeps one destination per input in a flat array and allocates
//! nothing per slot. The contention is [`HolArbiter`], the same code the [`InputFifo`] fabric uses.
//!
//! [`InputFifo`]: weft_model::fabric::InputFifo
//!
//! # The GIGAswitch formula against the simulation
//! The study's E = (N/M)(1 - (1 - 1/N)^M) assumes every head cell is fresh each slot. With
//! `retain = false` the simulation makes exactly that assumption and meets the formula (within
//! 0.0005 at 10^6 slots). With FIFO memory (`retain = true`, the real switch) a blocked head
//! stays, collisions repeat, and throughput is lower: for N = 5 outputs and 10^6 slots (seed 1)
//! the gap is 0.000 for M = 1 and 2 (with two inputs memory changes nothing), 0.010 for M = 3,
//! 0.022 for M = 4 and 0.033 for M = 5 (0.640, Karol's 0.6399, against the formula's 0.672).
//! This is the "interdependency between adjacent time periods" the study says Hui and Arthurs
//! modelled, and it brings the prediction closer to the observed 75.23 Mbps for M = 3
//! (0.803 x 95 = 76.3 Mbps simulated, 77.3 Mbps by formula).

use weft_model::fabric::{Contention, HolArbiter, Rng};

/// Parameters of a saturated head-of-line run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HolParams {
    /// Input ports, each saturated.
    pub inputs: usize,
    /// Output ports, chosen uniformly by every head cell.
    pub outputs: usize,
    /// Slots measured.
    pub slots: u64,
    /// Slots run first and not measured.
    pub warmup: u64,
    /// How outputs choose among contenders.
    pub contention: Contention,
    /// True: a head cell that loses waits for the next slot (FIFO, head-of-line blocking).
    /// False: it is replaced by a fresh uniform cell (no memory from slot to slot), the
    /// independence assumption of the GIGAswitch formula.
    pub retain: bool,
    /// Experiment seed.
    pub seed: u64,
}

impl HolParams {
    /// A square `n` x `n` FIFO run of `slots` slots with random contention.
    pub fn square(n: usize, slots: u64, seed: u64) -> Self {
        HolParams {
            inputs: n,
            outputs: n,
            slots,
            warmup: (slots / 20).min(10_000),
            contention: Contention::Random,
            retain: true,
            seed,
        }
    }
}

/// What a saturated run measured.
#[derive(Clone, Debug, PartialEq)]
pub struct HolResult {
    /// The parameters.
    pub params: HolParams,
    /// Cells sent by each input during the measured slots.
    pub per_input: Vec<u64>,
    /// Cells sent by each output during the measured slots.
    pub per_output: Vec<u64>,
}

impl HolResult {
    /// Cells through per input per slot: the input line efficiency (Karol's saturation
    /// throughput for a square switch, the GIGAswitch study's E).
    pub fn input_efficiency(&self) -> f64 {
        let total: u64 = self.per_input.iter().sum();
        total as f64 / (self.params.slots as f64 * self.params.inputs as f64)
    }

    /// Cells through per output per slot.
    pub fn output_utilisation(&self) -> f64 {
        let total: u64 = self.per_output.iter().sum();
        total as f64 / (self.params.slots as f64 * self.params.outputs as f64)
    }
}

/// Runs a saturated experiment; `progress(done_slots)` is called every 2^20 slots.
pub fn run_saturated(p: &HolParams, mut progress: impl FnMut(u64)) -> HolResult {
    let (m, n) = (p.inputs.max(1), p.outputs.max(1) as u64);
    let mut arbiter = HolArbiter::new(m, n as usize, p.contention, Rng::for_stream(p.seed, 0));
    let mut sources: Vec<Rng> = (0..m)
        .map(|i| Rng::for_stream(p.seed, 1 + i as u64))
        .collect();
    let mut hol: Vec<u32> = sources.iter_mut().map(|r| r.below(n) as u32).collect();
    let mut per_input = vec![0u64; m];
    let mut per_output = vec![0u64; n as usize];
    let total = p.warmup + p.slots;
    let mut slot = 0u64;
    while slot < total {
        let chunk_end = (slot | ((1 << 20) - 1)) + 1;
        let end = chunk_end.min(total);
        let measure = slot >= p.warmup;
        if !measure {
            // Warm-up slots never straddle into measured ones.
            let end = end.min(p.warmup);
            run_slots(
                &mut arbiter,
                &mut hol,
                &mut sources,
                p.retain,
                end - slot,
                n,
                None,
            );
            slot = end;
        } else {
            let counts = Some((&mut per_input[..], &mut per_output[..]));
            run_slots(
                &mut arbiter,
                &mut hol,
                &mut sources,
                p.retain,
                end - slot,
                n,
                counts,
            );
            slot = end;
        }
        progress(slot);
    }
    HolResult {
        params: *p,
        per_input,
        per_output,
    }
}

#[inline(never)]
fn run_slots(
    arbiter: &mut HolArbiter,
    hol: &mut [u32],
    sources: &mut [Rng],
    retain: bool,
    slots: u64,
    n: u64,
    mut counts: Option<(&mut [u64], &mut [u64])>,
) {
    for _ in 0..slots {
        for &(i, o) in arbiter.resolve(hol) {
            let i = i as usize;
            // The winner's next cell reaches the head with a fresh destination.
            if let Some(r) = sources.get_mut(i) {
                hol[i] = r.below(n) as u32;
            }
            if let Some((ci, co)) = counts.as_mut() {
                ci[i] += 1;
                co[o as usize] += 1;
            }
        }
        if !retain {
            for (h, r) in hol.iter_mut().zip(sources.iter_mut()) {
                *h = r.below(n) as u32;
            }
        }
    }
}
