//! One end of a TCP byte stream on a simulated host, for applications that talk both ways
//! (request/response): the sans-IO [`Connection`] with the host's CPU ([`HostCpu`]) charged
//! where a stack charges it, a writer that blocks on a full send buffer and a reader that
//! blocks until data arrives.
//!
//! Costs, as [`HostCpu`] documents them: a write call and its copies before the bytes join the
//! send buffer; each segment's send work before the NIC gets it; each arriving segment's
//! receive work before the connection handles it; a read call and its copies before the
//! application has the bytes. Reads are one at a time, as a blocked `read` returns what has
//! arrived and the application calls again: bytes that arrive while a read runs wait for the
//! next one.
//!
//! Time comes only from the caller's `now`.

use std::collections::VecDeque;

use weft_model::Instant;
use weft_model::host::HostCpu;
use weft_model::net::{Ecn, Frame};
use weft_model::tcp::{Connection, Segment};

use super::frame::{IP_HEADER, SimFrame};

/// Bytes of the Ethernet frame that carries `seg` (what crosses the host's bus and adapter).
pub fn frame_bytes(seg: &Segment) -> u64 {
    u64::from(weft_model::net::ETH_HEADER as u32 + IP_HEADER)
        + seg.header_len() as u64
        + u64::from(seg.len)
}

/// The connection, the host's CPU and the segments between them and the network.
#[derive(Debug)]
pub struct HostSocket {
    host: usize,
    peer: usize,
    peer_port: u16,
    conn: Connection,
    cpu: Option<HostCpu>,
    /// Segments the CPU is preparing, with when the NIC gets each.
    outbox: VecDeque<(Instant, Segment)>,
    /// Segments received, with when the CPU has done their receive work and whether a queue
    /// marked them Congestion Experienced.
    inbox: VecDeque<(Instant, Segment, bool)>,
    /// Frames that arrived corrupted or trimmed (dropped by the checksum).
    pub corrupted: u64,
}

impl HostSocket {
    /// `conn` on host `host`, talking to port `peer_port` on host `peer`, its work charged to
    /// `cpu` if given.
    pub fn new(
        host: usize,
        peer: usize,
        peer_port: u16,
        conn: Connection,
        cpu: Option<HostCpu>,
    ) -> Self {
        HostSocket {
            host,
            peer,
            peer_port,
            conn,
            cpu,
            outbox: VecDeque::new(),
            inbox: VecDeque::new(),
            corrupted: 0,
        }
    }

    /// Charges the host's work to `cpu` from now on.
    pub fn set_cpu(&mut self, cpu: HostCpu) {
        self.cpu = Some(cpu);
    }

    /// The connection.
    pub fn conn(&self) -> &Connection {
        &self.conn
    }

    /// The connection, for application calls.
    pub fn conn_mut(&mut self) -> &mut Connection {
        &mut self.conn
    }

    /// The host's CPU, if costs are charged.
    pub fn cpu(&self) -> Option<&HostCpu> {
        self.cpu.as_ref()
    }

    /// Charges a write call of `bytes` (`call`: whether it starts a call) asked at `now`;
    /// returns when the bytes are in the kernel.
    pub fn charge_write(&mut self, now: Instant, bytes: u64, call: bool) -> Instant {
        match &mut self.cpu {
            Some(c) => c.write(now, bytes, call),
            None => now,
        }
    }

    /// Charges a read call of `bytes` asked at `now`; returns when the application has them.
    pub fn charge_read(&mut self, now: Instant, bytes: u64) -> Instant {
        match &mut self.cpu {
            Some(c) => c.read(now, bytes),
            None => now,
        }
    }

    /// Takes `f` if it belongs to this connection (its receive work charged); false if not.
    pub fn deliver(&mut self, now: Instant, f: &SimFrame) -> bool {
        let Some(&seg) = f.segment() else {
            return false;
        };
        let mine = f.src as usize == self.peer
            && f.dst as usize == self.host
            && seg.dst_port == self.conn.local_port()
            && seg.src_port == self.peer_port;
        if !mine {
            return false;
        }
        if !f.checksum_ok() {
            self.corrupted += 1;
            return true;
        }
        let at = match &mut self.cpu {
            Some(c) => c.arrive(now, u64::from(f.len)),
            None => now,
        };
        self.inbox.push_back((at, seg, f.ecn() == Ecn::Ce));
        true
    }

    /// Hands the connection the segments whose receive work is done by `now`, and runs its
    /// timers.
    pub fn receive_due(&mut self, now: Instant) {
        while let Some(&(t, seg, ce)) = self.inbox.front() {
            if t > now {
                break;
            }
            self.inbox.pop_front();
            self.conn.handle_segment_ecn(now, &seg, ce);
        }
        if self.conn.poll_timeout().is_some_and(|t| t <= now) {
            self.conn.handle_timeout(now);
        }
    }

