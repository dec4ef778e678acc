//! Pacing and rate control for the sender.
//!
//! [`Pacer`] spaces datagrams at the current rate, allowing a short burst of credit so a driver
//! that wakes late can catch up with one batched send. [`RateControl`] sets the rate: fixed, or
//! adaptive from the receiver's per-round reports.
//!
//! # The adaptive controller
//! It paces at an estimate of the path's delivery rate, measured by the receiver (the rate at
//! which a buffer's first blast arrived, as RBUDP, Tsunami and UDT use the receiver's view), in
//! the manner of BBR rather than of loss-driven AIMD:
//! - The delivery rate of a round is every byte of the session that arrived between the round's
//!   first and last datagram (other buffers' datagrams interleave with it), scaled up by the
//!   random loss rate (the loss floor below: random loss thins what arrives although the path
//!   had room for it, and loss before the bottleneck leaves the bottleneck room for more), and
//!   never more than the session sent in that time.
//! - **The receiver's lateness is not the path's**: the receiver times each round twice, by when
//!   it read the datagrams and by when they reached its host (the kernel's receive timestamps,
//!   reported since protocol 5), and the delivery rate is taken from the second. A receiver
//!   descheduled for a few milliseconds in the middle of the short probe train stretches its
//!   read times (on loopback the train then looked like a bottleneck at half its rate, and
//!   startup crept up by a quarter per round, a quarter of a second to full rate); the arrival
//!   times are the path's dispersion, which is what a bottleneck leaves. A receiver too slow
//!   for the rate over whole rounds fills its socket queues and drops: overrun, below, capped
//!   at its read rate. Older receivers report only the read rate, used as before.
//! - The estimate is the largest delivery rate of the last eight reports (a max filter: a
//!   receiver that was descheduled for a while makes one sample low, not the estimate).
//! - **Startup**: the rate is twice the estimate while the estimate keeps growing; three reports
//!   without 25% growth (the pipe is full), data arriving at under 3/4 of the rate it left at,
//!   loss above the threshold or receiver overrun end it. The first report comes from a short
//!   probe round (the sender's first 64 datagrams, or 576 KiB of larger ones but at least 16),
//!   so a starting rate far above the path's costs little. That train crosses the path in tens
//!   of milliseconds, and one stall on the way makes it measure low: when it overflows or
//!   arrives slower than it left, startup goes on from a quarter above what got through, growing
//!   by a quarter per round (a round lasts hundreds of milliseconds, and one at twice a
//!   bottleneck's rate would queue or lose a round's worth of data). Until a round of a whole
//!   buffer has reported after such a train (the rest of the probe buffer), the sender keeps two
//!   buffers in flight, not its window ([`RateControl::confirming`]): a stall that makes the
//!   train measure twice the path's rate then costs two buffers of overflow, not a window of
//!   them. Ended by loss, the estimate becomes what got through (BBR's bottleneck bandwidth),
//!   not less.
//! - **Cruise**: a cycle of eight reports: one 1/32 above the estimate to probe for more (the
//!   probe's own losses are expected and not taken as congestion; again at once, with twice the
//!   gain up to 1/4, while probes find more), one below it by the last probe's gain to drain the
//!   queue that probe left, then six at the estimate. Each phase lasts a round (a buffer's blast,
//!   often hundreds of milliseconds), so the usual gain is small: a probe of 1/8 held for a
//!   round would cost 1/64 of the throughput in its drain when the queue runs dry. After any cut
//!   the next probe comes two reports later. A probe "finds more" when the estimate rose by
//!   three quarters of what it added: near the path's rate the estimate still creeps up by a
//!   little per probe (and where the path loses after its bottleneck, the loss of a probe's
//!   overflow is hard to tell from random loss), and doubling the gain on that would
//!   overshoot by a quarter. On a long path a
//!   report comes in the middle of the next blast, so a round is often sent partly at a probe's
//!   rate: a round sent half a probe's gain (1/128) above the estimate counts as a probe.
//! - **Random loss is not congestion**: a round is congested when its loss exceeds the *loss
//!   floor* by the threshold (default 2%). The floor is the median loss of the last eight cruise
//!   rounds that were not probes: the loss the path has whatever the rate. Random loss of 5%
//!   then changes nothing (with a fixed threshold every round of such a path looked congested,
//!   and the rate fell by a sixteenth per round to a fraction of the path's); loss above the
//!   floor by the threshold (a queue overflowing, or a competing flow) lowers the estimate to
//!   15/16 of the smaller of it and the delivery rate, once per congestion event (reports on
//!   rounds begun before the decrease are stale). Loss that persists at every rate raises the
//!   floor within four rounds and is then taken as the path's.
//! - **Receiver overrun is not network loss**: the receiver reports separately the datagrams its
//!   own sockets dropped (full kernel queues). Those are subtracted from the loss, and instead of
//!   backing off as for congestion the rate is capped at the receiver's drain rate (flow control,
//!   as UDT's receiver window does).
//!
//! **Fairness**: it is fair to flows of its own kind that see the same delivery rate (they
//! converge on shares of the bottleneck's delivery rate, as BBR flows do, not exactly equal). It
//! is NOT TCP-friendly: it ignores loss under the floor and threshold and does not halve on
//! loss, so against loss-based TCP (cubic, reno) on a shared bottleneck it takes more than half;
//! a TCP that keeps the queue overflowing raises the floor, after which only the delivery rate
//! (the max filter of eight reports) holds this controller back.

