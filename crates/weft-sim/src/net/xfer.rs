//! SBTP and MBTP (RIACS, study 004) on simulated hosts: the sans-IO [`Sender`] and [`Receiver`]
//! of `weft-xfer`, the same state machines `weft send` and `weft recv` run on real sockets,
//! driven here by two simulated machines with a CPU ([`HostCpu`]) and a disk ([`Disk`]).
//!
//! - The control channel of each session is a TCP connection of the simulated stack (the
//!   sans-IO [`weft_model::tcp::Connection`] on both hosts, `TCP_NODELAY` as `weft send` sets
//!   it): each control message is written with one call and read back whole; its bytes cross
//!   the network as segments, behind the data on the same links.
//! - The data are UDP datagrams of the simulated network, striped over the receiver's sockets.
//!   Frames carry no bytes: each datagram's 20-byte header (`weft-xfer`'s data header) rides in
//!   a table beside the network, keyed by the frame's number, and the receiver gets the header
//!   and a payload of zeros of the length sent.
//! - The sender is one process, as RIACS's was: it reads each buffer from its disk when the
//!   protocol asks for one ([`SenderEvent::NeedBuffer`]), sends datagrams one `sendto` at a
//!   time (each charged to its CPU: the call, the packet, the bytes), writes control messages,
//!   and waits. With several sessions (MBTP) one session's buffer is on the network at a time
//!   while the others' receivers write to disk. Its elapsed time is split as RIACS's Table 2
//!   splits it ([`TimeSplit`]): reading the disk ("disk I/O"); from writing a buffer's `Start`
//!   until the receiver's `Ready` ("sync: the timer is set after the sender indicates to the
//!   receiver that it is ready to send [and] reset after the receiver indicates that it is
//!   ready to receive"); and from `Ready` until the receiver's `Done` says the buffer is there
//!   ("data transfer": sending, "as well as the time that the data is physically present on the
//!   network", which includes a slower receiver reading its sockets).
//! - MBTP is "the merging of multiple copies of SBTP" under one sender: each session reads its
//!   own buffer when the protocol asks for one, as `weft send`'s reader threads do, so one
//!   session's read from the disk goes on while another's buffer is on the network (the disk's
//!   arm takes the reads in turn; the copy out of the cache takes the one CPU in turn with the
//!   sending). There the sender's time splits as `weft send` splits it: transfer is the time
//!   the process spent sending, disk the time it had nothing to send while a read was under
//!   way, and sync the rest.
//! - Each receiver session is a process of the receiving host: it reads control messages and
//!   datagrams (a `recvfrom` per datagram, charged to its CPU), and writes each finished buffer
//!   to its disk ([`ReceiverEvent::Write`]). A datagram that arrives while its socket's receive
//!   buffer is full is dropped, as the kernel drops it, and the receiver reports the drops.
//!
//! What is not the real driver's: no session handshake (authentication is the driver's, not the
//! protocol's), no reading ahead of the protocol's request (RIACS's senders read each buffer
//! when they needed it), and the file's bytes are zeros.

use std::any::Any;
use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::rc::Rc;

use weft_model::host::HostCpu;
use weft_model::host::disk::Disk;
use weft_model::tcp::{Config, Connection, SeqNum};
use weft_model::{Duration, Instant};
use weft_xfer::proto::{
    FileMeta, RateMode, Receiver, ReceiverConfig, ReceiverEvent, Sender, SenderConfig, SenderEvent,
    buffer_len, buffers_in,
};
use weft_xfer::wire::data::HEADER_LEN;
use weft_xfer::wire::{Control, Mode};

use super::frame::{SimFrame, UDP_IP_HEADERS};
use super::hosts::App;
use super::stream::{HostSocket, Stream};

/// The file the transfer moves, as the disks know it.
const FILE: u32 = 1;
/// First port of the control connections (one per session) at each end.
const CONTROL_PORT: u16 = 7100;

/// What to transfer and how.
#[derive(Clone, Debug, PartialEq)]
pub struct XferSpec {
    /// SBTP (one session) or MBTP (`sessions` of them, one sender).
    pub mode: Mode,
    /// Bytes of the file.
    pub file: u64,
    /// Bytes of each buffer.
    pub buffer: u32,
    /// Payload bytes of each datagram.
    pub packet: u32,
    /// Sessions: MBTP's receivers (1 for SBTP).
    pub sessions: u32,
    /// UDP sockets each receiver stripes a buffer over.
    pub stripes: u32,
    /// Receive buffer of each of those sockets, bytes.
    pub socket_buffer: u64,
    /// How long a receiver waits after `End` for datagrams still on their way.
    pub settle: Duration,
}

