//! The switch fabric between the hosts' lines and the output queues, for the input-queued fabrics
//! of `weft-model` (FIFO input queues with head-of-line blocking, or virtual output queues with
//! iSLIP). Frames are cut into cells as they arrive off their input line (53-byte cells on ATM
//! links; 64-byte internal cells on frame links, as cell-based crossbars do), each cell enters
//! the fabric at its own arrival instant, and the fabric — the same [`Slotted`] code the simulator
//! steps — moves at most one cell per input and per output in each cell time, on the clock of
//! [`Clocked`]. A frame goes on to its output queue when its last cell has crossed, as a train
//! spanning the instants its first and last cells left the fabric; a frame that lost a cell in an
//! input buffer is discarded (counted as corrupt), as AAL5 reassembly would. Broadcast frames
//! bypass the fabric. Nothing here reads a clock.

use std::collections::BinaryHeap;
use std::collections::binary_heap::PeekMut;

use serde::Serialize;
use weft_model::fabric::{Clocked, InputFifo, Islip, Rng, Routed, Slotted};
use weft_model::queue::{Capacity, Queued};
use weft_model::{Element, Instant, Size, WireLen, element::PortId};

use crate::framing::{CELL_BYTES, Framing};
use crate::port::Train;
use crate::topo::{DropPolicy, FabricKind, FabricSpec};

/// Bytes of an internal cell for frames from frame-framed (Ethernet, FDDI) links.
pub const FRAME_CELL_BYTES: u64 = 64;

/// One cell inside the fabric.
#[derive(Clone, Copy, Debug)]
pub struct FabricCell {
    output: u32,
    input: u32,
    /// The frame's slot in the stage's table of frames in flight.
    slot: u32,
    eof: bool,
}

impl Routed for FabricCell {
    fn output(&self) -> PortId {
        self.output as PortId
    }
}

impl WireLen for FabricCell {
    fn wire_len(&self) -> usize {
        CELL_BYTES as usize
    }
}

impl Queued for FabricCell {
    fn flow(&self) -> u32 {
        self.input
    }
    fn end_of_frame(&self) -> bool {
        self.eof
    }
}

/// Counters of the fabric.
#[derive(Clone, Debug, Default, Serialize)]
pub struct FabricStats {
    /// Cells offered at the inputs.
    pub cells_in: u64,
    /// Cells dropped in the input buffers.
    pub cells_dropped: u64,
    /// Cells that crossed the fabric.
    pub cells_out: u64,
    /// Frames that crossed whole.
    pub frames_out: u64,
    /// Frames discarded because a cell of theirs was dropped.
    pub frames_corrupt: u64,
}

enum Core {
    Fifo(Clocked<InputFifo<FabricCell>, FabricCell>),
    Voq(Clocked<Islip<FabricCell>, FabricCell>),
}

/// Offers `cell` at `at`; false if the fabric dropped it.
fn offer<F: Slotted<FabricCell>>(
    c: &mut Clocked<F, FabricCell>,
    at: Instant,
    input: PortId,
    cell: FabricCell,
) -> bool {
    let before = c.fabric().counters().dropped;
    c.handle_input(at, input, cell);
    c.fabric().counters().dropped == before
}

impl Core {
    fn offer(&mut self, at: Instant, input: PortId, cell: FabricCell) -> bool {
        match self {
            Core::Fifo(c) => offer(c, at, input, cell),
            Core::Voq(c) => offer(c, at, input, cell),
        }
    }
    fn poll_output(&mut self, now: Instant) -> Option<(PortId, FabricCell)> {
        match self {
            Core::Fifo(c) => c.poll_output(now),
            Core::Voq(c) => c.poll_output(now),
        }
    }
    fn poll_timeout(&self) -> Option<Instant> {
        match self {
            Core::Fifo(c) => c.poll_timeout(),
            Core::Voq(c) => c.poll_timeout(),
        }
    }
}

/// Cells a frame of `frame_len` bytes (Ethernet header included) takes inside the fabric: its
/// ATM cells on an ATM link, 64-byte internal cells on a frame link.
pub fn frame_cells(framing: Framing, frame_len: usize) -> u64 {
    if framing.is_atm() {
        framing.units(frame_len)
    } else {
        (frame_len as u64).div_ceil(FRAME_CELL_BYTES).max(1)
    }
}

/// A train waiting to enter the fabric cell by cell.
#[derive(Debug, PartialEq, Eq)]
struct Arrival {
    next: u64,
    seq: u64,
    input: u32,
    slot: u32,
    idx: u64,
    cells: u64,
    spacing: u64,
}

