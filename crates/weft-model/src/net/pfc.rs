//! Priority-based flow control (IEEE 802.1Qbb), sans-IO: the lossless Ethernet that RoCEv2 runs
//! on. Each of the eight priority classes of a link is paused and resumed on its own.
//!
//! - At a switch's **ingress** ([`PfcIngress`]) the bytes that came in by one port, per class,
//!   are counted until they leave the switch. Past the XOFF threshold the port asks its upstream
//!   neighbour to pause that class ([`PauseFrame`] with the longest pause time); once the count
//!   falls to XON it lets it resume (a pause time of zero). Between XOFF and the buffer's end a
//!   headroom absorbs what the upstream line still sends while the pause crosses the link and
//!   takes effect; a frame beyond it is dropped and counted (the headroom was too small: the
//!   fabric was not lossless). An XOFF is sent again before its pause time runs out while the
//!   count stays above XON ([`PfcIngress::poll_timeout`]).
//! - At the upstream **egress** ([`PfcEgress`]) a pause frame stops the class from the instant it
//!   arrives for its pause time (quanta of 512 bit times at the link's rate), or until a resume;
//!   the time each class spends paused is counted.
//! - Pauses propagate hop by hop: an egress that is paused keeps its frames, they keep counting
//!   against the ingress they came in by, and that ingress in turn pauses its upstream.
//! - A cycle of ports each paused waiting for the next (a cyclic buffer dependency, as routing
//!   loops or up-down-up paths after a failure make) never drains: [`find_deadlock`] finds such
//!   a cycle in the graph of who waits for whom.
//!
//! Nothing here reads a clock: every call takes the instant in nanoseconds.

use serde::{Deserialize, Serialize};

use crate::units::Rate;

/// Priority classes of 802.1Qbb.
pub const CLASSES: usize = 8;

/// The longest pause an XOFF asks for, in quanta (802.1Qbb's 16-bit pause time).
pub const MAX_QUANTA: u16 = u16::MAX;

/// Bit times in one pause quantum.
pub const QUANTUM_BITS: u64 = 512;

/// The thresholds of a lossless ingress, in bytes of frames that came in by the port and are
/// still in the switch, per class.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PfcSpec {
    /// From this many bytes the port pauses its upstream.
    pub xoff: u64,
    /// At or below this many bytes a paused upstream resumes (`xon <= xoff`).
    pub xon: u64,
    /// Bytes beyond `xoff` kept for what arrives while the pause takes effect: at least two
    /// link delays' worth of the line's rate plus two maximum frames (one the upstream had
    /// started, one the ingress was receiving).
    pub headroom: u64,
    /// The classes that are lossless (bit `c` for class `c`); the others are never paused.
    pub classes: u8,
}

impl PfcSpec {
    /// The headroom a link of `rate` and one-way `delay_ns` needs for frames of up to
    /// `max_frame` bytes: the bits in flight for a round trip, plus two frames.
    pub fn headroom_for(rate: Rate, delay_ns: u64, max_frame: u64) -> u64 {
        let bits = rate.as_bps() as u128 * 2 * delay_ns as u128 / 1_000_000_000;
        (bits as u64).div_ceil(8) + 2 * max_frame
    }

    /// True if class `c` is lossless.
    pub fn covers(&self, c: u8) -> bool {
        (c as usize) < CLASSES && self.classes & (1 << c) != 0
    }
}

/// A PFC frame for one class: pause it for `quanta` (zero: resume).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PauseFrame {
    /// The priority class.
    pub class: u8,
    /// Pause time in quanta of 512 bit times; zero resumes the class.
    pub quanta: u16,
}

/// What an ingress did with a frame offered to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admit {
    /// Counted; nothing to send.
    Accepted,
    /// Counted, and the count reached XOFF: send this pause upstream.
    Pause(PauseFrame),
    /// Beyond the headroom: dropped (the fabric lost a frame it promised to keep).
    Dropped,
}

/// Counters of one lossless ingress.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PfcIngressStats {
    /// XOFF frames sent upstream (refreshes included).
    pub pauses_sent: u64,
    /// XON frames sent upstream.
    pub resumes_sent: u64,
    /// Frames dropped beyond the headroom.
    pub headroom_drops: u64,
    /// Most bytes held in one class.
    pub max_held: u64,
}

