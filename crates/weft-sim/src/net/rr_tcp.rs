//! Request/response over TCP on simulated hosts (`kind = "rr"`, `proto = "tcp"`), as netperf's
//! TCP_RR or an echo test runs it: one connection per client and server, opened before the
//! first request; the client writes a `request`-byte message with one call, reads until the
//! whole `response` has arrived, and writes the next. The server answers once the whole request
//! has arrived ([`Answer::Whole`]), or echoes each read back at once as an RFC 862 echo service
//! does ([`Answer::Echo`]).
//!
//! Everything TCP does to a transaction happens here as on a real host, because the hosts run
//! the sans-IO [`Connection`] of `weft_model::tcp` with the stack's configuration: segments of
//! the MSS, Nagle's rule (4.4BSD's or Linux's) holding a message's short tail, delayed ACKs (the
//! server's ACK rides on its answer when the answer is quicker than the timer), the congestion
//! window, retransmissions. Host costs are charged as [`super::stream`] says.
//!
//! A request whose answer has not arrived `timeout` after the request was written counts as
//! lost (`rr_loss`), as a UDP echo's would. TCP loses no answer, it only delays it, and the
//! stream must stay in step: the client keeps the connection, keeps reading, discards the late
//! answer when it arrives and then writes the next request (netperf TCP_RR and sockperf keep
//! their connection too). If the connection itself fails (the peer resets it, or a segment is
//! retransmitted until TCP gives up), the request in flight is lost and the client asks no
//! more ([`TcpRrClient::failed`]).

use std::any::Any;

pub use weft_model::calc::rr_tcp::Answer;
use weft_model::host::HostCpu;
use weft_model::tcp::{self, Config, Connection, SeqNum, State};
use weft_model::{Duration, Instant};

use super::frame::SimFrame;
use super::hosts::App;
use super::stream::{HostSocket, Stream};

/// What the client asks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transactions {
    /// Bytes of each request.
    pub request: u64,
    /// Bytes of each answer.
    pub response: u64,
    /// Requests to make.
    pub count: u64,
    /// How long an answer may take before its request counts as lost.
    pub timeout: Duration,
}

/// The request in flight.
#[derive(Clone, Copy, Debug)]
struct InFlight {
    /// When its write call began.
    issued: Instant,
    /// Answer bytes read so far.
    got: u64,
    /// Already counted as lost (its answer is still read, then discarded).
    late: bool,
}

/// The client.
#[derive(Debug)]
pub struct TcpRrClient {
    io: Stream,
    spec: Transactions,
    /// The first request is not written before this instant.
    start: Instant,
    /// Nothing has run yet: the first call sends the SYN.
    fresh: bool,
    current: Option<InFlight>,
    /// When the next request may be written (once connected).
    next: Instant,
    issued: u64,
    /// Round trips of the requests answered in time, ns, in order.
    pub rtt_ns: Vec<u64>,
    /// Requests answered late, or not at all.
    pub lost: u64,
    /// Why the connection failed, if it did.
    pub failed: Option<tcp::Error>,
}

impl TcpRrClient {
    /// A client on host `host` port `port` asking the server on host `server` port
    /// `server_port`, over a connection configured with `cfg` whose SYN leaves at time zero.
    pub fn new(
        host: usize,
        port: u16,
        server: usize,
        server_port: u16,
        cfg: Config,
        iss: SeqNum,
        spec: Transactions,
    ) -> Self {
        let conn = Connection::connect(cfg, port, server_port, iss, Instant::ZERO);
        TcpRrClient {
            io: Stream::new(HostSocket::new(host, server, server_port, conn, None)),
            spec,
            start: Instant::ZERO,
            fresh: true,
            current: None,
            next: Instant::ZERO,
            issued: 0,
            rtt_ns: Vec::new(),
            lost: 0,
            failed: None,
        }
    }

    /// Charges the host's work to `cpu`.
    pub fn with_cpu(mut self, cpu: HostCpu) -> Self {
        self.io.sock.set_cpu(cpu);
        self
    }

    /// Writes the first request at `at` at the earliest (after other traffic has warmed up).
    pub fn starting(mut self, at: Instant) -> Self {
        self.start = at;
        self.next = at;
        self
    }

    /// The connection, for its statistics.
    pub fn connection(&self) -> &Connection {
        self.io.sock.conn()
    }

    /// Requests written.
    pub fn requests(&self) -> u64 {
        self.issued
    }