/// The control channel's TCP: 1995 BSD behaviour, no Nagle (`TCP_NODELAY`), 64 KiB buffers.
fn control_config() -> Config {
    Config {
        nagle: false,
        delayed_ack: None,
        send_buffer: 65_536,
        recv_buffer: 65_536,
        ..Config::default()
    }
}

/// Datagrams in flight, by frame number: session, stripe, the data header and payload bytes.
type InFlight = HashMap<u32, (usize, u32, [u8; HEADER_LEN], usize)>;

/// What both machines share beside the network: the control messages in each direction,
/// each with the stream offset its last byte has, and the headers of the datagrams in flight.
#[derive(Debug, Default)]
struct Wire {
    to_receiver: Vec<VecDeque<(u64, Control)>>,
    to_sender: Vec<VecDeque<(u64, Control)>>,
    datagrams: InFlight,
}

type Shared = Rc<RefCell<Wire>>;

/// Bytes of `c` on the control connection (its frame header included).
fn encoded_len(c: &Control) -> u64 {
    let mut v = Vec::new();
    c.emit(&mut v);
    v.len() as u64
}

/// One end of a session's control connection: the stream, and the bytes written to it and
/// read from it so far.
#[derive(Debug)]
struct ControlEnd {
    io: Stream,
    written: u64,
    read: u64,
}

impl ControlEnd {
    fn new(io: Stream) -> Self {
        ControlEnd {
            io,
            written: 0,
            read: 0,
        }
    }

    /// Writes `c` (one call), noting it in `queue` at the offset of its last byte.
    fn send(&mut self, c: Control, queue: &mut VecDeque<(u64, Control)>) {
        let n = encoded_len(&c);
        self.written += n;
        self.io.write(n);
        queue.push_back((self.written, c));
    }

    /// Reads what has arrived by `now`; the messages read whole, with when the read returned.
    fn receive(
        &mut self,
        now: Instant,
        queue: &mut VecDeque<(u64, Control)>,
    ) -> Vec<(Instant, Control)> {
        self.io.receive(now);
        let mut out = Vec::new();
        let read = &mut self.read;
        self.io.read(now, |t, n| {
            *read += n;
            while queue.front().is_some_and(|(end, _)| *end <= *read) {
                if let Some((_, c)) = queue.pop_front() {
                    out.push((t, c));
                }
            }
        });
        out
    }
}

/// Where the sender's time went, RIACS's Table 2 split (see the module documentation).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TimeSplit {
    /// Reading buffers from the disk (MBTP: having nothing to send while a read is under way).
    pub disk: Duration,
    /// Sending datagrams (one session: from `Ready` to `Done`).
    pub transfer: Duration,
    /// One session: from `Start` to `Ready`; several: `None` (the rest of the time).
    pub waiting: Option<Duration>,
    /// From the first control message to the last answer.
    pub elapsed: Duration,
}

impl TimeSplit {
    /// Waiting for the receivers.
    pub fn sync(&self) -> Duration {
        self.waiting.unwrap_or_else(|| {
            Duration(
                self.elapsed
                    .as_nanos()
                    .saturating_sub(self.disk.as_nanos() + self.transfer.as_nanos()),
            )
        })
    }

    /// `d` as a percentage of the elapsed time.
    pub fn pct(&self, d: Duration) -> f64 {
        if self.elapsed.as_nanos() == 0 {
            return 0.0;
        }
        100.0 * d.as_nanos() as f64 / self.elapsed.as_nanos() as f64
    }
}

/// A buffer the sender is reading from its disk into memory.
#[derive(Debug)]
struct Reading {
    session: usize,
    index: u32,
    data: Vec<u8>,
    /// When the current part ends: the disk's read, then the copy out of the cache.
    until: Instant,
    /// The disk has read it; the copy is under way.
    copying: bool,
}

/// One session at the sender.
#[derive(Debug)]
struct SendSession {
    sender: Sender,
    ctl: ControlEnd,
    /// When the current buffer's `Start` was written, and its `Ready` read.
    started: Option<Instant>,
    ready: Option<Instant>,
}

