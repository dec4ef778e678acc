//! What a connection is configured with: segment size, buffers, options offered, congestion
//! control, timers. [`Config::default`] is a 1995 BSD-derived stack; [`Config::linux`] a modern
//! Linux one.

use super::cc::CcAlgorithm;
use super::rto::RtoConfig;
use crate::time::Duration;

/// The largest window the 16-bit window field carries without scaling, bytes.
pub const MAX_UNSCALED_WINDOW: u32 = 65_535;
/// The largest window-scale shift (RFC 7323 section 2.3).
pub const MAX_WINDOW_SCALE: u8 = 14;
/// The MSS a host assumes of a peer that sends no MSS option, and the one 1995 stacks used
/// toward any destination not on a directly attached network (RFC 1122 section 4.2.2.6;
/// RFC 879), bytes.
pub const DEFAULT_MSS: u16 = 536;

/// A connection's configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// The largest payload this end sends in one segment, and the MSS option it offers, bytes.
    /// The segment size used is the smaller of this and the peer's option (536 without one).
    pub mss: u16,
    /// Send buffer (SO_SNDBUF), bytes: the application's data not yet acknowledged, sent or not,
    /// never exceeds it, so it also bounds the bytes in flight.
    pub send_buffer: u32,
    /// Receive buffer (SO_RCVBUF), bytes: the advertised window is its free space, and without
    /// window scaling at most 65,535 (the 1995 clamp).
    pub recv_buffer: u32,
    /// Window scaling: `None` offers no option (1995 semantics: windows above 64 KiB are
    /// clamped); `Some(shift)` offers RFC 7323 scaling with that shift, which takes effect only
    /// if the peer offers it too. `Some(0)` negotiates scaling without shifting.
    pub window_scale: Option<u8>,
    /// Offer SACK (RFC 2018); recovery follows RFC 6675 when both ends agree.
    pub sack: bool,
    /// Congestion control.
    pub cc: CcAlgorithm,
    /// Initial congestion window, segments (1 for 4.4BSD, up to 4 by RFC 3390, 10 for Linux).
    pub initial_window: u32,
    /// Initial slow-start threshold, bytes (`None`: arbitrarily high, RFC 5681; 4.4BSD and Linux
    /// can take one from the route).
    pub initial_ssthresh: Option<u64>,
    /// Grow the window by bytes acknowledged (RFC 3465, L = 2) rather than by ACKs counted.
    pub byte_counting: bool,
    /// Retransmission timer bounds and granularity.
    pub rto: RtoConfig,
    /// Delayed ACKs: `Some(d)` holds an ACK for in-order data up to `d` (4.4BSD: 200 ms,
    /// Linux: 40 ms minimum), `None` acknowledges every segment at once.
    pub delayed_ack: Option<Duration>,
    /// With delayed ACKs, acknowledge at once when this many full-sized segments are unacknowledged
    /// (RFC 1122 and RFC 5681: 2).
    pub ack_every: u32,
    /// Nagle's algorithm (RFC 896): hold a short segment while data is unacknowledged.
    pub nagle: bool,
    /// With `nagle`, hold a short segment only while an earlier short segment is
    /// unacknowledged (Minshall's variant, Linux's `tcp_minshall_check`), not while any data
    /// is: the last partial segment of a message then follows its full segments at once,
    /// where 4.4BSD's rule holds it until they are acknowledged (the Nagle and delayed-ACK
    /// stall of a multi-segment request).
    pub nagle_minshall: bool,
    /// Duplicate ACKs that trigger fast retransmit (RFC 5681: 3).
    pub dup_thresh: u32,
    /// Slow-start restart: after an idle period longer than the timeout, the window falls back to
    /// the initial window (RFC 5681 section 4.1; 4.4BSD does this).
    pub idle_restart: bool,
    /// Offer RFC 7323 timestamps; when both ends do, every segment carries them (12 option
    /// bytes, so each segment carries 12 payload bytes fewer, as Linux's) and a time-out whose
    /// original segment turns out to have arrived is detected and undone (Eifel detection,
    /// RFC 3522, with Linux's response: the window from before the time-out comes back).
    pub timestamps: bool,
    /// How long the side that closes first stays in TIME-WAIT (2 MSL: 4.4BSD 60 s, Linux 60 s).
    pub time_wait: Duration,
    /// Retransmissions of one segment before the connection gives up (4.4BSD: 12).
    pub max_retransmits: u32,
    /// Offer Explicit Congestion Notification (RFC 3168): when both SYNs agree, data segments
    /// go out ECN-capable ([`super::Connection::ecn_enabled`]), the receiver echoes the marks
    /// of queues on its ACKs, and the sender reduces its window once per window of data as it
    /// would for a loss, or with [`CcAlgorithm::Dctcp`] by DCTCP's fraction (RFC 8257).
    pub ecn: bool,
    /// Out-of-order ranges the receiver holds (and the sender's SACK scoreboard): beyond it a
    /// new hole's segment is dropped and must be sent again. Real stacks keep a list without a
    /// set limit; the default is high enough for any window weft simulates.
    pub max_ranges: usize,
}