/// The lossless side of one switch input port: bytes held per class, and whether its upstream
/// is paused.
#[derive(Clone, Debug)]
pub struct PfcIngress {
    spec: PfcSpec,
    held: [u64; CLASSES],
    /// When the XOFF last sent for each class runs out upstream (ns); `None`: not paused.
    pause_ends: [Option<u64>; CLASSES],
    /// Nanoseconds of one quantum at the link's rate, times [`MAX_QUANTA`] (an XOFF's reach).
    xoff_ns: u64,
    /// Counters.
    pub stats: PfcIngressStats,
}

impl PfcIngress {
    /// An ingress with `spec`'s thresholds on a link of `rate` (which times an XOFF's pause).
    pub fn new(spec: PfcSpec, rate: Rate) -> Self {
        PfcIngress {
            spec,
            held: [0; CLASSES],
            pause_ends: [None; CLASSES],
            xoff_ns: quanta_ns(MAX_QUANTA, rate),
            stats: PfcIngressStats::default(),
        }
    }

    /// Bytes of class `c` that came in here and are still in the switch.
    pub fn held(&self, c: u8) -> u64 {
        self.held.get(c as usize).copied().unwrap_or(0)
    }

    /// True while this ingress holds its upstream's class `c` paused.
    pub fn pausing(&self, c: u8) -> bool {
        self.pause_ends.get(c as usize).is_some_and(Option::is_some)
    }

    /// A frame of `bytes` in class `c` arrives at `now` (ns).
    pub fn admit(&mut self, now: u64, c: u8, bytes: u64) -> Admit {
        if !self.spec.covers(c) {
            return Admit::Accepted;
        }
        let i = c as usize;
        if self.held[i] + bytes > self.spec.xoff + self.spec.headroom {
            self.stats.headroom_drops += 1;
            return Admit::Dropped;
        }
        self.held[i] += bytes;
        self.stats.max_held = self.stats.max_held.max(self.held[i]);
        if self.held[i] >= self.spec.xoff && self.pause_ends[i].is_none() {
            return Admit::Pause(self.xoff(now, c));
        }
        Admit::Accepted
    }

    /// A frame of `bytes` in class `c` that came in here has left the switch (or was dropped
    /// inside it) at `now` (ns); a resume to send upstream if the count fell to XON.
    pub fn release(&mut self, c: u8, bytes: u64) -> Option<PauseFrame> {
        if !self.spec.covers(c) {
            return None;
        }
        let i = c as usize;
        self.held[i] = self.held[i].saturating_sub(bytes);
        if self.held[i] <= self.spec.xon && self.pause_ends[i].take().is_some() {
            self.stats.resumes_sent += 1;
            return Some(PauseFrame {
                class: c,
                quanta: 0,
            });
        }
        None
    }

    /// The XOFFs due again by `now` (ns): a class still above XON whose last pause is about to
    /// run out upstream (half its time gone) is paused anew.
    pub fn handle_timeout(&mut self, now: u64, out: &mut impl FnMut(PauseFrame)) {
        for c in 0..CLASSES as u8 {
            if self.pause_ends[c as usize].is_some_and(|end| self.refresh_at(end) <= now) {
                out(self.xoff(now, c));
            }
        }
    }

    /// When [`PfcIngress::handle_timeout`] next has an XOFF to send (ns).
    pub fn poll_timeout(&self) -> Option<u64> {
        self.pause_ends
            .iter()
            .flatten()
            .map(|&e| self.refresh_at(e))
            .min()
    }

    fn refresh_at(&self, end: u64) -> u64 {
        end - self.xoff_ns / 2
    }

    fn xoff(&mut self, now: u64, c: u8) -> PauseFrame {
        self.pause_ends[c as usize] = Some(now + self.xoff_ns);
        self.stats.pauses_sent += 1;
        PauseFrame {
            class: c,
            quanta: MAX_QUANTA,
        }
    }
}

/// Nanoseconds `quanta` pause quanta last on a line of `rate`.
pub fn quanta_ns(quanta: u16, rate: Rate) -> u64 {
    let bps = rate.as_bps().max(1) as u128;
    (quanta as u128 * QUANTUM_BITS as u128 * 1_000_000_000).div_ceil(bps) as u64
}

