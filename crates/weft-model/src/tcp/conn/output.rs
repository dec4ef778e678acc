//! What to send next: the SYN, retransmissions, new data within the windows (with Nagle and
//! sender-side silly-window avoidance), the FIN, and ACKs with the advertised window and SACK
//! blocks.

use super::{Connection, Recovery, State, ts_clock};
use crate::tcp::config::MAX_UNSCALED_WINDOW;
use crate::tcp::segment::{Flags, SackBlock, SackBlocks, Segment, Timestamps};
use crate::tcp::seq::SeqNum;
use crate::time::Instant;

impl Connection {
    /// The next segment to put on the wire at `now`, if any. Call until it returns `None`.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Segment> {
        // Checked before taking: `take` would move the whole (rarely present) segment each call.
        if self.pending_rst.is_some() {
            self.stats.segments_sent += 1;
            return self.pending_rst.take();
        }
        if self.pending_ecn_ack.is_some() {
            self.stats.segments_sent += 1;
            return self.pending_ecn_ack.take();
        }
        let seg = match self.state {
            State::Closed | State::Listen => None,
            State::SynSent | State::SynReceived => self.syn_segment(now).or_else(|| {
                // A SYN-RECEIVED end may acknowledge (an out-of-window segment) once its
                // SYN-ACK is out; a SYN-SENT one has nothing to acknowledge.
                (self.state == State::SynReceived && self.snd_nxt >= 1)
                    .then(|| self.ack_segment())
                    .flatten()
            }),
            _ => self.data_segment(now).or_else(|| self.ack_segment()),
        };
        match seg {
            Some(mut seg) => {
                self.stats.segments_sent += 1;
                // A SYN offers timestamps; once both ends have, every segment carries them.
                let syn = seg.has(Flags::SYN) && !seg.has(Flags::ACK);
                if self.ts_ok || (syn && self.cfg.timestamps) {
                    seg.timestamps = Some(Timestamps {
                        value: ts_clock(now),
                        echo: if syn { 0 } else { self.ts_recent },
                    });
                }
                Some(seg)
            }
            None => {
                self.arm_persist(now);
                None
            }
        }
    }

    fn syn_segment(&mut self, now: Instant) -> Option<Segment> {
        if self.snd_nxt != 0 {
            return None;
        }
        let syn_ack = self.state == State::SynReceived;
        let window = self.cfg.recv_buffer.min(MAX_UNSCALED_WINDOW);
        let mut seg = Segment {
            src_port: self.local_port,
            dst_port: self.remote_port,
            seq: self.iss,
            flags: Flags::SYN,
            // The window of a SYN is never scaled (RFC 7323 section 2.2).
            window: window as u16,
            mss: Some(self.cfg.mss),
            ..Default::default()
        };
        if syn_ack {
            seg.flags = seg.flags.with(Flags::ACK);
            if self.ecn_ok {
                seg.flags = seg.flags.with(Flags::ECE);
            }
            seg.ack = SeqNum::at(self.irs, self.rcv_nxt);
            seg.window_scale = self.ws_ok.then_some(self.rcv_wscale);
            seg.sack_permitted = self.sack_ok;
            self.rcv_adv = self.rcv_nxt + u64::from(window);
        } else {
            seg.window_scale = self.cfg.offered_scale();
            seg.sack_permitted = self.cfg.sack;
            if self.cfg.ecn {
                seg.flags = seg.flags.with(Flags::ECE).with(Flags::CWR);
            }
        }
        if self.snd_max > 0 {
            self.stats.segments_retransmitted += 1;
            self.rtt_timing = None;
        } else {
            self.rtt_timing = Some((0, now));
        }
        self.snd_nxt = 1;
        self.snd_max = self.snd_max.max(1);
        if self.rto_deadline.is_none() {
            self.rto_deadline = Some(self.rtt.deadline(now));
        }
        Some(seg)
    }

    fn data_segment(&mut self, now: Instant) -> Option<Segment> {
        if !matches!(
            self.state,
            State::Established
                | State::FinWait1
                | State::CloseWait
                | State::Closing
                | State::LastAck
        ) {
            return None;
        }
        if self.probe_pending {
            self.probe_pending = false;
            return Some(self.probe_segment());
        }
        if self.retransmit_head {
            self.retransmit_head = false;
            let (len, fin) = self.cut(self.snd_una, self.snd_max);
            if len > 0 || fin {
                return Some(self.emit(now, self.snd_una, len, fin));
            }
        }
        if let Recovery::Sack { .. } = self.recovery {
            return self.sack_segment(now);
        }
        if self.cfg.idle_restart
            && self.snd_max == self.snd_una
            && self.app_end > self.snd_nxt
            && self
                .last_data_sent
                .is_some_and(|t| now.saturating_duration_since(t) > self.rtt.rto())
        {
            // RFC 5681 4.1: after an idle period the ACK clock is gone; restart from the
            // initial window.
            let iw = u64::from(self.cfg.initial_window.max(1)) * self.win.mss;
            self.win.cwnd = self.win.cwnd.min(iw);
        }
        let limit = self.snd_una + self.win.cwnd.min(self.snd_wnd);
        self.window_segment(now, limit)
    }

    /// New data (or data again after a timeout) at `snd_nxt`, not past position `limit`, if
    /// Nagle's rule and silly-window avoidance allow; else a FIN alone if one is due.
    pub(super) fn window_segment(&mut self, now: Instant, limit: u64) -> Option<Segment> {
        let retransmitting = self.snd_nxt < self.snd_max;
        let mut room = u64::MAX;
        if retransmitting && !self.sacked.is_empty() {
            // Going back after a timeout: skip what the peer SACKed, stop before the next.
            if let Some((_, e)) = self.sacked.containing(self.snd_nxt) {
                self.snd_nxt = e;
            }
            if let Some((s, _)) = self.sacked.iter().find(|&(s, _)| s > self.snd_nxt) {
                room = s - self.snd_nxt;
            }
        }
        let retransmitting = self.snd_nxt < self.snd_max;
        let usable = limit.saturating_sub(self.snd_nxt);
        let avail = self.app_end.saturating_sub(self.snd_nxt).min(room);
        let len = avail.min(u64::from(self.mss)).min(usable);
        if len > 0 {
            let all = self.snd_nxt + len == self.app_end;
            let idle = self.snd_max == self.snd_una;
            // Minshall's Nagle: no earlier short segment awaits its acknowledgement.
            let no_short_unacked = self.cfg.nagle_minshall && self.snd_sml <= self.snd_una;
            // 4.4BSD tcp_output: a full segment; anything when retransmitting; the last of the
            // data when idle or Nagle is off (or lets it go); at least half the largest window
            // the peer offered.
            let send = len == u64::from(self.mss)
                || retransmitting
                || (all && (idle || !self.cfg.nagle || no_short_unacked))
                || (self.max_snd_wnd > 0 && 2 * len >= self.max_snd_wnd);
            if !send {
                return None;
            }
            let fin = self.fin_queued && all;
            return Some(self.emit(now, self.snd_nxt, len as u32, fin));
        }
        let fin_due = self.fin_queued
            && self.snd_nxt == self.app_end
            && (self.snd_max <= self.app_end || retransmitting);
        fin_due.then(|| self.emit(now, self.snd_nxt, 0, true))
    }

    /// The segment that starts at `start` and may run to `end` (exclusive): its payload length,
    /// at most one MSS, and whether it carries the FIN (already sent once).
    pub(super) fn cut(&self, start: u64, end: u64) -> (u32, bool) {
        let data_end = end.min(self.app_end).min(start + u64::from(self.mss));
        let len = data_end.saturating_sub(start);
        let fin = self.fin_queued
            && start + len == self.app_end
            && end > self.app_end
            && self.snd_max > self.app_end;
        (len as u32, fin)
    }

    /// Builds a segment of `len` bytes at `start` (and the FIN after it if `fin`) and updates the
    /// send state, the timers and the counters.
    pub(super) fn emit(&mut self, now: Instant, start: u64, len: u32, fin: bool) -> Segment {
        let len64 = u64::from(len);
        let end = start + len64 + u64::from(fin);
        let retransmission = start < self.snd_max;
        if let Recovery::Sack { .. } = self.recovery {
            self.prr_out += len64;
        }
        if len > 0 {
            self.stats.data_segments_sent += 1;
            self.stats.bytes_sent += len64;
            self.last_data_sent = Some(now);
            if len < self.mss {
                self.snd_sml = self.snd_sml.max(start + len64);
            }
        }
        if retransmission {
            self.stats.segments_retransmitted += 1;
            self.stats.bytes_retransmitted += (start + len64).min(self.snd_max) - start;
            // Karn: a retransmission makes any sample ambiguous.
            self.rtt_timing = None;
            if let Recovery::Sack { .. } = self.recovery {
                self.high_rxt = self.high_rxt.max(end);
                self.log_retransmission(start, end);
            }
        } else if self.rtt_timing.is_none() {
            self.rtt_timing = Some((start, now));
        }
        if start <= self.snd_nxt && end > self.snd_nxt {
            self.snd_nxt = end;
        }
        self.snd_max = self.snd_max.max(end);
        if self.rto_deadline.is_none() {
            self.rto_deadline = Some(self.rtt.deadline(now));
            self.persist_deadline = None;
        }
        let mut flags = Flags::ACK;
        if len > 0 && start + len64 == self.app_end {
            flags = flags.with(Flags::PSH);
        }
        if fin {
            flags = flags.with(Flags::FIN);
        }
        if self.send_cwr && len > 0 {
            // RFC 3168 6.1.2: the first new data after a reduction says so.
            self.send_cwr = false;
            flags = flags.with(Flags::CWR);
        }
        let mut seg = Segment {
            src_port: self.local_port,
            dst_port: self.remote_port,
            seq: SeqNum::at(self.iss, start),
            flags,
            len,
            ..Default::default()
        };
        self.fill_ack(&mut seg);
        seg
    }

    /// A pure ACK (or window update), if one is due.
    pub(super) fn ack_segment(&mut self) -> Option<Segment> {
        if !self.ack_now {
            return None;
        }
        // 4.4BSD: an ACK without data carries snd_max, not a retransmission's snd_nxt.
        let mut seg = Segment {
            src_port: self.local_port,
            dst_port: self.remote_port,
            seq: SeqNum::at(self.iss, self.snd_max),
            flags: Flags::ACK,
            ..Default::default()
        };
        self.fill_ack(&mut seg);
        self.stats.pure_acks_sent += 1;
        Some(seg)
    }

    /// A zero-window probe: an ACK one position below snd_una (as Linux sends), which the peer
    /// must answer with its current window.
    fn probe_segment(&mut self) -> Segment {
        self.stats.window_probes += 1;
        let mut seg = Segment {
            src_port: self.local_port,
            dst_port: self.remote_port,
            seq: SeqNum::at(self.iss, self.snd_una.saturating_sub(1)),
            flags: Flags::ACK,
            ..Default::default()
        };
        self.fill_ack(&mut seg);
        seg
    }

    /// Sets the acknowledgement, window and SACK fields; any ACK sent satisfies the pending one.
    fn fill_ack(&mut self, seg: &mut Segment) {
        seg.ack = SeqNum::at(self.irs, self.rcv_nxt);
        seg.window = self.advertise();
        if self.ecn_ok && self.ce_state {
            seg.flags = seg.flags.with(Flags::ECE);
        }
        if self.sack_ok && !self.ooo.is_empty() {
            seg.sack = self.sack_blocks();
        }
        self.ack_now = false;
        self.delack_deadline = None;
        self.unacked_bytes = 0;
    }

    /// The window field to send, and the right edge it announces. 4.4BSD's receiver rules: no
    /// window smaller than a quarter of the buffer and smaller than a segment (silly-window
    /// avoidance), and never a right edge left of the one already announced.
    fn advertise(&mut self) -> u16 {
        let shift = self.rcv_wscale;
        let mut wnd = self.recv_space().min(self.max_advertisable());
        if wnd < u64::from(self.cfg.recv_buffer) / 4 && wnd < u64::from(self.rcv_mss) {
            wnd = 0;
        }
        let announced = self.rcv_adv.saturating_sub(self.rcv_nxt);
        let field = if wnd < announced {
            announced.div_ceil(1 << shift)
        } else {
            wnd >> shift
        }
        .min(u64::from(MAX_UNSCALED_WINDOW));
        self.rcv_adv = self.rcv_nxt + (field << shift);
        field as u16
    }

    /// SACK blocks for an ACK (RFC 2018 section 4): the block holding the latest arrival first,
    /// then those of the arrivals before it, then the rest from the highest down.
    fn sack_blocks(&self) -> SackBlocks {
        let mut blocks = SackBlocks::EMPTY;
        let mut used: [(u64, u64); SackBlocks::MAX] = [(0, 0); SackBlocks::MAX];
        let mut n = 0;
        let recent = self
            .sack_recent
            .iter()
            .filter_map(|&p| self.ooo.containing(p));
        for (s, e) in recent.chain(self.ooo.iter().rev()) {
            if n == SackBlocks::MAX {
                break;
            }
            if used[..n].contains(&(s, e)) {
                continue;
            }
            used[n] = (s, e);
            n += 1;
            blocks.push(SackBlock {
                left: SeqNum::at(self.irs, s),
                right: SeqNum::at(self.irs, e),
            });
        }
        blocks
    }
}
