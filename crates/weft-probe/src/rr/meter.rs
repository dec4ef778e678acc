//! The bookkeeping of one size: which transactions are warm-up, which are measured, when to stop,
//! and how many were lost, late or aborted. Transport loops feed it; it never touches a socket.

use std::time::Instant;

use weft_model::app::rr::Record;

use super::busy::BusyPoll;
use super::config::StopRule;
use super::place::CpuTrace;
use super::stats::LatencyStats;

/// Sequence numbers of transactions are their issue order, starting at 0; the first `warmup` of
/// them are excluded from every count.
#[derive(Debug)]
pub struct Meter {
    warmup: u64,
    stop: StopRule,
    abort_after_losses: u64,
    issued: u64,
    resolved: u64,
    consecutive_losses: u64,
    /// Round-trip latencies of measured transactions, ns.
    pub rtt: LatencyStats,
    /// Connection set-up times of measured cold transactions, ns.
    pub connect: LatencyStats,
    /// Measured transactions whose reply never came within the time-out.
    pub lost: u64,
    /// Replies that came after their transaction had been counted lost (recognised by sequence
    /// number and discarded).
    pub late: u64,
    /// Replies that matched no transaction in flight and were discarded.
    pub stray: u64,
    /// The CPUs the client's loop ran on, sampled at every answer.
    pub cpus: CpuTrace,
    /// How the client waited for answers, when it busy-polled.
    pub busy_poll: Option<BusyPoll>,
    first_measured: Option<Instant>,
    last_resolved: Option<Instant>,
    deadline: Option<Instant>,
}

impl Meter {
    /// A meter for `warmup` unmeasured transactions followed by what `stop` allows.
    pub fn new(warmup: u64, stop: StopRule, abort_after_losses: u64) -> Self {
        Meter {
            warmup,
            stop,
            abort_after_losses,
            issued: 0,
            resolved: 0,
            consecutive_losses: 0,
            rtt: LatencyStats::new(),
            connect: LatencyStats::new(),
            lost: 0,
            late: 0,
            stray: 0,
            cpus: CpuTrace::default(),
            busy_poll: None,
            first_measured: None,
            last_resolved: None,
            deadline: None,
        }
    }

    /// Stops issuing transactions `limit` from now, whatever the stop rule says.
    pub fn with_time_limit(mut self, limit: Option<std::time::Duration>) -> Self {
        self.deadline = limit.map(|l| Instant::now() + l);
        self
    }

    /// Whether the time limit of [`Meter::with_time_limit`] stopped the size before its stop
    /// rule was met.
    pub fn cut_off(&self) -> bool {
        let rule_met = self.issued >= self.warmup.saturating_add(self.stop.cap())
            || match self.stop {
                StopRule::Count { .. } => false,
                StopRule::Converge { rel, .. } => self.rtt.converged(rel),
                StopRule::Time { duration_ns } => self
                    .first_measured
                    .is_some_and(|t0| t0.elapsed() >= std::time::Duration::from_nanos(duration_ns)),
            };
        !rule_met && self.deadline.is_some_and(|d| Instant::now() >= d)
    }

    /// Whether another transaction may be started: the cap is not reached and, under
    /// `--converge`, the mean has not converged yet.
    pub fn may_issue(&self) -> bool {
        if self.issued >= self.warmup.saturating_add(self.stop.cap()) {
            return false;
        }
        if self.deadline.is_some_and(|d| Instant::now() >= d) {
            return false;
        }
        match self.stop {
            StopRule::Count { .. } => true,
            StopRule::Converge { rel, .. } => !self.rtt.converged(rel),
            StopRule::Time { duration_ns } => self.first_measured.is_none_or(|t0| {
                let d = std::time::Duration::from_nanos(duration_ns);
                t0.elapsed() < d
            }),
        }
    }

    /// Registers the start of a transaction at `now` and returns its sequence number.
    pub fn issue(&mut self, now: Instant) -> u64 {
        let seq = self.issued;
        if seq == self.warmup && self.first_measured.is_none() {
            self.first_measured = Some(now);
        }
        self.issued += 1;
        seq
    }

    /// Transactions issued and not yet answered or lost.
    pub fn in_flight(&self) -> u64 {
        self.issued - self.resolved
    }

    /// Records the reply to transaction `seq` after `rtt_ns` (and, cold, `connect_ns` of set-up).
    pub fn complete(&mut self, seq: u64, rtt_ns: u64, connect_ns: Option<u64>, now: Instant) {
        self.resolved += 1;
        self.consecutive_losses = 0;
        self.last_resolved = Some(now);
        self.cpus.sample();
        if seq >= self.warmup {
            self.rtt.record(rtt_ns);
            if let Some(c) = connect_ns {
                self.connect.record(c);
            }
        }
    }

    /// Records that transaction `seq` timed out. Returns `true` when the consecutive-loss limit
    /// is reached and the size should be aborted.
    pub fn lose(&mut self, seq: u64, now: Instant) -> bool {
        self.resolved += 1;
        self.consecutive_losses += 1;
        self.last_resolved = Some(now);
        if seq >= self.warmup {
            self.lost += 1;
        }
        self.abort_after_losses > 0 && self.consecutive_losses >= self.abort_after_losses
    }

    /// Consecutive losses so far.
    pub fn consecutive_losses(&self) -> u64 {
        self.consecutive_losses
    }

    /// Transactions issued, warm-up included.
    pub fn issued(&self) -> u64 {
        self.issued
    }

    /// Measured transactions issued (warm-up excluded).
    pub fn measured_issued(&self) -> u64 {
        self.issued.saturating_sub(self.warmup)
    }