use weft_model::{Duration, Instant, Rate, Size};

/// How the sender chooses its rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateMode {
    /// No pacing at all: blast as fast as the driver can send (SBTP and MBTP as published).
    Unlimited,
    /// A fixed rate.
    Fixed(Rate),
    /// Adaptive between bounds, from loss and arrival-rate feedback.
    Adaptive {
        /// Starting rate.
        initial: Rate,
        /// Lower bound.
        min: Rate,
        /// Upper bound.
        max: Rate,
        /// Loss fraction of a round above which it counts as congestion (e.g. 0.05).
        loss_threshold_ppm: u32,
    },
}

/// Spaces datagrams at a rate, with a burst allowance.
#[derive(Debug, Clone)]
pub struct Pacer {
    next: Instant,
    burst: Duration,
}

impl Pacer {
    /// A pacer that lets the sender catch up by at most `burst` when it wakes late.
    pub fn new(burst: Duration) -> Self {
        Pacer {
            next: Instant::ZERO,
            burst,
        }
    }

    /// The earliest instant the next datagram may leave.
    pub fn next_send(&self) -> Instant {
        self.next
    }

    /// Whether a datagram may leave at `now` (always, without a rate).
    pub fn ready(&self, now: Instant, rate: Option<Rate>) -> bool {
        rate.is_none() || self.next <= now
    }

    /// Accounts for `wire_bytes` leaving at `now` at `rate`.
    pub fn on_send(&mut self, now: Instant, wire_bytes: usize, rate: Option<Rate>) {
        let Some(rate) = rate else { return };
        let floor = Instant(now.as_nanos().saturating_sub(self.burst.as_nanos()));
        let base = self.next.max(floor);
        self.next = base + rate.time_to_send(Size(wire_bytes as u64));
    }

    /// Forgets accumulated credit: the next datagram may leave at `now`, not earlier.
    pub fn restart(&mut self, now: Instant) {
        if self.next < now {
            self.next = now;
        }
    }
}

/// A receiver's report on one round (a buffer's first blast), as the sender sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Report {
    /// When the report arrived.
    pub now: Instant,
    /// When the round's first datagram left.
    pub round_start: Instant,
    /// Datagrams sent in the round.
    pub sent: u32,
    /// Datagrams missing at the round's end (network loss and receiver drops together).
    pub lost: u32,
    /// Datagrams the receiver's own sockets dropped (overrun) since its previous report.
    pub drops: u32,
    /// Rate the receiver read the round at, bits/s on the wire (0: unknown).
    pub rx_rate: u64,
    /// Rate the round reached the receiver's host at, bits/s on the wire, by the kernel's
    /// receive timestamps (0: unknown, e.g. a receiver of protocol 4).
    pub arrival_rate: u64,
    /// Rate the round was actually sent at, bits/s on the wire (0: unknown).
    pub tx_rate: u64,
}

