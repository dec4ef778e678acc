//! The event-driven engine, for links of different rates: hosts on their own links send into one
//! switch output port (a [`Port`]: buffer plus line), the many-to-one bottleneck of the Sandia
//! study (two hosts to one receiver over OC-3c: congestion and cell loss in the output buffer).
//!
//! Time is nanoseconds; the next event is always the earliest in a binary heap, ties broken by
//! insertion order, so a run is a pure function of its parameters and seed.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use weft_model::cell::{CELL_BYTES, aal5_cells};
use weft_model::fabric::Rng;
use weft_model::queue::{Capacity, DropPolicy, Port, QueueCounters};
use weft_model::{Duration, Element, Instant, Rate};

use crate::cell::SimCell;
use crate::metrics::{FrameTracker, Histogram};

/// Whether the run moves ATM cells (frames segmented by AAL5) or whole frames.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Each frame becomes `ceil((bytes + 8) / 48)` cells of 53 bytes.
    Cells,
    /// Each frame is one item of its own length (a packet network).
    Frames,
}

/// One sending host.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Host {
    /// Rate of the host's link into the switch.
    pub rate: Rate,
    /// Fraction of that rate the host offers, in `(0, 1]`.
    pub load: f64,
}

/// A many-to-one run.
#[derive(Clone, Debug, PartialEq)]
pub struct ManyToOne {
    /// The senders.
    pub hosts: Vec<Host>,
    /// Rate of the switch's output port towards the receiver.
    pub out_rate: Rate,
    /// Frame length in bytes (AAL5 payload, or packet length in frame mode).
    pub frame_bytes: usize,
    /// Cells or frames.
    pub unit: Unit,
    /// Cells per frame when it is not plain AAL5 of `frame_bytes` (encapsulation added).
    pub frame_cells: Option<u64>,
    /// Output buffer.
    pub capacity: Capacity,
    /// Output buffer drop policy.
    pub policy: DropPolicy,
    /// Simulated time.
    pub duration: Duration,
    /// Record the occupancy every this long (zero: never).
    pub sample_every: Duration,
    /// Experiment seed (each host's start phase is drawn from its own stream).
    pub seed: u64,
}

/// What a many-to-one run measured.
#[derive(Clone, Debug)]
pub struct ManyToOneResult {
    /// Events processed.
    pub events: u64,
    /// Items (cells or frames) each host sent.
    pub per_host_sent: Vec<u64>,
    /// Items that left the output port.
    pub delivered: u64,
    /// Output buffer counters.
    pub counters: QueueCounters,
    /// Frames the hosts started.
    pub frames_sent: u64,
    /// Reassembly at the receiver.
    pub frames: FrameTracker,
    /// Delay from a host starting to send an item to its last bit leaving the switch, in ns.
    pub delay: Histogram,
    /// `(ns, items held)` samples of the output buffer.
    pub occupancy: Vec<(u64, u64)>,
    /// Bytes of good frames delivered (frame payload only).
    pub good_bytes: u64,
    /// Simulated time.
    pub duration: Duration,
}

impl ManyToOneResult {
    /// Rate of payload in frames that arrived whole.
    pub fn goodput(&self) -> Rate {
        Rate::from_bytes_over(self.good_bytes, self.duration)
    }

    /// Items dropped over items offered to the output port.
    pub fn loss(&self) -> f64 {
        if self.counters.offered == 0 {
            0.0
        } else {
            self.counters.dropped() as f64 / self.counters.offered as f64
        }
    }
}

const OUT: u32 = u32::MAX;
const SAMPLE: u32 = u32::MAX - 1;

struct HostState {
    rng_phase: u64,
    /// Item-times on the host link: item `j` starts at `phase + ceil(j * bits * 1e9 / rate)`.
    item_bit_ns: u128,
    rate: u128,
    per_frame: u64,
    /// Index of the next item-time slot on the link, and of the frame and item within it.
    slot: u64,
    frame: u64,
    item: u64,
    load: f64,
}

impl HostState {
    fn start_of(&self, slot: u64) -> u64 {
        self.rng_phase + (u128::from(slot) * self.item_bit_ns).div_ceil(self.rate) as u64
    }
}