    /// Wall time from the first measured issue to the last answer or loss, seconds.
    pub fn measured_elapsed_s(&self) -> f64 {
        match (self.first_measured, self.last_resolved) {
            (Some(a), Some(b)) if b > a => (b - a).as_secs_f64(),
            _ => 0.0,
        }
    }

    /// Whether the stop rule ended the size because the mean converged.
    pub fn converged(&self) -> bool {
        match self.stop {
            StopRule::Converge { rel, .. } => self.rtt.converged(rel),
            StopRule::Count { .. } | StopRule::Time { .. } => false,
        }
    }
}

/// The client application ([`weft_model::app::rr::RrClient`]) reports to the meter: its
/// requests are numbered by the meter's count ([`Meter::issued`]), and the meter's stop rule,
/// warm-up and loss limit decide what it asks. The instants are the wall clock's at the call,
/// which the socket driver makes as the application's `now`.
impl Record for Meter {
    fn may_ask(&self) -> bool {
        self.may_issue()
    }

    fn asked(&mut self, _seq: u64, _now: weft_model::Instant) {
        self.issue(Instant::now());
    }

    fn answered(&mut self, seq: u64, rtt: weft_model::Duration, _now: weft_model::Instant) {
        self.complete(seq, rtt.0, None, Instant::now());
    }

    fn lost(&mut self, seq: u64, _now: weft_model::Instant) -> bool {
        self.lose(seq, Instant::now())
    }
}

/// A meter for one cold transaction: its round trip counts the set-up (`connect_ns`), which is
/// also recorded on its own.
pub struct Cold<'a> {
    /// The size's meter.
    pub meter: &'a mut Meter,
    /// The transaction's set-up time, ns.
    pub connect_ns: u64,
}

impl Record for Cold<'_> {
    fn may_ask(&self) -> bool {
        self.meter.may_issue()
    }

    fn asked(&mut self, seq: u64, now: weft_model::Instant) {
        self.meter.asked(seq, now);
    }

    fn answered(&mut self, seq: u64, rtt: weft_model::Duration, _now: weft_model::Instant) {
        let c = self.connect_ns;
        self.meter
            .complete(seq, rtt.0.saturating_add(c), Some(c), Instant::now());
    }

    fn lost(&mut self, seq: u64, now: weft_model::Instant) -> bool {
        self.meter.lost(seq, now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warmup_is_excluded_and_count_is_exact() {
        let mut m = Meter::new(3, StopRule::Count { count: 5 }, 0);
        let now = Instant::now();
        let mut n = 0;
        while m.may_issue() {
            let s = m.issue(now);
            if s % 2 == 0 {
                m.complete(s, 100 + s, None, now);
            } else {
                m.lose(s, now);
            }
            n += 1;
        }
        assert_eq!(n, 8);
        assert_eq!(m.measured_issued(), 5);
        // Measured sequence numbers 3..8: 4 and 6 answered, 3, 5 and 7 lost.
        assert_eq!(m.rtt.count(), 2);
        assert_eq!(m.lost, 3);
        assert_eq!(m.in_flight(), 0);
    }

    #[test]
    fn converge_stops_early_but_respects_the_cap() {
        let now = Instant::now();
        let mut m = Meter::new(
            0,
            StopRule::Converge {
                rel: 0.01,
                max_count: 1000,
            },
            0,
        );
        while m.may_issue() {
            let s = m.issue(now);
            m.complete(s, 1000, None, now);
        }
        assert_eq!(m.rtt.count(), super::super::stats::MIN_CONVERGE_SAMPLES);
        assert!(m.converged());
        let mut m = Meter::new(
            0,
            StopRule::Converge {
                rel: 0.0001,
                max_count: 200,
            },
            0,
        );
        while m.may_issue() {
            let s = m.issue(now);
            m.complete(s, if s % 2 == 0 { 100 } else { 10_000 }, None, now);
        }
        assert_eq!(m.rtt.count(), 200);
        assert!(!m.converged());
    }

    #[test]
    fn time_rule_stops_after_its_duration() {
        let mut m = Meter::new(
            2,
            StopRule::Time {
                duration_ns: 30_000_000,
            },
            0,
        );
        let start = Instant::now();
        while m.may_issue() {
            let now = Instant::now();
            let s = m.issue(now);
            m.complete(s, 10, None, now);
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let took = start.elapsed();
        assert!(took >= std::time::Duration::from_millis(30), "{took:?}");
        assert!(m.rtt.count() >= 2);
    }

    #[test]
    fn a_time_limit_cuts_a_count_short_and_says_so() {
        let limit = std::time::Duration::from_millis(20);
        let mut m = Meter::new(
            0,
            StopRule::Count {
                count: u64::MAX / 2,
            },
            0,
        )
        .with_time_limit(Some(limit));
        let start = Instant::now();
        while m.may_issue() {
            let now = Instant::now();
            let s = m.issue(now);
            m.complete(s, 10, None, now);
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert!(start.elapsed() >= limit);
        assert!(m.cut_off());
        // A count that is met first is not cut off, however late it is looked at.
        let mut m = Meter::new(0, StopRule::Count { count: 3 }, 0).with_time_limit(Some(limit));
        while m.may_issue() {
            let now = Instant::now();
            let s = m.issue(now);
            m.complete(s, 10, None, now);
        }
        std::thread::sleep(limit);
        assert!(!m.cut_off());
        assert_eq!(m.rtt.count(), 3);
    }

    #[test]
    fn consecutive_losses_abort() {
        let now = Instant::now();
        let mut m = Meter::new(0, StopRule::Count { count: 100 }, 3);
        let a = m.issue(now);
        assert!(!m.lose(a, now));
        let b = m.issue(now);
        m.complete(b, 5, None, now);
        for i in 0..3 {
            let s = m.issue(now);
            assert_eq!(m.lose(s, now), i == 2);
        }
    }
}