/// The sending machine: its one process, its sessions, CPU and disk.
pub struct XferSender {
    host: usize,
    peer: usize,
    spec: XferSpec,
    sessions: Vec<SendSession>,
    cpu: Option<HostCpu>,
    disk: Option<Disk>,
    wire: Shared,
    /// The process is in a call (a datagram's `sendto`, a disk read) until then.
    busy_until: Instant,
    /// Buffers being read: at most one (SBTP: the process waits for it), or one per session
    /// (MBTP: each session reads while another sends).
    reading: Vec<Reading>,
    /// MBTP: reads overlap the sending.
    overlap: bool,
    /// MBTP: since when the process has had nothing to send while a read is under way.
    stalled: Option<Instant>,
    /// The session whose buffer is on the network (MBTP sends one at a time).
    token: Option<usize>,
    /// The next buffer index to hand out, shared by the sessions.
    next_index: u64,
    /// Datagrams handed to the NIC, with when.
    out: VecDeque<(Instant, SimFrame)>,
    frame_no: u32,
    header: Vec<u8>,
    spare: Vec<Vec<u8>>,
    /// Where the time went.
    pub split: TimeSplit,
    /// When every session had finished (the last answer came).
    pub finished_at: Option<Instant>,
    /// The instant of the last step (a busy period ending later is a wake-up).
    last_step: Instant,
    /// Nothing has run yet: the first step opens the control connections.
    fresh: bool,
}

/// The receiving machine: one process per session, sharing its CPU and disk.
pub struct XferReceiver {
    sessions: Vec<RecvSession>,
    cpu: Option<HostCpu>,
    disk: Option<Disk>,
    wire: Shared,
    /// Receive buffer of each socket, bytes.
    socket_buffer: u64,
    /// Bytes of the buffers written to disk.
    pub bytes_written: u64,
}

/// One UDP socket of a receiver: datagrams waiting to be read (frame number, when they can be
/// read), and the bytes they hold.
#[derive(Debug, Default)]
struct Socket {
    queue: VecDeque<(u32, Instant)>,
    bytes: u64,
}

/// One session at the receiver: its process.
#[derive(Debug)]
struct RecvSession {
    receiver: Receiver,
    ctl: ControlEnd,
    sockets: Vec<Socket>,
    /// Datagrams dropped at full sockets.
    drops: u64,
    /// The process is in a call until then.
    busy_until: Instant,
    /// A buffer being written: its sequence number, bytes, and when the write returns.
    writing: Option<(u32, Vec<u8>, Instant)>,
    finished: bool,
}

/// The two machines of a transfer from host `from` to host `to`, with their CPUs and disks
/// (`None`: no cost, or memory to memory), as the applications to put on those hosts.
pub fn xfer_apps(
    spec: &XferSpec,
    from: usize,
    to: usize,
    cpus: (Option<HostCpu>, Option<HostCpu>),
    disks: (Option<Disk>, Option<Disk>),
    seed: u64,
) -> (XferSender, XferReceiver) {
    let n = spec.sessions.max(1) as usize;
    let wire: Shared = Rc::new(RefCell::new(Wire {
        to_receiver: vec![VecDeque::new(); n],
        to_sender: vec![VecDeque::new(); n],
        datagrams: HashMap::new(),
    }));
    let mut senders = Vec::new();
    let mut receivers = Vec::new();
    for s in 0..n {
        let session = seed
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
            .wrapping_add(s as u64)
            | 1;
        let port = CONTROL_PORT + s as u16;
        let iss = SeqNum((seed as u32).wrapping_add(1000 * s as u32));
        let conn = Connection::connect(control_config(), port, port, iss, Instant::ZERO);
        let mut tx_sock = HostSocket::new(from, to, port, conn, None);
        if let Some(c) = &cpus.0 {
            tx_sock.set_cpu(c.clone());
        }
        let sender = Sender::new(
            SenderConfig {
                mode: spec.mode,
                packet_size: spec.packet,
                buffer_size: spec.buffer,
                window: 1,
                rate: RateMode::Unlimited,
                stripes: spec.stripes.max(1),
                burst: Duration::ZERO,
                early_probe: false,
            },
            session,
            vec![FileMeta {
                name: "file".into(),
                size: spec.file,
                hash: [0; 32],
                resume: false,
            }],
        );
        senders.push(SendSession {
            sender,
            ctl: ControlEnd::new(Stream::new(tx_sock)),
            started: None,
            ready: None,
        });
        let conn = Connection::listen(control_config(), port, SeqNum(iss.0 ^ 0x5555_5555));
        let mut rx_sock = HostSocket::new(to, from, port, conn, None);
        if let Some(c) = &cpus.1 {
            rx_sock.set_cpu(c.clone());
        }
        receivers.push(RecvSession {
            receiver: Receiver::new(ReceiverConfig {
                mode: spec.mode,
                session,
                window: 1,
                max_buffer: spec.buffer,
                max_packet: spec.packet,
                max_file: spec.file,
                settle: spec.settle,
                arrival_reports: true,
            }),
            ctl: ControlEnd::new(Stream::new(rx_sock)),
            sockets: (0..spec.stripes.max(1))
                .map(|_| Socket::default())
                .collect(),
            drops: 0,
            busy_until: Instant::ZERO,
            writing: None,
            finished: false,
        });
    }
    let tx = XferSender {
        host: from,
        peer: to,
        spec: spec.clone(),
        sessions: senders,
        cpu: cpus.0,
        disk: disks.0,
        wire: wire.clone(),
        busy_until: Instant::ZERO,
        reading: Vec::new(),
        overlap: spec.mode == Mode::Mbtp,
        stalled: None,
        token: None,
        next_index: 0,
        out: VecDeque::new(),
        frame_no: 0,
        header: Vec::with_capacity(HEADER_LEN),
        spare: Vec::new(),
        split: TimeSplit {
            waiting: (n == 1).then_some(Duration::ZERO),
            ..TimeSplit::default()
        },
        finished_at: None,
        last_step: Instant::ZERO,
        fresh: true,
    };
    let rx = XferReceiver {
        sessions: receivers,
        cpu: cpus.1,
        disk: disks.1,
        wire,
        socket_buffer: spec.socket_buffer,
        bytes_written: 0,
    };
    (tx, rx)
}