/// Runs a many-to-one experiment.
pub fn run_many_to_one(p: &ManyToOne, mut progress: impl FnMut(Instant)) -> ManyToOneResult {
    let (item_bytes, per_frame) = match p.unit {
        Unit::Cells => (
            CELL_BYTES,
            p.frame_cells
                .unwrap_or(aal5_cells(p.frame_bytes) as u64)
                .max(1),
        ),
        Unit::Frames => (p.frame_bytes.max(1), 1),
    };
    let mut port: Port<SimCell> = Port::new(p.out_rate, p.capacity, p.policy);
    let mut heap: BinaryHeap<Reverse<(u64, u64, u32)>> = BinaryHeap::new();
    let mut seq = 0u64;
    let mut hosts: Vec<HostState> = p
        .hosts
        .iter()
        .enumerate()
        .map(|(h, host)| {
            let item_bit_ns = item_bytes as u128 * 8 * 1_000_000_000;
            let rate = u128::from(host.rate.as_bps().max(1));
            // A random start within one frame period (a frame's items at the host's load), so
            // hosts with equal rates are not in lock step.
            let load = host.load.clamp(1e-9, 1.0);
            let period_items = (per_frame as f64 / load).ceil() as u128;
            let span = (period_items * item_bit_ns / rate).clamp(1, u128::from(u64::MAX)) as u64;
            HostState {
                rng_phase: Rng::for_stream(p.seed, h as u64).below(span),
                item_bit_ns,
                rate,
                per_frame,
                slot: 0,
                frame: 0,
                item: 0,
                load: host.load.clamp(1e-9, 1.0),
            }
        })
        .collect();
    for (h, st) in hosts.iter().enumerate() {
        heap.push(Reverse((st.start_of(1), seq, h as u32)));
        seq += 1;
    }
    if p.sample_every.as_nanos() > 0 {
        heap.push(Reverse((0, seq, SAMPLE)));
        seq += 1;
    }
    let end = p.duration.as_nanos();
    let mut out_scheduled: Option<u64> = None;
    let mut res = ManyToOneResult {
        events: 0,
        per_host_sent: vec![0; p.hosts.len()],
        delivered: 0,
        counters: QueueCounters::default(),
        frames_sent: 0,
        frames: FrameTracker::default(),
        delay: Histogram::new(),
        occupancy: Vec::new(),
        good_bytes: 0,
        duration: p.duration,
    };
    while let Some(Reverse((t, _, what))) = heap.pop() {
        if t > end {
            break;
        }
        res.events += 1;
        if res.events & 0xfffff == 0 {
            progress(Instant(t));
        }
        let now = Instant(t);
        match what {
            OUT => {
                out_scheduled = None;
                while let Some((_, c)) = port.poll_output(now) {
                    res.delivered += 1;
                    res.delay.record(t - c.born);
                    let before = res.frames.good_frames;
                    res.frames.deliver(&c);
                    if res.frames.good_frames > before {
                        res.good_bytes += p.frame_bytes as u64;
                    }
                }
            }
            SAMPLE => {
                res.occupancy.push((t, port.len() as u64));
                heap.push(Reverse((t + p.sample_every.as_nanos(), seq, SAMPLE)));
                seq += 1;
            }
            h => {
                let st = &mut hosts[h as usize];
                if st.item == 0 {
                    res.frames_sent += 1;
                }
                let cell = SimCell {
                    src: h as u16,
                    dst: 0,
                    flow: h,
                    frame: st.frame as u32,
                    frame_cells: st.per_frame as u32,
                    eof: st.item + 1 == st.per_frame,
                    born: st.start_of(st.slot),
                    bytes: item_bytes as u32,
                };
                res.per_host_sent[h as usize] += 1;
                st.item += 1;
                st.slot += 1;
                if st.item == st.per_frame {
                    st.item = 0;
                    st.frame += 1;
                    // At load L, frame f starts at item-time floor(f * per_frame / L).
                    let next = (st.frame as f64 * st.per_frame as f64 / st.load).floor() as u64;
                    st.slot = st.slot.max(next);
                }
                // Host events fire when an item's last bit reaches the switch.
                heap.push(Reverse((st.start_of(st.slot + 1), seq, h)));
                seq += 1;
                port.handle_input(now, 0, cell);
            }
        }
        if let Some(due) = port.poll_timeout() {
            if out_scheduled.is_none_or(|s| due.0 < s) {
                heap.push(Reverse((due.0, seq, OUT)));
                seq += 1;
                out_scheduled = Some(due.0);
            }
        }
    }
    res.counters = *port.counters();
    res
}
