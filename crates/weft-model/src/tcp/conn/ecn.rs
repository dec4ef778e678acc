//! Explicit Congestion Notification: the receiver's echo of Congestion Experienced marks and the
//! sender's reaction, RFC 3168's and DCTCP's (RFC 8257).
//!
//! The mark is in the IP header, which the connection never sees: the driver passes it with the
//! segment ([`Connection::handle_segment_ecn`]) and, once [`Connection::ecn_enabled`], sends the
//! connection's data segments ECN-capable (ECT(0)).
//!
//! - Receiver, RFC 3168: after a marked segment every ACK carries ECE until a segment with CWR
//!   arrives. DCTCP: each ACK's ECE is the mark of the data it acknowledges; when the mark
//!   changes while an ACK is being delayed, the data before the change is acknowledged at once
//!   with the old mark (RFC 8257 section 3.2), so that the sender can count marked bytes.
//! - Sender: the first echo of a window reduces the window once, as for a loss (RFC 3168) or by
//!   alpha / 2 (DCTCP), and the next data segment carries CWR; echoes of data sent before the
//!   reduction do not reduce again. DCTCP also counts acknowledged and marked bytes, folding them
//!   into alpha once per window.

use super::{Connection, Received, Recovery};
use crate::tcp::cc::{CcAlgorithm, CongestionControl, Controller};
use crate::tcp::segment::{Flags, Segment};
use crate::time::Instant;

impl Connection {
    /// A segment arrived at `now` as [`Connection::handle_segment`], with its IP header's ECN
    /// field: `ce` if a queue marked it Congestion Experienced.
    pub fn handle_segment_ecn(
        &mut self,
        now: Instant,
        seg: &Segment,
        ce: bool,
    ) -> Option<Received> {
        self.ce_in = ce;
        let out = self.handle_segment(now, seg);
        self.ce_in = false;
        out
    }

    /// True once both ends agreed to ECN: the driver sends this end's segments ECN-capable.
    pub fn ecn_enabled(&self) -> bool {
        self.ecn_ok
    }

    /// DCTCP's estimate of the marked fraction, if the connection runs DCTCP.
    pub fn dctcp_alpha(&self) -> Option<f64> {
        match &self.cc {
            Controller::Dctcp(d) => Some(d.alpha()),
            _ => None,
        }
    }

    /// Receiver: the marks of a data segment about to be taken in.
    pub(super) fn note_marks(&mut self, seg: &Segment) {
        if !self.ecn_ok {
            return;
        }
        if self.ce_in {
            self.stats.ce_received += 1;
        }
        if self.cfg.cc == CcAlgorithm::Dctcp {
            if self.ce_in != self.ce_state {
                if self.unacked_bytes > 0 {
                    // Acknowledge what came before the change with the mark it had.
                    self.ack_now = true;
                    self.pending_ecn_ack = self.ack_segment();
                }
                self.ce_state = self.ce_in;
                self.ack_now = true;
            }
        } else {
            if seg.has(Flags::CWR) {
                self.ce_state = false;
            }
            if self.ce_in {
                self.ce_state = true;
            }
        }
    }

    /// Sender: an acceptable ACK acknowledging `acked` new positions, echoing a mark or not.
    pub(super) fn on_echo(&mut self, now: Instant, seg: &Segment, acked: u64) {
        if !self.ecn_ok {
            return;
        }
        let ece = seg.has(Flags::ECE);
        if ece {
            self.stats.ece_received += 1;
        }
        if let Controller::Dctcp(d) = &mut self.cc {
            d.count(acked, ece);
            if self.snd_una > self.dctcp_window_end {
                d.end_window();
                self.dctcp_window_end = self.snd_nxt;
            }
        }
        if !ece || self.snd_una <= self.ecn_cwr_end || self.recovery != Recovery::None {
            return;
        }
        match &mut self.cc {
            Controller::Dctcp(d) => d.on_mark(&mut self.win),
            cc => {
                let flight = self.snd_max - self.snd_una;
                cc.on_loss(&mut self.win, now, flight);
                self.win.cwnd = self.win.ssthresh;
            }
        }
        self.ecn_cwr_end = self.snd_max;
        self.send_cwr = true;
        self.stats.ecn_reductions += 1;
    }
}
