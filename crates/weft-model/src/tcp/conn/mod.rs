//! The connection state machine: RFC 793's states, the send and receive sequence variables, the
//! congestion window, the timers.
//!
//! Call order for a driver each time it wakes at `now` (quinn-proto's shape):
//! 1. [`Connection::handle_segment`] for every segment that arrived, [`Connection::handle_timeout`]
//!    if [`Connection::poll_timeout`] has passed, and any application calls ([`Connection::send`],
//!    [`Connection::recv`], [`Connection::close`]);
//! 2. [`Connection::poll_transmit`] until it returns `None`, putting each segment on the wire;
//! 3. [`Connection::poll_timeout`] for when to wake next.
//!
//! A receiver acknowledges what it has when `poll_transmit` is called: segments handled with no
//! `poll_transmit` between them are acknowledged together, as a receiver that coalesces them
//! (GRO, interrupt batching) would. A driver that wants one ACK per segment (every second one
//! with delayed ACKs, RFC 1122) calls `poll_transmit` after each `handle_segment`; the test
//! harness and the Linux interoperability test do.
//!
//! The connection never reads a clock and never touches payload bytes: it counts them. The
//! application's data is a stream of positions; [`super::bytes::ByteConnection`] attaches real
//! bytes for tests and captures.

mod ack;
mod ecn;
mod input;
mod output;
mod sack;
mod timer;

use std::collections::VecDeque;

use super::cc::{CcAlgorithm, Controller, Window};
use super::config::{Config, DEFAULT_MSS, MAX_UNSCALED_WINDOW};
use super::ranges::RangeSet;
use super::rto::RttEstimator;
use super::segment::Segment;
use super::seq::SeqNum;
use super::stats::Stats;
use crate::time::{Duration, Instant};

/// RFC 793's connection states.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum State {
    /// No connection (never opened, or finished, reset or timed out).
    Closed,
    /// Waiting for a SYN.
    Listen,
    /// SYN sent, waiting for the peer's SYN.
    SynSent,
    /// SYN received and SYN-ACK sent, waiting for its acknowledgement.
    SynReceived,
    /// Open in both directions.
    Established,
    /// This end closed; its FIN is not yet acknowledged.
    FinWait1,
    /// This end's FIN is acknowledged; waiting for the peer's.
    FinWait2,
    /// The peer closed; this end may still send.
    CloseWait,
    /// Both closed at once; waiting for the acknowledgement of this end's FIN.
    Closing,
    /// The peer closed first and this end then closed; waiting for the last acknowledgement.
    LastAck,
    /// Both closed; lingering so that a lost last ACK can be repeated.
    TimeWait,
}

impl State {
    /// True once the handshake has completed (and until the connection is closed).
    pub fn is_synchronized(self) -> bool {
        !matches!(
            self,
            State::Closed | State::Listen | State::SynSent | State::SynReceived
        )
    }
}

/// Why a connection ended other than by an orderly close.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
pub enum Error {
    /// The peer reset the connection.
    #[error("connection reset by peer")]
    Reset,
    /// The peer refused the connection (a reset answered the SYN).
    #[error("connection refused")]
    Refused,
    /// A segment was retransmitted `max_retransmits` times without being acknowledged.
    #[error("connection timed out")]
    TimedOut,
}

/// The part of a segment's payload that entered the receive buffer: `len` bytes starting `skip`
/// bytes into the payload, at `offset` in the peer's byte stream. The rest was a duplicate or
/// beyond the window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Received {
    /// Offset of the first accepted byte in the peer's stream (0 for its first byte).
    pub offset: u64,
    /// Bytes of the payload skipped before it.
    pub skip: u32,
    /// Bytes accepted.
    pub len: u32,
}

/// Loss recovery in progress.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Recovery {
    None,
    /// Reno or NewReno fast recovery (cwnd inflated by duplicate ACKs) until `recover` is
    /// acknowledged (NewReno) or any new data is (Reno).
    Fast {
        recover: u64,
        partial_seen: bool,
    },
    /// RFC 6675 SACK recovery until `point` is acknowledged.
    Sack {
        point: u64,
    },
}

/// What a time-out changed, kept to be undone if the time-out proves spurious.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Undo {
    cwnd: u64,
    ssthresh: u64,
    /// This end's timestamp clock when the time-out fired: an ACK echoing an earlier one
    /// acknowledges the original transmission, not the retransmission (RFC 3522).
    stamp: u32,
}

