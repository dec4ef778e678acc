//! The reaction point's rate: cut on congestion notifications, recovered by timer and byte
//! counter (the DCQCN paper's Algorithm 1, QCN's rate increase).

use crate::units::Rate;

/// DCQCN's parameters. [`Params::PAPER`] gives the values of the DCQCN paper (Zhu et al. 2015,
/// section 5 and Table 2: `g` 1/256, the alpha and rate-increase timers 55 us, the byte counter
/// 10 MB, five fast-recovery stages, CNPs at most every 50 us); its additive and hyper increase
/// steps (40 and 200 Mbit/s) are the ones ns-3's RDMA module ships for 10-40 Gbit/s links, not
/// a figure of the paper's.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Params {
    /// Gain of alpha's moving average.
    pub g: f64,
    /// Period of alpha's decay while no CNP comes (ns).
    pub alpha_period: u64,
    /// Period of the rate-increase timer (ns).
    pub increase_period: u64,
    /// Bytes sent between two rate-increase events of the byte counter.
    pub byte_counter: u64,
    /// Stages of fast recovery before the target rises.
    pub fast_stages: u32,
    /// Additive increase of the target (bit/s).
    pub additive: f64,
    /// Hyper increase of the target, times the stage past fast recovery (bit/s).
    pub hyper: f64,
    /// The rate is never cut below this (bit/s).
    pub min_rate: f64,
    /// The notification point sends at most one CNP per flow in this time (ns).
    pub cnp_interval: u64,
}

impl Params {
    /// The DCQCN paper's values (see [`Params`]).
    pub const PAPER: Params = Params {
        g: 1.0 / 256.0,
        alpha_period: 55_000,
        increase_period: 55_000,
        byte_counter: 10_000_000,
        fast_stages: 5,
        additive: 40e6,
        hyper: 200e6,
        min_rate: 10e6,
        cnp_interval: 50_000,
    };
}

/// The line rate [`Params::PAPER`]'s rate steps are set for: ns-3's RDMA module ships them for
/// 10-40 Gbit/s links, so the slowest of those.
pub const REFERENCE_LINE: Rate = Rate::mbps(10_000);

/// How many times slower than [`REFERENCE_LINE`] a line of `line` is (1 for it and anything
/// faster): the factor by which [`Params::slowed`] stretches DCQCN's dynamics on it.
pub fn slowdown(line: Rate) -> f64 {
    (REFERENCE_LINE.as_bps() as f64 / line.as_bps().max(1) as f64).max(1.0)
}

impl Params {
    /// These parameters on a line `factor` times slower, as a slowed-down copy of the same
    /// dynamics: every rate (the increase steps, the minimum rate) divided by `factor`, every
    /// period (alpha's decay, the increase timer, the CNP interval) multiplied by it; the byte
    /// counter and the unitless gain and stages unchanged, since bytes take `factor` times
    /// longer already. A fabric run at 100 Mbit/s in place of 10 Gbit/s (`weft run --as-emu`,
    /// whose workload times are stretched as much) then reacts as it would at 10 Gbit/s, where
    /// the paper's steps would otherwise exceed the line (200 Mbit/s of hyper increase) and its
    /// 10 Mbit/s floor hold fifteen senders above a 100 Mbit/s port together.
    pub fn slowed(self, factor: f64) -> Params {
        let f = factor.max(1.0);
        let longer = |ns: u64| (ns as f64 * f).round() as u64;
        Params {
            alpha_period: longer(self.alpha_period),
            increase_period: longer(self.increase_period),
            cnp_interval: longer(self.cnp_interval),
            additive: self.additive / f,
            hyper: self.hyper / f,
            min_rate: self.min_rate / f,
            ..self
        }
    }
}

impl Default for Params {
    fn default() -> Self {
        Params::PAPER
    }
}

/// Counters of a reaction point.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RateStats {
    /// CNPs received (each cuts the rate).
    pub cnps: u64,
    /// Rate-increase events (timer and byte counter).
    pub increases: u64,
}

