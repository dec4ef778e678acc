//! SACK-based loss recovery (RFC 6675): the scoreboard of what the peer holds, which holes are
//! lost, the pipe, what to send next, and the window during recovery by proportional rate
//! reduction (RFC 6937, as Linux does). Also the detection of a retransmission that was itself
//! lost, which RFC 6675 leaves to the timer: once a segment sent after the retransmission is
//! SACKed, the retransmission is presumed lost and the hole is sent again (Linux did this before
//! RACK, `tcp_mark_lost_retrans`), so a recovery episode does not stall until the timeout.

use super::Connection;
use crate::tcp::segment::Segment;
use crate::time::Instant;

impl Connection {
    /// RFC 6675 NextSeg and its sending rule: while cwnd - pipe holds a segment, retransmit the
    /// first lost hole above HighRxt (rule 1), else send new data (rule 2), else retransmit the
    /// first unSACKed hole below the highest SACKed position (rule 3).
    pub(super) fn sack_segment(&mut self, now: Instant) -> Option<Segment> {
        if self.pipe() + self.win.mss > self.win.cwnd {
            return None;
        }
        // Retransmissions found lost come first: they hold up the cumulative ACK.
        while let Some((s, e)) = self.relost.first() {
            match self.first_hole(s.max(self.snd_una)).filter(|&(p, _)| p < e) {
                Some((p, q)) => {
                    let (len, fin) = self.cut(p, q.min(e));
                    self.relost.remove(s, p + u64::from(len) + u64::from(fin));
                    if len > 0 || fin {
                        return Some(self.emit(now, p, len, fin));
                    }
                }
                None => self.relost.remove(s, e),
            }
        }
        let from = self.high_rxt.max(self.snd_una);
        let lost = self.lost_boundary();
        if let Some((p, q)) = self.first_hole(from)
            && p < lost
        {
            let (len, fin) = self.cut(p, q);
            if len > 0 || fin {
                return Some(self.emit(now, p, len, fin));
            }
        }
        if let Some(seg) = self.window_segment(now, self.snd_una + self.snd_wnd) {
            return Some(seg);
        }
        let highest = self.sacked.end().unwrap_or(self.snd_una);
        if let Some((p, q)) = self.first_hole(from)
            && p < highest
        {
            let (len, fin) = self.cut(p, q);
            if len > 0 || fin {
                return Some(self.emit(now, p, len, fin));
            }
        }
        None
    }

    /// Notes a retransmission of `[start, end)` during SACK recovery, with the highest position
    /// sent so far: anything SACKed at or above that was sent after it.
    pub(super) fn log_retransmission(&mut self, start: u64, end: u64) {
        if self.rxt_log.len() < self.cfg.max_ranges {
            self.rxt_log.push_back((start, end, self.snd_max));
        }
    }

    /// After the scoreboard is updated: a retransmission that is neither acknowledged nor SACKed
    /// while data sent after it has been SACKed was lost (barring reordering). The log is in
    /// sending order, so only its front needs looking at.
    pub(super) fn detect_lost_retransmissions(&mut self) {
        let Some(highest) = self.sacked.end() else {
            return;
        };
        while let Some(&(s, e, sent_before)) = self.rxt_log.front() {
            if sent_before >= highest {
                break;
            }
            self.rxt_log.pop_front();
            let s = s.max(self.snd_una);
            if s < e && self.sacked.len_within(s, e) < e - s {
                self.relost.insert(s, e);
                self.stats.lost_retransmissions += 1;
            }
        }
    }

    /// Forgets the state of a SACK recovery episode.
    pub(super) fn clear_sack_recovery(&mut self) {
        self.rxt_log.clear();
        self.relost.clear();
    }

    /// The first range of positions at or above `from`, below `snd_max`, that the peer has not
    /// SACKed: `(start, end)`.
    fn first_hole(&self, from: u64) -> Option<(u64, u64)> {
        let mut p = from;
        for (s, e) in self.sacked.iter() {
            if e <= p {
                continue;
            }
            if s <= p {
                p = e;
            } else {
                return (p < self.snd_max).then_some((p, s));
            }
        }
        (p < self.snd_max).then_some((p, self.snd_max))
    }

    /// RFC 6937 proportional rate reduction, on each ACK in SACK recovery that delivered
    /// `delivered` bytes: while the pipe is above ssthresh, send in proportion to what is
    /// delivered (ssthresh / RecoverFS of it); below, grow back to ssthresh no faster than slow
    /// start (PRR-SSRB). Without it RFC 6675 alone sends at cwnd = ssthresh as soon as the pipe
    /// falls, which after a slow-start overshoot (half the window lost) is far too much.
    pub(super) fn prr_update(&mut self, delivered: u64) {
        self.prr_delivered += delivered;
        let pipe = self.pipe();
        let ssthresh = self.win.ssthresh;
        let sndcnt = if pipe > ssthresh {
            let share = (self.prr_delivered as u128 * ssthresh as u128)
                .div_ceil(self.recover_fs.max(1) as u128) as u64;
            share.saturating_sub(self.prr_out)
        } else {
            let limit = self
                .prr_delivered
                .saturating_sub(self.prr_out)
                .max(delivered)
                + self.win.mss;
            (ssthresh - pipe).min(limit)
        };
        self.win.cwnd = pipe + sndcnt;
    }

    /// Adds the segment's SACK blocks to the scoreboard; true if any added something new.
    pub(super) fn update_scoreboard(&mut self, seg: &Segment) -> bool {
        let before = self.sacked.len_from(self.snd_una);
        for b in seg.sack.as_slice() {
            let (Some(l), Some(r)) = (
                b.left.to_position(self.iss, self.snd_una),
                b.right.to_position(self.iss, self.snd_una),
            ) else {
                continue;
            };
            // Blocks below snd_una are D-SACKs (RFC 2883), which weft does not use; blocks past
            // what was sent are bogus.
            if l < r && l >= self.snd_una && r <= self.snd_max {
                self.sacked.insert(l, r);
            }
        }
        self.sacked.len_from(self.snd_una) > before
    }

    /// RFC 6675 IsLost as a boundary: every unSACKed position below it is lost, because more
    /// than (DupThresh - 1) * SMSS bytes, or DupThresh separate ranges, are SACKed above it.
    /// `snd_una` when nothing is.
    pub(super) fn lost_boundary(&self) -> u64 {
        let limit = u64::from(self.cfg.dup_thresh.saturating_sub(1)) * self.win.mss;
        let mut bytes = 0;
        let mut count = 0;
        for (s, e) in self.sacked.iter().rev() {
            bytes += e - s;
            count += 1;
            if bytes > limit || count >= self.cfg.dup_thresh {
                return s.max(self.snd_una);
            }
        }
        self.snd_una
    }

    /// RFC 6675 SetPipe: the bytes the sender believes are in the network.
    pub(super) fn pipe(&self) -> u64 {
        let lost = self.lost_boundary();
        let unsacked = |a: u64, b: u64| {
            if a < b {
                (b - a) - self.sacked.len_within(a, b)
            } else {
                0
            }
        };
        let counted =
            unsacked(lost, self.snd_max) + unsacked(self.snd_una, self.high_rxt.min(self.snd_max));
        // A retransmission found lost is no longer in the network.
        let gone: u64 = self
            .relost
            .iter()
            .map(|(s, e)| {
                let s = s.max(self.snd_una);
                unsacked(s, e.min(self.high_rxt)) + unsacked(s.max(lost), e)
            })
            .sum();
        counted.saturating_sub(gone)
    }
}