/// The timestamp clock at `now`: microseconds, wrapping (RFC 7323 allows 1 ms to 1 s a tick;
/// a finer one tells an original from a retransmission whatever the minimum time-out).
pub(super) fn ts_clock(now: Instant) -> u32 {
    (now.0 / 1_000) as u32
}

/// `a` is earlier than `b` on the wrapping timestamp clock (RFC 7323 section 5.2).
pub(super) fn ts_before(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

/// One end of a TCP connection, sans-IO. See the module documentation for the call order.
#[derive(Clone, Debug)]
pub struct Connection {
    cfg: Config,
    state: State,
    error: Option<Error>,
    local_port: u16,
    remote_port: u16,

    // --- send side; positions count from our ISS (SYN = 0, first data byte = 1) ---
    iss: SeqNum,
    snd_una: u64,
    snd_nxt: u64,
    /// One past the highest position ever sent.
    snd_max: u64,
    /// One past the application's last byte (data occupies [1, app_end)).
    app_end: u64,
    /// `close` was called: a FIN follows the data, at `app_end`.
    fin_queued: bool,
    /// The peer's window, scaled, bytes.
    snd_wnd: u64,
    snd_wl1: u64,
    snd_wl2: u64,
    max_snd_wnd: u64,
    snd_wscale: u8,
    /// Both SYNs carried a window-scale option (so the SYN-ACK must carry one).
    ws_ok: bool,
    /// Segment size in use, bytes.
    mss: u32,
    sack_ok: bool,
    /// Both SYNs carried timestamps: every segment does.
    ts_ok: bool,
    /// RFC 7323 TS.Recent: the peer's clock to echo.
    ts_recent: u32,
    /// The window before the first time-out of a loss episode, while it may still prove
    /// spurious (timestamps only).
    undo: Option<Undo>,
    win: Window,
    cc: Controller,
    rtt: RttEstimator,
    /// The segment being timed (its position) and when it was sent (Karn: only one at a time,
    /// never a retransmitted one).
    rtt_timing: Option<(u64, Instant)>,
    recovery: Recovery,
    dupacks: u32,
    /// NewReno's `recover`: the highest position sent when the last loss was detected.
    recover: u64,
    /// Retransmit the segment at `snd_una` before anything else.
    retransmit_head: bool,
    /// SACK scoreboard: ranges above `snd_una` the peer holds.
    sacked: RangeSet,
    /// RFC 6675 HighRxt: one past the highest position retransmitted in this recovery.
    high_rxt: u64,
    /// RFC 6937 state: bytes delivered and sent since recovery began, and the flight then.
    prr_delivered: u64,
    prr_out: u64,
    recover_fs: u64,
    /// Retransmissions of this SACK recovery, oldest first: range and `snd_max` when sent.
    rxt_log: VecDeque<(u64, u64, u64)>,
    /// Retransmitted ranges found lost again, to be sent before anything else.
    relost: RangeSet,
    last_data_sent: Option<Instant>,
    /// One past the last segment sent shorter than the MSS (Linux's `snd_sml`; 0: none yet).
    snd_sml: u64,
    retries: u32,

    // --- receive side; positions count from the peer's ISS ---
    irs: SeqNum,
    rcv_nxt: u64,
    /// The application has read up to here (position of the next byte to read).
    read: u64,
    rcv_wscale: u8,
    /// The right edge of the window last advertised.
    rcv_adv: u64,
    ooo: RangeSet,
    /// Starts of the most recent out-of-order arrivals, newest first (RFC 2018 block order).
    sack_recent: [u64; 4],
    peer_fin: Option<u64>,
    fin_received: bool,
    /// Largest payload seen from the peer: the receive-side MSS estimate for delayed ACKs.
    rcv_mss: u32,
    /// In-order bytes not yet acknowledged (delayed-ACK accounting).
    unacked_bytes: u64,
    ack_now: bool,

    // --- timers ---
    rto_deadline: Option<Instant>,
    persist_deadline: Option<Instant>,
    persist_backoff: u32,
    /// Send a zero-window probe next.
    probe_pending: bool,
    delack_deadline: Option<Instant>,
    time_wait_deadline: Option<Instant>,

    // --- ECN (RFC 3168, RFC 8257); see ecn.rs ---
    /// Both SYNs agreed to ECN.
    ecn_ok: bool,
    /// The segment being handled arrived marked Congestion Experienced.
    ce_in: bool,
    /// Receiver: what ACKs echo (ECE). DCTCP: the mark of the latest data segment; RFC 3168:
    /// a mark was received and no CWR since.
    ce_state: bool,
    /// Sender: the position the last ECN reduction was made at; echoes of data up to it do
    /// not reduce again.
    ecn_cwr_end: u64,
    /// Sender: set CWR on the next data segment.
    send_cwr: bool,
    /// Sender (DCTCP): where the current observation window of alpha ends.
    dctcp_window_end: u64,
    /// Receiver (DCTCP): an ACK of the data before a change of mark, echoing the old mark, to
    /// go before anything else.
    pending_ecn_ack: Option<Segment>,

    pending_rst: Option<Segment>,
    stats: Stats,
}

impl Connection {
    /// An active open: a connection from `local_port` to `remote_port` whose first
    /// `poll_transmit` is the SYN. `iss` is the initial sequence number (any value; tests
    /// choose ones near 2^32 to exercise the wrap).
    pub fn connect(
        cfg: Config,
        local_port: u16,
        remote_port: u16,
        iss: SeqNum,
        now: Instant,
    ) -> Self {
        let mut c = Connection::new(cfg, local_port, remote_port, iss);
        c.state = State::SynSent;
        c.rto_deadline = Some(c.rtt.deadline(now));
        c
    }

    /// A passive open on `local_port`: waits for a SYN from any port.
    pub fn listen(cfg: Config, local_port: u16, iss: SeqNum) -> Self {
        let mut c = Connection::new(cfg, local_port, 0, iss);
        c.state = State::Listen;
        c
    }

    fn new(cfg: Config, local_port: u16, remote_port: u16, iss: SeqNum) -> Self {
        let mss = u32::from(cfg.mss.min(DEFAULT_MSS));
        let ranges = cfg.max_ranges.max(1);
        Connection {
            state: State::Closed,
            error: None,
            local_port,
            remote_port,
            iss,
            snd_una: 0,
            snd_nxt: 0,
            snd_max: 0,
            app_end: 1,
            fin_queued: false,
            snd_wnd: 0,
            snd_wl1: 0,
            snd_wl2: 0,
            max_snd_wnd: 0,
            snd_wscale: 0,
            ws_ok: false,
            mss,
            sack_ok: false,
            ts_ok: false,
            ts_recent: 0,
            undo: None,
            win: Window {
                cwnd: u64::from(cfg.initial_window.max(1)) * u64::from(mss),
                ssthresh: cfg.initial_ssthresh.unwrap_or(u64::MAX >> 2),
                mss: u64::from(mss),
            },
            cc: Controller::new(cfg.cc, cfg.byte_counting),
            rtt: RttEstimator::new(cfg.rto),
            rtt_timing: None,
            recovery: Recovery::None,
            dupacks: 0,
            recover: 0,
            retransmit_head: false,
            sacked: RangeSet::with_capacity(ranges),
            high_rxt: 0,
            prr_delivered: 0,
            prr_out: 0,
            recover_fs: 0,
            rxt_log: VecDeque::new(),
            relost: RangeSet::with_capacity(ranges),
            last_data_sent: None,
            snd_sml: 0,
            retries: 0,
            irs: SeqNum(0),
            rcv_nxt: 0,
            read: 1,
            rcv_wscale: 0,
            rcv_adv: 0,
            ooo: RangeSet::with_capacity(ranges),
            sack_recent: [0; 4],
            peer_fin: None,
            fin_received: false,
            rcv_mss: mss,
            unacked_bytes: 0,
            ack_now: false,
            rto_deadline: None,
            persist_deadline: None,
            persist_backoff: 0,
            probe_pending: false,
            delack_deadline: None,
            time_wait_deadline: None,
            ecn_ok: false,
            ce_in: false,
            ce_state: false,
            ecn_cwr_end: 0,
            send_cwr: false,
            dctcp_window_end: 0,
            pending_ecn_ack: None,
            pending_rst: None,
            stats: Stats::default(),
            cfg,
        }
    }

    // ------------------------------------------------------------------ application calls

    /// Queues `len` more bytes of the application's stream for sending; returns how many fit in
    /// the send buffer (the rest must be offered again later). Nothing is accepted after
    /// [`Connection::close`] or once the connection is closed.
    pub fn send(&mut self, len: usize) -> usize {
        if self.fin_queued
            || !matches!(
                self.state,
                State::SynSent | State::SynReceived | State::Established | State::CloseWait
            )
        {
            return 0;
        }
        let n = (len as u64).min(self.send_space());
        self.app_end += n;
        n as usize
    }

    /// Free space in the send buffer, bytes.
    pub fn send_space(&self) -> u64 {
        let held = self.app_end - self.snd_una.max(1);
        u64::from(self.cfg.send_buffer).saturating_sub(held)
    }

    /// Bytes received in order and not yet read.
    pub fn readable(&self) -> u64 {
        self.data_end() - self.read
    }

    /// Reads (consumes) up to `max` bytes from the receive buffer; returns how many. Reading
    /// opens the window, and a large enough opening is announced by a window update.
    pub fn recv(&mut self, max: usize) -> usize {
        let n = (max as u64).min(self.readable());
        if n == 0 {
            return 0;
        }
        self.read += n;
        self.stats.bytes_read += n;
        if self.state.is_synchronized() && self.window_update_due() {
            self.ack_now = true;
        }
        n as usize
    }

    /// Closes the sending direction: a FIN follows the data already queued.
    pub fn close(&mut self) {
        match self.state {
            State::Listen | State::SynSent => self.enter_closed(None),
            State::SynReceived => self.fin_queued = true,
            State::Established => {
                self.fin_queued = true;
                self.state = State::FinWait1;
            }
            State::CloseWait => {
                self.fin_queued = true;
                self.state = State::LastAck;
            }
            _ => {}
        }
    }

    /// Resets the connection: a RST is sent (if synchronized) and the connection closes.
    pub fn abort(&mut self) {
        if self.state.is_synchronized() || self.state == State::SynReceived {
            self.pending_rst = Some(self.rst_segment());
        }
        self.enter_closed(None);
    }

    // ------------------------------------------------------------------ getters

    /// The state.
    pub fn state(&self) -> State {
        self.state
    }

    /// Why the connection ended abnormally, if it did.
    pub fn error(&self) -> Option<Error> {
        self.error
    }

    /// True when the peer has closed its direction and every byte it sent has been read.
    pub fn is_recv_finished(&self) -> bool {
        self.fin_received && self.readable() == 0
    }

    /// True when every byte queued (and the FIN, if closed) has been acknowledged.
    pub fn is_send_finished(&self) -> bool {
        self.state.is_synchronized() && self.snd_una >= self.app_end + u64::from(self.fin_queued)
    }

    /// True when both SYNs carried timestamps, so every segment does.
    pub fn timestamps_agreed(&self) -> bool {
        self.ts_ok
    }

    /// Counters.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// Local port.
    pub fn local_port(&self) -> u16 {
        self.local_port
    }

    /// Remote port (0 while listening).
    pub fn remote_port(&self) -> u16 {
        self.remote_port
    }

    /// Congestion window, bytes.
    pub fn cwnd(&self) -> u64 {
        self.win.cwnd
    }

    /// Slow-start threshold, bytes.
    pub fn ssthresh(&self) -> u64 {
        self.win.ssthresh
    }

    /// Smoothed round trip, once sampled.
    pub fn srtt(&self) -> Option<Duration> {
        self.rtt.srtt()
    }

    /// Round-trip variation.
    pub fn rttvar(&self) -> Duration {
        self.rtt.rttvar()
    }

    /// Current retransmission timeout, backoff included.
    pub fn rto(&self) -> Duration {
        self.rtt.rto()
    }

    /// Segment size in use, bytes (the smaller of this end's and the peer's MSS).
    pub fn mss(&self) -> u32 {
        self.mss
    }

    /// The peer's advertised window, scaled, bytes.
    pub fn peer_window(&self) -> u64 {
        self.snd_wnd
    }

    /// Window-scale shifts in effect: (applied to the peer's window, applied to ours).
    pub fn window_scales(&self) -> (u8, u8) {
        (self.snd_wscale, self.rcv_wscale)
    }

    /// True when both ends agreed to SACK.
    pub fn sack_enabled(&self) -> bool {
        self.sack_ok
    }

    /// The congestion-control algorithm.
    pub fn cc_algorithm(&self) -> CcAlgorithm {
        self.cfg.cc
    }

    /// The controller (for inspecting CUBIC's state in tests and traces).
    pub fn controller(&self) -> &Controller {
        &self.cc
    }

    /// Bytes sent and not yet acknowledged (sequence space, SYN and FIN included).
    pub fn bytes_in_flight(&self) -> u64 {
        self.snd_max - self.snd_una
    }

    /// True while fast recovery or SACK recovery is in progress.
    pub fn in_recovery(&self) -> bool {
        self.recovery != Recovery::None
    }

    /// RCV.NXT: the sequence number this end expects next (its acknowledgement number).
    pub fn rcv_nxt(&self) -> SeqNum {
        SeqNum::at(self.irs, self.rcv_nxt)
    }

    /// SND.UNA: the oldest sequence number this end has sent and not had acknowledged.
    pub fn snd_una(&self) -> SeqNum {
        SeqNum::at(self.iss, self.snd_una)
    }

    /// Offset in this end's stream of the first payload byte of `seg`, a segment it sent (for
    /// attaching bytes to it). Valid for segments from the latest `poll_transmit` calls.
    pub fn send_offset(&self, seg: &Segment) -> u64 {
        seg.seq
            .to_position(self.iss, self.snd_una)
            .unwrap_or(1)
            .saturating_sub(1)
    }

    /// Offset in this end's stream just past the bytes the peer has acknowledged.
    pub fn acked_offset(&self) -> u64 {
        (self.snd_una.max(1) - 1).min(self.app_end - 1)
    }

    /// Offset in the peer's stream of the next byte the application will read.
    pub fn read_offset(&self) -> u64 {
        self.read - 1
    }

    // ------------------------------------------------------------------ shared helpers

    /// One past the last in-order data byte received (excludes the peer's FIN).
    fn data_end(&self) -> u64 {
        if self.rcv_nxt == 0 {
            return self.read;
        }
        self.rcv_nxt - u64::from(self.fin_received)
    }

    /// The largest window the window field can announce, bytes.
    fn max_advertisable(&self) -> u64 {
        u64::from(MAX_UNSCALED_WINDOW) << self.rcv_wscale
    }

    /// Free receive-buffer space, bytes.
    fn recv_space(&self) -> u64 {
        let held = self.data_end() - self.read;
        u64::from(self.cfg.recv_buffer).saturating_sub(held)
    }

    /// BSD's window-update rule: announce when the window can move right by two segments or by
    /// half the buffer.
    fn window_update_due(&self) -> bool {
        let wnd = self.recv_space().min(self.max_advertisable());
        let advertised = self.rcv_adv.saturating_sub(self.rcv_nxt);
        let opening = wnd.saturating_sub(advertised);
        opening >= 2 * u64::from(self.rcv_mss) || 2 * opening >= u64::from(self.cfg.recv_buffer)
    }

    fn enter_closed(&mut self, error: Option<Error>) {
        self.state = State::Closed;
        if error.is_some() {
            self.error = error;
        }
        self.rto_deadline = None;
        self.persist_deadline = None;
        self.delack_deadline = None;
        self.time_wait_deadline = None;
        self.ack_now = false;
    }

    fn enter_time_wait(&mut self, now: Instant) {
        self.state = State::TimeWait;
        self.rto_deadline = None;
        self.persist_deadline = None;
        self.time_wait_deadline = Some(now + self.cfg.time_wait);
    }

    /// Maximum congestion window: what the peer's window field can ever announce (4.4BSD caps
    /// cwnd the same way), so an application-limited flow cannot grow it without bound.
    fn max_cwnd(&self) -> u64 {
        (u64::from(MAX_UNSCALED_WINDOW) << self.snd_wscale).max(2 * u64::from(self.mss))
    }

    fn rst_segment(&self) -> Segment {
        Segment {
            src_port: self.local_port,
            dst_port: self.remote_port,
            seq: SeqNum::at(self.iss, self.snd_nxt),
            ack: SeqNum::at(self.irs, self.rcv_nxt),
            flags: super::segment::Flags::RST.with(super::segment::Flags::ACK),
            ..Default::default()
        }
    }
}
