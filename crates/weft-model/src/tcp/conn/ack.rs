//! Acknowledgement processing: the peer's window, new and duplicate ACKs, the congestion
//! window, and loss recovery (Reno and NewReno fast recovery, RFC 5681 and RFC 6582; SACK-based
//! recovery, RFC 6675).

use super::{Connection, Recovery, State, ts_before};
use crate::tcp::cc::{CcAlgorithm, CongestionControl};
use crate::tcp::segment::{Flags, Segment};
use crate::time::Instant;

impl Connection {
    /// Processes the acknowledgement, window and SACK blocks of a segment at position `pos` in a
    /// synchronized state. Returns false when the segment must be dropped (it acknowledges
    /// something never sent).
    pub(super) fn process_ack(&mut self, now: Instant, seg: &Segment, pos: u64) -> bool {
        let Some(ack) = seg.ack.to_position(self.iss, self.snd_una) else {
            self.ack_now = true;
            return false;
        };
        if ack > self.snd_max {
            self.ack_now = true;
            return false;
        }
        let (una_before, sacked_before) = (self.snd_una, self.sacked.len_from(self.snd_una));
        let new_sack = self.sack_ok && !seg.sack.is_empty() && self.update_scoreboard(seg);
        let window = u64::from(seg.window) << self.snd_wscale;
        let same_window = window == self.snd_wnd;
        // RFC 793: take the window from the newest segment only (SND.WL1, SND.WL2).
        if self.snd_wl1 < pos || (self.snd_wl1 == pos && self.snd_wl2 <= ack) {
            self.snd_wnd = window;
            self.snd_wl1 = pos;
            self.snd_wl2 = ack;
            self.max_snd_wnd = self.max_snd_wnd.max(window);
            if window > 0 {
                self.persist_deadline = None;
                self.persist_backoff = 0;
            }
        }
        let acked = ack.saturating_sub(self.snd_una);
        if ack > self.snd_una {
            self.undo_spurious_timeout(seg);
            self.on_new_ack(now, ack);
            if self.snd_una >= self.recover {
                // The episode is over: a later ACK proves nothing about its time-out.
                self.undo = None;
            }
        } else if ack == self.snd_una
            && seg.len == 0
            && !seg.has(Flags::SYN)
            && !seg.has(Flags::FIN)
            && same_window
            && self.snd_max > self.snd_una
        {
            self.on_dup_ack(now);
        }
        // RFC 6675 5 (b): enough is SACKed above the first hole to call it lost.
        if new_sack
            && self.recovery == Recovery::None
            && self.snd_una > self.recover
            && self.lost_boundary() > self.snd_una
        {
            self.enter_recovery(now);
        }
        if let Recovery::Sack { .. } = self.recovery {
            self.relost.remove_below(self.snd_una);
            self.detect_lost_retransmissions();
            // RFC 6937 DeliveredData: the change in snd_una plus the change in SACKed bytes.
            let delivered = (self.snd_una - una_before) as i64
                + self.sacked.len_from(self.snd_una) as i64
                - sacked_before as i64;
            self.prr_update(delivered.max(0) as u64);
        }
        self.on_echo(now, seg, acked);
        if self.our_fin_acked() {
            match self.state {
                State::FinWait1 => self.state = State::FinWait2,
                State::Closing => self.enter_time_wait(now),
                State::LastAck => self.enter_closed(None),
                _ => {}
            }
        }
        true
    }

    /// Eifel detection (RFC 3522): the first ACK of new data after a time-out echoes a clock
    /// from before it, so the original transmission arrived and the time-out was spurious (a
    /// queue or a delayed ACK held it past the timer). Linux's response (`tcp_try_undo_loss`):
    /// the window from before the time-out comes back, and what was in flight is taken to be
    /// in flight still rather than sent again.
    fn undo_spurious_timeout(&mut self, seg: &Segment) {
        let Some(undo) = self.undo else { return };
        let Some(ts) = seg.timestamps else { return };
        if ts.echo == 0 || !ts_before(ts.echo, undo.stamp) {
            return;
        }
        self.undo = None;
        self.stats.spurious_timeouts += 1;
        self.win.cwnd = self.win.cwnd.max(undo.cwnd);
        self.win.ssthresh = self.win.ssthresh.max(undo.ssthresh);
        self.snd_nxt = self.snd_max;
        self.recover = self.snd_una;
    }

