//! The switch fabric between the input lines and the output queues, for the input-queued fabrics
//! of [`crate::fabric`] (FIFO input queues with head-of-line blocking, or virtual output queues
//! with iSLIP). Frames are cut into cells as they arrive off their input line (53-byte cells on
//! ATM links; 64-byte internal cells on frame links, as cell-based crossbars do), each cell
//! enters the fabric at its own arrival instant, and the fabric — the same [`Slotted`] code the
//! slotted simulator steps — moves at most one cell per input and per output in each cell time,
//! on the clock of [`Clocked`]. A frame goes on to its output queue when its last cell has
//! crossed, as a train spanning the instants its first and last cells left the fabric; a frame
//! that lost a cell in an input buffer is discarded (counted as corrupt), as AAL5 reassembly
//! would.

use serde::{Deserialize, Serialize};

use super::frame::Frame;
use super::link::LinkSpec;
use super::train::Train;
use crate::WireLen;
use crate::element::{Element, PortId};
use crate::engine::EventQueue;
use crate::fabric::{Clocked, Contention, InputFifo, Islip, Rng, Routed, Slotted};
use crate::queue::{Capacity, DropPolicy, Queued};
use crate::tech::CELL_BYTES;
use crate::time::Instant;
use crate::units::{Rate, Size};

/// Bytes of an internal cell for frames from frame-framed (Ethernet, FDDI) links.
pub const FRAME_CELL_BYTES: u64 = 64;

/// How a switch moves frames from inputs to outputs.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum FabricKind {
    /// Frames go straight to their output queue (infinite speed-up).
    OutputQueued,
    /// One FIFO cell queue per input; only head cells contend (head-of-line blocking).
    InputFifo {
        /// How an output picks among contending inputs.
        contention: Contention,
    },
    /// Virtual output queues scheduled by iSLIP.
    VoqIslip {
        /// iSLIP iterations per cell time.
        iterations: u32,
    },
}

/// A switch's fabric.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct FabricSpec {
    /// Which fabric.
    pub kind: FabricKind,
    /// Port rate of the fabric (bit/s): one cell per input and per output per cell time.
    pub rate: Rate,
    /// Input buffer (per input for a FIFO fabric, per virtual output queue for iSLIP), in cells.
    pub buffer_cells: u64,
    /// Drop policy of the input buffers (FIFO fabric), its EPD threshold in cells.
    pub drop: DropPolicy,
}

impl Default for FabricSpec {
    fn default() -> Self {
        FabricSpec {
            kind: FabricKind::OutputQueued,
            rate: Rate::bps(0),
            buffer_cells: 0,
            drop: DropPolicy::Tail,
        }
    }
}

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
pub fn frame_cells(link: &LinkSpec, frame_len: usize) -> u64 {
    if link.is_atm() {
        link.units(frame_len)
    } else {
        (frame_len as u64).div_ceil(FRAME_CELL_BYTES).max(1)
    }
}

/// A train entering the fabric cell by cell.
#[derive(Debug)]
struct Entering {
    input: u32,
    slot: u32,
    idx: u64,
    cells: u64,
    spacing: u64,
}

/// A frame some of whose cells are in (or have crossed) the fabric.
#[derive(Debug)]
struct InFlight<F> {
    frame: F,
    output: u32,
    flow: u32,
    /// Damaged upstream: crosses, but stays damaged.
    damaged: bool,
    /// Its VPI/VCI, rewritten before it entered ([`Train::vc`]).
    vc: crate::vc::Vc,
    cells: u64,
    crossed: u64,
    dropped: u64,
    first_out: u64,
}

/// The fabric stage of a switch.
pub struct FabricStage<F> {
    core: Core,
    links: Vec<LinkSpec>,
    arrivals: EventQueue<Entering>,
    /// Frames in flight, by slot; `free` lists the empty slots.
    flights: Vec<Option<InFlight<F>>>,
    free: Vec<u32>,
    /// Counters so far.
    pub stats: FabricStats,
}

impl<F> std::fmt::Debug for FabricStage<F> {
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

impl<F: Frame> FabricStage<F> {
    /// The fabric `spec` for ports on `links` (one per port), or `None` for an output-queued
    /// switch (which needs no fabric stage).
    pub fn new(
        spec: &FabricSpec,
        links: Vec<LinkSpec>,
        seed: u64,
    ) -> Result<Option<Self>, FabricStageError> {
        let ports = links.len();
        let cell = if links.iter().all(LinkSpec::is_atm) {
            CELL_BYTES
        } else {
            FRAME_CELL_BYTES
        };
        let rate = spec.rate;
        let core = match spec.kind {
            FabricKind::OutputQueued => return Ok(None),
            FabricKind::InputFifo { contention } => {
                let f = InputFifo::new(
                    ports,
                    ports,
                    Capacity::Cells(spec.buffer_cells.max(1)),
                    spec.drop,
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
            links,
            arrivals: EventQueue::new(),
            flights: Vec::new(),
            free: Vec::new(),
            stats: FabricStats::default(),
        }))
    }

    /// A frame off input `input`'s line (as a train of its line's units), for `output`.
    pub fn handle_train(&mut self, input: PortId, output: PortId, t: Train<F>) {
        let Some(link) = self.links.get(input) else {
            return;
        };
        let mut cells = frame_cells(link, t.frame.frame_len());
        if link.is_atm() {
            // An ABR source's forward RM cells cross the fabric among the frame's cells.
            cells += t.rm_cells();
        }
        // ATM cells arrive at their own instants; a frame from a frame link is cut into cells
        // as it arrives whole, one internal cell after another at the fabric's pace.
        let (first, spacing) = if link.is_atm() && t.units == cells {
            (t.first, t.spacing)
        } else {
            (t.last(), 0)
        };
        let flight = InFlight {
            frame: t.frame,
            output: output as u32,
            flow: t.flow,
            damaged: t.damaged,
            vc: t.vc,
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
        self.arrivals.push(
            Instant(first),
            Entering {
                input: input as u32,
                slot,
                idx: 0,
                cells,
                spacing,
            },
        );
    }

    /// Runs the fabric up to `now`, handing every frame that has crossed whole to `deliver`
    /// as `(output, train)`.
    pub fn advance(&mut self, now: u64, deliver: &mut dyn FnMut(PortId, Train<F>)) {
        loop {
            let slot = self.core.poll_timeout().map(|t| t.as_nanos());
            let arrival = self.arrivals.peek_time().map(|a| a.0);
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
        let arrival = self.arrivals.peek_time().map(|a| a.0);
        match (slot, arrival) {
            (Some(s), Some(a)) => Some(s.min(a)),
            (s, a) => s.or(a),
        }
    }

    fn enter_one(&mut self) {
        let Some((at, input, slot, eof)) = self.arrivals.update_top(|at, e| {
            let eof = e.idx + 1 == e.cells;
            let r = (at.0, e.input, e.slot, eof);
            e.idx += 1;
            let keep = (!eof).then(|| Instant(at.0 + e.spacing));
            (keep, r)
        }) else {
            return;
        };
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

    fn crossed(&mut self, at: u64, cell: FabricCell, deliver: &mut dyn FnMut(PortId, Train<F>)) {
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
    fn settle(&mut self, slot: u32, at: u64, deliver: &mut dyn FnMut(PortId, Train<F>)) {
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
        let mut t = Train::between(f.frame, f.first_out, last, f.cells, 0, f.flow);
        t.damaged = f.damaged;
        t.vc = f.vc;
        deliver(f.output as PortId, t);
    }
}
