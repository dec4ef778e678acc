//! The switch's output queue onto a link, with the line behind it: buffer and drop policy
//! ([`Queue`]: tail, PPD, EPD), serialisation, propagation delay and faults. On ATM links the
//! queue works in cells: frames arrive as trains of cells at the pace of their input line, the
//! cells of several inputs interleave, a full queue loses single cells (the frame then fails
//! reassembly), and PPD/EPD discard whole frames.
//!
//! A contract on a link between switches is enforced on the cells this queue sends onto it
//! ([`LinkSpec::contract`]): shaped, each cell leaves no earlier than the contract allows and
//! waits in this queue meanwhile (so a burst longer than the buffer loses cells here); policed,
//! the cells leave at the line's pace and those that break the contract are discarded (their
//! frame fails reassembly downstream) or tagged, as the next network's usage parameter control
//! would do where they enter it. A queue with a CLP threshold drops the cells of tagged frames
//! while it is that full ([`LinkSpec::clp_threshold`]).
//!
//! Fairness: arrivals are taken one slot of the line at a time (a cell time on ATM, the time of
//! the smallest frame otherwise, [`LinkSpec::slot`]), and the units of different flows that
//! arrive within one slot are offered to the queue in a seeded random order, as a shared-bus
//! switch writes the cells of one cell time. Without it, equal constant-rate senders at fixed
//! phases lock out: the one whose cells arrive a few nanoseconds earlier in every slot would take
//! every place the line frees, and the others would lose everything.

use std::collections::VecDeque;

use serde::Serialize;

use super::abr_loop::{RmArrival, RmMark};
use super::faults::{FaultInjector, FaultStats};
use super::flow_table::FlowTable;
use super::frame::{ETH_HEADER, Frame};
use super::link::LinkSpec;
use super::red::RedSpec;
use super::serialiser::Serialiser;
use super::shared_buffer::SharedBuffer;
use super::train::{Counted, Train};
use super::trim::{TrimQueue, TrimVerdict};
use crate::WireLen;
use crate::engine::EventQueue;
use crate::queue::{Capacity, DropReason, FlowState, Queue, Queued};
use crate::rng::Rng;
use crate::shaper::{Fate, Policer};
use crate::tech::CELL_BYTES;
use crate::time::Instant;

/// What happened to the frames of one flow (one sending host) at an output queue.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FlowStats {
    /// Frames offered to the queue.
    pub frames_in: u64,
    /// Frames sent on whole.
    pub frames_out: u64,
    /// Frames refused whole (full frame queue, or EPD).
    pub frames_dropped: u64,
    /// Frames that lost cells and failed reassembly.
    pub frames_corrupt: u64,
    /// Cells offered (ATM links).
    pub cells_in: u64,
    /// Cells dropped (ATM links).
    pub cells_dropped: u64,
}

