//! Windows and round trips: the bandwidth-delay product, the window a rate needs, the rate a
//! window allows, and the bound on a bulk transfer that is the smaller of window and link.

use serde::Serialize;

use crate::tech::{CELL_BYTES, CELL_PAYLOAD_BYTES, Tech, TechError, Transport};
use crate::time::Duration;
use crate::units::{Rate, Size};

/// Bytes in flight to keep `rate` busy over `rtt`: rate * rtt / 8, rounded up.
pub fn bdp(rate: Rate, rtt: Duration) -> Size {
    let bits = rate.0 as u128 * rtt.0 as u128;
    Size(bits.div_ceil(8 * 1_000_000_000) as u64)
}

/// The rate a window of `window` bytes allows over `rtt`: window * 8 / rtt, bits/s, rounded down
/// (zero RTT gives `u64::MAX`).
pub fn window_rate(window: Size, rtt: Duration) -> Rate {
    if rtt.0 == 0 {
        return Rate(u64::MAX);
    }
    Rate((window.0 as u128 * 8 * 1_000_000_000 / rtt.0 as u128).min(u64::MAX as u128) as u64)
}

/// What limits a bulk transfer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Limit {
    /// The window: fewer bytes in flight than the path holds.
    Window,
    /// The bottleneck link's payload rate.
    Link,
}

/// The closed-form bound on one bulk TCP (or windowed) transfer.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TransferBound {
    /// Window, bytes.
    pub window: u64,
    /// Round-trip time, ns.
    pub rtt_ns: u64,
    /// Path MTU (IP datagram size used), bytes.
    pub mtu: u64,
    /// Bottleneck link payload rate for that datagram size, bits/s.
    pub link_bps: u64,
    /// The window's rate over the RTT, bits/s.
    pub window_bps: u64,
    /// The smaller of the two, bits/s.
    pub bound_bps: u64,
    /// Which one it is.
    pub limit: Limit,
    /// Window needed to reach the link rate over this RTT, bytes.
    pub window_needed: u64,
    /// The bound in KiB/s (ttcp's unit).
    pub payload_kib_s: f64,
    /// Bottleneck utilisation as the cell (or frame) rate the payload occupies over the link rate.
    pub utilisation: f64,
}

impl TransferBound {
    /// The bound for `window` bytes over `rtt` through `bottleneck` with datagrams of `mtu` bytes.
    pub fn new(
        bottleneck: &Tech,
        mtu: u64,
        transport: Transport,
        window: Size,
        rtt: Duration,
    ) -> Result<TransferBound, TechError> {
        let link = bottleneck.goodput(mtu, transport)?;
        let win = window_rate(window, rtt);
        let (bound, limit) = if win < link {
            (win, Limit::Window)
        } else {
            (link, Limit::Link)
        };
        let payload = mtu - transport.header_bytes();
        let wire = bottleneck.wire_bytes(mtu);
        Ok(TransferBound {
            window: window.0,
            rtt_ns: rtt.0,
            mtu,
            link_bps: link.0,
            window_bps: win.0,
            bound_bps: bound.0,
            limit,
            window_needed: bdp(link, rtt).0,
            payload_kib_s: bound.0 as f64 / 8.0 / 1024.0,
            utilisation: bound.0 as f64 * wire as f64 / payload as f64 / bottleneck.rate.0 as f64,
        })
    }
}

/// The window a TCP sender keeps in flight and the time one window takes to come back, for a
/// window-limited transfer of datagrams of `mtu` bytes through `bottleneck`:
/// `(window, round)`. A receiver that acknowledges every `ack_every`-th segment
/// ([`crate::tcp::Config::ack_every`], delayed ACKs) sends the first ACK of a window only when
/// that many segments have crossed the bottleneck, so a round is the round trip plus
/// `ack_every` segment times there (the EBN study's 4450-byte segments on its E3 path: 17 ms +
/// 2 x 1.2 ms). With `whole_segments` (the 1995 BSD sender, which sends whole segments only
/// while data is outstanding: Nagle; a partial one only when it is half the peer's window) the
/// window is the whole segments that fit: 64 KiB at MSS 4450 is 14 segments, 62300 bytes.
pub fn ack_clocked(
    bottleneck: &Tech,
    mtu: u64,
    transport: Transport,
    window: Size,
    rtt: Duration,
    whole_segments: bool,
) -> (Size, Duration) {
    let mss = mtu.saturating_sub(transport.header_bytes()).max(1);
    let window = if whole_segments && window.0 >= mss {
        Size(window.0 / mss * mss)
    } else {
        window
    };
    let ack_every = u64::from(crate::tcp::Config::default().ack_every.max(1));
    let segment = bottleneck.wire_time(mtu);
    (window, Duration(rtt.0 + ack_every * segment.0))
}

/// The DHPC EBN paper's (002) 'Mbps' for a ttcp rate in KiB/s: the cell-stream rate the payload
/// occupies, KiB/s * 8 * 1.024 * 53/48 / 1000 (figures.toml, `dhpc_ebn.runs`).
pub fn ebn_paper_mbps(payload_kib_s: f64) -> f64 {
    payload_kib_s * 8.0 * 1.024 * CELL_BYTES as f64 / CELL_PAYLOAD_BYTES as f64 / 1000.0
}

/// The round-trip time at which `window` bytes give `payload_kib_s`: window / rate.
pub fn implied_rtt(window: Size, payload_kib_s: f64) -> Option<Duration> {
    (payload_kib_s > 0.0)
        .then(|| Duration::from_secs_f64(window.0 as f64 / (payload_kib_s * 1024.0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bdp_and_window_rate_are_inverse() {
        let rtt = Duration::from_millis(17);
        assert_eq!(bdp(Rate::mbps(26), rtt), Size(55_250));
        assert_eq!(window_rate(Size(55_250), rtt), Rate::mbps(26));
        // The EBN default window of 35600 B over 17 ms: 16.75 Mbit/s.
        assert_eq!(window_rate(Size(35_600), rtt), Rate(16_752_941));
    }

    #[test]
    fn paper_unit_conversion() {
        assert!((ebn_paper_mbps(1840.0) - 16.64).abs() < 0.01);
        assert!((ebn_paper_mbps(3575.0) - 32.34).abs() < 0.01);
    }
}
