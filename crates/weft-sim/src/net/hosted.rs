//! The simulator's driver of the core's applications ([`weft_model::app`]): an [`Application`]
//! on a simulated host, over TCP connections ([`Stream`]: the sans-IO connection with the
//! host's CPU, a blocking writer and reader; several of them for a message-passing rank, with
//! the host's transmit path, [`Nic`]) or a UDP socket ([`DatagramSocket`]), as the engine's
//! [`App`]. Every workload that is an [`Application`] runs here unchanged; this file holds no
//! workload logic, only the call order of [`weft_model::app`].

use std::any::Any;

use weft_model::Instant;
use weft_model::app::{Application, Input, Output, StreamId, Tag};
use weft_model::host::HostCpu;
use weft_model::net::LinkSpec;
use weft_model::tcp::{Config, Connection, SeqNum, State};

use super::datagram::DatagramSocket;
use super::frame::SimFrame;
use super::hosts::App;
use super::nic::Nic;
use super::stream::{HostSocket, Stream, earliest};

/// Bytes of a datagram's number the simulator carries (its frames' `seq`).
const SEQ_BYTES: usize = 4;

/// One end of a TCP connection on a host: where it is and who it talks to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TcpEnd {
    /// This end's host.
    pub host: usize,
    /// This end's port.
    pub port: u16,
    /// The peer's host.
    pub peer: usize,
    /// The peer's port.
    pub peer_port: u16,
}

/// One of the application's streams.
#[derive(Debug)]
struct End {
    io: Stream,
    /// The application was told the stream is open.
    connected: bool,
    /// The application was told the stream ended.
    ended: bool,
}

/// The transport under the application.
#[derive(Debug)]
enum Io {
    /// Streams by [`StreamId`] (`None`: no stream of that number), and the transmit path
    /// they share, if the host paces them onto its link.
    Streams {
        ends: Vec<Option<End>>,
        nic: Option<Box<Nic>>,
    },
    Datagram(Box<DatagramSocket>),
}

/// An application on a simulated host.
#[derive(Debug)]
pub struct Hosted<A> {
    app: A,
    io: Io,
    /// Nothing has run yet and the first call runs at time zero (a client's SYN).
    fresh: bool,
    /// The instant of the last step, if nothing has arrived since: a step again at that
    /// instant finds nothing new to do (its inputs, segments and timers at or before it, are
    /// spent), so the calls that only drain the socket's frames skip it.
    stepped_at: Option<Instant>,
    /// Over UDP, a send call blocks the application until its work on the host is done
    /// ([`Hosted::blocking_sends`]); then until when, if it is blocked.
    blocking: bool,
    blocked: Option<Instant>,
}

/// A stream end for `conn` at `end`.
fn end(end: TcpEnd, conn: Connection) -> End {
    End {
        io: Stream::new(HostSocket::new(
            end.host,
            end.peer,
            end.peer_port,
            conn,
            None,
        )),
        connected: false,
        ended: false,
    }
}

impl<A: Application> Hosted<A> {
    /// `app` as the client of a TCP connection from `end`, configured with `cfg`, whose SYN
    /// leaves at time zero.
    pub fn connect(app: A, at: TcpEnd, cfg: Config, iss: SeqNum) -> Self {
        let conn = Connection::connect(cfg, at.port, at.peer_port, iss, Instant::ZERO);
        Self::on_streams(app, vec![Some(end(at, conn))], true)
    }

    /// `app` as the server of a TCP connection on `end`, accepting only from its peer.
    pub fn listen(app: A, at: TcpEnd, cfg: Config, iss: SeqNum) -> Self {
        let conn = Connection::listen(cfg, at.port, iss);
        Self::on_streams(app, vec![Some(end(at, conn))], false)
    }

    /// `app` on several TCP connections, stream `k` the `k`-th (`None`: no stream of that
    /// number), each given as its end and its connection (opening or listening); the first
    /// turn runs at time zero.
    pub fn streams(app: A, conns: Vec<Option<(TcpEnd, Connection)>>) -> Self {
        let ends = conns
            .into_iter()
            .map(|c| c.map(|(at, conn)| end(at, conn)))
            .collect();
        Self::on_streams(app, ends, true)
    }

