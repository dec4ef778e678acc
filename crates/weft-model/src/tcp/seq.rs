//! Sequence numbers: the 32-bit wrapping numbers of the wire, and their translation to the
//! connection's 64-bit positions.
//!
//! Inside a [`Connection`](super::Connection) every position is a `u64` counted from the
//! initial sequence number (the SYN is position 0, the first data byte position 1), so that
//! comparisons never wrap and a stream of more than 4 GiB keeps unambiguous offsets. Only the
//! wire carries [`SeqNum`]s; [`SeqNum::to_position`] maps one back to the position nearest a
//! reference the connection already knows (as QUIC decodes packet numbers).

use std::cmp::Ordering;
use std::fmt;

/// A TCP sequence or acknowledgement number as it appears on the wire: 32 bits, compared modulo
/// 2^32 (RFC 793 section 3.3; RFC 1982 serial number arithmetic).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SeqNum(pub u32);

impl SeqNum {
    /// The number `n` further on, wrapping.
    #[inline]
    pub const fn add(self, n: u32) -> SeqNum {
        SeqNum(self.0.wrapping_add(n))
    }

    /// The signed distance from `other` to `self` (positive when `self` is later); meaningful
    /// while the two are less than 2^31 apart.
    #[inline]
    pub const fn since(self, other: SeqNum) -> i32 {
        self.0.wrapping_sub(other.0) as i32
    }

    /// The number for `position` on a connection whose initial sequence number is `iss`.
    #[inline]
    pub const fn at(iss: SeqNum, position: u64) -> SeqNum {
        SeqNum(iss.0.wrapping_add(position as u32))
    }

    /// The position this number stands for on a connection with initial sequence number `iss`,
    /// choosing the one within 2^31 of `near` (a position the caller already knows, such as the
    /// oldest unacknowledged byte). `None` if that would lie before the SYN.
    #[inline]
    pub fn to_position(self, iss: SeqNum, near: u64) -> Option<u64> {
        let d = self.since(SeqNum::at(iss, near)) as i64;
        let p = near as i64 + d;
        (p >= 0).then_some(p as u64)
    }
}

impl PartialOrd for SeqNum {
    /// Orders by serial-number arithmetic; two numbers exactly 2^31 apart compare as unordered
    /// only in RFC 1982, here the later one is the one `since` calls positive.
    fn partial_cmp(&self, other: &SeqNum) -> Option<Ordering> {
        Some(self.since(*other).cmp(&0))
    }
}

impl fmt::Display for SeqNum {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compares_across_the_wrap() {
        let a = SeqNum(u32::MAX - 10);
        let b = a.add(20);
        assert_eq!(b, SeqNum(9));
        assert!(a < b);
        assert!(b > a);
        assert_eq!(b.since(a), 20);
        assert_eq!(a.since(b), -20);
    }

    #[test]
    fn positions_survive_many_wraps() {
        let iss = SeqNum(0xffff_fff0);
        for &pos in &[
            0u64,
            1,
            15,
            16,
            17,
            1 << 32,
            (5 << 32) + 12345,
            u32::MAX as u64 * 7,
        ] {
            let s = SeqNum::at(iss, pos);
            // Any reference within 2^31 recovers the position.
            for near in [pos.saturating_sub(1 << 30), pos, pos + (1 << 30)] {
                assert_eq!(s.to_position(iss, near), Some(pos), "pos {pos} near {near}");
            }
        }
        // A number just before the SYN has no position.
        assert_eq!(iss.add(u32::MAX).to_position(iss, 0), None);
    }
}