/// Counters of a switch output queue.
#[derive(Clone, Debug, Default, Serialize)]
pub struct EgressStats {
    /// Frames offered to the queue.
    pub frames_in: u64,
    /// Frames delivered (to the host, or on to the next switch).
    pub frames_out: u64,
    /// Bytes delivered (frames, Ethernet header included).
    pub bytes_out: u64,
    /// Frames refused whole (full frame queue, or EPD).
    pub frames_dropped: u64,
    /// Frames of which EPD refused the first cell.
    pub frames_epd: u64,
    /// Frames that lost some cells and failed reassembly (sent partly, then discarded).
    pub frames_corrupt: u64,
    /// Frames lost at random on the line.
    pub frames_lost: u64,
    /// Frames larger than the link's MTU (dropped).
    pub frames_oversize: u64,
    /// Cells offered (ATM links).
    pub cells_in: u64,
    /// Cells dropped (ATM links).
    pub cells_dropped: u64,
    /// Cells sent on the line (ATM links), including those of frames that then failed.
    pub cells_out: u64,
    /// Cells that broke the link's contract where they entered the next switch (discarded or
    /// tagged).
    pub cells_policed: u64,
    /// Frames discarded by that policer (a cell of theirs was).
    pub frames_policed: u64,
    /// Cells of those frames that policer's partial packet discard dropped unjudged
    /// ([`crate::shaper::VcContract::ppd`]; absent from the JSON while zero).
    #[serde(skip_serializing_if = "is_zero")]
    pub cells_discarded: u64,
    /// Cells of tagged frames dropped at the CLP threshold.
    pub cells_clp_dropped: u64,
    /// Frames marked Congestion Experienced at the ECN threshold
    /// ([`LinkSpec::ecn_threshold`]; absent from the JSON while zero).
    #[serde(skip_serializing_if = "is_zero")]
    pub frames_marked: u64,
    /// Frames cut to their headers by a trimming queue ([`LinkSpec::trim`]; absent from the
    /// JSON while zero). Headers it had no room for are counted in `frames_dropped`.
    #[serde(skip_serializing_if = "is_zero")]
    pub frames_trimmed: u64,
    /// Frames the switch's shared buffer refused ([`super::SharedBufferSpec`]): their queue was
    /// at its dynamic threshold, or the buffer was full. Counted in `frames_dropped` too; a
    /// trimming queue trims such frames instead (`frames_trimmed`). Absent from the JSON while
    /// zero.
    #[serde(skip_serializing_if = "is_zero")]
    pub frames_over_threshold: u64,
    /// Nanoseconds the line was paused by its far end's PFC ([`LinkSpec::pfc`]), over every
    /// class, up to the last frame or pause it saw (absent from the JSON while zero).
    #[serde(skip_serializing_if = "is_zero")]
    pub paused_ns: u64,
    /// Pause frames (XOFF and XON) it received (absent from the JSON while zero).
    #[serde(skip_serializing_if = "is_zero")]
    pub pauses_received: u64,
    /// Largest queue occupancy seen (cells on ATM, bytes or frames otherwise).
    pub max_occupancy: u64,
    /// Other faults injected on the line.
    pub faults: FaultStats,
    /// Per flow (sending host), by flow number; serialised as the list indexed by it.
    pub flows: FlowTable,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl EgressStats {
    #[inline]
    fn flow(&mut self, f: u32) -> &mut FlowStats {
        self.flows.entry(f)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FrameState {
    Ok,
    Damaged,
    Refused,
}

/// What the queue holds: a cell, or a whole frame, of one flow.
#[derive(Clone, Copy, Debug)]
struct Unit {
    flow: u32,
    eof: bool,
    len: u32,
}

impl WireLen for Unit {
    fn wire_len(&self) -> usize {
        self.len as usize
    }
}

impl Queued for Unit {
    fn flow(&self) -> u32 {
        self.flow
    }
    fn end_of_frame(&self) -> bool {
        self.eof
    }
}

/// A frame whose units are arriving.
#[derive(Debug)]
struct Pending<F> {
    idx: u64,
    units: u64,
    spacing: u64,
    state: FrameState,
    flow: u32,
    /// The queue's drop-policy state for this frame.
    queue_state: FlowState,
    /// A policer tagged cells of it (CLP = 1).
    tagged: bool,
    /// Its VPI/VCI on the line it leaves by ([`Train::vc`]).
    vc: crate::vc::Vc,
    /// What a lossless input counted of it ([`Train::counted`]).
    counted: Option<Counted>,
    /// A congested queue set EFCI on its cells; the RM cells riding with it ([`Train::rm`]).
    efci: bool,
    rm: RmMark,
    /// Instant the first unit sent left the line, and units sent.
    first_dep: u64,
    sent: u64,
    /// Units sent that the link's policer drops at the next switch: they do not go on.
    policed: u64,
    frame: Option<F>,
}

/// A frame's units arriving within one slot: the frame's place in the table of pending
/// frames, the first unit's arrival and how many arrive in the slot.
#[derive(Clone, Copy, Debug)]
struct Arrival {
    at: u64,
    count: u64,
    slot: u32,
    flow: u32,
}

/// A frame that left a held queue ([`Egress::drain_released`]): what its lossless input
/// counted of it, and the instant (ns).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Released {
    /// What the input counted: its port, the frame's class and bytes as it came in.
    pub counted: Counted,
    /// When it left (ns): its last bit on the line, or its drop.
    pub at: u64,
}

/// The switch's output queue onto one link, with the line behind it.
#[derive(Debug)]
pub struct Egress<F> {
    line: Serialiser,
    link: LinkSpec,
    queue: Queue<Unit>,
    slot: u64,
    rng: Rng,
    faults: FaultInjector,
    to_switch: bool,
    mtu_frame: usize,
    /// Frames whose units are arriving, by the arrival of their next unit (an index into
    /// `trains`, so the heap moves small entries).
    pending: EventQueue<u32>,
    trains: Vec<Option<Pending<F>>>,
    free: Vec<u32>,
    /// Departure times (ns) of what `queue` holds, in order.
    departures: VecDeque<u64>,
    out: EventQueue<Train<F>>,
    /// [`Egress::poll_timeout`], kept up to date (it is asked every turn).
    deadline: Option<u64>,
    /// The last instant of the slot of the earliest pending arrival (when it can be taken),
    /// kept with `pending`'s head.
    arrivals_due: Option<u64>,
    /// The arrivals of the slot being taken (kept to reuse its allocation).
    batch: Vec<Arrival>,
    /// The link's contract, on a link towards another switch.
    contract: Option<Policer>,
    /// Occupancy (cells) from which cells of tagged frames are dropped.
    clp_limit: Option<u64>,
    /// Occupancy (cells) from which the cells taken in are marked EFCI.
    efci_limit: Option<u64>,
    /// The explicit rate this queue offers its ABR circuits (bit/s of cells, shared equally
    /// among them) and the circuits (flows) whose RM cells it has seen.
    er: Option<(u64, Vec<u32>)>,
    /// The RM cells delivered to the host with their frames, for the network to turn around.
    rm_delivered: Vec<RmArrival>,
    /// Occupancy (bytes or frames) from which ECN-capable frames are marked.
    ecn_limit: Option<u64>,
    /// RED marking on the bytes queued ([`LinkSpec::ecn_red`]), with its own random stream
    /// (drawn only for ECN-capable frames, so that the order of arrivals stays as it was).
    red: Option<(RedSpec, Rng)>,
    /// The two-class queue that replaces `queue` and `line` on a trimming or lossless link
    /// (where a frame's departure is known only when it starts).
    trim: Option<TrimQueue<F>>,
    /// Frames that left this queue (started on the line, or dropped) since the switch last
    /// asked: what the lossless ingress each came in by releases ([`Egress::drain_released`]).
    released: Vec<Released>,
    /// Bytes of an MTU-sized frame (a trimming queue's occupancy in frames).
    frame_bytes: u64,
    /// The switch's shared buffer, while the switch lends it to this queue
    /// ([`super::SwitchCore`]); `None`: the queue's own buffer alone bounds it.
    pub(super) pool: Option<SharedBuffer>,
    /// Counters.
    pub stats: EgressStats,
}

impl<F: Frame> Egress<F> {
    /// The output queue onto `link`, towards a host (`to_switch` false: frames are delivered
    /// when their last bit arrives) or towards another switch (trains handed on as soon as they
    /// are sent). `rng` orders simultaneous arrivals and draws the link's faults.
    pub fn new(link: &LinkSpec, mut rng: Rng, to_switch: bool) -> Self {
        let (capacity, policy) = link.queue();
        let faults = FaultInjector::new(link.faults, Rng::new(rng.next_u64()));
        let contract = link
            .contract
            .filter(|_| to_switch && link.is_atm())
            .map(Policer::new);
        let clp_limit = match (link.clp_threshold, capacity) {
            (Some(f), Capacity::Cells(n)) => Some((n as f64 * f.clamp(0.0, 1.0)).floor() as u64),
            _ => None,
        };
        let efci_limit = match (link.efci_threshold, capacity) {
            (Some(f), Capacity::Cells(n)) => Some((n as f64 * f.clamp(0.0, 1.0)).floor() as u64),
            _ => None,
        };
        let frame_bytes = link.mtu_frame().1;
        let trim = ((link.trim || link.pfc.is_some()) && !link.is_atm()).then(|| {
            // A lossless queue drops nothing: the inputs' XOFF thresholds bound what it holds.
            let limit = match capacity {
                _ if link.pfc.is_some() => u64::MAX,
                Capacity::Bytes(n) => n,
                Capacity::Frames(n) | Capacity::Cells(n) => n.saturating_mul(frame_bytes),
            };
            TrimQueue::new(link, limit, Rng::new(rng.next_u64()))
        });
        Egress {
            trim,
            released: Vec::new(),
            frame_bytes,
            pool: None,
            contract,
            clp_limit,
            efci_limit,
            er: link
                .abr_er
                .zip(link.rate)
                .filter(|_| link.is_atm())
                .map(|(f, r)| ((r.as_bps() as f64 * f.clamp(0.0, 1.0)) as u64, Vec::new())),
            rm_delivered: Vec::new(),
            ecn_limit: link.ecn_limit(),
            red: link
                .ecn_red
                .filter(|_| !link.is_atm())
                .map(|r| (r, Rng::new(rng.clone().next_u64() ^ 0x7ed))),
            line: Serialiser::new(link.rate),
            queue: Queue::new(capacity, policy),
            slot: link.slot().as_nanos(),
            rng,
            faults,
            to_switch,
            mtu_frame: link.mtu as usize + ETH_HEADER,
            link: link.clone(),
            pending: EventQueue::new(),
            trains: Vec::new(),
            free: Vec::new(),
            departures: VecDeque::new(),
            out: EventQueue::new(),
            deadline: None,
            arrivals_due: None,
            batch: Vec::new(),
            stats: EgressStats::default(),
        }
    }

    /// The link this queue sends onto.
    pub fn link(&self) -> &LinkSpec {
        &self.link
    }

    /// What the queue holds now, in the unit of its capacity (as of the last slot processed).
    pub fn occupancy(&self) -> u64 {
        self.queue.occupancy()
    }

    /// A train reaches the queue. Frames larger than the link's MTU are dropped.
    pub fn handle_train(&mut self, t: Train<F>) {
        self.stats.frames_in += 1;
        self.stats.flow(t.flow).frames_in += 1;
        if t.frame.frame_len() > self.mtu_frame {
            self.stats.frames_oversize += 1;
            self.stats.flow(t.flow).frames_dropped += 1;
            self.release(t.counted, t.last());
            return;
        }
        // An ABR source's forward RM cells are cells of the train: they take their slots here.
        let units = self.link.units(t.frame.frame_len()) + t.rm_cells();
        // Cells keep their input pacing when both sides are cells (a damaged frame's cells that
        // were lost or policed upstream stay lost); otherwise the frame is stored and
        // forwarded, converted at once when its last unit has arrived.
        let (first, spacing, units) = if !self.link.is_atm() {
            (t.last(), 0, 1)
        } else if units == t.units || (t.damaged && t.units < units) {
            (t.first, t.spacing, t.units)
        } else {
            (t.last(), 0, units)
        };
        let state = if t.damaged {
            FrameState::Damaged
        } else {
            FrameState::Ok
        };
        let p = Pending {
            idx: 0,
            units,
            spacing,
            state,
            flow: t.flow,
            queue_state: FlowState::default(),
            tagged: t.tagged,
            vc: t.vc,
            counted: t.counted,
            efci: t.efci,
            rm: t.rm,
            first_dep: 0,
            sent: 0,
            policed: 0,
            frame: Some(t.frame),
        };
        let slot = match self.free.pop() {
            Some(k) => {
                self.trains[k as usize] = Some(p);
                k
            }
            None => {
                self.trains.push(Some(p));
                (self.trains.len() - 1) as u32
            }
        };
        // Only an arrival earlier than the earliest pending one moves the deadline.
        let head = self.pending.peek_time();
        self.pending.push(Instant(first), slot);
        if head.is_none_or(|h| first < h.0) {
            self.arrivals_due = Some(self.slot_end(first) - 1);
            self.update_deadline();
        }
    }

    /// The end (exclusive, ns) of the slot that holds instant `t`.
    fn slot_end(&self, t: u64) -> u64 {
        match t.checked_div(self.slot) {
            None => t + 1,
            Some(k) => (k + 1) * self.slot,
        }
    }

    fn update_deadline(&mut self) {
        let arr = match self.trim.as_ref().and_then(TrimQueue::next_start) {
            Some(s) => Some(self.arrivals_due.map_or(s, |a| a.min(s))),
            None => self.arrivals_due,
        };
        let due = self.out.peek_time().map(|t| t.0);
        self.deadline = match (arr, due) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }

    /// Processes every slot of arrivals that has ended by `now` (ns).
    pub fn advance(&mut self, now: u64) {
        let arrivals = self.pending.peek_time().is_some_and(|t| t.0 <= now);
        if arrivals {
            self.process(now);
            self.arrivals_due = self.pending.peek_time().map(|t| self.slot_end(t.0) - 1);
        }
        let starts = self
            .trim
            .as_ref()
            .and_then(TrimQueue::next_start)
            .is_some_and(|s| s <= now);
        if starts {
            self.start_trimmed(now);
        }
        if arrivals || starts {
            self.update_deadline();
        }
    }

    fn process(&mut self, now: u64) {
        let mut batch = std::mem::take(&mut self.batch);
        // The table of pending frames is set apart while the slot is taken, so that each frame
        // is worked on in place rather than moved out and back.
        let mut trains = std::mem::take(&mut self.trains);
        while let Some(first) = self.pending.peek_time() {
            // A slot is taken once its last instant has come: every unit arriving in it is
            // known by then (units are announced before they arrive).
            let end = self.slot_end(first.0);
            if end - 1 > now {
                break;
            }
            // Every frame with units in this slot, with how many.
            while let Some((at, slot)) = self.pending.pop_due(Instant(end - 1)) {
                let Some(p) = trains.get(slot as usize).and_then(Option::as_ref) else {
                    continue;
                };
                let left = p.units - p.idx;
                // Units of a train with no spacing all arrive at once.
                let count = (end - 1 - at.0)
                    .checked_div(p.spacing)
                    .map_or(left, |k| (k + 1).min(left));
                batch.push(Arrival {
                    at: at.0,
                    count,
                    slot,
                    flow: p.flow,
                });
            }
            // A fair order among flows; the units of one frame stay in order. The batch is put in
            // a canonical order first, so that the outcome does not depend on the order in which
            // the trains were announced (a simulated run and an emulated run of the same
            // arrivals agree).
            if batch.len() > 1 {
                batch.sort_unstable_by_key(|a| (a.at, a.flow, a.slot));
                for i in (1..batch.len()).rev() {
                    let j = self.rng.below(i as u64 + 1) as usize;
                    batch.swap(i, j);
                }
            }
            self.drain_queue(end.saturating_sub(1));
            for a in batch.drain(..) {
                let Some(entry) = trains.get_mut(a.slot as usize) else {
                    continue;
                };
                let Some(p) = entry.as_mut() else {
                    continue;
                };
                for k in 0..a.count {
                    let t = a.at + k * p.spacing;
                    if self.link.is_atm() {
                        self.cell_arrives(t, p);
                    } else {
                        self.frame_arrives(t, p);
                    }
                    p.idx += 1;
                }
                if p.idx < p.units {
                    let next = a.at + a.count * p.spacing;
                    self.pending.push(Instant(next), a.slot);
                } else {
                    *entry = None;
                    self.free.push(a.slot);
                }
            }
        }
        self.trains = trains;
        self.batch = batch;
    }

    fn drain_queue(&mut self, t: u64) {
        while self.departures.front().is_some_and(|&dep| dep <= t) {
            self.departures.pop_front();
            self.queue.dequeue();
        }
    }

    fn frame_arrives(&mut self, t: u64, p: &mut Pending<F>) {
        let Some(mut frame) = p.frame.take() else {
            return;
        };
        if self.trim.is_some() {
            return self.trim_arrives(t, p.flow, p.counted, frame);
        }
        // What the frame finds queued, before it joins (DCTCP's instantaneous queue).
        let found = self.queue.occupancy();
        let len = frame.frame_len();
        // A queue counted in frames is taken as full-sized frames (RED's bytes, the pool's).
        let bytes = match self.queue.capacity() {
            Capacity::Bytes(_) => found,
            _ => found.saturating_mul(self.frame_bytes),
        };
        if let Some(pool) = self.pool.as_mut()
            && !pool.admits(t, bytes, len as u64)
        {
            self.stats.frames_dropped += 1;
            self.stats.frames_over_threshold += 1;
            self.stats.flow(p.flow).frames_dropped += 1;
            return;
        }
        let unit = Unit {
            flow: p.flow,
            eof: true,
            len: len as u32,
        };
        if let Err(reason) = self.queue.offer_in(unit, &mut p.queue_state) {
            self.stats.frames_dropped += 1;
            self.stats.flow(p.flow).frames_dropped += 1;
            if reason == DropReason::Early {
                self.stats.frames_epd += 1;
            }
            return;
        }
        let step = self.ecn_limit.is_some_and(|k| found >= k);
        if (step || self.red_marks(bytes, &frame)) && frame.mark_ce() {
            self.stats.frames_marked += 1;
        }
        let dep = self.line.send(t, self.link.wire_bytes(len));
        if let Some(pool) = self.pool.as_mut() {
            pool.hold_until(dep, len as u64);
        }
        self.departures.push_back(dep);
        self.stats.max_occupancy = self.stats.max_occupancy.max(self.queue.occupancy());
        p.first_dep = dep;
        p.sent = 1;
        if p.state == FrameState::Ok {
            self.deliver(p, dep, frame);
        } else if self.to_switch {
            self.hand_on(p, dep, frame, true);
        }
    }

    /// A frame reaches a trimming queue at `t` (ns): what started on the line before it has
    /// gone, it is queued, trimmed or dropped, and it starts at once if the line is idle.
    fn trim_arrives(&mut self, t: u64, flow: u32, counted: Option<Counted>, mut frame: F) {
        self.start_trimmed(t);
        let Some(found) = self.trim.as_ref().map(TrimQueue::occupancy) else {
            return;
        };
        let unit = match self.queue.capacity() {
            Capacity::Bytes(_) => 1,
            _ => self.frame_bytes,
        };
        let step = self
            .ecn_limit
            .is_some_and(|k| found >= k.saturating_mul(unit));
        if (step || self.red_marks(found, &frame)) && frame.mark_ce() {
            self.stats.frames_marked += 1;
        }
        let Some(q) = self.trim.as_mut() else {
            return;
        };
        // A lossless queue drops nothing: its inputs' pauses bound it, in the pool too.
        if let Some(pool) = self.pool.as_mut()
            && self.link.pfc.is_none()
        {
            q.set_limit(pool.limit_for(t, found, frame.frame_len() as u64));
        }
        let verdict = q.arrive(t, frame, flow, counted);
        self.stats.frames_trimmed = q.stats.trimmed;
        self.stats.max_occupancy = self.stats.max_occupancy.max(q.occupancy().div_ceil(unit));
        if verdict == TrimVerdict::Dropped {
            self.stats.frames_dropped += 1;
            self.stats.flow(flow).frames_dropped += 1;
            self.release(counted, t);
        }
        self.start_trimmed(t);
    }

    /// Tells the lent pool what the trimming queue keeps waiting.
    fn report_waiting(&mut self) {
        if let (Some(pool), Some(q)) = (self.pool.as_mut(), self.trim.as_ref()) {
            pool.set_waiting(q.waiting_bytes());
        }
    }

    /// What a lossless input counted of a frame that leaves the queue at `at` (ns), sent or
    /// dropped, for [`Egress::drain_released`].
    fn release(&mut self, counted: Option<Counted>, at: u64) {
        if let Some(counted) = counted {
            self.released.push(Released { counted, at });
        }
    }

    /// Whether RED ([`LinkSpec::ecn_red`]) marks `frame`, which finds `bytes` queued (never one
    /// that is not ECN-capable).
    fn red_marks(&mut self, bytes: u64, frame: &F) -> bool {
        match &mut self.red {
            Some((r, rng)) if frame.ecn().is_capable() => r.mark(bytes, rng),
            _ => false,
        }
    }

    /// Starts on the line every frame of the trimming queue that starts by `now` (ns).
    fn start_trimmed(&mut self, now: u64) {
        while let Some(s) = self.trim.as_mut().and_then(|q| q.poll_start(now)) {
            let (dep, frame, flow) = (s.dep, s.frame, s.flow);
            if let Some(pool) = self.pool.as_mut() {
                pool.hold_until(dep, frame.frame_len() as u64);
            }
            self.release(s.counted, dep);
            let p = Pending {
                idx: 0,
                units: 1,
                spacing: 0,
                state: FrameState::Ok,
                flow,
                queue_state: FlowState::default(),
                tagged: false,
                vc: Default::default(),
                counted: s.counted,
                efci: false,
                rm: Default::default(),
                first_dep: dep,
                sent: 1,
                policed: 0,
                frame: None,
            };
            self.deliver(&p, dep, frame);
        }
        self.report_waiting();
        if let Some(q) = &self.trim {
            self.stats.paused_ns = q.paused_ns(now);
        }
    }

    fn cell_arrives(&mut self, t: u64, p: &mut Pending<F>) {
        self.stats.cells_in += 1;
        self.stats.flow(p.flow).cells_in += 1;
        let last = p.idx + 1 == p.units;
        let cell = Unit {
            flow: p.flow,
            eof: last,
            len: CELL_BYTES as u32,
        };
        if self.efci_limit.is_some_and(|l| self.queue.occupancy() >= l) {
            p.efci = true;
        }
        if p.rm.cells > 0 && p.idx == 0 {
            if let Some((target, flows)) = self.er.as_mut() {
                if !flows.contains(&p.flow) {
                    flows.push(p.flow);
                }
                p.rm.er = p.rm.er.min(*target / flows.len() as u64);
            }
        }
        // Selective discard: a congested queue refuses the cells of tagged frames.
        let offer = if p.tagged && self.clp_limit.is_some_and(|l| self.queue.occupancy() >= l) {
            self.stats.cells_clp_dropped += 1;
            if last {
                p.queue_state = FlowState::default();
            }
            Err(DropReason::Full)
        } else {
            self.queue.offer_in(cell, &mut p.queue_state)
        };
        match offer {
            Ok(()) => {
                let dep = self.send_cell(t, p);
                self.departures.push_back(dep);
                self.stats.max_occupancy = self.stats.max_occupancy.max(self.queue.occupancy());
                self.stats.cells_out += 1;
                if p.sent == 0 {
                    p.first_dep = dep;
                }
                p.sent += 1;
                if last {
                    if let Some(frame) = p.frame.take() {
                        if p.state == FrameState::Ok {
                            self.deliver(p, dep, frame);
                        } else if self.to_switch {
                            self.hand_on(p, dep, frame, true);
                        }
                    }
                }
            }
            Err(reason) => {
                self.stats.cells_dropped += 1;
                self.stats.flow(p.flow).cells_dropped += 1;
                if p.state == FrameState::Ok {
                    if reason == DropReason::Early {
                        p.state = FrameState::Refused;
                        self.stats.frames_epd += 1;
                        self.stats.frames_dropped += 1;
                        self.stats.flow(p.flow).frames_dropped += 1;
                    } else {
                        p.state = FrameState::Damaged;
                        self.stats.frames_corrupt += 1;
                        self.stats.flow(p.flow).frames_corrupt += 1;
                    }
                }
                if last && self.to_switch && p.sent > 0 {
                    // The cells that got through still travel on, and fail downstream.
                    if let Some(frame) = p.frame.take() {
                        let end = self.line.free_at();
                        self.hand_on(p, end, frame, true);
                    }
                }
            }
        }
    }

    /// Sends a queued cell that arrived at `t` onto the line, under the link's contract if it
    /// has one; returns when it has left (ns). A shaped cell waits until it conforms; a policed
    /// one is judged as it arrives whole at the next switch, and if it breaks the contract its
    /// frame is damaged (the cell goes no further), or tagged; with partial packet discard the
    /// frame's later cells but its last go no further either, unjudged.
    fn send_cell(&mut self, t: u64, p: &mut Pending<F>) -> u64 {
        let Some(c) = self.contract.as_mut() else {
            return self.line.send(t, CELL_BYTES);
        };
        if !c.polices() {
            let at = c.shape(t.max(self.line.free_at()));
            return self.line.send(at, CELL_BYTES);
        }
        let dep = self.line.send(t, CELL_BYTES);
        let fate = c.judge(dep, p.idx, p.units, p.policed > 0);
        if fate == Fate::Discarded {
            p.policed += 1;
            self.stats.cells_discarded += 1;
            return dep;
        }
        if fate == Fate::Broken {
            self.stats.cells_policed += 1;
            if c.tags() {
                p.tagged = true;
            } else {
                p.policed += 1;
                if p.state == FrameState::Ok {
                    p.state = FrameState::Damaged;
                    self.stats.frames_policed += 1;
                    self.stats.flow(p.flow).frames_corrupt += 1;
                }
            }
        }
        dep
    }

    /// A frame whose last unit has been sent at `dep` (ns): through the line's faults to the
    /// host, or on to the next switch.
    fn deliver(&mut self, p: &Pending<F>, dep: u64, frame: F) {
        if self.faults.lose() {
            self.stats.frames_lost += 1;
            self.stats.faults = self.faults.stats;
            return;
        }
        self.stats.frames_out += 1;
        self.stats.bytes_out += frame.frame_len() as u64;
        self.stats.flow(p.flow).frames_out += 1;
        self.hand_on(p, dep, frame, false);
    }

    /// Hands a frame whose last unit left at `dep` on to the next switch: the units sent but
    /// those its policer drops there (nothing if that is all of them).
    fn hand_on(&mut self, p: &Pending<F>, dep: u64, frame: F, damaged: bool) {
        let delay = self.link.delay.as_nanos();
        let units = p.sent.saturating_sub(p.policed);
        if units == 0 {
            return;
        }
        let (first_dep, flow) = (p.first_dep.min(dep), p.flow);
        let (tagged, vc, efci, rm) = (p.tagged, p.vc, p.efci, p.rm);
        let out = &mut self.out;
        self.faults.pass(dep + delay, frame, &mut |due, f| {
            let held = due - (dep + delay);
            let mut t = Train::between(f, first_dep + held, dep + held, units, delay, flow);
            t.damaged = damaged;
            t.tagged = tagged;
            t.vc = vc;
            t.efci = efci;
            t.rm = rm;
            out.push(Instant(due), t);
        });
        self.stats.faults = self.faults.stats;
    }

    /// The next frame due at the host at or before `now` (ns), with its due time (an egress
    /// towards a host).
    pub fn poll_frame(&mut self, now: u64) -> Option<(u64, F)> {
        if self.deadline.is_none_or(|d| d > now) {
            return None;
        }
        self.advance(now);
        let rm = &mut self.rm_delivered;
        let f = self.out.pop_due(Instant(now)).map(|(due, t)| {
            if t.rm.cells > 0 {
                rm.push(RmArrival {
                    flow: t.flow,
                    due: due.0,
                    rm: t.rm,
                    efci: t.efci,
                });
            }
            (due.0, t.frame)
        });
        self.update_deadline();
        f
    }

    /// A PFC pause frame from the far end of the line arrives at `now` (ns): a lossless queue
    /// ([`LinkSpec::pfc`]) holds or resumes the class; others ignore it.
    pub fn handle_pause(&mut self, now: u64, p: super::pfc::PauseFrame) {
        let Some(q) = self.trim.as_mut() else {
            return;
        };
        q.handle_pause(now, p);
        self.stats.pauses_received += 1;
        self.stats.paused_ns = q.paused_ns(now);
        self.update_deadline();
    }

    /// True if its frames wait for the line's pause to end at `now` (ns), and one of them came
    /// in by switch port `from` (an edge of the wait-for graph of a PFC deadlock).
    pub fn paused_holding(&self, now: u64, from: u32) -> bool {
        self.trim
            .as_ref()
            .is_some_and(|q| q.blocked(now) && q.holds_from(from))
    }

    /// True if frames wait for the line's pause to end at `now` (ns).
    pub fn paused(&self, now: u64) -> bool {
        self.trim.as_ref().is_some_and(|q| q.blocked(now))
    }

    /// True if its frames' departures wait until they start (a trimming or lossless queue):
    /// the frames it holds are released by [`Egress::drain_released`] as they leave.
    pub fn holds_frames(&self) -> bool {
        self.trim.is_some()
    }

    /// Moves the frames that have left the queue since the last call into `out`.
    pub fn drain_released(&mut self, out: &mut Vec<Released>) {
        out.append(&mut self.released);
    }

    /// Moves the RM cells delivered to the host so far into `out`.
    pub(super) fn drain_rm(&mut self, out: &mut Vec<RmArrival>) {
        out.append(&mut self.rm_delivered);
    }

    /// The next train sent towards the next switch (an egress towards a switch); its units
    /// reach that switch at their own instants, which may be later than `now`.
    pub fn poll_train(&mut self, now: u64) -> Option<Train<F>> {
        if !self.train_ready(now) {
            return None;
        }
        self.advance(now);
        let t = self.out.pop().map(|(_, t)| t);
        self.update_deadline();
        t
    }

    /// Whether [`Egress::poll_train`] may have a train at `now`: one is waiting, or a slot of
    /// arrivals has begun by then. A cheap test that spares the switch the full poll of every
    /// trunk port on every turn of the engine.
    fn train_ready(&self, now: u64) -> bool {
        !self.out.is_empty()
            || self.pending.peek_time().is_some_and(|t| t.0 <= now)
            || self
                .trim
                .as_ref()
                .and_then(TrimQueue::next_start)
                .is_some_and(|s| s <= now)
    }

    /// When this queue next needs attention (ns): the end of the slot of its earliest arrival,
    /// or its earliest delivery.
    pub fn poll_timeout(&self) -> Option<u64> {
        self.deadline
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shaper::VcContract;
    use crate::time::Duration;
    use crate::units::Rate;

    const OC3C: Rate = Rate::bps(149_760_000);
    /// An IP length that makes a 10-cell AAL5 frame with LLC/SNAP.
    const TEN_CELLS: usize = 10 * 48 - 16 + ETH_HEADER;

    fn trunk(contract: Option<VcContract>) -> LinkSpec {
        let mut l = LinkSpec::atm(Some(OC3C), Duration::ZERO, 1, 100);
        l.contract = contract;
        l
    }

    fn contract(pcr: Rate, scr: Option<Rate>, mbs: u64, police: bool, tag: bool) -> VcContract {
        VcContract {
            pcr,
            scr,
            mbs,
            // A microsecond absorbs the rounding of cell times to whole nanoseconds.
            cdvt: Duration(1_000),
            police,
            tag,
            ppd: false,
        }
    }

    /// `n` 10-cell frames arriving back to back at the OC-3c cell rate from t = 0; the trains
    /// the queue sends on.
    fn run(link: &LinkSpec, n: u64) -> Vec<Train<Vec<u8>>> {
        let mut e = Egress::new(link, Rng::new(1), true);
        let cell = OC3C.time_to_send(crate::units::Size(CELL_BYTES)).as_nanos();
        for k in 0..n {
            let t = Train {
                frame: vec![0u8; TEN_CELLS],
                first: k * 10 * cell,
                spacing: cell,
                units: 10,
                flow: 0,
                damaged: false,
                tagged: false,
                vc: Default::default(),
                efci: false,
                rm: Default::default(),
                counted: None,
            };
            e.handle_train(t);
        }
        let mut out = Vec::new();
        while let Some(t) = e.poll_timeout() {
            while let Some(tr) = e.poll_train(t) {
                out.push(tr);
            }
        }
        out
    }

    /// An IPv4/UDP frame of `len` bytes, class 0 (DSCP 0), ECN-capable.
    fn udp_frame(len: usize) -> Vec<u8> {
        let mut f = vec![0u8; len];
        f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
        f[14] = 0x45;
        f[15] = crate::net::Ecn::Ect0 as u8;
        f[16..18].copy_from_slice(&((len - ETH_HEADER) as u16).to_be_bytes());
        f[23] = 17;
        f
    }

    /// A frame that came in by switch port 3, whose lossless input counted it.
    fn counted_train(frame: Vec<u8>, at: u64) -> Train<Vec<u8>> {
        let counted = Some(Counted {
            from: 3,
            class: 0,
            bytes: frame.frame_len() as u32,
        });
        let mut t = Train::between(frame, at, at, 1, 0, 0);
        t.counted = counted;
        t
    }

    /// Everything a trimming 10 Gbit/s queue of one frame releases after `frames` arrive at
    /// once, sent or dropped.
    fn released_by_trimming_queue(frames: Vec<Vec<u8>>) -> Vec<Released> {
        let mut link = LinkSpec::ethernet(Some(Rate::mbps(10_000)), Duration::ZERO);
        link.buffer = crate::queue::Buffer::frames(1);
        link.trim = true;
        let mut e = Egress::new(&link, Rng::new(1), true);
        for f in frames {
            e.handle_train(counted_train(f, 0));
        }
        while let Some(t) = e.poll_timeout() {
            while e.poll_train(t).is_some() {}
        }
        let mut out = Vec::new();
        e.drain_released(&mut out);
        out
    }

    #[test]
    fn a_trimmed_frame_releases_the_class_its_input_counted() {
        // Three frames into a one-frame queue: at least one is trimmed to a header (class 7);
        // its input counted it in class 0 and must release class 0, or its count never falls.
        let r = released_by_trimming_queue(vec![udp_frame(1514); 3]);
        assert_eq!(r.len(), 3, "{r:?}");
        assert!(
            r.iter()
                .all(|x| x.counted.from == 3 && x.counted.class == 0 && x.counted.bytes == 1514),
            "{r:?}"
        );
    }

    #[test]
    fn an_oversize_frame_releases_what_its_input_counted() {
        let r = released_by_trimming_queue(vec![udp_frame(9014)]);
        assert_eq!(r.len(), 1, "the dropped frame's count is released: {r:?}");
        assert_eq!(r[0].counted.bytes, 9014);
    }

    #[test]
    fn a_shaped_trunk_spaces_cells_at_the_contract_and_holds_them_in_the_queue() {
        let link = trunk(Some(contract(Rate::mbps(26), None, 1, false, false)));
        let out = run(&link, 2);
        assert_eq!(out.len(), 2);
        // 20 cells one per 16.31 us (26 Mbit/s of cells) instead of one per 2.83 us (less the
        // microsecond of tolerance, which lets the shaper send once that much early).
        let gap = 1_000_000_000u64.div_ceil(26_000_000 / 424);
        let span = out[1].last() - out[0].first;
        assert!(
            span.abs_diff(19 * gap - 1_000) <= 20,
            "{span} against {}",
            19 * gap
        );
        assert!(out.iter().all(|t| !t.damaged));
    }

    #[test]
    fn a_policed_trunk_damages_the_frames_past_the_burst() {
        // Peak at the line rate, a tenth sustained, 30 cells of burst: three frames conform.
        let c = contract(OC3C, Some(Rate::bps(14_976_000)), 30, true, false);
        let link = trunk(Some(c));
        let out = run(&link, 6);
        let damaged: Vec<bool> = out.iter().map(|t| t.damaged).collect();
        assert_eq!(damaged, [false, false, false, true, true, true]);
        // The policed cells crossed the line but go no further: of each damaged frame only
        // its last cell, one sustained increment after the last that passed, goes on.
        let units: Vec<u64> = out.iter().map(|t| t.units).collect();
        assert_eq!(units, [10, 10, 10, 1, 1, 1]);
        // Without the contract, all six pass.
        assert!(run(&trunk(None), 6).iter().all(|t| !t.damaged));
    }

    #[test]
    fn partial_packet_discard_sends_on_a_broken_frame_s_first_cells_and_its_last() {
        // A peak of half the line: every other cell of a frame at the line rate breaks it.
        let half = contract(Rate::bps(74_880_000), None, 1, true, false);
        let out = run(&trunk(Some(half)), 1);
        assert_eq!((out.len(), out[0].units), (1, 5));
        assert!(out[0].damaged);
        // With PPD the cells after the first broken one are dropped unjudged, but the last.
        let ppd = VcContract { ppd: true, ..half };
        let mut e = Egress::new(&trunk(Some(ppd)), Rng::new(1), true);
        let cell = OC3C.time_to_send(crate::units::Size(CELL_BYTES)).as_nanos();
        e.handle_train(Train::between(vec![0u8; TEN_CELLS], 0, 9 * cell, 10, 0, 0));
        let mut out = Vec::new();
        while let Some(t) = e.poll_timeout() {
            while let Some(tr) = e.poll_train(t) {
                out.push(tr);
            }
        }
        assert_eq!((out.len(), out[0].units), (1, 2));
        assert_eq!((e.stats.cells_policed, e.stats.cells_discarded), (1, 7));
    }

    #[test]
    fn a_tagging_policer_marks_frames_and_a_congested_queue_drops_them_first() {
        let c = contract(OC3C, Some(Rate::bps(14_976_000)), 30, true, true);
        let out = run(&trunk(Some(c)), 6);
        let tagged: Vec<bool> = out.iter().map(|t| t.tagged).collect();
        assert_eq!(tagged, [false, false, false, true, true, true]);
        assert!(out.iter().all(|t| !t.damaged));
        // Downstream, a queue at its CLP threshold (here: always) drops the tagged frames'
        // cells and delivers the others.
        let mut host = LinkSpec::atm(Some(OC3C), Duration::ZERO, 0, 101);
        host.clp_threshold = Some(0.0);
        let mut e = Egress::new(&host, Rng::new(1), false);
        for t in out.clone() {
            e.handle_train(t);
        }
        let mut got = 0;
        while let Some(t) = e.poll_timeout() {
            while e.poll_frame(t).is_some() {
                got += 1;
            }
        }
        assert_eq!(got, 3);
        assert_eq!(e.stats.cells_clp_dropped, 30);
        // Without a threshold they are queued like the others.
        let mut e = Egress::new(
            &LinkSpec::atm(Some(OC3C), Duration::ZERO, 0, 101),
            Rng::new(1),
            false,
        );
        for t in out {
            e.handle_train(t);
        }
        let mut got = 0;
        while let Some(t) = e.poll_timeout() {
            while e.poll_frame(t).is_some() {
                got += 1;
            }
        }
        assert_eq!(got, 6);
    }
}