impl XferSender {
    /// The sessions' protocol counters, summed: datagrams sent, lost (reported by the
    /// receivers), buffers done.
    pub fn totals(&self) -> (u64, u64, u64) {
        self.sessions.iter().fold((0, 0, 0), |(a, b, c), s| {
            let st = s.sender.stats();
            (
                a + st.packets_sent,
                b + st.packets_lost,
                c + st.buffers_done,
            )
        })
    }

    /// Whether every session has finished.
    pub fn is_finished(&self) -> bool {
        self.finished_at.is_some()
    }

    /// The process is free at `now`.
    fn idle(&self, now: Instant) -> bool {
        self.busy_until <= now && (self.overlap || self.reading.is_empty())
    }

    fn step(&mut self, now: Instant) {
        self.fresh = false;
        self.last_step = now;
        // Control messages are taken as they are read, whatever else the process does (what
        // they change is the protocol's state; what it then asks for waits for the process).
        for (k, s) in self.sessions.iter_mut().enumerate() {
            let msgs = {
                let mut w = self.wire.borrow_mut();
                s.ctl.receive(now, &mut w.to_sender[k])
            };
            for (t, c) in msgs {
                // RIACS's timers, for one session: sync from `Start` to `Ready`, transfer from
                // `Ready` to `Done`.
                if let Some(w) = self.split.waiting.as_mut() {
                    match &c {
                        Control::Ready { .. } => {
                            if let Some(t0) = s.started.take() {
                                *w += t.saturating_duration_since(t0);
                            }
                            s.ready = Some(t);
                        }
                        Control::Done { .. } => {
                            if let Some(t0) = s.ready.take() {
                                self.split.transfer += t.saturating_duration_since(t0);
                            }
                        }
                        _ => {}
                    }
                }
                // A peer that breaks the protocol ends the session's progress; the run then
                // shows it as unfinished.
                let _ = s.sender.handle_control(t, c);
            }
        }
        self.read_on(now);
        // MBTP: each session starts its read as soon as the protocol asks for a buffer.
        if self.overlap {
            self.events(now);
        }
        // A buffer the receiver is ready for goes first; the process reads the next buffer
        // from its disk when it has nothing to send.
        if self.idle(now) {
            self.write_control(now);
            self.transmit(now);
        }
        if self.idle(now) {
            self.write_control(now);
            self.events(now);
            self.write_control(now);
        }
        if self.overlap {
            self.note_stall(now);
        }
        for s in &mut self.sessions {
            s.ctl.io.flush(now);
        }
        if self.finished_at.is_none() && self.sessions.iter().all(|s| s.sender.is_finished()) {
            self.finished_at = Some(now);
            self.split.elapsed = Duration(now.as_nanos());
        }
    }