/// Reports kept by the delivery-rate max filter, and the probing cycle length.
const FILTER: usize = 8;

/// A probe's usual gain: 1/2^5 = 1/32 above the estimate.
const PROBE_SHIFT: u32 = 5;

/// The sender's rate: fixed or adaptive.
#[derive(Debug, Clone)]
pub struct RateControl {
    mode: RateMode,
    rate: u64,
    startup: bool,
    /// Startup: the estimate when it last grew by a quarter, and reports since.
    full: u64,
    full_count: u32,
    /// Delivery-rate estimate (bits/s) and the samples it is the maximum of.
    est: u64,
    samples: std::collections::VecDeque<u64>,
    cycle: usize,
    decreases: u64,
    overruns: u64,
    /// When the rate last went down: rounds that began before then were sent at the old rate
    /// and say nothing about the new one (one decrease per congestion event, as TCP does once
    /// per round trip).
    last_decrease: Option<Instant>,
    /// Reports taken into account.
    reports: u64,
    /// Loss of the last [`FILTER`] cruise rounds that were not probes, parts per million: their
    /// median is the loss the path has whatever the rate (see [`RateControl::loss_floor`]).
    cruise_losses: std::collections::VecDeque<u32>,
    /// The probe's gain is 1/2^probe_shift: 1/32, doubled while probes keep finding more.
    probe_shift: u32,
    /// The probe train found a bottleneck: startup grows by a quarter per round, not twice.
    gentle: bool,
}

impl RateControl {
    /// A controller in `mode`.
    pub fn new(mode: RateMode) -> Self {
        let rate = match mode {
            RateMode::Unlimited => 0,
            RateMode::Fixed(r) => r.as_bps(),
            RateMode::Adaptive { initial, .. } => initial.as_bps(),
        };
        RateControl {
            mode,
            rate,
            startup: true,
            full: 0,
            full_count: 0,
            est: 0,
            samples: std::collections::VecDeque::with_capacity(FILTER),
            cycle: 0,
            decreases: 0,
            overruns: 0,
            last_decrease: None,
            reports: 0,
            cruise_losses: std::collections::VecDeque::with_capacity(FILTER),
            probe_shift: PROBE_SHIFT,
            gentle: false,
        }
    }

    /// The current rate, or `None` for unlimited.
    pub fn rate(&self) -> Option<Rate> {
        match self.mode {
            RateMode::Unlimited => None,
            _ => Some(Rate(self.rate.max(1))),
        }
    }

    /// Whether the adaptive controller is still waiting for its first report: until then the
    /// sender keeps a single buffer in flight, so that a starting rate far above the path's
    /// costs one buffer of losses, not a window of them.
    pub fn probing(&self) -> bool {
        matches!(self.mode, RateMode::Adaptive { .. }) && self.reports == 0
    }

    /// How many times to send each of `missing` packets when the link has nothing else to
    /// carry: enough that, at the loss floor (1% at least), another round is needed one time
    /// in a hundred (2 copies at 1% loss and 10 packets, 3 at 5% and 50), at most 4.
    pub fn tail_copies(&self, missing: u32) -> u32 {
        let p = (self.loss_floor().max(10_000) as f64 / 1e6).min(0.5);
        let c = (0.01 / missing.max(1) as f64).ln() / p.ln();
        (c.ceil() as u32).clamp(1, 4)
    }

    /// Whether the probe train found a bottleneck and no full round has reported since: the
    /// train is short, and a stall on the way can make it measure the path at twice its rate or
    /// half of it, so the sender keeps no more than two buffers in flight until a round of
    /// a whole buffer confirms (one blasting while the other's report is on its way).
    pub fn confirming(&self) -> bool {
        matches!(self.mode, RateMode::Adaptive { .. }) && self.gentle && self.reports == 1
    }

    /// How many times the adaptive controller has backed off for congestion.
    pub fn decreases(&self) -> u64 {
        self.decreases
    }

    /// How many times it capped the rate because the receiver could not keep up.
    pub fn overruns(&self) -> u64 {
        self.overruns
    }