impl Default for Config {
    /// A 1995 BSD-derived stack: MSS 536, 64 KiB buffers without window scaling or SACK, Reno,
    /// an initial window of one segment, 500 ms timer ticks and a 1 s minimum timeout, 200 ms
    /// delayed ACKs, Nagle on.
    fn default() -> Self {
        Config {
            mss: DEFAULT_MSS,
            send_buffer: 65_536,
            recv_buffer: 65_536,
            window_scale: None,
            sack: false,
            cc: CcAlgorithm::Reno,
            initial_window: 1,
            initial_ssthresh: None,
            byte_counting: false,
            rto: RtoConfig::BSD,
            delayed_ack: Some(Duration::from_millis(200)),
            ack_every: 2,
            nagle: true,
            nagle_minshall: false,
            dup_thresh: 3,
            idle_restart: true,
            timestamps: false,
            time_wait: Duration::from_secs(60),
            max_retransmits: 12,
            ecn: false,
            max_ranges: 1024,
        }
    }
}

impl Config {
    /// A modern Linux stack: MSS 1460, window scaling (shift 7), SACK, timestamps, CUBIC,
    /// initial window 10, byte counting, a 200 ms minimum timeout, 40 ms delayed ACKs, Nagle's
    /// rule as Linux applies it (Minshall's), 4 MiB buffers.
    pub fn linux() -> Self {
        Config {
            mss: 1460,
            send_buffer: 4 << 20,
            recv_buffer: 4 << 20,
            window_scale: Some(7),
            sack: true,
            cc: CcAlgorithm::Cubic,
            initial_window: 10,
            initial_ssthresh: None,
            byte_counting: true,
            rto: RtoConfig::LINUX,
            delayed_ack: Some(Duration::from_millis(40)),
            ack_every: 2,
            nagle: true,
            nagle_minshall: true,
            dup_thresh: 3,
            idle_restart: true,
            // net.ipv4.tcp_timestamps = 1: every segment carries 12 option bytes (4438-byte
            // segments at MTU 4490, as captured from Linux on the emulator), and time-outs
            // a queue caused are undone.
            timestamps: true,
            time_wait: Duration::from_secs(60),
            max_retransmits: 15,
            // net.ipv4.tcp_ecn = 2: answers ECN when asked, never asks.
            ecn: false,
            max_ranges: 1024,
        }
    }

    /// The window-scale shift this end would use for its receive window if scaling is agreed:
    /// the configured one, at most 14.
    pub(crate) fn offered_scale(&self) -> Option<u8> {
        self.window_scale.map(|s| s.min(MAX_WINDOW_SCALE))
    }
}
