//! Setting up the direct route: one TCP connection per pair of ranks, the higher rank dialling
//! the lower, and a hello each way that says who is speaking, how many ranks there are and which
//! plan it runs ([`super::spec::MpSpec::digest`]). A peer with another plan, rank count or frame
//! version is refused before anything is measured.
//!
//! Every rank dials all lower ranks first and writes its hello, then takes the connections of
//! the higher ranks (however the caller accepts them: an agent's data connections, a listener)
//! and answers their hellos, then reads the answers of the lower ranks. Dialling never waits
//! for the peer to be accepting, so no rank waits on another in a cycle.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use socket2::{Domain, Protocol, SockAddr, Socket, Type};

use super::conn::Conn;
use super::engine::check_hello;
use super::error::MpError;
use super::wire::{self, HEADER_LEN, HELLO_LEN, Header, Kind};

/// Socket buffers requested on every rank connection, bytes (Linux doubles the request and caps
/// it at `net.core.{w,r}mem_max`): room for the largest messages in flight without waiting for
/// the reader.
pub const SOCKET_BUFFER: usize = 4 << 20;

/// Dials `addr` with big buffers set before the handshake (so that the window scale fits them)
/// and writes `prefix` (an agent's data-connection hello) if given.
pub fn dial(
    addr: SocketAddr,
    prefix: Option<&[u8]>,
    timeout: Duration,
) -> Result<TcpStream, MpError> {
    let what = || format!("connecting to rank at {addr}");
    let sock = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))
        .map_err(|e| MpError::io(what(), e))?;
    tune(&sock);
    sock.connect_timeout(&SockAddr::from(addr), timeout)
        .map_err(|e| MpError::io(what(), e))?;
    let mut s: TcpStream = sock.into();
    if let Some(p) = prefix {
        s.set_write_timeout(Some(timeout))
            .and_then(|()| s.write_all(p))
            .map_err(|e| MpError::io(what(), e))?;
    }
    Ok(s)
}

/// Requests [`SOCKET_BUFFER`] both ways and `TCP_NODELAY`; refusals are harmless (the kernel
/// keeps its defaults), so they are ignored.
pub fn tune(sock: &Socket) {
    let _ = sock.set_send_buffer_size(SOCKET_BUFFER);
    let _ = sock.set_recv_buffer_size(SOCKET_BUFFER);
    let _ = sock.set_tcp_nodelay(true);
}

/// Exchanges hellos over the dialled connections (to lower ranks, with their rank) and the
/// accepted ones (from higher ranks, in any order), all within `deadline`, and returns one
/// connection per peer in rank order (`None` at `me`).
pub fn handshake(
    me: usize,
    ranks: usize,
    digest: u64,
    mut dialled: Vec<(usize, TcpStream)>,
    accepted: Vec<TcpStream>,
    deadline: Instant,
) -> Result<Vec<Option<Conn>>, MpError> {
    let mut peers: Vec<Option<TcpStream>> = (0..ranks).map(|_| None).collect();
    for (peer, s) in &mut dialled {
        write_hello(s, me, *peer, ranks, digest, deadline)?;
    }
    for mut s in accepted {
        let (src, r, d) = read_hello(&mut s, me, deadline)?;
        if src <= me || src >= ranks || peers[src].is_some() {
            return Err(MpError::Mismatch(format!(
                "rank {me} was dialled by rank {src}, which it did not expect (ranks dial lower \
                 ranks once each)"
            )));
        }
        check_hello(me, ranks, digest, src, r, d)?;
        write_hello(&mut s, me, src, ranks, digest, deadline)?;
        peers[src] = Some(s);
    }
    for (peer, mut s) in dialled {
        let (src, r, d) = read_hello(&mut s, me, deadline)?;
        if src != peer {
            return Err(MpError::Mismatch(format!(
                "rank {me} dialled rank {peer} but rank {src} answered"
            )));
        }
        check_hello(me, ranks, digest, src, r, d)?;
        peers[peer] = Some(s);
    }
    if let Some(missing) = (0..ranks).find(|&r| r != me && peers[r].is_none()) {
        return Err(MpError::Config(format!(
            "rank {me} has no connection to rank {missing}"
        )));
    }
    peers
        .into_iter()
        .map(|s| {
            s.map(|s| {
                let r = socket2::SockRef::from(&s);
                let _ = r.set_recv_buffer_size(SOCKET_BUFFER);
                let _ = r.set_send_buffer_size(SOCKET_BUFFER);
                Conn::new(s)
            })
            .transpose()
            .map_err(|e| MpError::io("preparing a rank connection", e))
        })
        .collect()
}

