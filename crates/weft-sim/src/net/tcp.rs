//! TCP on a simulated host: one end of a bulk transfer (ttcp) driven by the sans-IO
//! [`Connection`] of `weft_model::tcp`, its segments carried as [`SimFrame`]s, optionally
//! charged to the host's CPU ([`HostCpu`]).
//!
//! The sender writes whenever the socket has room until its `stop` instant; the receiver reads
//! everything that arrives in order at once. With a cost model, each cost is paid where
//! [`HostCpu`] says a stack pays it: a write's call and copies before the data joins the socket
//! buffer, each segment's send work before the NIC gets it, each arriving segment's receive work
//! before the connection handles it, a read's call and copies before the application has the
//! bytes. One CPU serves both paths of a host's end, in order.
//!
//! Time comes only from the engine (`now` of each call); the application holds deadlines, never
//! a clock.

use std::any::Any;
use std::collections::VecDeque;

use weft_model::Instant;
use weft_model::host::HostCpu;
use weft_model::tcp::{Config, Connection, Segment, SeqNum};

use super::frame::SimFrame;
use super::hosts::App;

/// Bytes a ttcp-style sender writes per call (ttcp's default buffer, 8 KiB).
pub const WRITE_SIZE: usize = 8192;

/// Free send-buffer bytes a blocked writer waits for before it copies more (BSD's default
/// SO_SNDLOWAT, MCLBYTES).
pub const SEND_LOWAT: usize = 2048;

/// What one end of a transfer does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Writes without end until `stop`, then closes.
    Sender {
        /// When the application stops writing.
        stop: Instant,
    },
    /// Reads everything.
    Receiver,
}

/// One end of a TCP connection between two simulated hosts.
#[derive(Debug)]
pub struct TcpApp {
    host: usize,
    peer: usize,
    peer_port: u16,
    conn: Connection,
    role: Role,
    cpu: Option<HostCpu>,
    /// Free bytes a blocked writer waits for.
    send_lowat: usize,
    /// Bytes of the current write not yet copied into the socket buffer.
    write_left: usize,
    /// A write whose copy is still running: its bytes and when they join the socket buffer.
    writing: Option<(Instant, usize)>,
    /// Segments the CPU is preparing, with when the NIC gets each.
    outbox: VecDeque<(Instant, Segment)>,
    /// Segments received, with when the CPU has done their receive work.
    inbox: VecDeque<(Instant, Segment)>,
    /// Reads whose copies are still running: bytes and when the application has them.
    reading: VecDeque<(Instant, u64)>,
    measure: (Instant, Instant),
    /// The sender has stopped writing and closed.
    closed: bool,
    /// Nothing has run yet: the first call opens the connection (the sender's SYN).
    fresh: bool,
    /// The instant of the last step, if no segment has arrived since: a step again at that
    /// instant finds nothing new to do (its inputs, segments and timers at or before it, are
    /// spent), so the calls that only drain `outbox` skip it.
    stepped_at: Option<Instant>,
    /// Bytes the application has read.
    pub bytes_read: u64,
    /// Bytes read within the measurement span.
    pub bytes_measured: u64,
    /// Frames that arrived corrupted (dropped by the checksum).
    pub corrupted: u64,
}

impl TcpApp {
    /// The sender of a flow from host `host` port `port` to host `peer` port `peer_port`,
    /// writing until `stop`; its SYN leaves at time zero.
    pub fn sender(
        host: usize,
        port: u16,
        peer: usize,
        peer_port: u16,
        cfg: Config,
        stop: Instant,
        iss: SeqNum,
    ) -> Self {
        let conn = Connection::connect(cfg, port, peer_port, iss, Instant::ZERO);
        Self::with(host, peer, peer_port, conn, Role::Sender { stop })
    }

    /// The receiver of a flow on host `host` port `port`, accepting only from host `peer` port
    /// `peer_port`.
    pub fn receiver(
        host: usize,
        port: u16,
        peer: usize,
        peer_port: u16,
        cfg: Config,
        iss: SeqNum,
    ) -> Self {
        let conn = Connection::listen(cfg, port, iss);
        Self::with(host, peer, peer_port, conn, Role::Receiver)
    }

    fn with(host: usize, peer: usize, peer_port: u16, conn: Connection, role: Role) -> Self {
        TcpApp {
            host,
            peer,
            peer_port,
            conn,
            role,
            cpu: None,
            send_lowat: SEND_LOWAT,
            write_left: WRITE_SIZE,
            writing: None,
            outbox: VecDeque::new(),
            inbox: VecDeque::new(),
            reading: VecDeque::new(),
            measure: (Instant::ZERO, Instant(u64::MAX)),
            closed: false,
            fresh: true,
            stepped_at: None,
            bytes_read: 0,
            bytes_measured: 0,
            corrupted: 0,
        }
    }

    /// Charges the host's protocol work to `cpu`.
    pub fn with_cpu(mut self, cpu: HostCpu) -> Self {
        self.cpu = Some(cpu);
        self
    }

    /// A blocked writer waits for `bytes` free in the send buffer before copying more (default
    /// [`SEND_LOWAT`]; 1 writes whenever there is room, as the emulator's paced sender does).
    pub fn with_send_lowat(mut self, bytes: usize) -> Self {
        self.send_lowat = bytes.max(1);
        self
    }