    /// Takes a report into account. Rounds of fewer than 16 datagrams carry too little
    /// information, and rounds begun before the last decrease are stale.
    pub fn on_report(&mut self, r: &Report) {
        let RateMode::Adaptive {
            min,
            max,
            loss_threshold_ppm,
            ..
        } = self.mode
        else {
            return;
        };
        if r.sent < 16 || self.last_decrease.is_some_and(|t| r.round_start < t) {
            return;
        }
        self.reports += 1;
        let net_lost = r.lost.saturating_sub(r.drops);
        let loss_ppm = (net_lost as u64 * 1_000_000 / r.sent as u64) as u32;
        // A round sent above the estimate was a probe: its losses are the probe's, expected.
        // (Half a probe's gain above it is enough: on a long path a report comes in the middle
        // of the next blast, so a round is often sent partly at the probe's rate.)
        let probing = !self.startup && r.tx_rate > self.est / 128 * 129;
        if !self.startup && !probing {
            if self.cruise_losses.len() == FILTER {
                self.cruise_losses.pop_front();
            }
            self.cruise_losses.push_back(loss_ppm);
        }
        // Congestion is loss above what the path loses anyway: random loss of 5% on a long
        // path is no reason to slow down (it would, round after round, to nothing).
        let congested = loss_ppm > self.loss_floor().saturating_add(loss_threshold_ppm);
        let overrun = r.drops > 0;
        // The delivery rate: measured by the receiver (never more than was sent: a receiver
        // that stalled and then drained its queue at once would overstate it), else what got
        // through of what was sent.
        let got = (r.sent - r.lost.min(r.sent)) as u64;
        // The path delivered the round when it reached the receiver's host, not when the
        // receiver read it: a receiver descheduled for a few milliseconds stretches a short
        // train's read times (and squeezes them when it catches up), which is no evidence of a
        // bottleneck. A receiver too slow for the rate shows as drops (overrun, below).
        let rx_rate = if r.arrival_rate > 0 {
            r.arrival_rate
        } else {
            r.rx_rate
        };
        // Random loss thins what arrives although the path carried it (or had room for it):
        // scaled back up by the random loss rate, the delivery rate is the path's.
        let random = self.loss_floor().min(500_000);
        let unthin = |rx: u64| (rx as u128 * 1_000_000 / (1_000_000 - random) as u128) as u64;
        let sample = match (rx_rate, r.tx_rate) {
            (0, tx) => tx / r.sent as u64 * got,
            (rx, 0) => rx,
            (rx, tx) => unthin(rx).min(tx),
        }
        .max(1);
        // Data arriving at under 7/8 of the rate it left at found a bottleneck outright (a deep
        // queue may hide it from the loss for a long while).
        let arrived_slow = rx_rate > 0 && rx_rate < r.tx_rate / 8 * 7;
        // The first report comes from the short probe train.
        if self.startup && self.reports == 1 && (congested || arrived_slow) && !overrun {
            // The train found a bottleneck (it overflowed a queue or arrived slower than it
            // left). It crossed the path in a few tens of milliseconds, so a stall anywhere on
            // the way makes it measure low: startup goes on from a quarter above it, and the
            // next round, a long one, measures the path.
            self.samples.clear();
            self.samples.push_back(sample);
            self.est = sample;
            self.full = sample;
            self.gentle = true;
            self.rate = sample / 4 * 5;
        } else if overrun || (congested && !probing) {
            // Either ends startup. Receiver overrun: the receiver's drain rate (what its
            // application got, not scaled for loss) is the limit (flow control). Congestion:
            // back off below what got through; in startup the estimate lags the rate (it
            // grows every round), so what got through is the better measure of the path.
            let sample = if overrun && r.rx_rate > 0 {
                r.rx_rate.min(sample)
            } else {
                sample
            };
            let base = if self.startup || self.est == 0 {
                sample
            } else {
                self.est.min(sample)
            };
            let was_startup = std::mem::replace(&mut self.startup, false);
            // Startup overshot: what got through is the path's rate (BBR's bottleneck
            // bandwidth). Its queue drains in the cycle's drain round.
            let to = if overrun || was_startup {
                base
            } else {
                base / 16 * 15
            };
            self.cut(r.now, to, overrun);
        } else {
            if self.samples.len() == FILTER {
                self.samples.pop_front();
            }
            self.samples.push_back(sample);
            let before = self.est;
            self.est = self.samples.iter().copied().max().unwrap_or(sample);
            if self.startup {
                self.startup_step(r.tx_rate.saturating_sub(rx_rate), arrived_slow);
            } else {
                // A probe found more when the estimate rose by three quarters of what the probe
                // added (and by 1/128): near the path's rate the estimate still creeps up by a
                // little per probe, and doubling the gain on that would overshoot by a quarter.
                let added = r.tx_rate.saturating_sub(before);
                let rose = self.est.saturating_sub(before);
                self.cruise_step(probing && rose >= added / 4 * 3 && self.est > before / 128 * 129);
            }
        }
        self.rate = self.rate.clamp(min.as_bps().max(1), max.as_bps().max(1));
    }