    /// Takes every segment the connection has to send at `now` and charges its send work.
    pub fn transmit(&mut self, now: Instant) {
        while let Some(seg) = self.conn.poll_transmit(now) {
            let at = match &mut self.cpu {
                Some(c) => c.transmit(now, frame_bytes(&seg)),
                None => now,
            };
            self.outbox.push_back((at, seg));
        }
    }

    /// The frame that carries `seg` from this socket, handed over at `now`: ECN-capable
    /// (ECT(0)) if it carries data on a connection that agreed to ECN (RFC 3168 6.1.4: pure
    /// ACKs are not).
    pub fn frame(&self, seg: Segment, now: Instant) -> SimFrame {
        let f = SimFrame::tcp(self.host, self.peer, seg, now.0);
        if self.conn.ecn_enabled() && seg.len > 0 {
            f.with_ecn(Ecn::Ect0)
        } else {
            f
        }
    }

    /// The next frame for the NIC at `now`, with the instant the NIC got it.
    pub fn pop_frame(&mut self, now: Instant) -> Option<(Instant, SimFrame)> {
        let &(t, seg) = self.outbox.front()?;
        if t > now {
            return None;
        }
        self.outbox.pop_front();
        Some((t, self.frame(seg, t)))
    }

    /// The earliest instant the socket has work: a segment to hand on, either way, or a timer.
    pub fn poll_timeout(&self) -> Option<Instant> {
        earliest(
            earliest(self.conn.poll_timeout(), self.inbox.front().map(|x| x.0)),
            self.outbox.front().map(|x| x.0),
        )
    }
}

/// An application's writes into a socket: messages written one call each, in order, the
/// writer blocking while the send buffer is full (until it has `lowat` bytes free, BSD's
/// `SO_SNDLOWAT`, or what is left of the message if less).
#[derive(Debug)]
pub struct Writer {
    /// Bytes of each message not yet copied into the socket, oldest first.
    queue: VecDeque<u64>,
    /// The front message's call has started (its cost is paid).
    started: bool,
    /// A copy in progress: its bytes and when they join the send buffer.
    copying: Option<(Instant, u64)>,
    /// Free bytes a blocked writer waits for.
    lowat: u64,
    /// Close the connection once the copy in progress is done.
    closing: bool,
}

impl Default for Writer {
    fn default() -> Self {
        Writer {
            queue: VecDeque::new(),
            started: false,
            copying: None,
            lowat: 1,
            closing: false,
        }
    }
}

impl Writer {
    /// Queues a message of `bytes` to be written with one call.
    pub fn write(&mut self, bytes: u64) {
        self.queue.push_back(bytes);
    }

    /// A blocked writer waits for `bytes` free before it copies more (1: whenever there is
    /// room).
    pub fn set_lowat(&mut self, bytes: u64) {
        self.lowat = bytes.max(1);
    }

    /// True when every message written is in the socket.
    pub fn is_idle(&self) -> bool {
        self.queue.is_empty() && self.copying.is_none()
    }

    /// The application closes at `now`: the copy in progress finishes (when it is done), what
    /// is left of its write and of the messages queued is dropped (the write call returns
    /// short), and the connection closes.
    pub fn close(&mut self, now: Instant, sock: &mut HostSocket) {
        self.queue.clear();
        self.started = false;
        match self.copying {
            Some((t, n)) if t <= now => {
                self.copying = None;
                sock.conn_mut().send(n as usize);
                sock.conn_mut().close();
            }
            Some(_) => self.closing = true,
            None => sock.conn_mut().close(),
        }
    }

    /// Copies what the send buffer takes at `now`; returns how many messages were completed
    /// (their write calls returned).
    pub fn pump(&mut self, now: Instant, sock: &mut HostSocket) -> usize {
        let mut done = 0;
        if let Some((t, n)) = self.copying {
            if t > now {
                return done;
            }
            self.copying = None;
            // The room was there when the copy began and only grows meanwhile.
            sock.conn_mut().send(n as usize);
            if self.closing {
                self.closing = false;
                sock.conn_mut().close();
                return done;
            }
            if !self.started {
                done += 1;
            }
        }
        while let Some(&left) = self.queue.front() {
            let room = sock.conn().send_space().min(left);
            if left > 0 && (room == 0 || room < self.lowat.min(left)) {
                return done;
            }
            let call = !self.started;
            self.started = true;
            let last = room == left;
            if last {
                self.queue.pop_front();
                self.started = false;
            } else if let Some(front) = self.queue.front_mut() {
                *front -= room;
            }
            let t = sock.charge_write(now, room, call);
            if t > now {
                self.copying = Some((t, room));
                return done;
            }
            sock.conn_mut().send(room as usize);
            done += usize::from(last);
        }
        done
    }

    /// When the copy in progress ends.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.copying.map(|c| c.0)
    }
}

/// An application's reads from a socket: one call at a time, as a blocked `read` returns what
/// has arrived and the application calls again; or, `pipelined`, a call for whatever has
/// arrived each time the application runs, without waiting for the one before (ttcp's receiver
/// as the bulk model runs it).
#[derive(Debug, Default)]
pub struct Reader {
    /// Reads in progress: their bytes and when the application has them.
    reading: VecDeque<(Instant, u64)>,
    pipelined: bool,
}

