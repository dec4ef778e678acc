//! The Mathis et al. (1997) bound on steady-state TCP throughput under random loss.

use serde::Serialize;

/// C for periodic loss with an ACK per segment: sqrt(3/2).
pub const C_PER_SEGMENT_ACK: f64 = 1.224_744_871_391_589;
/// C with delayed ACKs (one ACK every two segments): sqrt(3/4).
pub const C_DELAYED_ACK: f64 = 0.866_025_403_784_438_6;

/// The bound and its inputs.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Mathis {
    /// Segment payload, bytes.
    pub mss: u64,
    /// Round-trip time, seconds.
    pub rtt_s: f64,
    /// Loss probability per segment.
    pub loss: f64,
    /// The constant C.
    pub c: f64,
    /// MSS * 8 / RTT * C / sqrt(p), bits/s.
    pub rate_bps: f64,
}

impl Mathis {
    /// The bound rate = (MSS / RTT) * C / sqrt(p); with C = sqrt(3/2) this is
    /// MSS / (RTT * sqrt(2p/3)). `None` unless mss > 0, rtt > 0, 0 < p <= 1 and c > 0.
    pub fn new(mss: u64, rtt_s: f64, loss: f64, c: f64) -> Option<Mathis> {
        if mss == 0
            || rtt_s.is_nan()
            || rtt_s <= 0.0
            || loss.is_nan()
            || loss <= 0.0
            || loss > 1.0
            || c.is_nan()
            || c <= 0.0
        {
            return None;
        }
        Some(Mathis {
            mss,
            rtt_s,
            loss,
            c,
            rate_bps: mss as f64 * 8.0 / rtt_s * c / loss.sqrt(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_textbook_form() {
        let m = Mathis::new(1460, 0.1, 0.01, C_PER_SEGMENT_ACK).unwrap();
        let textbook = 1460.0 * 8.0 / (0.1 * (2.0 * 0.01 / 3.0f64).sqrt());
        assert!((m.rate_bps - textbook).abs() < 1e-6 * textbook);
        assert!(Mathis::new(1460, 0.1, 0.0, 1.0).is_none());
        assert!(Mathis::new(1460, 0.0, 0.1, 1.0).is_none());
    }
}
