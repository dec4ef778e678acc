//! Constant-rate frame sources and the sinks that count what arrives: the `frames` workload of
//! scenario files (Sandia's "two hosts transmitting to one receiver"), on simulated hosts.
//!
//! Phase and jitter, so that equal senders do not move in lock step: a source starts at a phase
//! drawn uniformly over one period of its own stream, and hands each frame to its host at its
//! nominal instant plus a delay drawn uniformly in `[0, jitter]` (each source draws from its own
//! seeded stream). A source at the full line rate keeps its host's line busy whatever the
//! jitter; for those, the switch's fair order among simultaneous arrivals is what keeps equal
//! senders from locking each other out (`weft_model::net::Egress`).

use std::any::Any;

use weft_model::fabric::Rng;
use weft_model::{Duration, Instant, Rate};

use super::frame::SimFrame;
use super::hosts::App;
use crate::metrics::Histogram;

/// Default jitter, as a fraction of a source's period.
pub const DEFAULT_JITTER_FRACTION: f64 = 0.01;

/// A source of equal frames at a constant rate.
#[derive(Debug)]
pub struct Cbr {
    host: usize,
    dst: usize,
    ip_len: u32,
    /// Period numerator (bit-ns of one frame on the line) and denominator (bits per second).
    bit_ns: u128,
    rate: u128,
    phase: u64,
    jitter: u64,
    rng: Rng,
    k: u64,
    until: Instant,
    next: Option<Instant>,
    /// Frames handed to the host.
    pub sent: u64,
}

/// What a [`Cbr`] source sends: frames of `ip_len` bytes (IP datagram) from host `host` to host
/// `dst`, each occupying `wire_bytes` of line time, at `rate` of line time, until `until`, each
/// handed over up to `jitter` (a fraction of the period) after its nominal instant.
#[derive(Clone, Debug)]
pub struct CbrSpec {
    /// The sending host.
    pub host: usize,
    /// The receiving host.
    pub dst: usize,
    /// Bytes of each IP datagram.
    pub ip_len: u32,
    /// Bytes of line time each frame occupies.
    pub wire_bytes: u64,
    /// The line rate the stream occupies.
    pub rate: Rate,
    /// Jitter as a fraction of the period (0 to 1).
    pub jitter: f64,
    /// No frame at or after this instant.
    pub until: Instant,
}

impl Cbr {
    /// The source of `spec`, its phase and jitter drawn from `rng`.
    pub fn new(spec: CbrSpec, mut rng: Rng) -> Self {
        let CbrSpec {
            host,
            dst,
            ip_len,
            wire_bytes,
            rate,
            jitter,
            until,
        } = spec;
        let bit_ns = u128::from(wire_bytes.max(1)) * 8 * 1_000_000_000;
        let r = u128::from(rate.as_bps().max(1));
        let period = (bit_ns / r).max(1) as u64;
        let phase = rng.below(period);
        let mut c = Cbr {
            host,
            dst,
            ip_len,
            bit_ns,
            rate: r,
            phase,
            jitter: (period as f64 * jitter.clamp(0.0, 1.0)) as u64,
            rng,
            k: 0,
            until,
            next: None,
            sent: 0,
        };
        c.next = c.at(0);
        c
    }

    /// The instant frame `k` is handed over, if before the end.
    fn at(&mut self, k: u64) -> Option<Instant> {
        let nominal = self.phase + (u128::from(k) * self.bit_ns / self.rate) as u64;
        let j = if self.jitter > 0 {
            self.rng.below(self.jitter + 1)
        } else {
            0
        };
        let t = Instant(nominal + j);
        (t < self.until).then_some(t)
    }
}

impl App for Cbr {
    fn poll_send(&mut self, now: Instant) -> Option<(Instant, SimFrame)> {
        let t = self.next.filter(|t| *t <= now)?;
        let f = SimFrame::udp(self.host, self.dst, self.ip_len, self.k as u32, t.0);
        self.k += 1;
        self.sent += 1;
        // Jitter never reorders a source's own frames.
        self.next = self.at(self.k).map(|n| n.max(t));
        Some((t, f))
    }
    fn deliver(&mut self, _now: Instant, _frame: SimFrame) {}
    fn poll_timeout(&self) -> Option<Instant> {
        self.next
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Counts the frames that reach a host, per sender.
#[derive(Debug, Default)]
pub struct Sink {
    /// Frames received whole, per sending host.
    pub frames: Vec<u64>,
    /// UDP payload bytes received, per sending host.
    pub bytes: Vec<u64>,
    /// Frames that arrived corrupted or trimmed (dropped by the checksum).
    pub corrupted: u64,
    /// Delay from the sender handing a frame over to its arrival, ns.
    pub delay: Histogram,
}

impl Sink {
    /// Frames received from all senders.
    pub fn total(&self) -> u64 {
        self.frames.iter().sum()
    }
}

impl App for Sink {
    fn poll_send(&mut self, _now: Instant) -> Option<(Instant, SimFrame)> {
        None
    }
    fn deliver(&mut self, now: Instant, f: SimFrame) {
        if !f.checksum_ok() {
            self.corrupted += 1;
            return;
        }
        let s = f.src as usize;
        if self.frames.len() <= s {
            self.frames.resize(s + 1, 0);
            self.bytes.resize(s + 1, 0);
        }
        self.frames[s] += 1;
        self.bytes[s] += u64::from(f.payload());
        self.delay.record(now.0.saturating_sub(f.born));
    }
    fn poll_timeout(&self) -> Option<Instant> {
        None
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// A constant-rate source's period for frames of `wire_bytes` at `rate`.
pub fn period(wire_bytes: u64, rate: Rate) -> Duration {
    rate.time_to_send(weft_model::Size(wire_bytes))
}