impl Reader {
    /// Runs the reader at `now`: hands `done` the reads that finished by `now` (each with when
    /// it did; one at a time, those that finished in this call together, with when the last
    /// did), and starts a new read of everything that has arrived if it may.
    pub fn pump(
        &mut self,
        now: Instant,
        sock: &mut HostSocket,
        mut done: impl FnMut(Instant, u64),
    ) {
        let mut batch: Option<(Instant, u64)> = None;
        loop {
            while let Some(&(t, n)) = self.reading.front() {
                if t > now {
                    break;
                }
                self.reading.pop_front();
                if self.pipelined {
                    done(t, n);
                } else {
                    batch = Some(batch.map_or((t, n), |(t0, n0)| (t0.max(t), n0 + n)));
                }
            }
            let ready = sock.conn().readable();
            if (!self.pipelined && !self.reading.is_empty()) || ready == 0 {
                break;
            }
            let n = sock.conn_mut().recv(ready as usize) as u64;
            let t = sock.charge_read(now, n);
            self.reading.push_back((t, n));
        }
        if let Some((t, n)) = batch {
            done(t, n);
        }
    }

    /// When the first read in progress ends.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.reading.front().map(|r| r.0)
    }

    /// True while a read has taken bytes from the socket that the application does not have yet.
    pub fn is_reading(&self) -> bool {
        !self.reading.is_empty()
    }
}

/// A socket with its application's writer and reader: one end of a conversation.
#[derive(Debug)]
pub struct Stream {
    /// The socket.
    pub sock: HostSocket,
    writer: Writer,
    reader: Reader,
    /// Segments that arriving acknowledgements release leave from the receive path, before
    /// the application runs (a stack that transmits in its receive path, as Linux's does);
    /// otherwise after it.
    transmit_on_receive: bool,
}

impl Stream {
    /// The application's end of `sock`.
    pub fn new(sock: HostSocket) -> Self {
        Stream {
            sock,
            writer: Writer::default(),
            reader: Reader::default(),
            transmit_on_receive: true,
        }
    }

    /// The writer waits for `bytes` free in the send buffer before it copies more.
    pub fn set_send_lowat(&mut self, bytes: u64) {
        self.writer.set_lowat(bytes);
    }

    /// Reads are `pipelined` or one at a time ([`Reader`]); segments that acknowledgements
    /// release leave from the receive path (`transmit_on_receive`) or only after the
    /// application has run (the bulk model's host, and a host that paces its connections).
    pub fn set_host(&mut self, pipelined: bool, transmit_on_receive: bool) {
        self.reader.pipelined = pipelined;
        self.transmit_on_receive = transmit_on_receive;
    }

    /// Takes the segments due at `now`, runs the connection's timers and, if it transmits in
    /// its receive path, sends at once what their acknowledgements release (before the
    /// application's calls take the CPU).
    pub fn receive(&mut self, now: Instant) {
        self.sock.receive_due(now);
        if self.transmit_on_receive {
            self.sock.transmit(now);
        }
    }

    /// Runs the reader ([`Reader::pump`]).
    pub fn read(&mut self, now: Instant, done: impl FnMut(Instant, u64)) {
        self.reader.pump(now, &mut self.sock, done)
    }

    /// True once the peer has closed and the application has every byte it sent: the
    /// connection has nothing left to read and no read in progress still holds bytes.
    pub fn is_read_to_end(&self) -> bool {
        self.sock.conn().is_recv_finished() && !self.reader.is_reading()
    }

    /// Queues a message of `bytes` for one write call.
    pub fn write(&mut self, bytes: u64) {
        self.writer.write(bytes);
    }

    /// Closes the sending direction ([`Writer::close`]).
    pub fn close(&mut self, now: Instant) {
        self.writer.close(now, &mut self.sock);
    }

    /// Copies what the socket takes ([`Writer::pump`]); returns the write calls that returned.
    pub fn pump(&mut self, now: Instant) -> usize {
        self.writer.pump(now, &mut self.sock)
    }

    /// Copies what the socket takes and sends what the connection lets go.
    pub fn flush(&mut self, now: Instant) {
        self.writer.pump(now, &mut self.sock);
        self.sock.transmit(now);
    }

    /// The earliest instant the socket, the writer or the reader has work.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.poll_timeout_reading_from(Instant::ZERO)
    }

    /// As [`Stream::poll_timeout`] for an application that takes no read before `from` (it is
    /// in a call of its own until then, [`weft_model::app::Application::busy_until`]): a read
    /// that finished earlier waits for it, and asks for no turn before it.
    pub fn poll_timeout_reading_from(&self, from: Instant) -> Option<Instant> {
        earliest(
            earliest(self.sock.poll_timeout(), self.writer.poll_timeout()),
            self.reader.poll_timeout().map(|t| t.max(from)),
        )
    }
}

/// The earlier of two optional instants (asked after every event: a plain comparison rather
/// than an iterator over options).
pub fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, y) => x.or(y),
    }
}