    /// MBTP's disk time: the process has nothing to send while a read is under way.
    fn note_stall(&mut self, now: Instant) {
        let nothing = self.busy_until <= now
            && !self.reading.is_empty()
            && !self.sessions.iter().any(|s| s.sender.has_data_to_send());
        if nothing {
            self.stalled.get_or_insert(now);
        } else if let Some(t0) = self.stalled.take() {
            self.split.disk += now - t0;
        }
    }

    /// The protocol's requests: a buffer to read (from the disk, or at once from memory).
    fn events(&mut self, now: Instant) {
        for k in 0..self.sessions.len() {
            while let Some(ev) = self.sessions[k].sender.poll_event() {
                if let SenderEvent::NeedBuffer { .. } = ev {
                    self.read_buffer(now, k);
                    if !self.overlap && !self.reading.is_empty() {
                        return;
                    }
                }
                if let Some(v) = self.sessions[k].sender.take_spent() {
                    self.spare.push(v);
                }
            }
            while let Some(v) = self.sessions[k].sender.take_spent() {
                self.spare.push(v);
            }
        }
    }

    /// Hands session `k` the next buffer of the file, read from the disk (SBTP: the process
    /// waits for it; MBTP: the session does), or `None` when none is left.
    fn read_buffer(&mut self, now: Instant, k: usize) {
        let nbuf = buffers_in(self.spec.file, self.spec.buffer);
        if self.next_index >= nbuf {
            let _ = self.sessions[k].sender.provide_buffer(0, None);
            return;
        }
        let index = self.next_index as u32;
        self.next_index += 1;
        let len = buffer_len(self.spec.file, self.spec.buffer, index) as usize;
        let mut data = self.spare.pop().unwrap_or_default();
        data.resize(len, 0);
        let offset = u64::from(index) * u64::from(self.spec.buffer);
        let Some(d) = &mut self.disk else {
            // Memory to memory: the buffer is there.
            let _ = self.sessions[k]
                .sender
                .provide_buffer(0, Some((index, data)));
            return;
        };
        let until = d.read(now, FILE, offset, len as u64);
        self.reading.push(Reading {
            session: k,
            index,
            data,
            until,
            copying: false,
        });
        if !self.overlap {
            self.split.disk += until - now;
            self.busy_until = until;
        }
        self.read_on(now);
    }

    /// Moves the buffers being read on at `now`: once the disk has read one, the copy out of
    /// the cache (charged to the CPU now, so that work is asked of it in time order); once
    /// copied, to its session.
    fn read_on(&mut self, now: Instant) {
        let mut i = 0;
        while i < self.reading.len() {
            let r = &mut self.reading[i];
            if r.until > now {
                i += 1;
                continue;
            }
            if !r.copying {
                r.copying = true;
                if let Some(cpu) = &mut self.cpu {
                    let copy = cpu.costs().copy_ns_per_byte * r.data.len() as f64;
                    let t = cpu.run(now, Duration::from_secs_f64(copy / 1e9));
                    r.until = t;
                    if !self.overlap {
                        self.split.disk += t - now;
                        self.busy_until = t;
                    }
                    if t > now {
                        i += 1;
                        continue;
                    }
                }
            }
            let r = self.reading.remove(i);
            let _ = self.sessions[r.session]
                .sender
                .provide_buffer(0, Some((r.index, r.data)));
        }
    }

    /// Writes what the sessions have to say on their control connections.
    fn write_control(&mut self, now: Instant) {
        let mut w = self.wire.borrow_mut();
        for (k, s) in self.sessions.iter_mut().enumerate() {
            while let Some(c) = s.sender.poll_control() {
                if matches!(c, Control::Start { .. }) {
                    s.started = Some(now);
                }
                s.ctl.send(c, &mut w.to_receiver[k]);
            }
        }
    }

    /// Sends the datagrams of the session whose buffer is on the network, one `sendto` at a
    /// time: as many as end by `now` (all of them on a host that costs nothing), the process
    /// then busy with the last.
    fn transmit(&mut self, now: Instant) {
        while self.idle(now) && self.send_one(now) {}
    }