fn left(deadline: Instant) -> Duration {
    deadline
        .saturating_duration_since(Instant::now())
        .max(Duration::from_millis(1))
}

fn write_hello(
    s: &mut TcpStream,
    me: usize,
    peer: usize,
    ranks: usize,
    digest: u64,
    deadline: Instant,
) -> Result<(), MpError> {
    let mut b = Header::control(Kind::Hello, me as u16, peer as u16, HELLO_LEN as u32)
        .emit()
        .to_vec();
    b.extend_from_slice(&wire::emit_hello(ranks as u16, digest));
    s.set_write_timeout(Some(left(deadline)))
        .and_then(|()| s.write_all(&b))
        .map_err(|e| MpError::io(format!("greeting rank {peer}"), e))
}

/// Reads a hello addressed to `me`: `(src, ranks, digest)`.
fn read_hello(
    s: &mut TcpStream,
    me: usize,
    deadline: Instant,
) -> Result<(usize, u16, u64), MpError> {
    let mut b = [0u8; HEADER_LEN + HELLO_LEN];
    s.set_read_timeout(Some(left(deadline)))
        .and_then(|()| s.read_exact(&mut b))
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => MpError::Timeout {
                secs: 0.0,
                waiting: " while waiting for a peer's hello".into(),
            },
            _ => MpError::io("reading a peer's hello", e),
        })?;
    let h = Header::parse(&b).map_err(|source| MpError::Wire { rank: me, source })?;
    let hello = wire::parse_hello(&b[HEADER_LEN..]);
    match (h.kind, hello) {
        (Kind::Hello, Some((r, d))) if h.dst as usize == me => Ok((h.src as usize, r, d)),
        _ => Err(MpError::Mismatch(format!(
            "rank {me} expected a hello, got a {:?} frame from rank {} for rank {}",
            h.kind, h.src, h.dst
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// Sets up a mesh of `n` ranks on loopback, rank `r` announcing digest `digests[r]`.
    pub(crate) fn build(digests: &[u64]) -> Vec<Result<Vec<Option<Conn>>, MpError>> {
        let n = digests.len();
        let listeners: Vec<TcpListener> = (0..n)
            .map(|_| TcpListener::bind("127.0.0.1:0").unwrap())
            .collect();
        let addrs: Vec<SocketAddr> = listeners.iter().map(|l| l.local_addr().unwrap()).collect();
        let hs: Vec<_> = listeners
            .into_iter()
            .enumerate()
            .map(|(me, l)| {
                let addrs = addrs.clone();
                let digest = digests[me];
                std::thread::spawn(move || {
                    let deadline = Instant::now() + Duration::from_secs(5);
                    let dialled = (0..me)
                        .map(|p| Ok((p, dial(addrs[p], None, Duration::from_secs(5))?)))
                        .collect::<Result<Vec<_>, MpError>>()?;
                    let accepted = (me + 1..n).map(|_| l.accept().unwrap().0).collect();
                    handshake(me, n, digest, dialled, accepted, deadline)
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    }

    #[test]
    fn ranks_with_one_plan_connect_and_others_are_refused() {
        let ok = build(&[7, 7, 7, 7]);
        for r in &ok {
            let peers = r.as_ref().unwrap();
            assert_eq!(peers.iter().filter(|p| p.is_some()).count(), 3);
        }
        let bad = build(&[7, 7, 8]);
        assert!(
            bad.iter()
                .any(|r| matches!(r, Err(MpError::Mismatch(m)) if m.contains("another plan"))),
            "{bad:?}"
        );
    }
}