    /// The loss the path has whatever the rate, parts per million: the (lower) median loss of
    /// the last [`FILTER`] cruise rounds that were not probes, the current one included (0
    /// before the first). A median, not a minimum: at 5% random loss a round of 900 datagrams
    /// loses 5 +- 0.7%, and the minimum of eight such rounds is a point and a half below the
    /// typical one, so an ordinary round would look congested now and then. Rounds congested
    /// by the sender itself (a rate above the bottleneck's) sit above the median until they
    /// are most of the last eight.
    pub fn loss_floor(&self) -> u32 {
        let mut v: Vec<u32> = self.cruise_losses.iter().copied().collect();
        v.sort_unstable();
        v.get(v.len().saturating_sub(1) / 2).copied().unwrap_or(0)
    }

    /// Startup after a report that was neither congested nor an overrun: grow, or end when the
    /// pipe is full.
    /// `shortfall`: how much slower than it was sent the round arrived, bits/s.
    fn startup_step(&mut self, shortfall: u64, arrived_slow: bool) {
        // Double while the delivery rate keeps growing; three reports without 25% growth mean
        // the pipe is full (BBR's startup exit).
        if self.est >= self.full / 4 * 5 {
            self.full = self.est;
            self.full_count = 0;
        } else {
            self.full_count += 1;
        }
        if self.full_count >= 3 || arrived_slow {
            // A slow round queued the difference: until the next report the rate is as much
            // below the estimate (at most half), so the queue drains.
            self.startup = false;
            self.cycle = FILTER - 2;
            let queued = shortfall.min(self.est / 2);
            self.rate = self.est - queued;
        } else if self.gentle {
            // Near a bottleneck a round at twice its rate (hundreds of milliseconds, not one
            // round trip as in TCP) would queue or lose a round's worth of data.
            self.rate = self.est / 4 * 5;
        } else {
            self.rate = self.est.saturating_mul(2);
        }
    }

    /// Cruise: the probing cycle. `found_more`: the report was a probe's, and it raised the
    /// estimate.
    fn cruise_step(&mut self, found_more: bool) {
        // Keep probing, with twice the gain, while probes find more; else one probe per cycle.
        // The drain after a probe that found nothing takes off what it added.
        self.cycle = if found_more {
            self.probe_shift = self.probe_shift.saturating_sub(1).max(2);
            0
        } else {
            (self.cycle + 1) % FILTER
        };
        if self.cycle == 2 {
            self.probe_shift = PROBE_SHIFT;
        }
        let gain = self.est >> self.probe_shift;
        self.rate = match self.cycle {
            0 => self.est + gain,
            1 => self.est - gain,
            _ => self.est,
        };
    }