    /// Counts in [`TcpApp::bytes_measured`] the bytes read in `[from, until)`.
    pub fn measuring(mut self, from: Instant, until: Instant) -> Self {
        self.measure = (from, until);
        self
    }

    /// The connection, for its statistics and state.
    pub fn connection(&self) -> &Connection {
        &self.conn
    }

    /// The host's CPU, if costs are charged.
    pub fn cpu(&self) -> Option<&HostCpu> {
        self.cpu.as_ref()
    }

    /// Does everything due at `now`: segments processed, timers, the application's writes and
    /// reads, new segments handed to the CPU.
    fn step(&mut self, now: Instant) {
        self.fresh = false;
        while let Some(&(t, seg)) = self.inbox.front() {
            if t > now {
                break;
            }
            self.inbox.pop_front();
            self.conn.handle_segment(now, &seg);
        }
        if self.conn.poll_timeout().is_some_and(|t| t <= now) {
            self.conn.handle_timeout(now);
        }
        match self.role {
            Role::Sender { stop } => self.write(now, stop),
            Role::Receiver => self.read(now),
        }
        while let Some(seg) = self.conn.poll_transmit(now) {
            let at = match &mut self.cpu {
                Some(cpu) => cpu.send(now, 0, 1, 0),
                None => now,
            };
            self.outbox.push_back((at, seg));
        }
    }

    fn write(&mut self, now: Instant, stop: Instant) {
        if let Some((t, n)) = self.writing {
            if t > now {
                return;
            }
            self.writing = None;
            // The room was there when the copy began and only grows meanwhile.
            self.conn.send(n);
        }
        if now >= stop {
            if !self.closed {
                self.closed = true;
                self.conn.close();
            }
            return;
        }
        loop {
            // A blocked writer copies as soon as the send buffer has its low-water mark free
            // (BSD's sosend, SO_SNDLOWAT), as much as fits of what is left of its write.
            let room = self.conn.send_space().min(self.write_left as u64) as usize;
            let lowat = self.send_lowat.min(self.write_left);
            if room < lowat || room == 0 {
                return;
            }
            let call = u64::from(self.write_left == WRITE_SIZE);
            self.write_left -= room;
            if self.write_left == 0 {
                self.write_left = WRITE_SIZE;
            }
            match &mut self.cpu {
                Some(cpu) => {
                    let t = cpu.send(now, room as u64, 0, call);
                    if t > now {
                        self.writing = Some((t, room));
                        return;
                    }
                    self.conn.send(room);
                }
                None => {
                    self.conn.send(room);
                }
            }
        }
    }

    fn read(&mut self, now: Instant) {
        let n = self.conn.readable();
        if n > 0 {
            self.conn.recv(n as usize);
            let at = match &mut self.cpu {
                Some(cpu) => cpu.receive(now, n, 0, 1),
                None => now,
            };
            self.reading.push_back((at, n));
        }
        // ttcp's receiver closes when it reads the end of the stream.
        if !self.closed && self.conn.is_recv_finished() {
            self.closed = true;
            self.conn.close();
        }
        while let Some(&(t, n)) = self.reading.front() {
            if t > now {
                break;
            }
            self.reading.pop_front();
            self.bytes_read += n;
            if t >= self.measure.0 && t < self.measure.1 {
                self.bytes_measured += n;
            }
        }
    }

    /// True if `f` belongs to this connection.
    fn is_mine(&self, f: &SimFrame, seg: &Segment) -> bool {
        f.src as usize == self.peer
            && f.dst as usize == self.host
            && seg.dst_port == self.conn.local_port()
            && seg.src_port == self.peer_port
    }
}

impl App for TcpApp {
    fn poll_send(&mut self, now: Instant) -> Option<(Instant, SimFrame)> {
        if self.stepped_at != Some(now) || self.conn.poll_timeout().is_some_and(|t| t <= now) {
            self.step(now);
            self.stepped_at = Some(now);
        }
        let &(t, seg) = self.outbox.front()?;
        if t > now {
            return None;
        }
        self.outbox.pop_front();
        Some((t, SimFrame::tcp(self.host, self.peer, seg, t.0)))
    }

    fn deliver(&mut self, now: Instant, f: SimFrame) {
        self.stepped_at = None;
        let Some(seg) = f.tcp else { return };
        if !self.is_mine(&f, &seg) {
            return;
        }
        if f.corrupted {
            self.corrupted += 1;
            return;
        }
        let at = match &mut self.cpu {
            Some(cpu) => cpu.receive(now, 0, 1, 0),
            None => now,
        };
        self.inbox.push_back((at, seg));
    }

    fn poll_timeout(&self) -> Option<Instant> {
        if self.fresh {
            return Some(Instant::ZERO);
        }
        // The earliest of the instants below (asked after every event: a plain chain of
        // comparisons rather than an iterator over options).
        fn earlier(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
            match (a, b) {
                (Some(x), Some(y)) => Some(x.min(y)),
                (x, y) => x.or(y),
            }
        }
        let mut t = self.conn.poll_timeout();
        t = earlier(t, self.inbox.front().map(|x| x.0));
        t = earlier(t, self.outbox.front().map(|x| x.0));
        t = earlier(t, self.reading.front().map(|x| x.0));
        t = earlier(t, self.writing.map(|x| x.0));
        match self.role {
            // The application stops writing (and closes) at `stop`.
            Role::Sender { stop } if !self.closed => earlier(t, Some(stop)),
            _ => t,
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
