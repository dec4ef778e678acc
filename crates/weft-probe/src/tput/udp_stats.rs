//! UDP receive accounting, sans-IO: sequence numbers and send times in, loss, duplicates,
//! reordering and RFC 3550 interarrival jitter out.
//!
//! Loss is only known at the end, from the sender's count: `lost = expected - distinct received`.
//! A datagram is *reordered* when it arrives after one with a higher sequence number, and a
//! *duplicate* when its sequence number was already received. Duplicates are told apart from late
//! arrivals within a window of the last [`WINDOW`] sequence numbers; older late arrivals are
//! counted as reordered (and, if they were in fact duplicates, would make `received` one too
//! high, which `lost` clamps at zero).
//!
//! Jitter follows RFC 3550 §6.4.1: with transit `D = arrival - send` (different clocks: only
//! differences matter), `J += (|D_i - D_{i-1}| - J) / 16`, over datagrams in arrival order.

use crate::proto::UdpCounts;

/// How many recent sequence numbers are remembered to tell duplicates from late arrivals.
pub const WINDOW: u64 = 1 << 16;

/// Receive-side accounting of one UDP stream.
#[derive(Clone, Debug)]
pub struct UdpRecvStats {
    /// Highest sequence number seen plus one (0 before the first datagram).
    next: u64,
    /// Bitmap of sequence numbers `next - WINDOW .. next` that were received.
    seen: Vec<u64>,
    received: u64,
    duplicates: u64,
    reordered: u64,
    last_transit: Option<i128>,
    jitter: f64,
}

impl Default for UdpRecvStats {
    fn default() -> Self {
        UdpRecvStats {
            next: 0,
            seen: vec![0; (WINDOW / 64) as usize],
            received: 0,
            duplicates: 0,
            reordered: 0,
            last_transit: None,
            jitter: 0.0,
        }
    }
}

impl UdpRecvStats {
    fn bit(&mut self, seq: u64) -> (&mut u64, u64) {
        let i = (seq % WINDOW) as usize;
        let len = self.seen.len();
        (&mut self.seen[(i / 64) % len], 1u64 << (i % 64))
    }

    /// Accounts one datagram with sequence number `seq`, sent at `send_ns` on the sender's clock
    /// and received at `recv_ns` on ours.
    pub fn on_datagram(&mut self, seq: u64, send_ns: u64, recv_ns: u64) {
        let transit = i128::from(recv_ns) - i128::from(send_ns);
        if let Some(prev) = self.last_transit {
            let d = (transit - prev).unsigned_abs() as f64;
            self.jitter += (d - self.jitter) / 16.0;
        }
        self.last_transit = Some(transit);

        if seq >= self.next {
            // Forget the bits of sequence numbers that fall out of the window.
            let advance = seq + 1 - self.next;
            if advance >= WINDOW {
                self.seen.iter_mut().for_each(|w| *w = 0);
            } else {
                for s in self.next..=seq {
                    let (w, b) = self.bit(s);
                    *w &= !b;
                }
            }
            self.next = seq + 1;
            let (w, b) = self.bit(seq);
            *w |= b;
            self.received += 1;
        } else if self.next - seq <= WINDOW {
            let (w, b) = self.bit(seq);
            if *w & b != 0 {
                self.duplicates += 1;
            } else {
                *w |= b;
                self.received += 1;
                self.reordered += 1;
            }
        } else {
            self.received += 1;
            self.reordered += 1;
        }
    }

    /// Distinct datagrams received so far.
    pub fn received(&self) -> u64 {
        self.received
    }

    /// Datagrams missing so far: sequence numbers below the highest seen that have not
    /// arrived (some may still arrive late). For per-interval loss estimates.
    pub fn missing(&self) -> u64 {
        self.next.saturating_sub(self.received)
    }

    /// The final counts given the sender's count `expected`.
    pub fn counts(&self, expected: u64) -> UdpCounts {
        UdpCounts {
            expected,
            received: self.received,
            lost: expected.saturating_sub(self.received),
            duplicates: self.duplicates,
            reordered: self.reordered,
            jitter_ns: self.jitter,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(seqs: &[u64]) -> UdpRecvStats {
        let mut s = UdpRecvStats::default();
        for &q in seqs {
            s.on_datagram(q, q * 1000, q * 1000 + 50);
        }
        s
    }

    #[test]
    fn in_order_stream_has_no_loss_and_no_jitter() {
        let s = run(&[0, 1, 2, 3, 4]);
        let c = s.counts(5);
        assert_eq!(
            (c.received, c.lost, c.duplicates, c.reordered),
            (5, 0, 0, 0)
        );
        assert_eq!(c.jitter_ns, 0.0);
    }

    #[test]
    fn gaps_are_loss_late_arrivals_reordering_repeats_duplicates() {
        assert_eq!(run(&[0, 2]).missing(), 1);
        assert_eq!(run(&[0, 2, 1]).missing(), 0);
        let s = run(&[0, 2, 1, 1, 5, 2]);
        let c = s.counts(7);
        assert_eq!(c.received, 4); // 0 1 2 5
        assert_eq!(c.lost, 3); // 3 4 6
        assert_eq!(c.duplicates, 2);
        assert_eq!(c.reordered, 1);
    }

    #[test]
    fn duplicates_detected_across_a_long_run_and_window_reuse() {
        let mut s = UdpRecvStats::default();
        for q in 0..3 * WINDOW {
            s.on_datagram(q, 0, 0);
        }
        s.on_datagram(3 * WINDOW - 10, 0, 0);
        assert_eq!(s.counts(3 * WINDOW).duplicates, 1);
        // A jump past the window clears it: an old number is then late, not duplicate.
        s.on_datagram(10 * WINDOW, 0, 0);
        s.on_datagram(10 * WINDOW - 5, 0, 0);
        let c = s.counts(10 * WINDOW + 1);
        assert_eq!(c.duplicates, 1);
        assert_eq!(c.reordered, 1);
    }

    #[test]
    fn jitter_follows_rfc3550() {
        let mut s = UdpRecvStats::default();
        // Transit 0, then 160 ns: J = 160/16 = 10; then back to 0: J = 10 + (160-10)/16.
        s.on_datagram(0, 0, 0);
        s.on_datagram(1, 1000, 1160);
        assert!((s.counts(2).jitter_ns - 10.0).abs() < 1e-9);
        s.on_datagram(2, 2000, 2000);
        assert!((s.counts(3).jitter_ns - (10.0 + 150.0 / 16.0)).abs() < 1e-9);
    }
}