    fn on_streams(app: A, ends: Vec<Option<End>>, fresh: bool) -> Self {
        Hosted {
            app,
            io: Io::Streams { ends, nic: None },
            fresh,
            stepped_at: None,
            blocking: false,
            blocked: None,
        }
    }

    /// `app` on a UDP socket of host `host`, its datagrams cut at `mtu` bytes (IP).
    pub fn udp(app: A, host: usize, mtu: u32) -> Self {
        Hosted {
            app,
            io: Io::Datagram(Box::new(DatagramSocket::new(host, mtu))),
            fresh: false,
            stepped_at: None,
            blocking: false,
            blocked: None,
        }
    }

    /// Sends the streams' segments through a [`Nic`] onto `link` (the host's link): each
    /// connection keeps at most a couple of segments below it, and the connections take turns
    /// at the line, as on a Linux host. (Segments leave as the connections release them; the
    /// host's CPU is not charged on this path.)
    pub fn with_link(mut self, link: LinkSpec) -> Self {
        if let Io::Streams { ends, nic } = &mut self.io {
            *nic = Some(Box::new(Nic::new(link, ends.len())));
            for e in ends.iter_mut().flatten() {
                e.io.set_host(false, false);
            }
        }
        self
    }

    /// Over UDP: takes only datagrams from host `peer`, as a connected socket does (the others
    /// are another socket's on the same host, which pays for them).
    pub fn connected_to(mut self, peer: usize) -> Self {
        if let Io::Datagram(s) = &mut self.io {
            s.connect(peer);
        }
        self
    }

    /// Over UDP: the socket measures its turnarounds and waits as an analyser on `link`, the
    /// host's link, stamps frames: at their first bit ([`DatagramSocket::set_line`]).
    pub fn analysed_on(mut self, link: LinkSpec) -> Self {
        if let Io::Datagram(s) = &mut self.io {
            s.set_line(link);
        }
        self
    }

    /// Over UDP: the application is a daemon that selects before each read
    /// ([`DatagramSocket::set_selects`]).
    pub fn selecting(mut self) -> Self {
        if let Io::Datagram(s) = &mut self.io {
            s.set_selects();
        }
        self
    }

    /// Over UDP: each send call blocks the application until the host has done its work (the
    /// call, the copies, each fragment's way to the adapter), as a blocking `sendto` does; the
    /// application hears it returned as [`Input::Written`]. A sender as fast as its host lets it
    /// (ttcp -u). Without it a send costs the host the same but the application goes on at once.
    pub fn blocking_sends(mut self) -> Self {
        self.blocking = true;
        self
    }

    /// Over UDP: the socket's receive buffer holds `bytes` (SO_RCVBUF); what does not fit while
    /// the application has not read what is there is dropped ([`DatagramSocket::drops`]).
    pub fn with_recv_buffer(mut self, bytes: u64) -> Self {
        if let Io::Datagram(s) = &mut self.io {
            s.set_recv_buffer(bytes);
        }
        self
    }

    /// Datagrams the UDP socket dropped with its receive buffer full (`None` over TCP).
    pub fn socket_drops(&self) -> Option<u64> {
        match &self.io {
            Io::Datagram(s) => Some(s.drops()),
            Io::Streams { .. } => None,
        }
    }

    /// Charges the host's work to `cpu`, if given (`None`: the host costs nothing).
    pub fn with_cpu(mut self, cpu: impl Into<Option<HostCpu>>) -> Self {
        let Some(cpu) = cpu.into() else { return self };
        match &mut self.io {
            Io::Streams { ends, .. } => {
                for e in ends.iter_mut().flatten() {
                    e.io.sock.set_cpu(cpu.clone());
                }
            }
            Io::Datagram(s) => s.set_cpu(cpu),
        }
        self
    }

    /// The host as the bulk-transfer model runs it: reads pipelined, one for whatever has
    /// arrived each time the application runs; segments sent after the application has run
    /// (not from the receive path); a blocked writer waiting for `send_lowat` free bytes; and a
    /// first turn at time zero at either end. (The request/response host reads one call at a
    /// time and sends what acknowledgements release from its receive path.)
    pub fn bulk_host(mut self, send_lowat: u64) -> Self {
        if let Io::Streams { ends, .. } = &mut self.io {
            for e in ends.iter_mut().flatten() {
                e.io.set_host(true, false);
                e.io.set_send_lowat(send_lowat);
            }
        }
        self.fresh = true;
        self
    }

