//! The simulator's driver of the core's applications ([`weft_model::app`]): an [`Application`]
//! on a simulated host, over one TCP connection ([`Stream`]: the sans-IO connection with the
//! host's CPU, a blocking writer and reader) or a UDP socket ([`DatagramSocket`]), as the
//! engine's [`App`]. Every workload that is an [`Application`] runs here unchanged; this file
//! holds no workload logic, only the call order of [`weft_model::app`].

use std::any::Any;

use weft_model::Instant;
use weft_model::app::{Application, Input, Output, Tag};
use weft_model::host::HostCpu;
use weft_model::tcp::{Config, Connection, SeqNum, State};

use super::datagram::DatagramSocket;
use super::frame::SimFrame;
use super::hosts::App;
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

/// The transport under the application.
#[derive(Debug)]
enum Io {
    Stream {
        io: Box<Stream>,
        /// The application was told the stream is open.
        connected: bool,
        /// The application was told the stream ended.
        ended: bool,
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
}

impl<A: Application> Hosted<A> {
    /// `app` as the client of a TCP connection from `end`, configured with `cfg`, whose SYN
    /// leaves at time zero.
    pub fn connect(app: A, end: TcpEnd, cfg: Config, iss: SeqNum) -> Self {
        let conn = Connection::connect(cfg, end.port, end.peer_port, iss, Instant::ZERO);
        Self::on_stream(app, end, conn, true)
    }

    /// `app` as the server of a TCP connection on `end`, accepting only from its peer.
    pub fn listen(app: A, end: TcpEnd, cfg: Config, iss: SeqNum) -> Self {
        let conn = Connection::listen(cfg, end.port, iss);
        Self::on_stream(app, end, conn, false)
    }

    fn on_stream(app: A, end: TcpEnd, conn: Connection, fresh: bool) -> Self {
        let sock = HostSocket::new(end.host, end.peer, end.peer_port, conn, None);
        Hosted {
            app,
            io: Io::Stream {
                io: Box::new(Stream::new(sock)),
                connected: false,
                ended: false,
            },
            fresh,
            stepped_at: None,
        }
    }

    /// `app` on a UDP socket of host `host`, its datagrams cut at `mtu` bytes (IP).
    pub fn udp(app: A, host: usize, mtu: u32) -> Self {
        Hosted {
            app,
            io: Io::Datagram(Box::new(DatagramSocket::new(host, mtu))),
            fresh: false,
            stepped_at: None,
        }
    }

    /// Charges the host's work to `cpu`, if given (`None`: the host costs nothing).
    pub fn with_cpu(mut self, cpu: impl Into<Option<HostCpu>>) -> Self {
        match (&mut self.io, cpu.into()) {
            (Io::Stream { io, .. }, Some(cpu)) => io.sock.set_cpu(cpu),
            (Io::Datagram(s), Some(cpu)) => s.set_cpu(cpu),
            (_, None) => {}
        }
        self
    }

    /// The host as the bulk-transfer model runs it: reads pipelined, one for whatever has
    /// arrived each time the application runs; segments sent after the application has run
    /// (not from the receive path); a blocked writer waiting for `send_lowat` free bytes; and a
    /// first turn at time zero at either end. (The request/response host reads one call at a
    /// time and sends what acknowledgements release from its receive path.)
    pub fn bulk_host(mut self, send_lowat: u64) -> Self {
        if let Io::Stream { io, .. } = &mut self.io {
            io.set_bulk_host(true, false);
            io.set_send_lowat(send_lowat);
        }
        self.fresh = true;
        self
    }

    /// The host's CPU, if costs are charged.
    pub fn cpu(&self) -> Option<&HostCpu> {
        match &self.io {
            Io::Stream { io, .. } => io.sock.cpu(),
            Io::Datagram(s) => s.cpu(),
        }
    }

    /// The application, for its results.
    pub fn app(&self) -> &A {
        &self.app
    }

    /// The TCP connection, for its statistics (`None` over UDP).
    pub fn connection(&self) -> Option<&Connection> {
        match &self.io {
            Io::Stream { io, .. } => Some(io.sock.conn()),
            Io::Datagram(_) => None,
        }
    }

    /// One turn at `now`, in the order of [`weft_model::app`]: the transport's input, the
    /// application's timers, its inputs, its outputs.
    fn step(&mut self, now: Instant) {
        self.fresh = false;
        match &mut self.io {
            Io::Stream {
                io,
                connected,
                ended,
            } => {
                let app = &mut self.app;
                io.receive(now);
                if app.poll_timeout().is_some_and(|t| t <= now) {
                    app.handle_timeout(now);
                }
                io.read(now, |t, len| {
                    let read = Input::Read {
                        stream: 0,
                        len,
                        data: None,
                    };
                    app.handle_input(t, read);
                });
                let conn = io.sock.conn();
                if !*ended && (conn.error().is_some() || conn.is_recv_finished()) {
                    *ended = true;
                    let error = conn.error().map(Into::into);
                    app.handle_input(now, Input::Closed { stream: 0, error });
                }
                if !*connected && io.sock.conn().state() == State::Established {
                    *connected = true;
                    app.handle_input(now, Input::Connected { stream: 0 });
                }
                loop {
                    while let Some(out) = app.poll_output(now) {
                        match out {
                            Output::Write { len, .. } | Output::Echo { len, .. } => io.write(len),
                            Output::Close { .. } => io.close(now),
                            _ => {}
                        }
                    }
                    let written = io.pump(now);
                    if written == 0 {
                        break;
                    }
                    for _ in 0..written {
                        app.handle_input(now, Input::Written { stream: 0 });
                    }
                }
                io.sock.transmit(now);
            }
            Io::Datagram(sock) => {
                if self.app.poll_timeout().is_some_and(|t| t <= now) {
                    self.app.handle_timeout(now);
                }
                while let Some((t, d)) = sock.recv(now) {
                    let input = Input::Datagram {
                        peer: d.from,
                        len: d.len,
                        tag: Some(Tag::new(u64::from(d.seq), SEQ_BYTES)),
                        data: None,
                    };
                    self.app.handle_input(t, input);
                }
                while let Some(out) = self.app.poll_output(now) {
                    if let Output::Send { peer, len, tag } = out {
                        let seq = tag.map_or(0, |t| t.value as u32);
                        sock.send(now, peer, len, seq);
                    }
                }
            }
        }
    }
}

impl<A: Application + 'static> App for Hosted<A> {
    fn poll_send(&mut self, now: Instant) -> Option<(Instant, SimFrame)> {
        let due = |t: Option<Instant>| t.is_some_and(|t| t <= now);
        let timer = match &self.io {
            Io::Stream { io, .. } => due(io.sock.conn().poll_timeout()),
            Io::Datagram(_) => false,
        };
        if self.stepped_at != Some(now) || timer || due(self.app.poll_timeout()) {
            self.step(now);
            self.stepped_at = Some(now);
        }
        match &mut self.io {
            Io::Stream { io, .. } => io.sock.pop_frame(now),
            Io::Datagram(s) => s.pop_frame(now),
        }
    }

    fn deliver(&mut self, now: Instant, f: SimFrame) {
        self.stepped_at = None;
        match &mut self.io {
            Io::Stream { io, .. } => {
                io.sock.deliver(now, &f);
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
        let io = match &self.io {
            Io::Stream { io, .. } => io.poll_timeout(),
            Io::Datagram(s) => s.poll_timeout(),
        };
        earliest(io, self.app.poll_timeout())
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
