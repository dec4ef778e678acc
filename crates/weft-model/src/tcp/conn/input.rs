//! Segment arrival (RFC 793 section 3.9, "SEGMENT ARRIVES"), in the order the RFC checks:
//! state, sequence acceptability, RST, SYN, ACK, data, FIN.

use super::{Connection, Error, Received, State};
use crate::tcp::config::{DEFAULT_MSS, MAX_WINDOW_SCALE};
use crate::tcp::segment::{Flags, Segment};
use crate::tcp::seq::SeqNum;
use crate::time::Instant;

impl Connection {
    /// A segment addressed to this connection arrived at `now`. Returns the part of its payload
    /// that entered the receive buffer, if any (a byte-carrying layer copies those bytes).
    pub fn handle_segment(&mut self, now: Instant, seg: &Segment) -> Option<Received> {
        self.stats.segments_received += 1;
        let out = match self.state {
            State::Closed => {
                self.answer_closed(seg);
                None
            }
            State::Listen => {
                self.on_listen(now, seg);
                None
            }
            State::SynSent => {
                self.on_syn_sent(now, seg);
                None
            }
            _ => self.on_synchronized(now, seg),
        };
        self.arm_persist(now);
        out
    }

    /// RFC 793: a segment to a closed connection is answered by a reset (never a reset itself).
    fn answer_closed(&mut self, seg: &Segment) {
        if seg.has(Flags::RST) {
            return;
        }
        self.pending_rst = Some(reset_for(seg));
    }

    fn on_listen(&mut self, now: Instant, seg: &Segment) {
        if seg.has(Flags::RST) {
            return;
        }
        if seg.has(Flags::ACK) {
            self.pending_rst = Some(reset_for(seg));
            return;
        }
        if !seg.has(Flags::SYN) {
            return;
        }
        self.remote_port = seg.src_port;
        self.take_peer_syn(seg);
        // RFC 3168 6.1.1: an ECN-setup SYN carries ECE and CWR.
        self.ecn_ok = self.cfg.ecn && seg.has(Flags::ECE) && seg.has(Flags::CWR);
        self.state = State::SynReceived;
        self.snd_nxt = 0;
        self.rto_deadline = Some(self.rtt.deadline(now));
    }

    fn on_syn_sent(&mut self, now: Instant, seg: &Segment) {
        let ack_pos = seg.ack.to_position(self.iss, 0);
        let ack_ok = seg.has(Flags::ACK) && ack_pos == Some(1) && self.snd_max >= 1;
        if seg.has(Flags::ACK) && !ack_ok {
            if !seg.has(Flags::RST) {
                self.pending_rst = Some(reset_for(seg));
            }
            return;
        }
        if seg.has(Flags::RST) {
            if ack_ok {
                self.enter_closed(Some(Error::Refused));
            }
            return;
        }
        if !seg.has(Flags::SYN) {
            return;
        }
        self.take_peer_syn(seg);
        if ack_ok {
            // The SYN is acknowledged; take a round-trip sample unless it was retransmitted.
            if let Some((_, sent)) = self.rtt_timing.take() {
                self.rtt.sample(sent, now);
            }
            self.snd_una = 1;
            self.snd_wl1 = 0;
            self.snd_wl2 = 1;
            // An ECN-setup SYN-ACK carries ECE without CWR.
            self.ecn_ok = self.cfg.ecn && seg.has(Flags::ECE) && !seg.has(Flags::CWR);
            self.establish(now);
            self.ack_now = true;
        } else {
            // Simultaneous open: answer with a SYN-ACK.
            self.state = State::SynReceived;
            self.snd_nxt = 0;
        }
    }

    /// Records the peer's SYN: its sequence number and options, and agrees the options (a
    /// passive end offers in its SYN-ACK only what the SYN offered, so the same rule serves both).
    fn take_peer_syn(&mut self, seg: &Segment) {
        self.irs = seg.seq;
        self.rcv_nxt = 1;
        self.read = 1;
        let peer_mss = seg.mss.unwrap_or(DEFAULT_MSS);
        self.mss = u32::from(self.cfg.mss.min(peer_mss)).max(1);
        self.rcv_mss = self.rcv_mss.min(u32::from(self.cfg.mss));
        // RFC 7323 section 2.2: scaling in both directions only if both SYNs carry the option.
        match (seg.window_scale, self.cfg.offered_scale()) {
            (Some(theirs), Some(ours)) => {
                self.snd_wscale = theirs.min(MAX_WINDOW_SCALE);
                self.rcv_wscale = ours;
                self.ws_ok = true;
            }
            _ => {
                self.snd_wscale = 0;
                self.rcv_wscale = 0;
                self.ws_ok = false;
            }
        }
        self.sack_ok = seg.sack_permitted && self.cfg.sack;
        self.ts_ok = self.cfg.timestamps && seg.timestamps.is_some();
        if let Some(ts) = seg.timestamps.filter(|_| self.ts_ok) {
            self.ts_recent = ts.value;
            // The option takes 12 bytes of every segment (Linux's mss_cache does the same).
            self.mss = self.mss.saturating_sub(12).max(1);
        }
        // The window in a SYN is never scaled.
        self.snd_wnd = u64::from(seg.window);
        self.max_snd_wnd = self.snd_wnd;
    }