/// The sending rate of one flow.
#[derive(Clone, Debug)]
pub struct RateControl {
    p: Params,
    line: f64,
    /// Current rate (bit/s).
    rc: f64,
    /// Target rate (bit/s).
    rt: f64,
    alpha: f64,
    /// A CNP came in the current alpha period.
    cnp_in_period: bool,
    next_alpha: u64,
    next_increase: u64,
    /// Rate-increase events of the timer and of the byte counter since the last cut.
    timer_stage: u32,
    byte_stage: u32,
    bytes: u64,
    /// Counters.
    pub stats: RateStats,
}

impl RateControl {
    /// A flow on a line of `line` that starts at `now` (ns) at the line's rate.
    pub fn new(p: Params, line: Rate, now: u64) -> Self {
        let line = line.as_bps().max(1) as f64;
        RateControl {
            p,
            line,
            rc: line,
            rt: line,
            alpha: 1.0,
            cnp_in_period: false,
            next_alpha: now + p.alpha_period,
            next_increase: now + p.increase_period,
            timer_stage: 0,
            byte_stage: 0,
            bytes: 0,
            stats: RateStats::default(),
        }
    }

    /// The current rate (bit/s).
    pub fn rate(&self) -> f64 {
        self.rc
    }

    /// The target rate (bit/s): where fast recovery heads.
    pub fn target(&self) -> f64 {
        self.rt
    }

    /// Alpha, the estimate of how congested the path is (0 to 1).
    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// Nanoseconds `bytes` take at the current rate.
    pub fn time_for(&self, bytes: u64) -> u64 {
        (bytes as f64 * 8e9 / self.rc).ceil() as u64
    }

    /// A CNP arrives at `now` (ns): remember the rate as the target, cut it by `alpha / 2`,
    /// raise alpha, and start recovery again.
    pub fn handle_cnp(&mut self, now: u64) {
        self.stats.cnps += 1;
        self.rt = self.rc;
        self.rc = (self.rc * (1.0 - self.alpha / 2.0)).max(self.p.min_rate);
        self.alpha = (1.0 - self.p.g) * self.alpha + self.p.g;
        self.cnp_in_period = true;
        self.timer_stage = 0;
        self.byte_stage = 0;
        self.bytes = 0;
        self.next_increase = now + self.p.increase_period;
    }

    /// `bytes` were sent: the byte counter advances, and raises the rate every
    /// [`Params::byte_counter`] bytes.
    pub fn on_sent(&mut self, bytes: u64) {
        self.bytes += bytes;
        while self.bytes >= self.p.byte_counter {
            self.bytes -= self.p.byte_counter;
            self.increase();
            self.byte_stage += 1;
        }
    }

    /// Time passes to `now` (ns): alpha decays for every period without a CNP, and the timer
    /// raises the rate for every increase period gone.
    pub fn handle_timeout(&mut self, now: u64) {
        while self.next_alpha <= now {
            if !self.cnp_in_period {
                self.alpha *= 1.0 - self.p.g;
            }
            self.cnp_in_period = false;
            self.next_alpha += self.p.alpha_period;
        }
        while self.next_increase <= now {
            self.increase();
            self.timer_stage += 1;
            self.next_increase += self.p.increase_period;
        }
    }

    /// When [`RateControl::handle_timeout`] next has work (ns).
    pub fn poll_timeout(&self) -> Option<u64> {
        Some(self.next_alpha.min(self.next_increase))
    }

    /// One rate-increase event, judged on the stages counted before it (as ns-3's RDMA module
    /// does, so that fast recovery has [`Params::fast_stages`] events): fast recovery halves the
    /// distance to the target; past it the target itself rises, additively until both counters
    /// are past fast recovery, then by the hyper step times how far past the lesser one is.
    fn increase(&mut self) {
        self.stats.increases += 1;
        let f = self.p.fast_stages;
        let (hi, lo) = (
            self.timer_stage.max(self.byte_stage),
            self.timer_stage.min(self.byte_stage),
        );
        if hi >= f {
            if lo > f {
                self.rt += f64::from(lo - f) * self.p.hyper;
            } else {
                self.rt += self.p.additive;
            }
            self.rt = self.rt.min(self.line);
        }
        self.rc = ((self.rt + self.rc) / 2.0).min(self.line);
    }
}
