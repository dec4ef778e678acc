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
use weft_model::tcp::{Connection, Segment};

use super::frame::SimFrame;

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
    /// Segments received, with when the CPU has done their receive work.
    inbox: VecDeque<(Instant, Segment)>,
    /// Frames that arrived corrupted (dropped by the checksum).
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
            Some(c) => c.send(now, bytes, 0, u64::from(call)),
            None => now,
        }
    }

    /// Charges a read call of `bytes` asked at `now`; returns when the application has them.
    pub fn charge_read(&mut self, now: Instant, bytes: u64) -> Instant {
        match &mut self.cpu {
            Some(c) => c.receive(now, bytes, 0, 1),
            None => now,
        }
    }

    /// Takes `f` if it belongs to this connection (its receive work charged); false if not.
    pub fn deliver(&mut self, now: Instant, f: &SimFrame) -> bool {
        let Some(seg) = f.tcp else { return false };
        let mine = f.src as usize == self.peer
            && f.dst as usize == self.host
            && seg.dst_port == self.conn.local_port()
            && seg.src_port == self.peer_port;
        if !mine {
            return false;
        }
        if f.corrupted {
            self.corrupted += 1;
            return true;
        }
        let at = match &mut self.cpu {
            Some(c) => c.receive(now, 0, 1, 0),
            None => now,
        };
        self.inbox.push_back((at, seg));
        true
    }

    /// Hands the connection the segments whose receive work is done by `now`, and runs its
    /// timers.
    pub fn receive_due(&mut self, now: Instant) {
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
    }

    /// Takes every segment the connection has to send at `now` and charges its send work.
    pub fn transmit(&mut self, now: Instant) {
        while let Some(seg) = self.conn.poll_transmit(now) {
            let at = match &mut self.cpu {
                Some(c) => c.send(now, 0, 1, 0),
                None => now,
            };
            self.outbox.push_back((at, seg));
        }
    }

    /// The next frame for the NIC at `now`, with the instant the NIC got it.
    pub fn pop_frame(&mut self, now: Instant) -> Option<(Instant, SimFrame)> {
        let &(t, seg) = self.outbox.front()?;
        if t > now {
            return None;
        }
        self.outbox.pop_front();
        Some((t, SimFrame::tcp(self.host, self.peer, seg, t.0)))
    }

    /// The earliest instant the socket has work: a segment to hand on, either way, or a timer.
    pub fn poll_timeout(&self) -> Option<Instant> {
        [
            self.inbox.front().map(|x| x.0),
            self.outbox.front().map(|x| x.0),
            self.conn.poll_timeout(),
        ]
        .into_iter()
        .flatten()
        .min()
    }
}

/// An application's writes into a socket: messages written one call each, in order, the
/// writer blocking while the send buffer is full.
#[derive(Debug, Default)]
pub struct Writer {
    /// Bytes of each message not yet copied into the socket, oldest first.
    queue: VecDeque<u64>,
    /// The front message's call has started (its cost is paid).
    started: bool,
    /// A copy in progress: its bytes and when they join the send buffer.
    copying: Option<(Instant, u64)>,
}

impl Writer {
    /// Queues a message of `bytes` to be written with one call.
    pub fn write(&mut self, bytes: u64) {
        self.queue.push_back(bytes);
    }

    /// True when every message written is in the socket.
    pub fn is_idle(&self) -> bool {
        self.queue.is_empty() && self.copying.is_none()
    }

    /// Copies what the send buffer takes at `now`.
    pub fn pump(&mut self, now: Instant, sock: &mut HostSocket) {
        if let Some((t, n)) = self.copying {
            if t > now {
                return;
            }
            self.copying = None;
            // The room was there when the copy began and only grows meanwhile.
            sock.conn_mut().send(n as usize);
        }
        while let Some(&left) = self.queue.front() {
            let room = sock.conn().send_space().min(left);
            if room == 0 && left > 0 {
                return;
            }
            let call = !self.started;
            self.started = true;
            if room == left {
                self.queue.pop_front();
                self.started = false;
            } else if let Some(front) = self.queue.front_mut() {
                *front -= room;
            }
            let t = sock.charge_write(now, room, call);
            if t > now {
                self.copying = Some((t, room));
                return;
            }
            sock.conn_mut().send(room as usize);
        }
    }

    /// When the copy in progress ends.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.copying.map(|c| c.0)
    }
}

/// An application's reads from a socket, one call at a time.
#[derive(Debug, Default)]
pub struct Reader {
    /// A read in progress: its bytes and when the application has them.
    reading: Option<(Instant, u64)>,
}

impl Reader {
    /// Runs the reader at `now`: the bytes of the reads that finished by `now` (with when the
    /// last did), and a new read of everything that has arrived if none is running.
    pub fn pump(&mut self, now: Instant, sock: &mut HostSocket) -> Option<(Instant, u64)> {
        let mut done: Option<(Instant, u64)> = None;
        loop {
            if let Some((t, n)) = self.reading
                && t <= now
            {
                self.reading = None;
                done = Some(done.map_or((t, n), |(t0, n0)| (t0.max(t), n0 + n)));
            }
            let ready = sock.conn().readable();
            if self.reading.is_some() || ready == 0 {
                return done;
            }
            let n = sock.conn_mut().recv(ready as usize) as u64;
            let t = sock.charge_read(now, n);
            self.reading = Some((t, n));
        }
    }

    /// When the read in progress ends.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.reading.map(|r| r.0)
    }
}

/// A socket with its application's writer and reader: one end of a conversation.
#[derive(Debug)]
pub struct Stream {
    /// The socket.
    pub sock: HostSocket,
    writer: Writer,
    reader: Reader,
}

impl Stream {
    /// The application's end of `sock`.
    pub fn new(sock: HostSocket) -> Self {
        Stream {
            sock,
            writer: Writer::default(),
            reader: Reader::default(),
        }
    }

    /// Takes the segments due at `now` and sends at once what their acknowledgements release
    /// (from the receive path, before the application's calls take the CPU).
    pub fn receive(&mut self, now: Instant) {
        self.sock.receive_due(now);
        self.sock.transmit(now);
    }

    /// Runs the reader ([`Reader::pump`]).
    pub fn read(&mut self, now: Instant) -> Option<(Instant, u64)> {
        self.reader.pump(now, &mut self.sock)
    }

    /// Queues a message of `bytes` for one write call.
    pub fn write(&mut self, bytes: u64) {
        self.writer.write(bytes);
    }

    /// Copies what the socket takes and sends what the connection lets go.
    pub fn flush(&mut self, now: Instant) {
        self.writer.pump(now, &mut self.sock);
        self.sock.transmit(now);
    }

    /// The earliest instant the socket, the writer or the reader has work.
    pub fn poll_timeout(&self) -> Option<Instant> {
        [
            self.sock.poll_timeout(),
            self.writer.poll_timeout(),
            self.reader.poll_timeout(),
        ]
        .into_iter()
        .flatten()
        .min()
    }
}