    /// The handshake completed: the segment size is known, so is the initial window.
    fn establish(&mut self, now: Instant) {
        let mss = u64::from(self.mss);
        self.win.mss = mss;
        self.win.cwnd = u64::from(self.cfg.initial_window.max(1)) * mss;
        self.state = if self.fin_queued {
            State::FinWait1
        } else {
            State::Established
        };
        self.snd_nxt = self.snd_nxt.max(1);
        self.retries = 0;
        self.rto_deadline = if self.snd_max > self.snd_una {
            Some(self.rtt.deadline(now))
        } else {
            None
        };
    }

    fn on_synchronized(&mut self, now: Instant, seg: &Segment) -> Option<Received> {
        let pos = seg.seq.to_position(self.irs, self.rcv_nxt);
        let right = self.read + u64::from(self.cfg.recv_buffer);
        let len = seg.seq_len();
        let Some(pos) = pos else {
            if !seg.has(Flags::RST) {
                self.ack_now = true;
            }
            return None;
        };
        // Acceptable if any of it falls in [rcv_nxt, right), or a zero-length segment at
        // rcv_nxt; entirely old segments still carry a useful ACK (4.4BSD trims, not drops).
        let old = pos + len <= self.rcv_nxt && !(len == 0 && pos == self.rcv_nxt);
        let beyond = pos >= right.max(self.rcv_nxt + 1) && !(len == 0 && pos == self.rcv_nxt);
        if seg.has(Flags::RST) {
            // RFC 5961's strictness is not needed in a simulator: any in-window reset counts.
            if !old && !beyond {
                let err = if self.state == State::SynReceived {
                    Error::Refused
                } else {
                    Error::Reset
                };
                self.enter_closed(Some(err));
            }
            return None;
        }
        if seg.has(Flags::SYN) {
            if self.state == State::SynReceived && pos == 0 {
                // Our SYN-ACK was lost: the peer repeats its SYN; repeat ours.
                self.snd_nxt = 0;
                return None;
            }
            if pos < self.rcv_nxt {
                // A repeated SYN-ACK after our ACK was lost: acknowledge again.
                self.ack_now = true;
                return None;
            }
        }
        if beyond {
            self.ack_now = true;
            return None;
        }
        // RFC 7323 section 4.3: echo the clock of the segment that fills the left edge (a
        // duplicate's too, so that the ACK of a retransmission echoes the retransmission).
        if let Some(ts) = seg.timestamps.filter(|_| self.ts_ok)
            && pos <= self.rcv_nxt
        {
            self.ts_recent = ts.value;
        }
        if !seg.has(Flags::ACK) {
            return None;
        }
        if self.state == State::SynReceived {
            let ack_pos = seg.ack.to_position(self.iss, self.snd_una);
            if ack_pos.is_none_or(|a| a < 1 || a > self.snd_max) {
                self.pending_rst = Some(reset_for(seg));
                return None;
            }
            if let Some((_, sent)) = self.rtt_timing.take() {
                self.rtt.sample(sent, now);
            }
            self.snd_una = 1;
            self.snd_wl1 = pos;
            self.snd_wl2 = 1;
            self.snd_wnd = u64::from(seg.window) << self.snd_wscale;
            self.max_snd_wnd = self.max_snd_wnd.max(self.snd_wnd);
            self.establish(now);
        }
        if !self.process_ack(now, seg, pos) {
            return None;
        }
        if old {
            // An old segment: a retransmission whose data we hold, or a zero-window probe
            // (Linux sends one at snd_una - 1). Either is answered with an ACK; our own pure
            // ACKs carry snd_max, never an old position, so two ends cannot ping-pong.
            if seg.len > 0 || seg.has(Flags::FIN) {
                self.stats.duplicate_segments += 1;
            }
            if self.state == State::TimeWait && seg.has(Flags::FIN) {
                // The peer repeats its FIN: our last ACK was lost. Wait 2 MSL again.
                self.time_wait_deadline = Some(now + self.cfg.time_wait);
            }
            self.ack_now = true;
            return None;
        }
        let received = if seg.len > 0 && self.accepts_data() {
            self.note_marks(seg);
            self.receive_data(now, seg, pos)
        } else {
            None
        };
        if seg.has(Flags::FIN) && !self.fin_received && self.accepts_data() {
            let fin_pos = pos + u64::from(seg.len) + u64::from(seg.has(Flags::SYN));
            if fin_pos <= right {
                self.peer_fin = Some(fin_pos);
            }
        }
        self.take_fin(now);
        received
    }