impl Ord for Arrival {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (o.next, o.seq).cmp(&(self.next, self.seq))
    }
}
impl PartialOrd for Arrival {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}

/// A frame some of whose cells are in (or have crossed) the fabric.
#[derive(Debug)]
struct InFlight {
    frame: Vec<u8>,
    input: u32,
    output: u32,
    cells: u64,
    crossed: u64,
    dropped: u64,
    first_out: u64,
}

/// The fabric stage of a switch with `ports` ports.
pub struct FabricStage {
    core: Core,
    framings: Vec<Framing>,
    arrivals: BinaryHeap<Arrival>,
    /// Frames in flight, by slot; `free` lists the empty slots.
    flights: Vec<Option<InFlight>>,
    free: Vec<u32>,
    seq: u64,
    /// Counters so far.
    pub stats: FabricStats,
}

impl std::fmt::Debug for FabricStage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FabricStage")
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

/// A fabric that cannot be built as asked.
#[derive(Debug, thiserror::Error)]
#[error("fabric: {0}")]
pub struct FabricStageError(pub String);

impl FabricStage {
    /// The fabric `spec` for ports framed as `framings` (one per port), or `None` for an
    /// output-queued switch (which needs no fabric stage).
    pub fn new(
        spec: &FabricSpec,
        framings: Vec<Framing>,
        seed: u64,
    ) -> Result<Option<Self>, FabricStageError> {
        let ports = framings.len();
        let cell = if framings.iter().all(Framing::is_atm) {
            CELL_BYTES
        } else {
            FRAME_CELL_BYTES
        };
        let rate = spec.rate;
        let core = match spec.kind {
            FabricKind::OutputQueued => return Ok(None),
            FabricKind::InputFifo { contention } => {
                let policy = match spec.drop {
                    DropPolicy::Tail => weft_model::queue::DropPolicy::Tail,
                    DropPolicy::Ppd => weft_model::queue::DropPolicy::Ppd,
                    DropPolicy::Epd { threshold } => {
                        weft_model::queue::DropPolicy::Epd { threshold }
                    }
                };
                let f = InputFifo::new(
                    ports,
                    ports,
                    Capacity::Cells(spec.buffer_cells.max(1)),
                    policy,
                    contention,
                    Rng::new(seed),
                )
                .map_err(|e| FabricStageError(e.to_string()))?;
                Core::Fifo(Clocked::new(f, rate, Size::bytes(cell), Instant(0)))
            }
            FabricKind::VoqIslip { iterations } => {
                // iSLIP's queues are per (input, output); each gets the whole buffer.
                let f = Islip::new(
                    ports,
                    iterations.max(1) as usize,
                    spec.buffer_cells.clamp(1, u32::MAX as u64) as usize,
                )
                .map_err(|e| FabricStageError(e.to_string()))?;
                Core::Voq(Clocked::new(f, rate, Size::bytes(cell), Instant(0)))
            }
        };
        Ok(Some(FabricStage {
            core,
            framings,
            arrivals: BinaryHeap::new(),
            flights: Vec::new(),
            free: Vec::new(),
            seq: 0,
            stats: FabricStats::default(),
        }))
    }

    /// A frame off input `input`'s line (as a train of its line's units), for `output`.
    pub fn handle_train(&mut self, input: PortId, output: PortId, t: Train) {
        let framing = self
            .framings
            .get(input)
            .copied()
            .unwrap_or(Framing::Frame { overhead: 0 });
        let cells = frame_cells(framing, t.frame.len());
        // ATM cells arrive at their own instants; a frame from a frame link is cut into cells
        // as it arrives whole, one internal cell after another at the fabric's pace.
        let (first, spacing) = if framing.is_atm() && t.units == cells {
            (t.first, t.spacing)
        } else {
            (t.last(), 0)
        };
        let flight = InFlight {
            frame: t.frame,
            input: input as u32,
            output: output as u32,
            cells,
            crossed: 0,
            dropped: 0,
            first_out: 0,
        };
        let slot = match self.free.pop() {
            Some(k) => {
                self.flights[k as usize] = Some(flight);
                k
            }
            None => {
                self.flights.push(Some(flight));
                (self.flights.len() - 1) as u32
            }
        };
        self.seq += 1;
        self.arrivals.push(Arrival {
            next: first,
            seq: self.seq,
            input: input as u32,
            slot,
            idx: 0,
            cells,
            spacing,
        });
    }