    /// The host's CPU, if costs are charged.
    pub fn cpu(&self) -> Option<&HostCpu> {
        match &self.io {
            Io::Streams { ends, .. } => ends.iter().flatten().next()?.io.sock.cpu(),
            Io::Datagram(s) => s.cpu(),
        }
    }

    /// The application, for its results.
    pub fn app(&self) -> &A {
        &self.app
    }

    /// The UDP socket's turnarounds ([`DatagramSocket::turnarounds`]; `None` over TCP).
    pub fn turnarounds(&self) -> Option<(u64, weft_model::Duration)> {
        match &self.io {
            Io::Datagram(s) => Some(s.turnarounds()),
            Io::Streams { .. } => None,
        }
    }

    /// The UDP socket's waits for its peers ([`DatagramSocket::aways`]; `None` over TCP).
    pub fn aways(&self) -> Option<(u64, weft_model::Duration)> {
        match &self.io {
            Io::Datagram(s) => Some(s.aways()),
            Io::Streams { .. } => None,
        }
    }

    /// The TCP connection of stream 0, for its statistics (`None` over UDP).
    pub fn connection(&self) -> Option<&Connection> {
        self.connection_of(0)
    }

    /// The TCP connection of stream `k`.
    pub fn connection_of(&self, k: StreamId) -> Option<&Connection> {
        match &self.io {
            Io::Streams { ends, .. } => Some(ends.get(k)?.as_ref()?.io.sock.conn()),
            Io::Datagram(_) => None,
        }
    }

    /// One turn at `now`, in the order of [`weft_model::app`]: the transport's input, the
    /// application's timers, its inputs, its outputs.
    fn step(&mut self, now: Instant) {
        self.fresh = false;
        let app = &mut self.app;
        match &mut self.io {
            Io::Streams { ends, nic } => {
                for e in ends.iter_mut().flatten() {
                    e.io.receive(now);
                }
                if app.poll_timeout().is_some_and(|t| t <= now) {
                    app.handle_timeout(now);
                }
                // A process in a call of its own (a disk write) reads nothing until it returns.
                let busy = app.busy_until().is_some_and(|t| t > now);
                for (k, e) in ends.iter_mut().enumerate() {
                    let Some(e) = e.as_mut().filter(|_| !busy) else {
                        continue;
                    };
                    e.io.read(now, |t, len| {
                        let read = Input::Read {
                            stream: k,
                            len,
                            data: None,
                        };
                        app.handle_input(t, read);
                    });
                }
                for (k, e) in ends.iter_mut().enumerate() {
                    let Some(e) = e else { continue };
                    let conn = e.io.sock.conn();
                    if !e.ended && (conn.error().is_some() || e.io.is_read_to_end()) {
                        e.ended = true;
                        let error = conn.error().map(Into::into);
                        app.handle_input(now, Input::Closed { stream: k, error });
                    }
                    if !e.connected && e.io.sock.conn().state() == State::Established {
                        e.connected = true;
                        app.handle_input(now, Input::Connected { stream: k });
                    }
                }
                loop {
                    while let Some(out) = app.poll_output(now) {
                        let (k, len) = match out {
                            Output::Write { stream, len, .. } | Output::Echo { stream, len } => {
                                (stream, Some(len))
                            }
                            Output::Close { stream } => (stream, None),
                            _ => continue,
                        };
                        let Some(Some(e)) = ends.get_mut(k) else {
                            continue;
                        };
                        match len {
                            Some(len) => e.io.write(len),
                            None => e.io.close(now),
                        }
                    }
                    let mut written = false;
                    for (k, e) in ends.iter_mut().enumerate() {
                        let Some(e) = e else { continue };
                        for _ in 0..e.io.pump(now) {
                            written = true;
                            app.handle_input(now, Input::Written { stream: k });
                        }
                    }
                    if !written {
                        break;
                    }
                }
                transmit(ends, nic, now);
            }
            Io::Datagram(sock) => {
                if let Some(t) = self.blocked.filter(|&t| t <= now) {
                    self.blocked = None;
                    app.handle_input(t, Input::Written { stream: 0 });
                }
                if app.poll_timeout().is_some_and(|t| t <= now) {
                    app.handle_timeout(now);
                }
                // One datagram at a time, its answers sent before the next is read (the
                // socket charges each read when it is asked for the datagram); a blocked
                // sender is not asked for more until its call returns.
                loop {
                    let got = sock.recv(now);
                    if let Some((t, d)) = got {
                        let input = Input::Datagram {
                            peer: d.from,
                            len: d.len,
                            tag: Some(Tag::new(u64::from(d.seq), SEQ_BYTES)),
                            data: None,
                        };
                        app.handle_input(t, input);
                    }
                    while self.blocked.is_none()
                        && let Some(out) = app.poll_output(now)
                    {
                        if let Output::Send { peer, len, tag } = out {
                            let seq = tag.map_or(0, |t| t.value as u32);
                            let returned = sock.send(now, peer, len, seq);
                            if self.blocking && returned > now {
                                self.blocked = Some(returned);
                            }
                        }
                    }
                    if got.is_none() {
                        break;
                    }
                }
            }
        }
    }
}

