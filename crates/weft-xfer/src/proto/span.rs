//! The rate a round's datagrams travelled at, measured over the whole session.
//!
//! A buffer's round is interleaved with other buffers' datagrams (retransmissions of earlier
//! buffers, the next buffer's blast), so its own bytes over its own span understate what the path
//! carried. [`RoundSpan`] instead notes the session's running byte count at the round's first and
//! last datagram: the rate is every byte of the session between those two instants.

use weft_model::{Instant, Rate};

/// The first and last datagram of a round, each with the session's running byte count after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RoundSpan {
    first: Option<(Instant, u64)>,
    last: (Instant, u64),
}

impl RoundSpan {
    /// An empty span (no datagram yet).
    pub(crate) const EMPTY: RoundSpan = RoundSpan {
        first: None,
        last: (Instant::ZERO, 0),
    };

    /// Notes one of the round's datagrams at `now`; `total` is the session's byte count
    /// including it. The span's ends are the earliest and latest instants noted: the kernel's
    /// arrival times of datagrams read from several sockets in turn are not in order.
    pub(crate) fn note(&mut self, now: Instant, total: u64) {
        let first = self.first.get_or_insert((now, total));
        first.0 = first.0.min(now);
        self.last = (self.last.0.max(now), total);
    }

    /// When the first datagram was noted.
    pub(crate) fn start(&self) -> Option<Instant> {
        self.first.map(|(t, _)| t)
    }

    /// The session's rate between the first and the last datagram, bits/s (0: unknown, fewer
    /// than two instants). The first datagram's own bytes are left out: N datagrams span N - 1
    /// gaps.
    pub(crate) fn rate(&self) -> u64 {
        match self.first {
            Some((t0, b0)) if self.last.0 > t0 && self.last.1 > b0 => {
                Rate::from_bytes_over(self.last.1 - b0, self.last.0 - t0).as_bps()
            }
            _ => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_every_session_byte_between_first_and_last() {
        let mut s = RoundSpan::EMPTY;
        assert_eq!(s.rate(), 0);
        // The round's datagrams at 0 and 1 ms; 1000 bytes of other rounds went in between, and
        // the round's second datagram is 250 bytes: 1250 bytes in 1 ms = 10 Mbit/s.
        s.note(Instant(0), 500);
        assert_eq!(s.rate(), 0, "one instant says nothing");
        s.note(Instant(1_000_000), 1750);
        assert_eq!(s.rate(), 10_000_000);
        assert_eq!(s.start(), Some(Instant(0)));
    }
}