    /// Runs the fabric up to `now`, handing every frame that has crossed whole to `deliver`
    /// as `(output, train)`.
    pub fn advance(&mut self, now: u64, deliver: &mut dyn FnMut(PortId, Train)) {
        loop {
            let slot = self.core.poll_timeout().map(|t| t.as_nanos());
            let arrival = self.arrivals.peek().map(|a| a.next);
            match (slot, arrival) {
                (Some(s), a) if s <= now && a.is_none_or(|a| s <= a) => {
                    while let Some((_, cell)) = self.core.poll_output(Instant(s)) {
                        self.crossed(s, cell, deliver);
                    }
                }
                (_, Some(a)) if a <= now => self.enter_one(),
                _ => break,
            }
        }
    }

    /// The next instant at which the stage has work without new input.
    pub fn poll_timeout(&self) -> Option<u64> {
        let slot = self.core.poll_timeout().map(|t| t.as_nanos());
        let arrival = self.arrivals.peek().map(|a| a.next);
        match (slot, arrival) {
            (Some(s), Some(a)) => Some(s.min(a)),
            (s, a) => s.or(a),
        }
    }

    fn enter_one(&mut self) {
        let Some(mut top) = self.arrivals.peek_mut() else {
            return;
        };
        let (at, input, slot) = (top.next, top.input, top.slot);
        let eof = top.idx + 1 == top.cells;
        // Advance the train in place (one sift) or retire it.
        if eof {
            PeekMut::pop(top);
        } else {
            top.idx += 1;
            top.next += top.spacing;
            drop(top);
        }
        let Some(Some(f)) = self.flights.get(slot as usize) else {
            return;
        };
        let cell = FabricCell {
            output: f.output,
            input,
            slot,
            eof,
        };
        self.stats.cells_in += 1;
        if !self.core.offer(Instant(at), input as PortId, cell) {
            self.stats.cells_dropped += 1;
            if let Some(Some(f)) = self.flights.get_mut(slot as usize) {
                f.dropped += 1;
            }
            self.settle(slot, at, &mut |_, _| {});
        }
    }

    fn crossed(&mut self, at: u64, cell: FabricCell, deliver: &mut dyn FnMut(PortId, Train)) {
        self.stats.cells_out += 1;
        if let Some(Some(f)) = self.flights.get_mut(cell.slot as usize) {
            if f.crossed == 0 {
                f.first_out = at;
            }
            f.crossed += 1;
        }
        self.settle(cell.slot, at, deliver);
    }

