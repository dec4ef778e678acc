//! Windows and round trips: the bandwidth-delay product, the window a rate needs, the rate a
//! window allows, and the bound on a bulk transfer that is the smaller of window and link.

use serde::Serialize;

use crate::host::{Direction, HostCosts};
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

/// The hosts at the two ends of a window-limited TCP transfer, whose paths lengthen each round
/// of the window ([`ack_clocked`]): the sender's send path and the receiver's receive path (their
/// [`HostCosts`]; [`HostCosts::FREE`] for an end without a cost model).
#[derive(Clone, Copy, Debug)]
pub struct RoundHosts<'a> {
    /// The sending host.
    pub sender: &'a HostCosts,
    /// The receiving host.
    pub receiver: &'a HostCosts,
    /// Bytes the sending application writes per call (ttcp's and FTP's 8 KiB).
    pub call: u64,
}

/// The segments a window of `window` bytes leaves in: `mss` bytes, or the whole window when it
/// is smaller, or two halves of a window of up to two segments (BSD's sender sends a partial
/// segment at once when it is at least half the peer's window: a 16 KB window of 8 KB writes
/// leaves as two 8 KB segments).
pub fn segment_bytes(window: u64, mss: u64) -> u64 {
    let mss = mss.max(1);
    if window > 2 * mss {
        mss
    } else if window > mss {
        window.div_ceil(2)
    } else {
        window.max(1)
    }
}

/// The bytes the receiver's acknowledgement of a window waits for: `ack_every` segments
/// ([`crate::tcp::Config::ack_every`], delayed ACKs; [`segment_bytes`]), or fewer when reading
/// fewer opens half its buffer (BSD's window update: a window of two segments or less is
/// acknowledged one segment at a time), never more than the window.
pub fn ack_unit(window: u64, mss: u64, ack_every: u64) -> u64 {
    let seg = segment_bytes(window, mss);
    let to_half = (window / 2).div_ceil(seg).max(1);
    (ack_every.max(1).min(to_half) * seg).min(window)
}

/// The hosts' share of one round of a window whose acknowledgement waits for `unit` bytes
/// ([`ack_unit`]) and lets the sender send `sent` bytes, in segments of `mss`: the sender's send
/// path for `sent` bytes (its calls of [`RoundHosts::call`] bytes, its segments, the bytes) with
/// the acknowledgement's receive work, and the receiver's receive path for `unit` bytes (their
/// segments, one read call, the bytes) with the acknowledgement's send work; and each end's
/// wakeup from idle ([`HostCosts::wakeup_ns`]), its process blocked every round. The send
/// buffer is the window, so the sender copies each byte in only once the acknowledgement that
/// makes its room has come back.
pub fn hosts_time(hosts: &RoundHosts<'_>, sent: u64, unit: u64, mss: u64) -> Duration {
    let mss = mss.max(1);
    let (tx, rx) = (hosts.sender, hosts.receiver);
    let sender = tx.cost(
        Direction::Send,
        sent,
        sent.div_ceil(mss),
        sent.div_ceil(hosts.call.max(1)),
    ) + tx.cost(Direction::Receive, 0, 1, 0)
        + tx.wakeup();
    let receiver = rx.cost(Direction::Receive, unit, unit.div_ceil(mss), 1)
        + rx.cost(Direction::Send, 0, 1, 0)
        + rx.wakeup();
    sender + receiver
}