    fn step(&mut self, now: Instant) {
        self.fresh = false;
        self.io.receive(now);
        if let Some(c) = self.current
            && !c.late
            && now >= c.issued + self.spec.timeout
        {
            self.lost += 1;
            self.current = Some(InFlight { late: true, ..c });
        }
        if let Some((t, n)) = self.io.read(now) {
            self.answer_read(t, n);
        }
        if self.failed.is_none()
            && let Some(e) = self.io.sock.conn().error()
        {
            self.failed = Some(e);
            if self.current.take().is_some_and(|c| !c.late) {
                self.lost += 1;
            }
        }
        let connected = self.io.sock.conn().state() == State::Established;
        if connected
            && self.failed.is_none()
            && self.current.is_none()
            && self.issued < self.spec.count
            && now >= self.next
        {
            self.issued += 1;
            self.current = Some(InFlight {
                issued: now,
                got: 0,
                late: false,
            });
            self.io.write(self.spec.request);
        }
        self.io.flush(now);
    }

    /// `n` answer bytes were read by `t`.
    fn answer_read(&mut self, t: Instant, n: u64) {
        let Some(mut c) = self.current else { return };
        c.got += n;
        if c.got < self.spec.response {
            self.current = Some(c);
            return;
        }
        // One request at a time: nothing beyond the answer can have arrived.
        self.current = None;
        self.next = t.max(self.start);
        let rtt = t.0 - c.issued.0;
        if !c.late && rtt <= self.spec.timeout.0 {
            self.rtt_ns.push(rtt);
        } else if !c.late {
            self.lost += 1;
        }
    }
}

impl App for TcpRrClient {
    fn poll_send(&mut self, now: Instant) -> Option<(Instant, SimFrame)> {
        self.step(now);
        self.io.sock.pop_frame(now)
    }

    fn deliver(&mut self, now: Instant, f: SimFrame) {
        self.io.sock.deliver(now, &f);
    }

    fn poll_timeout(&self) -> Option<Instant> {
        let waiting = self.failed.is_none() && self.io.sock.conn().state() == State::Established;
        let issue = (waiting && self.current.is_none() && self.issued < self.spec.count)
            .then_some(self.next);
        let deadline = self
            .current
            .filter(|c| !c.late)
            .map(|c| c.issued + self.spec.timeout);
        [
            self.fresh.then_some(Instant::ZERO),
            self.io.poll_timeout(),
            issue,
            deadline,
        ]
        .into_iter()
        .flatten()
        .min()
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The server: answers one client's requests on one connection.
#[derive(Debug)]
pub struct TcpRrServer {
    io: Stream,
    request: u64,
    response: u64,
    answer: Answer,
    /// Bytes of the current request read so far ([`Answer::Whole`]).
    got: u64,
    /// Requests answered ([`Answer::Whole`]) or reads echoed ([`Answer::Echo`]).
    pub answered: u64,
}

impl TcpRrServer {
    /// A server on host `host` port `port` for the client on host `client` port `client_port`,
    /// reading `request`-byte requests and answering `response` bytes as `answer` says.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        host: usize,
        port: u16,
        client: usize,
        client_port: u16,
        cfg: Config,
        iss: SeqNum,
        request: u64,
        response: u64,
        answer: Answer,
    ) -> Self {
        let conn = Connection::listen(cfg, port, iss);
        TcpRrServer {
            io: Stream::new(HostSocket::new(host, client, client_port, conn, None)),
            request: request.max(1),
            response,
            answer,
            got: 0,
            answered: 0,
        }
    }

    /// Charges the host's work to `cpu`.
    pub fn with_cpu(mut self, cpu: HostCpu) -> Self {
        self.io.sock.set_cpu(cpu);
        self
    }

    /// The connection, for its statistics.
    pub fn connection(&self) -> &Connection {
        self.io.sock.conn()
    }

    fn step(&mut self, now: Instant) {
        self.io.receive(now);
        // The application has the bytes (by `now`): its write starts now.
        if let Some((_, n)) = self.io.read(now) {
            match self.answer {
                Answer::Echo => {
                    self.answered += 1;
                    self.io.write(n);
                }
                Answer::Whole => {
                    self.got += n;
                    while self.got >= self.request {
                        self.got -= self.request;
                        self.answered += 1;
                        self.io.write(self.response);
                    }
                }
            }
        }
        self.io.flush(now);
    }
}

impl App for TcpRrServer {
    fn poll_send(&mut self, now: Instant) -> Option<(Instant, SimFrame)> {
        self.step(now);
        self.io.sock.pop_frame(now)
    }

    fn deliver(&mut self, now: Instant, f: SimFrame) {
        self.io.sock.deliver(now, &f);
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.io.poll_timeout()
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
