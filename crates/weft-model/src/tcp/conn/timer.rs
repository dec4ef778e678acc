//! The connection's timers: retransmission (with backoff), persist (zero-window probes),
//! delayed ACK and TIME-WAIT. Each is a deadline; [`Connection::poll_timeout`] reports the
//! earliest.

use super::{Connection, Error, Recovery, State, Undo, ts_clock};
use crate::tcp::cc::CongestionControl;
use crate::time::{Duration, Instant};

impl Connection {
    /// The earliest instant at which [`Connection::handle_timeout`] has work, if any.
    #[inline]
    pub fn poll_timeout(&self) -> Option<Instant> {
        // Called after every event by a simulator: written out rather than iterated.
        #[inline]
        fn earlier(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
            match (a, b) {
                (Some(x), Some(y)) => Some(x.min(y)),
                (x, None) => x,
                (None, y) => y,
            }
        }
        earlier(
            earlier(self.rto_deadline, self.delack_deadline),
            earlier(self.persist_deadline, self.time_wait_deadline),
        )
    }

    /// Runs every timer due at `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.rto_deadline.is_some_and(|t| t <= now) {
            self.rto_deadline = None;
            self.on_rto(now);
        }
        if self.persist_deadline.is_some_and(|t| t <= now) {
            self.persist_deadline = None;
            if self.snd_wnd == 0 && self.state.is_synchronized() {
                self.probe_pending = true;
                self.persist_backoff = (self.persist_backoff + 1).min(16);
            }
        }
        if self.delack_deadline.is_some_and(|t| t <= now) {
            self.delack_deadline = None;
            self.ack_now = true;
            self.stats.delayed_acks += 1;
        }
        if self.time_wait_deadline.is_some_and(|t| t <= now) {
            self.enter_closed(None);
        }
        self.arm_persist(now);
    }

    /// The retransmission timer expired: back off, collapse the window to one segment and send
    /// again from the first unacknowledged byte (go-back-N, as 4.4BSD does).
    fn on_rto(&mut self, now: Instant) {
        match self.state {
            State::SynSent | State::SynReceived => {
                self.stats.timeouts += 1;
                self.retries += 1;
                if self.retries > self.cfg.max_retransmits {
                    self.enter_closed(Some(Error::TimedOut));
                    return;
                }
                self.rtt.back_off();
                self.rtt_timing = None;
                self.snd_nxt = 0;
                self.rto_deadline = Some(self.rtt.deadline(now));
            }
            State::Closed | State::Listen | State::TimeWait => {}
            _ => {
                if self.snd_una >= self.snd_max {
                    return;
                }
                self.stats.timeouts += 1;
                self.retries += 1;
                if self.retries > self.cfg.max_retransmits {
                    self.pending_rst = Some(self.rst_segment());
                    self.enter_closed(Some(Error::TimedOut));
                    return;
                }
                let flight = self.snd_max - self.snd_una;
                if self.ts_ok && self.undo.is_none() {
                    self.undo = Some(Undo {
                        cwnd: self.win.cwnd,
                        ssthresh: self.win.ssthresh,
                        stamp: ts_clock(now),
                    });
                }
                self.cc.on_timeout(&mut self.win, now, flight);
                // RFC 6582 section 4: duplicate ACKs of data sent before the timeout start no
                // new fast retransmit.
                self.recover = self.snd_max;
                self.recovery = Recovery::None;
                self.dupacks = 0;
                self.retransmit_head = false;
                // The scoreboard is kept (as Linux keeps it): the go-back-N that follows skips
                // what the peer holds. weft's receiver never reneges on SACKed data, the reason
                // RFC 2018 gave for forgetting it (RFC 6675 section 5.1 discusses both).
                self.high_rxt = self.snd_una;
                self.clear_sack_recovery();
                self.snd_nxt = self.snd_una;
                self.rtt_timing = None;
                self.rtt.back_off();
                self.rto_deadline = Some(self.rtt.deadline(now));
            }
        }
    }

    /// Starts the persist timer when the peer's window is closed, data waits and nothing is in
    /// flight to bring a window update back.
    pub(super) fn arm_persist(&mut self, now: Instant) {
        let can_send = matches!(
            self.state,
            State::Established | State::CloseWait | State::FinWait1 | State::LastAck
        );
        if can_send
            && self.snd_wnd == 0
            && self.app_end > self.snd_nxt
            && self.snd_max == self.snd_una
            && self.rto_deadline.is_none()
            && self.persist_deadline.is_none()
            && !self.probe_pending
        {
            let base = self.rtt.rto().0.max(self.cfg.rto.min.0);
            let d = Duration(
                base.saturating_mul(1 << self.persist_backoff)
                    .min(self.cfg.rto.max.0),
            );
            self.persist_deadline = Some(self.rtt.deadline_after(now, d));
        }
    }
}