/// Sends what the connections let go: into each socket's queue for the NIC, or, through a
/// [`Nic`], as much as each flow has room for, flow by flow.
fn transmit(ends: &mut [Option<End>], nic: &mut Option<Box<Nic>>, now: Instant) {
    let Some(nic) = nic else {
        for e in ends.iter_mut().flatten() {
            e.io.sock.transmit(now);
        }
        return;
    };
    for (q, e) in ends.iter_mut().enumerate() {
        let Some(e) = e else { continue };
        while nic.has_room(q) {
            let Some(seg) = e.io.sock.conn_mut().poll_transmit(now) else {
                break;
            };
            nic.push(q, e.io.sock.frame(seg, now));
        }
    }
}

impl<A: Application + 'static> App for Hosted<A> {
    fn poll_send(&mut self, now: Instant) -> Option<(Instant, SimFrame)> {
        let due = |t: Option<Instant>| t.is_some_and(|t| t <= now);
        let timer = match &self.io {
            Io::Streams { ends, .. } => ends
                .iter()
                .flatten()
                .any(|e| due(e.io.sock.conn().poll_timeout())),
            Io::Datagram(_) => false,
        };
        if self.stepped_at != Some(now) || timer || due(self.app.poll_timeout()) {
            self.step(now);
            self.stepped_at = Some(now);
        } else if let Io::Streams { ends, nic } = &mut self.io
            && nic.is_some()
        {
            // The line took a frame: the flows have room again.
            transmit(ends, nic, now);
        }
        match &mut self.io {
            Io::Streams { nic: Some(nic), .. } => nic.pop(now).map(|f| (now, f)),
            Io::Streams { ends, .. } => ends
                .iter_mut()
                .flatten()
                .find_map(|e| e.io.sock.pop_frame(now)),
            Io::Datagram(s) => s.pop_frame(now),
        }
    }

    fn deliver(&mut self, now: Instant, f: SimFrame) {
        self.stepped_at = None;
        match &mut self.io {
            Io::Streams { ends, .. } => {
                for e in ends.iter_mut().flatten() {
                    if e.io.sock.deliver(now, &f) {
                        break;
                    }
                }
            }
            Io::Datagram(s) => {
                s.deliver(now, &f);
            }
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        if self.fresh {
            return Some(Instant::ZERO);
        }
        // A process in a call of its own reads nothing before it returns: its finished reads
        // wait for that (asking for a turn meanwhile would find nothing to do, forever).
        let reads_from = self.app.busy_until().unwrap_or(Instant::ZERO);
        let io = match &self.io {
            Io::Streams { ends, nic } => ends
                .iter()
                .flatten()
                .fold(nic.as_ref().and_then(|n| n.poll_timeout()), |t, e| {
                    earliest(t, e.io.poll_timeout_reading_from(reads_from))
                }),
            Io::Datagram(s) => earliest(s.poll_timeout(), self.blocked),
        };
        // A blocked sender is not asked for more until its call returns.
        let app = match self.blocked {
            Some(_) => None,
            None => self.app.poll_timeout(),
        };
        earliest(io, app)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