    /// States in which the peer may still send data.
    fn accepts_data(&self) -> bool {
        matches!(
            self.state,
            State::SynReceived | State::Established | State::FinWait1 | State::FinWait2
        )
    }

    /// Stores the segment's payload (starting at position `pos`, a SYN already counted).
    fn receive_data(&mut self, now: Instant, seg: &Segment, pos: u64) -> Option<Received> {
        let data_pos = pos + u64::from(seg.has(Flags::SYN));
        let end = data_pos + u64::from(seg.len);
        let right = self.read + u64::from(self.cfg.recv_buffer);
        let start = data_pos.max(self.rcv_nxt);
        let stop = end.min(right);
        self.rcv_mss = self.rcv_mss.max(seg.len);
        if start >= stop {
            if end <= self.rcv_nxt {
                self.stats.duplicate_segments += 1;
            }
            self.ack_now = true;
            return None;
        }
        if start == self.rcv_nxt {
            let had_holes = !self.ooo.is_empty();
            let before = self.rcv_nxt;
            self.rcv_nxt = stop;
            while let Some((_, e)) = self.ooo.pop_first_from(self.rcv_nxt) {
                self.rcv_nxt = self.rcv_nxt.max(e);
            }
            self.stats.bytes_delivered += self.rcv_nxt - before;
            if had_holes || stop < end {
                // Filling a hole, or more than the window: acknowledge at once (RFC 5681 4.2).
                self.ack_now = true;
            } else {
                self.delay_ack(now, u64::from(seg.len));
            }
        } else {
            if !self.ooo.insert(start, stop) {
                self.stats.reassembly_overflows += 1;
                self.ack_now = true;
                return None;
            }
            self.stats.out_of_order_segments += 1;
            self.note_sack_arrival(start);
            // An out-of-order segment is answered at once: the duplicate ACK the sender counts.
            self.ack_now = true;
        }
        Some(Received {
            offset: start - 1,
            skip: (start - data_pos) as u32,
            len: (stop - start) as u32,
        })
    }

    /// Delayed-ACK accounting for `len` in-order bytes (RFC 1122 4.2.3.2, RFC 5681 4.2).
    fn delay_ack(&mut self, now: Instant, len: u64) {
        let Some(delay) = self.cfg.delayed_ack else {
            self.ack_now = true;
            return;
        };
        self.unacked_bytes += len;
        if self.unacked_bytes >= u64::from(self.cfg.ack_every) * u64::from(self.rcv_mss) {
            self.ack_now = true;
        } else if self.delack_deadline.is_none() {
            self.delack_deadline = Some(now + delay);
        }
    }

    fn note_sack_arrival(&mut self, start: u64) {
        let r = &mut self.sack_recent;
        let i = r.iter().position(|&p| p == start).unwrap_or(r.len() - 1);
        r.copy_within(0..i, 1);
        r[0] = start;
    }

    /// Consumes the peer's FIN once everything before it has arrived.
    fn take_fin(&mut self, now: Instant) {
        if self.fin_received || self.peer_fin != Some(self.rcv_nxt) {
            return;
        }
        self.rcv_nxt += 1;
        self.fin_received = true;
        self.ack_now = true;
        match self.state {
            State::SynReceived | State::Established => self.state = State::CloseWait,
            State::FinWait1 => {
                if self.our_fin_acked() {
                    self.enter_time_wait(now);
                } else {
                    self.state = State::Closing;
                }
            }
            State::FinWait2 => self.enter_time_wait(now),
            _ => {}
        }
    }

    pub(super) fn our_fin_acked(&self) -> bool {
        self.fin_queued && self.snd_una > self.app_end
    }
}

/// The reset RFC 793 answers an unexpected segment with.
fn reset_for(seg: &Segment) -> Segment {
    let mut rst = Segment {
        src_port: seg.dst_port,
        dst_port: seg.src_port,
        ..Default::default()
    };
    if seg.has(Flags::ACK) {
        rst.seq = seg.ack;
        rst.flags = Flags::RST;
    } else {
        rst.seq = SeqNum(0);
        rst.ack = seg.seq.add(seg.seq_len() as u32);
        rst.flags = Flags::RST.with(Flags::ACK);
    }
    rst
}