/// The window a TCP sender keeps in flight and the time one window takes to come back, for a
/// window-limited transfer of datagrams of `mtu` bytes through `bottleneck`:
/// `(window, round)`. A receiver that acknowledges every `ack_every`-th segment
/// ([`crate::tcp::Config::ack_every`], delayed ACKs) sends the first ACK of a window only when
/// that many segments have crossed the bottleneck ([`ack_unit`]: fewer for a window of two
/// segments or less), so a round is the round trip plus those segments' times there (the EBN
/// study's 4450-byte segments on its E3 path: 17 ms + 2 x 1.2 ms). With `hosts`, the round
/// also waits for the hosts' paths ([`hosts_time`]): the receiver's for the bytes it
/// acknowledges, the sender's for what it sends on each acknowledgement: `ack_every` segments,
/// or the whole window when it is no larger (the simulator's bulk host sends after its
/// application's turn, which copies whatever room the acknowledgements have made: SunOS's 16 KB
/// window leaves as two 8 KB blocks together). 8 KiB from RIACS's Sparc 2 (psyche, 354 ns a
/// byte) into Solaris 2.3's 8 KB window on chips takes 2.9 ms to send and 1.0 ms to read,
/// against a round trip of 0.8 ms and 0.7 ms on TAXI: 12.1 Mbit/s, not 26.8. With `whole_segments` (the 1995 BSD sender, which sends
/// whole segments only while data is outstanding: Nagle; a partial one only when it is half
/// the peer's window) the window is the whole segments that fit: 64 KiB at MSS 4450 is 14
/// segments, 62300 bytes; a window of two segments or less goes whole, in two halves
/// ([`segment_bytes`]).
pub fn ack_clocked(
    bottleneck: &Tech,
    mtu: u64,
    transport: Transport,
    window: Size,
    rtt: Duration,
    whole_segments: bool,
    hosts: Option<&RoundHosts<'_>>,
) -> (Size, Duration) {
    let headers = transport.header_bytes();
    let mss = mtu.saturating_sub(headers).max(1);
    let window = if whole_segments && window.0 > 2 * mss {
        Size(window.0 / mss * mss)
    } else {
        window
    };
    let ack_every = u64::from(crate::tcp::Config::default().ack_every.max(1));
    let unit = ack_unit(window.0, mss, ack_every);
    let (full, part) = (unit / mss, unit % mss);
    let mut wire = Duration(full * bottleneck.wire_time(mtu).0);
    if part > 0 {
        wire += bottleneck.wire_time(part + headers);
    }
    let sent = window.0.min(ack_every * mss);
    let hosts = hosts.map_or(Duration::ZERO, |h| hosts_time(h, sent, unit, mss));
    (window, rtt + wire + hosts)
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

    /// A window of one segment is acknowledged when it has been read, so its round is the
    /// round trip, that segment's time on the bottleneck and each host's path for the window:
    /// 8 KiB from RIACS's psyche (354 ns a byte) into Solaris 2.3's 8 KB window on chips (a 427
    /// us read call and 65 ns a byte) over TAXI, 0.82 ms round trip. Without the hosts' time
    /// the round is the 1.55 ms of the network alone (42 Mbit/s, not 12).
    #[test]
    fn a_window_of_one_segment_waits_for_both_hosts_paths() {
        let taxi = Tech::preset("taxi100").unwrap();
        let tcp = Transport::Tcp { options: 0 };
        let (psyche, chips) = (
            crate::host::presets::riacs_psyche(),
            crate::host::presets::sparc20_m50_solaris23(),
        );
        let hosts = RoundHosts {
            sender: &psyche,
            receiver: &chips,
            call: 8192,
        };
        let rtt = Duration::from_micros(820);
        let (w, round) = ack_clocked(&taxi, 9180, tcp, Size(8192), rtt, true, Some(&hosts));
        assert_eq!(w, Size(8192));
        let wire = taxi.wire_time(8192 + 40);
        let send = 8192.0 * psyche.per_byte_ns(Direction::Send);
        let read = chips.recv_call_ns + 8192.0 * chips.per_byte_ns(Direction::Receive);
        let want = rtt.0 as f64 + wire.0 as f64 + send + read;
        assert!((round.0 as f64 - want).abs() < 2.0, "{round:?} {want}");
        let mbps = window_rate(w, round).as_mbps_f64();
        assert!((mbps - 12.13).abs() < 0.01, "{mbps}");
        // The network alone: one segment's time, not the two a delayed ACK waits for when the
        // window holds them.
        let (_, alone) = ack_clocked(&taxi, 9180, tcp, Size(8192), rtt, true, None);
        assert_eq!(alone, rtt + wire);
    }

    /// The bytes an acknowledgement waits for: two segments of a large window; one of a window
    /// of two segments or less (reading it opens half the buffer), which leaves in two halves;
    /// a window smaller than a segment whole.
    #[test]
    fn ack_unit_is_two_segments_or_half_the_window() {
        assert_eq!(ack_unit(65_536, 4450, 2), 8900);
        assert_eq!(ack_unit(4 * 4450, 4450, 2), 8900);
        assert_eq!(ack_unit(16_384, 9140, 2), 8192);
        assert_eq!(ack_unit(8192, 9140, 2), 8192);
        assert_eq!(ack_unit(0, 9140, 2), 0);
    }

    #[test]
    fn paper_unit_conversion() {
        assert!((ebn_paper_mbps(1840.0) - 16.64).abs() < 0.01);
        assert!((ebn_paper_mbps(3575.0) - 32.34).abs() < 0.01);
    }
}
