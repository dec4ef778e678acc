//! UDP request/response: one datagram each way, a per-request time-out after which the
//! transaction counts as lost, and sequence numbers that let late replies be recognised and
//! discarded. Several requests may be in flight (`--burst`); `--cold` uses a fresh socket per
//! transaction.

use std::collections::VecDeque;
use std::io::ErrorKind;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use super::busy::{BusyPoll, Spinner};
use super::meter::Meter;
use super::tcp::{Abort, Leg};
use super::wire;

/// How many lost sequence numbers are remembered to tell a late reply from a stray one.
const LOST_MEMORY: usize = 4096;

/// Shortest read time-out handed to the kernel (zero would mean "block forever").
const MIN_WAIT: Duration = Duration::from_micros(1);

fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

fn open(addr: SocketAddr) -> Result<UdpSocket, Abort> {
    let local: SocketAddr = if addr.is_ipv6() {
        (Ipv6Addr::UNSPECIFIED, 0).into()
    } else {
        (Ipv4Addr::UNSPECIFIED, 0).into()
    };
    let s = UdpSocket::bind(local).map_err(|e| format!("UDP bind: {e}"))?;
    s.connect(addr)
        .map_err(|e| format!("UDP connect to {addr}: {e}"))?;
    Ok(s)
}

/// The state of the transactions in flight, in issue order (so deadlines are ascending).
struct Flight {
    pending: VecDeque<(u64, Instant)>,
    lost_seqs: VecDeque<u64>,
    k: usize,
    timeout: Duration,
}

impl Flight {
    fn new(leg: &Leg) -> Self {
        Flight {
            pending: VecDeque::new(),
            lost_seqs: VecDeque::new(),
            k: wire::seq_len(leg.req, leg.resp),
            timeout: leg.timeout,
        }
    }

    fn next_deadline(&self) -> Option<Instant> {
        self.pending.front().map(|&(_, t0)| t0 + self.timeout)
    }

    /// Counts every transaction whose deadline has passed as lost; `Err` when the
    /// consecutive-loss limit is reached.
    fn expire(&mut self, now: Instant, meter: &mut Meter, addr: SocketAddr) -> Result<(), Abort> {
        while let Some(&(seq, t0)) = self.pending.front() {
            if now < t0 + self.timeout {
                break;
            }
            self.pending.pop_front();
            if self.lost_seqs.len() == LOST_MEMORY {
                self.lost_seqs.pop_front();
            }
            self.lost_seqs.push_back(seq);
            if meter.lose(seq, now) {
                return Err(format!(
                    "{} consecutive requests to {addr} went unanswered within {:?}",
                    meter.consecutive_losses(),
                    self.timeout
                ));
            }
        }
        Ok(())
    }

    /// Matches a reply to the transaction in flight it answers, records it, and returns whether it
    /// matched. Unmatched replies are counted late (their transaction was already lost) or stray.
    fn answer(
        &mut self,
        reply: &[u8],
        expected: usize,
        now: Instant,
        meter: &mut Meter,
    ) -> Result<bool, Abort> {
        let hit = self
            .pending
            .iter()
            .position(|&(seq, _)| wire::has_seq(reply, self.k, seq));
        match hit {
            Some(i) => {
                if reply.len() != expected {
                    return Err(format!(
                        "a reply of {} bytes came to a request expecting {expected}: the peer \
                         truncates or pads datagrams (socat needs -b 65536 for large ones)",
                        reply.len()
                    ));
                }
                if let Some((seq, t0)) = self.pending.remove(i) {
                    meter.complete(seq, ns(now - t0), None, now);
                }
                Ok(true)
            }
            None => {
                if self
                    .lost_seqs
                    .iter()
                    .any(|&s| wire::has_seq(reply, self.k, s))
                {
                    meter.late += 1;
                } else {
                    meter.stray += 1;
                }
                Ok(false)
            }
        }
    }
}

fn recv_abort(addr: SocketAddr, e: &std::io::Error) -> Abort {
    if e.kind() == ErrorKind::ConnectionRefused {
        format!("{addr} refused the datagrams (ICMP port unreachable): nothing listens there")
    } else {
        format!("receiving from {addr}: {e}")
    }
}

