//! What a bulk sink makes of one sender's datagrams, sans-IO: their sequence numbers and send
//! times in; loss, duplicates, reordering and RFC 3550 interarrival jitter out (what iperf3
//! reports of a UDP test).
//!
//! Loss is only known at the end, from the sender's count: `lost = expected - distinct
//! received`. A datagram is *reordered* when it arrives after one with a higher sequence
//! number, and a *duplicate* when its sequence number was already received. Duplicates are
//! told apart from late arrivals within a window of the last [`WINDOW`] sequence numbers; older
//! late arrivals are counted as reordered (and, if they were in fact duplicates, would make
//! `received` one too high, which [`DatagramStats::lost`] clamps at zero).
//!
//! Jitter follows RFC 3550 §6.4.1: with transit `D = arrival - send` (different clocks: only
//! differences matter), `J += (|D_i - D_{i-1}| - J) / 16`, over datagrams in arrival order that
//! carry their send time.

use crate::time::Instant;

/// How many recent sequence numbers are remembered to tell duplicates from late arrivals.
pub const WINDOW: u64 = 1 << 16;

/// The accounting of one sender's datagrams.
#[derive(Clone, Debug)]
pub struct DatagramStats {
    /// Highest sequence number seen plus one (0 before the first datagram).
    next: u64,
    /// Bitmap of sequence numbers `next - WINDOW .. next` that were received, bit `seq %
    /// WINDOW`; it grows to its [`WINDOW`] bits as sequence numbers reach them (a short
    /// stream, as most of a simulation's, keeps a short one).
    seen: Vec<u64>,
    received: u64,
    duplicates: u64,
    reordered: u64,
    last_transit: Option<i128>,
    jitter: f64,
}

impl Default for DatagramStats {
    fn default() -> Self {
        DatagramStats {
            next: 0,
            seen: Vec::new(),
            received: 0,
            duplicates: 0,
            reordered: 0,
            last_transit: None,
            jitter: 0.0,
        }
    }
}

impl DatagramStats {
    fn bit(&mut self, seq: u64) -> (&mut u64, u64) {
        let i = (seq % WINDOW) as usize;
        if i / 64 >= self.seen.len() {
            self.seen.resize(i / 64 + 1, 0);
        }
        (&mut self.seen[i / 64], 1u64 << (i % 64))
    }

    /// Accounts datagram `seq`, sent at `sent` (ns on the sender's clock, if it carries it)
    /// and received at `now` (on ours).
    pub fn on_datagram(&mut self, seq: u64, sent: Option<u64>, now: Instant) {
        if let Some(sent) = sent {
            let transit = i128::from(now.0) - i128::from(sent);
            if let Some(prev) = self.last_transit {
                let d = (transit - prev).unsigned_abs() as f64;
                self.jitter += (d - self.jitter) / 16.0;
            }
            self.last_transit = Some(transit);
        }
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

    /// Datagrams lost of the `expected` the sender says it sent.
    pub fn lost(&self, expected: u64) -> u64 {
        expected.saturating_sub(self.received)
    }

    /// Extra copies received.
    pub fn duplicates(&self) -> u64 {
        self.duplicates
    }

    /// Datagrams that arrived after one with a higher sequence number.
    pub fn reordered(&self) -> u64 {
        self.reordered
    }

    /// RFC 3550 interarrival jitter so far, ns (0 without send times).
    pub fn jitter_ns(&self) -> f64 {
        self.jitter
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(seqs: &[u64]) -> DatagramStats {
        let mut s = DatagramStats::default();
        for &q in seqs {
            s.on_datagram(q, Some(q * 1000), Instant(q * 1000 + 50));
        }
        s
    }

    #[test]
    fn an_in_order_stream_has_no_loss_and_no_jitter() {
        let s = run(&[0, 1, 2, 3, 4]);
        let c = (s.received(), s.lost(5), s.duplicates(), s.reordered());
        assert_eq!(c, (5, 0, 0, 0));
        assert_eq!(s.jitter_ns(), 0.0);
    }

    #[test]
    fn gaps_are_loss_late_arrivals_reordering_repeats_duplicates() {
        assert_eq!(run(&[0, 2]).missing(), 1);
        assert_eq!(run(&[0, 2, 1]).missing(), 0);
        let s = run(&[0, 2, 1, 1, 5, 2]);
        assert_eq!(s.received(), 4); // 0 1 2 5
        assert_eq!(s.lost(7), 3); // 3 4 6
        assert_eq!(s.duplicates(), 2);
        assert_eq!(s.reordered(), 1);
    }

    #[test]
    fn duplicates_are_told_across_a_long_run_and_window_reuse() {
        let mut s = DatagramStats::default();
        for q in 0..3 * WINDOW {
            s.on_datagram(q, None, Instant::ZERO);
        }
        s.on_datagram(3 * WINDOW - 10, None, Instant::ZERO);
        assert_eq!(s.duplicates(), 1);
        // A jump past the window clears it: an old number is then late, not a duplicate.
        s.on_datagram(10 * WINDOW, None, Instant::ZERO);
        s.on_datagram(10 * WINDOW - 5, None, Instant::ZERO);
        assert_eq!((s.duplicates(), s.reordered()), (1, 1));
    }

    #[test]
    fn jitter_follows_rfc3550_over_the_datagrams_that_carry_a_send_time() {
        let mut s = DatagramStats::default();
        // Transit 0, then 160 ns: J = 160/16 = 10; then back to 0: J = 10 + (160-10)/16.
        s.on_datagram(0, Some(0), Instant(0));
        s.on_datagram(1, Some(1000), Instant(1160));
        assert!((s.jitter_ns() - 10.0).abs() < 1e-9);
        s.on_datagram(2, None, Instant(5000));
        assert!(
            (s.jitter_ns() - 10.0).abs() < 1e-9,
            "no send time: no jitter"
        );
        s.on_datagram(3, Some(2000), Instant(2000));
        assert!((s.jitter_ns() - (10.0 + 150.0 / 16.0)).abs() < 1e-9);
    }
}
