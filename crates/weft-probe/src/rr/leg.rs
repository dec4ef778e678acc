//! One size's transactions against a data endpoint: the core's request/response client
//! ([`weft_model::app::rr::RrClient`], the one the simulator and the emulator run) on the
//! socket driver ([`weft_sock`]), its requests reported to the size's [`Meter`].
//!
//! Warm: one connection (TCP) or socket (UDP) for every transaction, `burst` in flight. Cold: a
//! connection or socket per transaction, its set-up timed apart ([`Cold`]). Over TCP an answer
//! later than the time-out aborts the size (the request counts as lost); over UDP it is lost,
//! and told late when it comes. The driver spins instead of sleeping under `--busy-poll`.

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream, UdpSocket};
use std::time::{Duration, Instant};

use weft_model::app::StreamError;
use weft_model::app::rr::{Record, RrClient, RrSpec, Via};
use weft_sock::datagram::{self, Peers};
use weft_sock::{Clock, Options, stream};

use super::busy::BusyPoll;
use super::meter::{Cold, Meter};

/// What one size's loop is asked to do.
#[derive(Clone, Copy, Debug)]
pub struct Leg {
    /// Where the data endpoint is.
    pub addr: SocketAddr,
    /// Request size, bytes.
    pub req: usize,
    /// Response size, bytes.
    pub resp: usize,
    /// Transactions in flight.
    pub burst: u32,
    /// Longest a connect may block, and a transaction may take.
    pub timeout: Duration,
    /// Spin on a non-blocking socket instead of sleeping (`--busy-poll`).
    pub spin: bool,
}

/// Why a size stopped before its stop rule was met.
pub type Abort = String;

fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl Leg {
    /// The client's spec: `count` requests (the meter stops it sooner).
    fn spec(&self, count: u64, proto_tcp: bool) -> RrSpec {
        RrSpec {
            request: self.req as u64,
            response: self.resp as u64,
            count,
            timeout: weft_model::Duration(ns(self.timeout)),
            start: weft_model::Instant::ZERO,
            // TCP: a late answer ends the size at once.
            give_up: proto_tcp.then_some(weft_model::Duration::ZERO),
        }
    }

    fn options(&self) -> Options {
        Options {
            spin_after: self.spin.then_some(weft_model::Duration::ZERO),
            refused_ends: true,
            ..Options::default()
        }
    }

    fn connect(&self) -> Result<TcpStream, Abort> {
        let s = TcpStream::connect_timeout(&self.addr, self.timeout)
            .map_err(|e| format!("TCP connect to {} failed: {e}", self.addr))?;
        s.set_nodelay(true)
            .map_err(|e| format!("TCP_NODELAY: {e}"))?;
        Ok(s)
    }

    fn open(&self) -> Result<UdpSocket, Abort> {
        let local: SocketAddr = if self.addr.is_ipv6() {
            (Ipv6Addr::UNSPECIFIED, 0).into()
        } else {
            (Ipv4Addr::UNSPECIFIED, 0).into()
        };
        let s = UdpSocket::bind(local).map_err(|e| format!("UDP bind: {e}"))?;
        // Connected, so that an ICMP port unreachable is seen.
        s.connect(self.addr)
            .map_err(|e| format!("UDP connect to {}: {e}", self.addr))?;
        Ok(s)
    }

    /// Runs `c` on `s`; the size's abort, if the client stopped short.
    fn tcp<R: Record>(&self, c: &mut RrClient<R>, s: &TcpStream) -> Result<(), Abort> {
        let r = stream::drive(c, s, &Clock::start(), &self.options())
            .map_err(|e| format!("waiting on {}: {e}", self.addr))?;
        if c.gave_up() {
            return Err(format!(
                "no response within the {:?} time-out from {}",
                self.timeout, self.addr
            ));
        }
        if c.unframed() {
            return Err(format!(
                "the response from {} does not carry the request's sequence number: the peer \
                 is not an echo service or a weft agent, or the stream lost its framing",
                self.addr
            ));
        }
        match c.failed() {
            Some(StreamError::TimedOut) => Err(format!(
                "no response within the {:?} time-out from {}",
                self.timeout, self.addr
            )),
            Some(e) => Err(format!("response on {} failed: {e}", self.addr)),
            None if r.eof && c.in_flight() > 0 => Err(format!(
                "{} closed the connection before answering",
                self.addr
            )),
            None => Ok(()),
        }
    }

    /// Runs `c` on `s`; the size's abort, if the client stopped short.
    fn udp<R: Record>(
        &self,
        c: &mut RrClient<R>,
        s: &UdpSocket,
        meter_losses: impl Fn(&RrClient<R>) -> u64,
    ) -> Result<(), Abort> {
        let mut peers = Peers::fixed(vec![self.addr]);
        let run = datagram::drive(
            c,
            s,
            &mut peers,
            &Clock::start(),
            &self.options(),
            |_, _| false,
        );
        match run {
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                return Err(format!(
                    "{} refused the datagrams (ICMP port unreachable): nothing listens there",
                    self.addr
                ));
            }
            Err(e) => return Err(format!("receiving from {}: {e}", self.addr)),
            Ok(_) => {}
        }
        if let Some(n) = c.wrong_size() {
            return Err(format!(
                "a reply of {n} bytes came to a request expecting {}: the peer truncates or \
                 pads datagrams (socat needs -b 65536 for large ones)",
                self.resp
            ));
        }
        if c.stopped() {
            return Err(format!(
                "{} consecutive requests to {} went unanswered within {:?}",
                meter_losses(c),
                self.addr,
                self.timeout
            ));
        }
        Ok(())
    }
}