/// The paused side of one switch (or host) output port: until when each class may not send,
/// and how long each has been paused.
#[derive(Clone, Debug)]
pub struct PfcEgress {
    rate: Rate,
    /// Each class's pause end (ns); `None`: not paused.
    until: [Option<u64>; CLASSES],
    /// When each class's current pause began (ns).
    since: [u64; CLASSES],
    /// Nanoseconds each class was paused, of pauses that have ended.
    paused_ns: [u64; CLASSES],
    /// The latest instant a pause frame arrived (ns): a later frame stamped earlier (the
    /// emulator's wall clock hands the network work out of order) takes effect then.
    last_ns: u64,
    /// Pause frames received (resumes included).
    pub frames_received: u64,
}

impl PfcEgress {
    /// The output onto a line of `rate` (which times the pause quanta).
    pub fn new(rate: Rate) -> Self {
        PfcEgress {
            rate,
            until: [None; CLASSES],
            since: [0; CLASSES],
            paused_ns: [0; CLASSES],
            last_ns: 0,
            frames_received: 0,
        }
    }

    /// A pause frame from the far end arrives at `now` (ns), or at the last one's instant if
    /// that was later: pauses apply in the order they arrive, and a resume never ends a pause
    /// before it began.
    pub fn handle_pause(&mut self, now: u64, p: PauseFrame) {
        let now = now.max(self.last_ns);
        self.last_ns = now;
        self.frames_received += 1;
        let i = p.class as usize;
        if i >= CLASSES {
            return;
        }
        self.expire(now, i);
        if p.quanta == 0 {
            if let Some(end) = self.until[i].take() {
                self.paused_ns[i] += end.min(now) - self.since[i];
            }
            return;
        }
        if self.until[i].is_none() {
            self.since[i] = now;
        }
        self.until[i] = Some(now + quanta_ns(p.quanta, self.rate));
    }

    /// True if class `c` may not start a frame at `now` (ns).
    pub fn is_paused(&self, now: u64, c: u8) -> bool {
        self.until
            .get(c as usize)
            .copied()
            .flatten()
            .is_some_and(|end| end > now)
    }

    /// When class `c`'s pause runs out by itself (ns), if it is paused.
    pub fn paused_until(&self, c: u8) -> Option<u64> {
        self.until.get(c as usize).copied().flatten()
    }

    /// Nanoseconds class `c` has spent paused up to `now` (ns).
    pub fn paused_ns(&self, now: u64, c: u8) -> u64 {
        let i = c as usize;
        if i >= CLASSES {
            return 0;
        }
        let open = self.until[i].map_or(0, |end| end.min(now).saturating_sub(self.since[i]));
        self.paused_ns[i] + open
    }

    /// Nanoseconds paused up to `now`, over every class.
    pub fn total_paused_ns(&self, now: u64) -> u64 {
        (0..CLASSES as u8).map(|c| self.paused_ns(now, c)).sum()
    }

    /// Closes class `i`'s pause if it ran out by `now`.
    fn expire(&mut self, now: u64, i: usize) {
        if let Some(end) = self.until[i].filter(|&e| e <= now) {
            self.paused_ns[i] += end - self.since[i];
            self.until[i] = None;
        }
    }
}

/// A cycle of paused ports, if the wait-for graph has one: `waits[a]` lists the ports that port
/// `a` (paused) waits on to drain before it can send (the outputs its upstream's frames are
/// queued for, themselves paused). The cycle is returned in order, each waiting on the next and
/// the last on the first: a PFC deadlock, which no pause time ends.
pub fn find_deadlock(waits: &[Vec<usize>]) -> Option<Vec<usize>> {
    // Iterative depth-first search, colouring nodes: 0 unseen, 1 on the stack, 2 done.
    let n = waits.len();
    let mut colour = vec![0u8; n];
    let mut parent = vec![usize::MAX; n];
    for root in 0..n {
        if colour[root] != 0 {
            continue;
        }
        let mut stack = vec![(root, 0usize)];
        colour[root] = 1;
        while let Some(&mut (v, ref mut next)) = stack.last_mut() {
            let Some(&w) = waits[v].get(*next) else {
                colour[v] = 2;
                stack.pop();
                continue;
            };
            *next += 1;
            if w >= n {
                continue;
            }
            match colour[w] {
                0 => {
                    colour[w] = 1;
                    parent[w] = v;
                    stack.push((w, 0));
                }
                1 => {
                    // A back edge v -> w closes a cycle w -> ... -> v -> w.
                    let mut cycle = vec![v];
                    let mut u = v;
                    while u != w {
                        u = parent[u];
                        cycle.push(u);
                    }
                    cycle.reverse();
                    return Some(cycle);
                }
                _ => {}
            }
        }
    }
    None
}

#[cfg(test)]
mod tests;
