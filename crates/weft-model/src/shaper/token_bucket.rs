//! A token bucket for frames of any size: tokens (bytes) accrue at a rate up to a depth.

use crate::time::Instant;
use crate::units::{Rate, Size};

/// Token bucket with exact integer accounting: tokens are kept in bit-nanoseconds over 8e9
/// (bytes * 8 * 1e9 / rate units), so no rounding accumulates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TokenBucket {
    rate: Rate,
    depth: Size,
    /// Tokens, in bytes times 8e9 (so that rate * elapsed ns adds exactly).
    tokens: u128,
    last: Instant,
}

const SCALE: u128 = 8 * 1_000_000_000;

impl TokenBucket {
    /// A full bucket of `depth` bytes refilled at `rate`.
    pub fn new(rate: Rate, depth: Size) -> Self {
        TokenBucket {
            rate,
            depth,
            tokens: u128::from(depth.as_bytes()) * SCALE,
            last: Instant::ZERO,
        }
    }

    fn refill(&mut self, now: Instant) {
        if now > self.last {
            let add = u128::from(self.rate.as_bps()) * u128::from((now - self.last).as_nanos());
            self.tokens = (self.tokens + add).min(u128::from(self.depth.as_bytes()) * SCALE);
            self.last = now;
        }
    }

    /// Takes `bytes` of tokens at `now` if there are enough; true if the frame conforms.
    pub fn police(&mut self, now: Instant, bytes: usize) -> bool {
        self.refill(now);
        let need = bytes as u128 * SCALE;
        if self.tokens >= need {
            self.tokens -= need;
            true
        } else {
            false
        }
    }

    /// Whole bytes of tokens available at `now`.
    pub fn available(&mut self, now: Instant) -> Size {
        self.refill(now);
        Size((self.tokens / SCALE) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_limits_burst_and_rate() {
        let mut b = TokenBucket::new(Rate::mbps(8), Size(3000)); // 1 byte per microsecond
        assert!(b.police(Instant(0), 1500));
        assert!(b.police(Instant(0), 1500));
        assert!(!b.police(Instant(0), 1));
        assert!(!b.police(Instant(999_000), 1000));
        assert!(b.police(Instant(1_000_000), 1000));
        assert_eq!(b.available(Instant(100_000_000)), Size(3000));
    }
}