/// One persistent connection; `burst` transactions in flight.
pub fn tcp_warm(leg: &Leg, meter: &mut Meter) -> Result<(), Abort> {
    let s = leg.connect()?;
    if leg.spin {
        meter.busy_poll = Some(BusyPoll::enable(&s));
    }
    let first = meter.issued();
    let mut c = RrClient::with_record(leg.spec(u64::MAX, true), Via::Stream, &mut *meter)
        .with_burst(u64::from(leg.burst))
        .starting_at(first);
    let r = leg.tcp(&mut c, &s);
    let stray = c.stray();
    meter.stray += stray;
    r
}

/// Connect, transact and close for every transaction; the latency includes the connection
/// set-up, which is also recorded on its own.
pub fn tcp_cold(leg: &Leg, meter: &mut Meter) -> Result<(), Abort> {
    while meter.may_issue() {
        let t0 = Instant::now();
        let s = leg.connect()?;
        let connect_ns = ns(t0.elapsed());
        let first = meter.issued();
        let cold = Cold {
            meter: &mut *meter,
            connect_ns,
        };
        let mut c = RrClient::with_record(leg.spec(1, true), Via::Stream, cold).starting_at(first);
        let r = leg.tcp(&mut c, &s);
        let stray = c.stray();
        meter.stray += stray;
        r?;
    }
    Ok(())
}

/// Warm UDP: one socket; up to `burst` requests in flight.
pub fn udp_warm(leg: &Leg, meter: &mut Meter) -> Result<(), Abort> {
    let s = leg.open()?;
    if leg.spin {
        meter.busy_poll = Some(BusyPoll::enable(&s));
    }
    let first = meter.issued();
    let mut c = RrClient::with_record(leg.spec(u64::MAX, false), Via::Datagram(0), &mut *meter)
        .with_burst(u64::from(leg.burst))
        .starting_at(first);
    let r = leg.udp(&mut c, &s, |c| c.record().consecutive_losses());
    let (late, stray) = (c.late(), c.stray());
    meter.late += late;
    meter.stray += stray;
    r
}

/// Cold UDP: a fresh socket (bind and connect) for every transaction, the set-up timed apart.
pub fn udp_cold(leg: &Leg, meter: &mut Meter) -> Result<(), Abort> {
    while meter.may_issue() {
        let t0 = Instant::now();
        let s = leg.open()?;
        let connect_ns = ns(t0.elapsed());
        let first = meter.issued();
        let cold = Cold {
            meter: &mut *meter,
            connect_ns,
        };
        let mut c =
            RrClient::with_record(leg.spec(1, false), Via::Datagram(0), cold).starting_at(first);
        let r = leg.udp(&mut c, &s, |c| c.record().meter.consecutive_losses());
        let (late, stray) = (c.late(), c.stray());
        meter.late += late;
        meter.stray += stray;
        r?;
    }
    Ok(())
}