/// Warm UDP: one socket; up to `burst` requests in flight.
pub fn run_warm(leg: &Leg, meter: &mut Meter) -> Result<(), Abort> {
    let sock = open(leg.addr)?;
    if leg.spin {
        sock.set_nonblocking(true)
            .map_err(|e| format!("non-blocking socket for --busy-poll: {e}"))?;
        meter.busy_poll = Some(BusyPoll::enable(&sock));
    }
    let mut spinner = Spinner::default();
    let mut req = wire::request_buffer(leg.req);
    // One byte more than expected, so that an oversized reply is seen as such.
    let mut buf = vec![0u8; leg.resp + 1];
    let mut flight = Flight::new(leg);
    let mut wait_set: Option<Duration> = None;
    loop {
        while flight.pending.len() < leg.burst as usize && meter.may_issue() {
            let t0 = Instant::now();
            let seq = meter.issue(t0);
            wire::put_seq(&mut req, flight.k, seq);
            flight.pending.push_back((seq, t0));
            match sock.send(&req) {
                Ok(_) => {}
                // A full socket buffer or a refused earlier datagram: the request is as good as
                // lost; its time-out will count it.
                Err(e) if e.kind() == ErrorKind::ConnectionRefused => {
                    return Err(recv_abort(leg.addr, &e));
                }
                Err(_) => {}
            }
        }
        let Some(deadline) = flight.next_deadline() else {
            return Ok(());
        };
        let now = Instant::now();
        if now >= deadline {
            flight.expire(now, meter, leg.addr)?;
            continue;
        }
        if leg.spin {
            match sock.recv(&mut buf) {
                Ok(n) => {
                    let now = Instant::now();
                    flight.expire(now, meter, leg.addr)?;
                    flight.answer(buf.get(..n).unwrap_or(&[]), leg.resp, now, meter)?;
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => spinner.spin(),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(recv_abort(leg.addr, &e)),
            }
            continue;
        }
        // Setting the time-out costs a system call: keep the one set while it is within an
        // eighth of the time-out of what is needed. A reply that comes in the slack after its
        // deadline is still counted lost (and late) by the `expire` before `answer`.
        let wait = (deadline - now).max(MIN_WAIT);
        let slack = leg.timeout / 8;
        if wait_set.is_none_or(|w| w > wait + slack || w + slack < wait) {
            sock.set_read_timeout(Some(wait))
                .map_err(|e| format!("read time-out: {e}"))?;
            wait_set = Some(wait);
        }
        match sock.recv(&mut buf) {
            Ok(n) => {
                let now = Instant::now();
                let reply = buf.get(..n).unwrap_or(&[]);
                flight.expire(now, meter, leg.addr)?;
                flight.answer(reply, leg.resp, now, meter)?;
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                flight.expire(Instant::now(), meter, leg.addr)?;
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(recv_abort(leg.addr, &e)),
        }
    }
}

/// Cold UDP: a fresh socket (bind and connect) for every transaction, the set-up timed apart.
pub fn run_cold(leg: &Leg, meter: &mut Meter) -> Result<(), Abort> {
    let mut req = wire::request_buffer(leg.req);
    let mut buf = vec![0u8; leg.resp + 1];
    let mut flight = Flight::new(leg);
    while meter.may_issue() {
        let t0 = Instant::now();
        let seq = meter.issue(t0);
        let sock = open(leg.addr)?;
        let tc = Instant::now();
        wire::put_seq(&mut req, flight.k, seq);
        flight.pending.push_back((seq, t0));
        if let Err(e) = sock.send(&req) {
            if e.kind() == ErrorKind::ConnectionRefused {
                return Err(recv_abort(leg.addr, &e));
            }
        }
        while let Some(deadline) = flight.next_deadline() {
            let now = Instant::now();
            if now >= deadline {
                flight.expire(now, meter, leg.addr)?;
                break;
            }
            sock.set_read_timeout(Some((deadline - now).max(MIN_WAIT)))
                .map_err(|e| format!("read time-out: {e}"))?;
            match sock.recv(&mut buf) {
                Ok(n) => {
                    let now = Instant::now();
                    flight.expire(now, meter, leg.addr)?;
                    let before = meter.rtt.count();
                    if flight.answer(buf.get(..n).unwrap_or(&[]), leg.resp, now, meter)?
                        && meter.rtt.count() > before
                    {
                        meter.connect.record(ns(tc - t0));
                    }
                }
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    flight.expire(Instant::now(), meter, leg.addr)?;
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(recv_abort(leg.addr, &e)),
            }
        }
    }
    Ok(())
}
