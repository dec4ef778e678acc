//! An application on a UDP socket, non-blocking, waiting in `ppoll` (or spinning, see
//! [`Options::spin_after`]) until the socket or the application's deadline has something.
//!
//! Peers are numbered by [`Peers`]: the addresses given at the start, then (for a server) each
//! new address a datagram comes from. A datagram the socket cannot take now (its buffer is
//! full) is dropped, as the network would drop it, and the application's time-outs count it;
//! or, with [`Options::block_full`], waited for as a blocking send call would. Each send call
//! that returns is the application's [`Input::Written`] (stream 0), as in the simulator, so that
//! an unpaced bulk source sends its next datagram then.
//!
//! A turn carries out at most [`BATCH`] outputs before it looks at the socket and the stop
//! condition again, each at the instant it is asked for (a datagram's send time is the one
//! it carries).

use std::io::{self, ErrorKind};
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;

use weft_model::Instant;
use weft_model::app::{Application, Input, Output, PeerId};

use crate::{Clock, Options, message, timers};

/// Largest datagram read.
const MAX_DATAGRAM: usize = 65_536;

/// Outputs carried out in one turn at most.
pub const BATCH: usize = 64;

/// The application's peers, by [`PeerId`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Peers {
    addrs: Vec<SocketAddr>,
    /// New addresses are taken as new peers (a server); otherwise datagrams from them are
    /// ignored.
    pub learn: bool,
    /// Learning, only addresses of this host are taken (an agent serves the client that asked
    /// for the test, no one else).
    only: Option<IpAddr>,
}

impl Peers {
    /// Peers `0..` at `addrs`, no others.
    pub fn fixed(addrs: Vec<SocketAddr>) -> Self {
        Peers {
            addrs,
            learn: false,
            only: None,
        }
    }

    /// No peers yet; each new address is one.
    pub fn learning() -> Self {
        Peers {
            addrs: Vec::new(),
            learn: true,
            only: None,
        }
    }

    /// No peers yet; each new address of host `ip` is one, datagrams from other hosts are
    /// ignored ([`Report::ignored`]).
    pub fn learning_from(ip: IpAddr) -> Self {
        Peers {
            only: Some(ip),
            ..Peers::learning()
        }
    }

    /// The number of `addr`, if it is (or, learning, becomes) a peer.
    pub fn id(&mut self, addr: SocketAddr) -> Option<PeerId> {
        if let Some(i) = self.addrs.iter().position(|a| *a == addr) {
            return Some(i);
        }
        if !self.learn || self.only.is_some_and(|ip| ip != addr.ip()) {
            return None;
        }
        self.addrs.push(addr);
        Some(self.addrs.len() - 1)
    }

    /// The address of peer `id`.
    pub fn addr(&self, id: PeerId) -> Option<SocketAddr> {
        self.addrs.get(id).copied()
    }
}

/// What a run of [`drive`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// Datagrams sent.
    pub sent: u64,
    /// Datagrams the socket did not take (dropped).
    pub dropped: u64,
    /// Datagrams received from peers.
    pub received: u64,
    /// Datagrams received from addresses that are not peers (and not handed over).
    pub ignored: u64,
}

/// Runs `app` on `s` from `clock`'s now until it is done, `stop(app)` says so (asked every
/// turn), or `opts.until`.
pub fn drive<A: Application + ?Sized>(
    app: &mut A,
    s: &UdpSocket,
    peers: &mut Peers,
    clock: &Clock,
    opts: &Options,
    mut stop: impl FnMut(&A, Instant) -> bool,
) -> io::Result<Report> {
    s.set_nonblocking(true)?;
    // A connected socket sends to its peer without a route look-up per call.
    let connected = s.peer_addr().ok();
    let mut report = Report::default();
    let mut buf = vec![0u8; MAX_DATAGRAM];
    let mut out = Vec::new();
    let mut last_output = clock.now();
    loop {
        let now = clock.now();
        if opts.expired(now) || stop(app, now) {
            break;
        }
        timers(app, now);
        loop {
            match s.recv_from(&mut buf) {
                Ok((n, from)) => {
                    let Some(peer) = peers.id(from) else {
                        report.ignored += 1;
                        continue;
                    };
                    report.received += 1;
                    let input = Input::Datagram {
                        peer,
                        len: n as u64,
                        tag: None,
                        data: Some(&buf[..n]),
                    };
                    app.handle_input(clock.now(), input);
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::ConnectionRefused && opts.refused_ends => {
                    return Err(e);
                }
                // A refused earlier datagram (ICMP port unreachable), or a signal: the
                // application's time-outs see to the first.
                Err(e)
                    if matches!(
                        e.kind(),
                        ErrorKind::Interrupted | ErrorKind::ConnectionRefused
                    ) => {}
                Err(e) => return Err(e),
            }
        }
        for _ in 0..BATCH {
            let now = clock.now();
            let Some(o) = app.poll_output(now) else { break };
            last_output = now;
            let Output::Send { peer, len, tag } = o else {
                continue;
            };
            let Some(to) = peers.addr(peer) else { continue };
            message(&mut out, len as usize, tag);
            match send(s, &out, to, connected, opts) {
                Ok(()) => {
                    report.sent += 1;
                    app.handle_input(clock.now(), Input::Written { stream: 0 });
                }
                Err(e)
                    if opts.block_full
                        || (e.kind() == ErrorKind::ConnectionRefused && opts.refused_ends) =>
                {
                    return Err(e);
                }
                Err(_) => {
                    report.dropped += 1;
                    app.handle_input(clock.now(), Input::Written { stream: 0 });
                }
            }
        }
        if app.is_done() {
            break;
        }
        let now = clock.now();
        let wait = opts.wait(now, app.poll_timeout(), last_output);
        let mut fds = [libc::pollfd {
            fd: s.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        }];
        weft_sys::poll::ppoll_readable(&mut fds, Some(wait.map_or(0, |w| w.0)))?;
    }
    Ok(report)
}

/// One send call of `buf` to `to` (through the connected socket's own route if `to` is its
/// peer); with [`Options::block_full`], a full socket is waited for (writable) and the call
/// made again.
fn send(
    s: &UdpSocket,
    buf: &[u8],
    to: SocketAddr,
    connected: Option<SocketAddr>,
    opts: &Options,
) -> io::Result<()> {
    loop {
        let r = if connected == Some(to) {
            s.send(buf)
        } else {
            s.send_to(buf, to)
        };
        match r {
            Ok(_) => return Ok(()),
            Err(e) if opts.block_full && e.kind() == ErrorKind::WouldBlock => {
                let mut fds = [libc::pollfd {
                    fd: s.as_raw_fd(),
                    events: libc::POLLOUT,
                    revents: 0,
                }];
                weft_sys::poll::ppoll_readable(&mut fds, Some(opts.tick.0))?;
            }
            // The interface's queue is full (no poll event for it): try again.
            Err(e)
                if opts.block_full
                    && (e.kind() == ErrorKind::Interrupted
                        || e.raw_os_error() == Some(libc::ENOBUFS)) =>
            {
                std::thread::yield_now();
            }
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_learning_from_one_host_takes_its_addresses_only() {
        let a: SocketAddr = "10.0.0.1:5000".parse().unwrap();
        let b: SocketAddr = "10.0.0.1:5001".parse().unwrap();
        let other: SocketAddr = "10.0.0.2:5000".parse().unwrap();
        let mut p = Peers::learning_from(a.ip());
        assert_eq!((p.id(a), p.id(b), p.id(other)), (Some(0), Some(1), None));
        let mut any = Peers::learning();
        assert_eq!(any.id(other), Some(0));
    }
}