    /// Finishes a frame once each of its cells has crossed or been dropped; `at` is when the
    /// cell that settles it crossed (ns).
    fn settle(&mut self, slot: u32, at: u64, deliver: &mut dyn FnMut(PortId, Train)) {
        let Some(entry) = self.flights.get_mut(slot as usize) else {
            return;
        };
        if entry
            .as_ref()
            .is_none_or(|f| f.crossed + f.dropped < f.cells)
        {
            return;
        }
        let Some(f) = entry.take() else {
            return;
        };
        self.free.push(slot);
        if f.dropped > 0 {
            self.stats.frames_corrupt += 1;
            return;
        }
        self.stats.frames_out += 1;
        let last = at.max(f.first_out);
        let spacing = if f.cells > 1 {
            (last - f.first_out) / (f.cells - 1)
        } else {
            0
        };
        deliver(
            f.output as PortId,
            Train {
                frame: f.frame,
                first: last - spacing * (f.cells - 1),
                spacing,
                units: f.cells,
                flow: f.input,
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::switch::SwitchCore;
    use crate::topo::{HostSpec, LinkSpec, Topology};
    use weft_model::fabric::Contention;
    use weft_model::{Duration, Rate};

    const OC3C: Rate = Rate::bps(149_760_000);

    fn topo(kind: FabricKind, buffer_cells: u64) -> Topology {
        let link = LinkSpec::atm(Some(OC3C), Duration::ZERO, 0, 100);
        Topology {
            hosts: (0..3)
                .map(|i| HostSpec {
                    name: format!("h{i}"),
                    addr: None,
                    link: link.clone(),
                })
                .collect(),
            seed: 7,
            fabric: FabricSpec {
                kind,
                rate: OC3C,
                buffer_cells,
                drop: DropPolicy::Tail,
            },
        }
    }

    fn frame(to: usize, from: usize, len: usize, tag: u8) -> Vec<u8> {
        let mut f = vec![tag; len];
        f[0..6].copy_from_slice(&Topology::mac_of(to));
        f[6..12].copy_from_slice(&Topology::mac_of(from));
        f
    }

    /// Runs the switch until idle; returns (port, due ns, frame) in the order sent.
    fn drain(sw: &mut SwitchCore) -> Vec<(usize, u64, Vec<u8>)> {
        let mut got = Vec::new();
        let mut now = Instant(0);
        while let Some(t) = sw.poll_timeout() {
            now = now.max(t);
            while let Some(tx) = sw.poll_transmit(now) {
                got.push((tx.port, tx.due.as_nanos(), tx.frame));
            }
        }
        got
    }

    /// Input 0 and input 1 both send a 40-cell frame to output 2 at once; input 1 then has a
    /// frame for the idle output 0. FIFO: that frame waits behind the head-of-line frame;
    /// VOQ/iSLIP: it crosses at once.
    fn head_of_line(kind: FabricKind) -> (u64, u64) {
        let mut sw = SwitchCore::new(&topo(kind, 10_000)).unwrap();
        let len = 40 * 48 - 8; // 40 cells with the AAL5 trailer
        sw.handle_frame(Instant(0), 0, frame(2, 0, len, 1));
        sw.handle_frame(Instant(0), 1, frame(2, 1, len, 2));
        sw.handle_frame(Instant(0), 1, frame(0, 1, 200, 3));
        let got = drain(&mut sw);
        assert_eq!(got.len(), 3, "every frame delivered");
        let to0 = got.iter().find(|g| g.0 == 0).map(|g| g.1).unwrap();
        let last2 = got.iter().filter(|g| g.0 == 2).map(|g| g.1).max().unwrap();
        (to0, last2)
    }

    #[test]
    fn fifo_blocks_behind_head_of_line_and_voq_does_not() {
        let cell = 2_831; // ns per OC-3c cell time, rounded down
        let (fifo_to0, fifo_last) = head_of_line(FabricKind::InputFifo {
            contention: Contention::RoundRobin,
        });
        let (voq_to0, voq_last) = head_of_line(FabricKind::VoqIslip { iterations: 1 });
        // The two 40-cell frames share output 2: 80 cell times for the later one, either way.
        assert!(
            fifo_last >= 80 * cell && voq_last >= 80 * cell,
            "{fifo_last} {voq_last}"
        );
        // The small frame (5 cells) is off input 1's line after 45 cell times. Round-robin
        // contention alternates the two long frames at output 2, so input 1's long frame has
        // crossed only after about 80 slots: FIFO holds the small frame behind it until then.
        assert!(fifo_to0 >= 78 * cell, "fifo {fifo_to0}");
        // VOQ: it crosses to the idle output 0 as soon as it is in.
        assert!(voq_to0 <= 55 * cell, "voq {voq_to0}");
    }

    #[test]
    fn frames_cross_intact_and_cells_are_conserved() {
        let mut sw =
            SwitchCore::new(&topo(FabricKind::VoqIslip { iterations: 2 }, 10_000)).unwrap();
        let mut sent = Vec::new();
        for k in 0..30u8 {
            let (from, to) = ((k % 3) as usize, ((k + 1) % 3) as usize);
            let f = frame(to, from, 100 + 37 * k as usize, k);
            sent.push((to, f.clone()));
            sw.handle_frame(Instant(k as u64 * 1_000), from, f);
        }
        let mut got: Vec<(usize, Vec<u8>)> =
            drain(&mut sw).into_iter().map(|g| (g.0, g.2)).collect();
        got.sort();
        sent.sort();
        assert_eq!(got, sent);
        let st = sw.fabric_stats().unwrap();
        assert_eq!(st.cells_in, st.cells_out + st.cells_dropped);
        assert_eq!(
            (st.frames_out, st.frames_corrupt, st.cells_dropped),
            (30, 0, 0)
        );
    }

    #[test]
    fn a_full_input_buffer_drops_cells_and_corrupts_exactly_those_frames() {
        // Two inputs into one output with 8-cell input buffers: the loser of each contention
        // overflows.
        let mut sw = SwitchCore::new(&topo(
            FabricKind::InputFifo {
                contention: Contention::Random,
            },
            8,
        ))
        .unwrap();
        for k in 0..20u64 {
            sw.handle_frame(Instant(k * 10), 0, frame(2, 0, 1000, 1));
            sw.handle_frame(Instant(k * 10), 1, frame(2, 1, 1000, 2));
        }
        let got = drain(&mut sw);
        let st = sw.fabric_stats().unwrap();
        assert!(st.cells_dropped > 0, "{st:?}");
        assert_eq!(st.cells_in, st.cells_out + st.cells_dropped);
        assert_eq!(st.frames_out + st.frames_corrupt, 40, "{st:?}");
        assert_eq!(got.len() as u64, st.frames_out);
        assert!(got.iter().all(|g| g.2.len() == 1000));
    }
}