    fn on_new_ack(&mut self, now: Instant, ack: u64) {
        let acked = ack - self.snd_una;
        let data_acked = ack.min(self.app_end).saturating_sub(self.snd_una.max(1));
        self.stats.bytes_acked += data_acked;
        if let Some((timed, sent)) = self.rtt_timing
            && ack > timed
        {
            self.rtt.sample(sent, now);
            self.rtt_timing = None;
        }
        self.snd_una = ack;
        self.snd_nxt = self.snd_nxt.max(ack);
        self.sacked.remove_below(ack);
        self.high_rxt = self.high_rxt.max(ack);
        self.retries = 0;
        self.dupacks = 0;
        let mut restart_timer = true;
        match self.recovery {
            Recovery::Fast {
                recover,
                partial_seen,
            } => {
                if self.cfg.cc == CcAlgorithm::Reno {
                    // 4.4BSD Reno: any new ACK ends fast recovery and deflates the window.
                    self.win.cwnd = self.win.ssthresh;
                    self.recovery = Recovery::None;
                } else if ack >= recover {
                    // RFC 6582 3.2 step 3, full acknowledgement, option (1).
                    let flight = self.snd_max - self.snd_una;
                    self.win.cwnd = self
                        .win
                        .ssthresh
                        .min(flight.max(self.win.mss) + self.win.mss);
                    self.recovery = Recovery::None;
                } else {
                    // Partial acknowledgement (step 4): retransmit the next hole, deflate by the
                    // amount acknowledged, add back one segment if at least one was; only the
                    // first partial ACK restarts the timer ("impatient" variant).
                    self.stats.partial_acks += 1;
                    self.retransmit_head = true;
                    self.rtt_timing = None;
                    let mss = self.win.mss;
                    let mut cwnd = self.win.cwnd.saturating_sub(acked);
                    if acked >= mss {
                        cwnd += mss;
                    }
                    self.win.cwnd = cwnd.max(mss);
                    restart_timer = !partial_seen;
                    self.recovery = Recovery::Fast {
                        recover,
                        partial_seen: true,
                    };
                }
            }
            Recovery::Sack { point } => {
                if ack >= point {
                    self.win.cwnd = self.win.ssthresh;
                    self.recovery = Recovery::None;
                    self.clear_sack_recovery();
                } else {
                    self.stats.partial_acks += 1;
                }
            }
            Recovery::None => {
                let srtt = self.rtt.srtt();
                self.cc.on_ack(&mut self.win, now, data_acked.max(1), srtt);
                self.win.cwnd = self.win.cwnd.min(self.max_cwnd());
            }
        }
        if self.snd_una >= self.snd_max {
            self.rto_deadline = None;
        } else if restart_timer {
            // RFC 6298 5.3.
            self.rto_deadline = Some(self.rtt.deadline(now));
        }
    }

    fn on_dup_ack(&mut self, now: Instant) {
        self.dupacks += 1;
        self.stats.dup_acks_received += 1;
        match self.recovery {
            Recovery::None => {
                // NewReno (RFC 6582 3.2 step 1) does not start a second recovery for losses in the
                // window already recovered; 4.4BSD Reno has no such check.
                let fresh = self.cfg.cc == CcAlgorithm::Reno || self.snd_una > self.recover;
                if self.dupacks == self.cfg.dup_thresh && fresh {
                    self.enter_recovery(now);
                }
            }
            Recovery::Fast { .. } => {
                // Each further duplicate means a segment left the network: inflate the window.
                self.win.cwnd += self.win.mss;
            }
            Recovery::Sack { .. } => {}
        }
    }

    /// Fast retransmit: halve (or for CUBIC, scale by beta), retransmit the first unacknowledged
    /// segment, and recover.
    fn enter_recovery(&mut self, now: Instant) {
        self.undo = None;
        let flight = self.snd_max - self.snd_una;
        self.cc.on_loss(&mut self.win, now, flight);
        self.recover = self.snd_max;
        self.stats.fast_retransmits += 1;
        self.retransmit_head = true;
        self.rtt_timing = None;
        if self.sack_ok {
            // RFC 6675 section 5 steps 4.1-4.2, with RFC 6937's initialisation: the window is
            // then set on every ACK by proportional rate reduction.
            self.recovery = Recovery::Sack {
                point: self.snd_max,
            };
            self.win.cwnd = self.win.ssthresh;
            self.high_rxt = self.snd_una;
            self.prr_delivered = 0;
            self.prr_out = 0;
            self.recover_fs = flight;
            self.clear_sack_recovery();
        } else {
            self.recovery = Recovery::Fast {
                recover: self.snd_max,
                partial_seen: false,
            };
            self.win.cwnd = self.win.ssthresh + u64::from(self.cfg.dup_thresh) * self.win.mss;
        }
    }
}