    /// Sends one datagram, if one waits; false if none did.
    fn send_one(&mut self, now: Instant) -> bool {
        let k = match self.token {
            Some(k) if self.sessions[k].sender.has_data_to_send() => k,
            _ => match self
                .sessions
                .iter()
                .position(|s| s.sender.has_data_to_send())
            {
                Some(k) => k,
                None => {
                    self.token = None;
                    return false;
                }
            },
        };
        self.token = Some(k);
        self.header.clear();
        let Some(t) = self.sessions[k]
            .sender
            .poll_transmit_ref(now, &mut self.header)
        else {
            return false;
        };
        let mut h = [0u8; HEADER_LEN];
        h.copy_from_slice(&self.header[..HEADER_LEN]);
        let bytes = (HEADER_LEN + t.len) as u64;
        let done = match &mut self.cpu {
            Some(c) => c.send(now, bytes, 1, 1),
            None => now,
        };
        if self.split.waiting.is_none() {
            self.split.transfer += done - now;
        }
        self.busy_until = done;
        let no = self.frame_no;
        self.frame_no = self.frame_no.wrapping_add(1);
        self.wire
            .borrow_mut()
            .datagrams
            .insert(no, (k, t.stripe, h, t.len));
        let ip_len = bytes as u32 + UDP_IP_HEADERS;
        self.out.push_back((
            done,
            SimFrame::udp(self.host, self.peer, ip_len, no, done.0),
        ));
        // The round's last datagram queues its `End`: written once this send returns.
        if done <= now {
            self.write_control(now);
        }
        true
    }
}

impl App for XferSender {
    fn poll_send(&mut self, now: Instant) -> Option<(Instant, SimFrame)> {
        self.step(now);
        if self.out.front().is_some_and(|(t, _)| *t <= now) {
            return self.out.pop_front();
        }
        self.sessions
            .iter_mut()
            .find_map(|s| s.ctl.io.sock.pop_frame(now))
    }