    fn cut(&mut self, now: Instant, to: u64, overrun: bool) {
        self.samples.clear();
        self.samples.push_back(to);
        self.est = to;
        self.rate = to;
        // Probe again two reports later: a cut is taken on a sample below the estimate (15/16
        // of it after congestion), so the path may well carry more.
        self.cycle = FILTER - 2;
        self.last_decrease = Some(now);
        if overrun {
            self.overruns += 1;
        } else {
            self.decreases += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pacer_spaces_at_rate_and_bounds_catch_up() {
        let mut p = Pacer::new(Duration::from_micros(10));
        let r = Some(Rate::mbps(8)); // one byte per microsecond
        assert!(p.ready(Instant(0), r));
        p.on_send(Instant(0), 1000, r);
        assert_eq!(p.next_send(), Instant(1_000_000));
        assert!(!p.ready(Instant(999_999), r));
        // Woken 5 ms late: credit is capped at the 10 us burst.
        p.on_send(Instant(6_000_000), 1000, r);
        assert_eq!(p.next_send(), Instant(5_990_000 + 1_000_000));
        assert!(p.ready(Instant(0), None));
    }

    /// An adaptive controller starting at `initial_mbps`, between 1 Mbit/s and 40 Gbit/s, that
    /// takes loss above 2% as congestion.
    fn adaptive(initial_mbps: u64) -> RateControl {
        RateControl::new(RateMode::Adaptive {
            initial: Rate::mbps(initial_mbps),
            min: Rate::mbps(1),
            max: Rate::mbps(40_000),
            loss_threshold_ppm: 20_000,
        })
    }

    fn rep(now: u64, start: u64, sent: u32, lost: u32, drops: u32, rx: u64, tx: u64) -> Report {
        Report {
            now: Instant(now),
            round_start: Instant(start),
            sent,
            lost,
            drops,
            rx_rate: rx,
            arrival_rate: 0,
            tx_rate: tx,
        }
    }

    #[test]
    fn adaptive_finds_the_bottleneck_ignores_random_loss_and_tells_overrun_from_congestion() {
        let mut c = adaptive(100);
        assert!(c.probing());
        c.on_report(&rep(1, 0, 100, 0, 0, 100_000_000, 100_000_000));
        assert_eq!(c.rate(), Some(Rate::mbps(200)), "startup doubles");
        assert!(!c.probing());
        c.on_report(&rep(2, 1, 100, 1, 0, 200_000_000, 200_000_000));
        assert_eq!(c.rate(), Some(Rate::mbps(400)), "1% random loss");
        // A 150 Mbit/s bottleneck with a short queue: most of the excess is lost, and startup
        // ends on what got through.
        c.on_report(&rep(3, 2, 100, 62, 0, 150_000_000, 400_000_000));
        let r = c.rate().unwrap().as_bps();
        assert_eq!(r, 150_000_000);
        assert_eq!(c.decreases(), 1);
        c.on_report(&rep(4, 2, 100, 60, 0, 150_000_000, 400_000_000));
        assert_eq!(
            c.rate().unwrap().as_bps(),
            r,
            "a round begun before the decrease is stale"
        );
        // Cruise under 1% random loss after the bottleneck (it thins what arrives): probes find
        // the bottleneck, and the rate settles just under it (the loss compensated), but for a
        // probe and a drain in eight; the probes' own losses and 1% random loss are no
        // congestion.
        let btl = 150_000_000u64;
        let near = |r: u64, want: u64| r.abs_diff(want) <= want / 200;
        let (mut at_btl, mut probes) = (0, 0);
        for i in 0..24 {
            let tx = c.rate().unwrap().as_bps();
            let excess = (tx.saturating_sub(btl) * 100 / tx) as u32;
            c.on_report(&rep(
                10 + i,
                5 + i,
                100,
                1 + excess,
                0,
                tx.min(btl) / 100 * 99,
                tx,
            ));
            let r = c.rate().unwrap().as_bps();
            at_btl += u32::from(near(r, btl));
            probes += u32::from(r > btl);
            assert!(r <= btl / 32 * 33 / 100 * 101, "{r}");
        }
        assert!(at_btl >= 14 && probes >= 2, "{at_btl} {probes}");
        let r = c.rate().unwrap().as_bps();
        assert!(
            [btl, btl / 32 * 31, btl / 32 * 33]
                .iter()
                .any(|&w| near(r, w)),
            "{r}"
        );
        assert_eq!(
            c.decreases(),
            1,
            "random loss under the threshold is no congestion"
        );
        // One slow report (a receiver descheduled for a while) does not move the estimate.
        let tx = c.rate().unwrap().as_bps();
        c.on_report(&rep(50, 49, 100, 0, 0, 30_000_000, tx));
        assert!(c.rate().unwrap().as_bps() > 120_000_000, "{:?}", c.rate());
        // Receiver overrun: its sockets dropped what is missing. Capped at its drain rate,
        // counted apart from congestion.
        c.on_report(&rep(100, 90, 100, 30, 30, 90_000_000, 150_000_000));
        assert_eq!(c.rate(), Some(Rate::mbps(90)));
        assert_eq!((c.decreases(), c.overruns()), (1, 1));
        // Network loss above the threshold: 15/16 of what got through, scaled up by the ~1%
        // random loss seen while cruising.
        c.on_report(&rep(200, 150, 100, 10, 0, 80_000_000, 90_000_000));
        let r = c.rate().unwrap().as_bps();
        assert!(r > 75_000_000 && r < 75_000_000 / 100 * 102, "{r}");
        assert_eq!(c.decreases(), 2);
        // Tiny rounds are ignored; fixed mode never moves.
        c.on_report(&rep(300, 300, 3, 3, 0, 0, 1));
        assert_eq!(c.decreases(), 2);
        let mut f = RateControl::new(RateMode::Fixed(Rate::mbps(5)));
        f.on_report(&rep(1, 0, 100, 100, 0, 1, 5_000_000));
        assert_eq!(f.rate(), Some(Rate::mbps(5)));
        assert_eq!(RateControl::new(RateMode::Unlimited).rate(), None);
    }

    /// A 150 Mbit/s path that loses 5% of what it is sent, whatever the rate, before its
    /// bottleneck: past the probe train nothing is congestion, and the rate settles at what
    /// the bottleneck takes over the 95% that reaches it.
    #[test]
    fn random_loss_above_the_threshold_sets_the_floor_and_is_no_congestion() {
        let btl = 150_000_000u64;
        let mut c = adaptive(1000);
        for i in 0..40 {
            let tx = c.rate().unwrap().as_bps();
            let reaches = tx / 100 * 95;
            let through = reaches.min(btl);
            let lost = 1000 - (through * 1000 / tx) as u32;
            c.on_report(&rep(10 * i + 5, 10 * i, 1000, lost, 0, through, tx));
        }
        assert!(c.decreases() <= 2, "{} decreases", c.decreases());
        assert!(
            c.loss_floor().abs_diff(50_000) <= 5_000,
            "floor {}",
            c.loss_floor()
        );
        let r = c.rate().unwrap().as_bps();
        let path = btl * 100 / 95;
        assert!(
            r >= path / 16 * 15 && r <= path / 16 * 17,
            "{r} against {path}"
        );
    }

    #[test]
    fn startup_ends_when_the_delivery_rate_stops_growing() {
        let mut c = adaptive(1000);
        // A receiver that drains 6 Gbit/s without dropping (deep queues): no loss, no drops.
        for i in 0..12 {
            let tx = c.rate().unwrap().as_bps();
            c.on_report(&rep(i + 1, i, 100, 0, 0, tx.min(6_000_000_000), tx));
        }
        let r = c.rate().unwrap().as_bps();
        assert!(
            [
                6_000_000_000,
                6_000_000_000 / 32 * 31,
                6_000_000_000 / 32 * 33
            ]
            .contains(&r),
            "{r}"
        );
        assert_eq!((c.decreases(), c.overruns()), (0, 0));
        // Startup overshooting a 135 Mbit/s path: the cut is from what got through, not from
        // the lagging estimate.
        let mut c = adaptive(100);
        c.on_report(&rep(1, 0, 100, 0, 0, 100_000_000, 100_000_000));
        c.on_report(&rep(2, 1, 100, 33, 0, 135_000_000, 200_000_000));
        assert_eq!(c.rate(), Some(Rate(135_000_000)));
        // Behind a deep queue nothing is lost, but data arrives slower than it left: startup
        // ends there, and the next round drains what that one queued before cruise.
        let mut c = adaptive(100);
        c.on_report(&rep(1, 0, 100, 0, 0, 100_000_000, 100_000_000));
        c.on_report(&rep(2, 1, 100, 0, 0, 135_000_000, 200_000_000));
        assert_eq!(c.rate(), Some(Rate(135_000_000 - 65_000_000)));
        c.on_report(&rep(3, 2, 100, 0, 0, 70_000_000, 70_000_000));
        assert_eq!(c.rate(), Some(Rate(135_000_000)));
    }

    /// The probe train read at under 3/4 of its sending rate because the receiver was
    /// descheduled, while the kernel's timestamps have it arriving as it left: no bottleneck,
    /// startup doubles with the whole window. Slow by the kernel's clock too, it is one.
    #[test]
    fn a_train_the_receiver_read_late_found_no_bottleneck() {
        let train = |rx, arrival| Report {
            arrival_rate: arrival,
            ..rep(1, 0, 16, 0, 0, rx, 1_600_000_000)
        };
        let mut c = adaptive(1000);
        c.on_report(&train(700_000_000, 1_590_000_000));
        assert_eq!(c.rate(), Some(Rate(3_180_000_000)));
        assert!(!c.confirming());
        let mut d = adaptive(1000);
        d.on_report(&train(700_000_000, 700_000_000));
        assert_eq!(d.rate(), Some(Rate(700_000_000 / 4 * 5)));
        assert!(d.confirming());
        // An older receiver (no arrival rate): its read rate is all there is.
        let mut e = adaptive(1000);
        e.on_report(&train(700_000_000, 0));
        assert_eq!(e.rate(), d.rate());
    }

    #[test]
    fn probes_that_keep_finding_more_double_their_gain() {
        let mut c = adaptive(1000);
        // The probe train overflows a 134 Mbit/s path's queue and measures it low (a stall in
        // the middle of the train): startup goes on from a quarter above what got through.
        c.on_report(&rep(1, 0, 64, 10, 0, 110_000_000, 1_000_000_000));
        assert_eq!(c.rate(), Some(Rate(110_000_000 / 4 * 5)));
        // A train that lost nothing but arrived slower than it left found a bottleneck as
        // well (a deep queue): the same.
        let mut d = adaptive(1000);
        d.on_report(&rep(1, 0, 64, 0, 0, 110_000_000, 1_000_000_000));
        assert_eq!(d.rate(), Some(Rate(110_000_000 / 4 * 5)));
        // Near that bottleneck startup grows by a quarter per round, not twice.
        d.on_report(&rep(3, 2, 1000, 0, 0, 137_500_000, 137_500_000));
        assert_eq!(d.rate(), Some(Rate(137_500_000 / 4 * 5)));
        // The next, long round overflows too but is measured low again (the receiver was
        // descheduled): startup ends on what got through.
        c.on_report(&rep(3, 2, 1000, 200, 0, 110_000_000, 137_500_000));
        assert_eq!(c.rate(), Some(Rate::mbps(110)));
        // Probes of 1/32, 1/16, 1/8 reach the path in four reports; at a fixed 1/32 it would
        // take seven.
        let mut n = 0;
        while c.rate().unwrap().as_bps() < 134_000_000 / 100 * 98 {
            let tx = c.rate().unwrap().as_bps();
            c.on_report(&rep(10 + n, 5 + n, 100, 0, 0, tx.min(134_000_000), tx));
            n += 1;
            assert!(n <= 5, "{n} reports and still at {:?}", c.rate());
        }
        // The probe that finds nothing more is drained by what it added, then cruise resumes
        // at the path's rate.
        let mut rates = Vec::new();
        for i in 0..4 {
            let tx = c.rate().unwrap().as_bps();
            c.on_report(&rep(100 + i, 90 + i, 100, 0, 0, tx.min(134_000_000), tx));
            rates.push(c.rate().unwrap().as_bps());
        }
        assert!(rates.iter().any(|&r| r < 134_000_000 / 8 * 7), "{rates:?}");
        assert_eq!(*rates.last().unwrap(), 134_000_000, "{rates:?}");
    }
}