    fn deliver(&mut self, now: Instant, f: SimFrame) {
        for s in &mut self.sessions {
            if s.ctl.io.sock.deliver(now, &f) {
                return;
            }
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        // A call that ends after the last step: the process goes on then.
        let busy = (self.busy_until > self.last_step).then_some(self.busy_until);
        [
            busy,
            // MBTP: a session's read or copy ends.
            self.reading.iter().map(|r| r.until).min(),
            self.out.front().map(|x| x.0),
            // The kernel's TCP work goes on whatever the process does; the process's own
            // reads and writes wait for it to be free.
            self.sessions
                .iter()
                .flat_map(|s| [s.ctl.io.sock.poll_timeout(), s.ctl.io.poll_timeout()])
                .flatten()
                .min(),
            // Nothing has run yet: the connections' SYNs leave at once.
            self.fresh.then_some(Instant::ZERO),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl XferReceiver {
    /// Datagrams dropped at full sockets, over every session.
    pub fn socket_drops(&self) -> u64 {
        self.sessions.iter().map(|s| s.drops).sum()
    }

    /// Datagrams lost for good (zero-filled), over every session.
    pub fn packets_lost(&self) -> u64 {
        self.sessions
            .iter()
            .map(|s| s.receiver.stats().packets_lost)
            .sum()
    }

    /// A datagram reaches the host at `now`: its receive work, then its socket's queue (or a
    /// drop if the queue is full).
    fn datagram(&mut self, now: Instant, f: &SimFrame) {
        let Some(&(k, stripe, _, len)) = self.wire.borrow().datagrams.get(&f.seq) else {
            return;
        };
        let at = match &mut self.cpu {
            Some(c) => c.receive(now, 0, 1, 0),
            None => now,
        };
        let cap = self.socket_buffer;
        let Some(s) = self.sessions.get_mut(k) else {
            return;
        };
        let Some(sock) = s.sockets.get_mut(stripe as usize) else {
            return;
        };
        let bytes = (HEADER_LEN + len) as u64;
        if sock.bytes + bytes > cap {
            s.drops += 1;
            s.receiver.set_socket_drops(s.drops);
            self.wire.borrow_mut().datagrams.remove(&f.seq);
            return;
        }
        sock.bytes += bytes;
        sock.queue.push_back((f.seq, at));
    }

    fn step(&mut self, now: Instant) {
        for k in 0..self.sessions.len() {
            self.step_session(now, k);
        }
    }

    fn step_session(&mut self, now: Instant, k: usize) {
        let s = &mut self.sessions[k];
        if let Some((seq, data, done)) = s.writing.take() {
            if done > now {
                s.writing = Some((seq, data, done));
            } else {
                s.receiver.buffer_written(seq);
                s.receiver.recycle(data);
            }
        }
        // Control messages are taken as they are read (`weft recv` reads them on a thread of
        // their own), datagrams one `recvfrom` at a time when the process is free.
        let msgs = {
            let mut w = self.wire.borrow_mut();
            s.ctl.receive(now, &mut w.to_receiver[k])
        };
        for (t, c) in msgs {
            let _ = s.receiver.handle_control(t, c);
        }
        let idle = s.busy_until <= now;
        // One datagram per call: the oldest readable one over the stripes.
        let next = s
            .sockets
            .iter()
            .enumerate()
            .filter_map(|(i, q)| q.queue.front().map(|(_, t)| (i, *t)))
            .filter(|(_, t)| *t <= now && idle)
            .min_by_key(|(_, t)| *t);
        if let Some((i, arrived)) = next
            && let Some((no, _)) = s.sockets[i].queue.pop_front()
        {
            let entry = self.wire.borrow_mut().datagrams.remove(&no);
            if let Some((_, _, h, len)) = entry {
                let bytes = (HEADER_LEN + len) as u64;
                s.sockets[i].bytes -= bytes;
                let done = match &mut self.cpu {
                    Some(c) => c.receive(now, bytes, 0, 1),
                    None => now,
                };
                s.busy_until = done;
                let mut dgram = Vec::with_capacity(HEADER_LEN + len);
                dgram.extend_from_slice(&h);
                dgram.resize(HEADER_LEN + len, 0);
                s.receiver.handle_datagram_at(done, Some(arrived), &dgram);
            }
        }
        // A round is judged once what has arrived for it has been read: the settling time
        // counts from the last datagram the receiver could read, not from `End` alone.
        if !s
            .sockets
            .iter()
            .any(|q| q.queue.front().is_some_and(|x| x.1 <= now))
        {
            s.receiver.handle_timeout(now);
        }
        // What the protocol says goes first: `Done` leaves before its buffer is written.
        Self::write_control(s, &self.wire, k, now);
        while let Some(ev) = s.receiver.poll_event() {
            match ev {
                ReceiverEvent::Offer { file, .. } => {
                    let _ = s.receiver.accept_file(now, file, Vec::new());
                }
                ReceiverEvent::Write {
                    seq, offset, data, ..
                } => {
                    let len = data.len() as u64;
                    let mut at = s.busy_until.max(now);
                    // The write call copies the buffer into the cache, then waits for the
                    // disk as the cache's dirty limit says.
                    if self.disk.is_some()
                        && let Some(cpu) = &mut self.cpu
                    {
                        let copy = cpu.costs().copy_ns_per_byte * len as f64;
                        at = cpu.run(at, Duration::from_secs_f64(copy / 1e9));
                    }
                    let done = match &mut self.disk {
                        Some(d) => d.write(at, FILE, offset, len),
                        None => at,
                    };
                    self.bytes_written += len;
                    s.busy_until = done;
                    s.writing = Some((seq, data, done));
                }
                ReceiverEvent::FileEnd { file, .. } => {
                    s.receiver.file_result(file, true, String::new())
                }
                ReceiverEvent::Finished => s.finished = true,
            }
        }
        Self::write_control(s, &self.wire, k, now);
    }

    /// Writes what session `k`'s receiver has to say on its control connection.
    fn write_control(s: &mut RecvSession, wire: &Shared, k: usize, now: Instant) {
        {
            let mut w = wire.borrow_mut();
            while let Some(c) = s.receiver.poll_control() {
                s.ctl.send(c, &mut w.to_sender[k]);
            }
        }
        s.ctl.io.flush(now);
    }
}

impl App for XferReceiver {
    fn poll_send(&mut self, now: Instant) -> Option<(Instant, SimFrame)> {
        self.step(now);
        self.sessions
            .iter_mut()
            .find_map(|s| s.ctl.io.sock.pop_frame(now))
    }

    fn deliver(&mut self, now: Instant, f: SimFrame) {
        if f.segment().is_none() {
            return self.datagram(now, &f);
        }
        for s in &mut self.sessions {
            if s.ctl.io.sock.deliver(now, &f) {
                return;
            }
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.sessions
            .iter()
            .flat_map(|s| {
                let readable = s
                    .sockets
                    .iter()
                    .filter_map(|q| q.queue.front().map(|x| x.1))
                    .min()
                    .map(|t| t.max(s.busy_until));
                [
                    readable,
                    s.writing.as_ref().map(|w| w.2),
                    s.ctl.io.sock.poll_timeout(),
                    s.ctl.io.poll_timeout(),
                    s.receiver.poll_timeout().map(|t| t.max(s.busy_until)),
                ]
            })
            .flatten()
            .min()
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Simulated time a transfer may take before the run gives up on it, when the workload gives no
/// `time`.
pub const DEFAULT_LIMIT: Duration = Duration::from_secs(3600);

/// Runs a workload of kind `xfer` of `s` on `topo`; metrics into `m`, what could not be done
/// into `notes`. Each end's CPU is its host's `costs` preset, its disk its `disk` preset.
pub fn xfer_workload(
    s: &weft_model::scenario::Scenario,
    topo: &weft_model::net::Topology,
    w: &weft_model::scenario::Workload,
    seed: u64,
    m: &mut serde_json::Map<String, serde_json::Value>,
    notes: &mut Vec<String>,
) {
    use serde_json::json;
    use weft_model::scenario::{Host, Metric, XferMode};
    let Some(x) = &w.xfer else { return };
    let index = |name: &String| topo.hosts.iter().position(|h| &h.name == name);
    let (Some(from), Some(to)) = (w.from.first().and_then(index), w.to.first().and_then(index))
    else {
        return notes.push("an xfer workload names a host that does not exist".into());
    };
    let host = |i: usize| s.host(&topo.hosts[i].name);
    let cpu = |i: usize| host(i).and_then(Host::cost_preset).map(HostCpu::new);
    let disk = |i: usize| host(i).and_then(Host::disk_preset).map(Disk::new);
    let spec = XferSpec {
        mode: match x.mode {
            XferMode::Sbtp => Mode::Sbtp,
            XferMode::Mbtp => Mode::Mbtp,
        },
        file: x.file.0,
        buffer: x.buffer.0.min(u64::from(u32::MAX)) as u32,
        packet: x.packet.0.min(65_000) as u32,
        sessions: x.receivers.max(1),
        stripes: x.stripes.max(1),
        socket_buffer: x.socket_buffer.0,
        settle: Duration::from_millis(20),
    };
    let (tx, rx) = xfer_apps(
        &spec,
        from,
        to,
        (cpu(from), cpu(to)),
        (disk(from), disk(to)),
        seed,
    );
    let apps: Vec<(usize, Box<dyn App>)> = vec![(from, Box::new(tx)), (to, Box::new(rx))];
    let limit = w.time.unwrap_or(DEFAULT_LIMIT);
    let Some(r) = super::run::run_noted(topo, apps, limit, None, notes) else {
        return;
    };
    let (Some(tx), Some(rx)) = (
        r.hosts.apps_of::<XferSender>().next().map(|a| a.1),
        r.hosts.apps_of::<XferReceiver>().next().map(|a| a.1),
    ) else {
        return;
    };
    let (sent, lost, buffers) = tx.totals();
    if !tx.is_finished() {
        notes.push(format!(
            "the transfer did not finish in {limit} of simulated time ({buffers} buffers done)"
        ));
        return;
    }
    let sp = tx.split;
    let secs = sp.elapsed.as_secs_f64().max(1e-12);
    let bps = x.file.0 as f64 * 8.0 / secs;
    m.insert(Metric::GOODPUT_MBPS.into(), json!(bps / 1e6));
    m.insert(Metric::PAYLOAD_KIB_S.into(), json!(bps / 8.0 / 1024.0));
    m.insert(Metric::SYNC_PCT.into(), json!(sp.pct(sp.sync())));
    m.insert(Metric::DISK_PCT.into(), json!(sp.pct(sp.disk)));
    m.insert(Metric::TRANSFER_PCT.into(), json!(sp.pct(sp.transfer)));
    for (k, v) in Metric::idle(sp.pct(sp.transfer)) {
        m.insert(k, json!(v));
    }
    m.insert("seconds".into(), json!(secs));
    m.insert("datagrams_sent".into(), json!(sent));
    m.insert("datagrams_lost".into(), json!(lost));
    m.insert(
        "loss_fraction".into(),
        json!(lost as f64 / sent.max(1) as f64),
    );
    m.insert("socket_drops".into(), json!(rx.socket_drops()));
    m.insert("buffers".into(), json!(buffers));
    m.insert("events".into(), json!(r.stats.sent + r.stats.delivered));
}
