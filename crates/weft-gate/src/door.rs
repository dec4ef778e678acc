//! The lobby ([`crate::lobby`]) driven by the wall clock over real TCP connections, for an
//! agent's accept loop: [`Door::accept`] waits for a connection (at most until the next hello
//! deadline), closes those past their deadline, accepts, and admits the newcomer; the thread
//! that serves it holds a [`Pass`] until it has identified itself.
//!
//! A connection is closed by `shutdown(2)` on a duplicate of its socket held by the lobby: the
//! thread blocked reading it then sees the end of the stream at once and lets it go. The accept
//! loop never stops for lack of file descriptors: when `accept` fails with EMFILE or ENFILE the
//! oldest waiting connection is closed to free one.

use std::io;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::{Arc, Mutex, MutexGuard};

use weft_model::Instant;

use crate::lobby::{Lobby, LobbyLimits, LobbyStats};

/// The door of an agent: its lobby of connections that have not yet identified themselves.
pub struct Door {
    lobby: Mutex<Lobby<TcpStream>>,
    epoch: std::time::Instant,
}

/// What [`Door::accept`] brought.
pub enum Arrival {
    /// A new connection, admitted to the lobby: serve it, and call [`Pass::identified`] once it
    /// has said who it is.
    Connection(TcpStream, SocketAddr, Pass),
    /// Nothing arrived in the time given (or the connection vanished before it was accepted).
    Nothing,
    /// `accept` failed; the loop should log it and go on.
    Failed(io::Error),
}

impl Door {
    /// A door with an empty lobby.
    pub fn new(limits: LobbyLimits) -> Arc<Door> {
        Arc::new(Door {
            lobby: Mutex::new(Lobby::new(limits)),
            epoch: std::time::Instant::now(),
        })
    }

    /// The bounds in force.
    pub fn limits(&self) -> LobbyLimits {
        self.lock().limits()
    }

    /// Counters of the lobby.
    pub fn stats(&self) -> LobbyStats {
        self.lock().stats()
    }

    fn lock(&self) -> MutexGuard<'_, Lobby<TcpStream>> {
        // A thread that panicked while holding the lock left the lobby consistent (every
        // method completes its changes before anything that could panic).
        self.lobby.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn now(&self) -> Instant {
        Instant(self.epoch.elapsed().as_nanos() as u64)
    }

    /// Waits up to `max_wait` (less if a hello deadline comes first) for a connection on
    /// `listener` (which this makes non-blocking), closes the connections past their deadline,
    /// and accepts and admits one if it came.
    pub fn accept(
        self: &Arc<Self>,
        listener: &TcpListener,
        max_wait: std::time::Duration,
    ) -> Arrival {
        if let Err(e) = listener.set_nonblocking(true) {
            return Arrival::Failed(e);
        }
        let wait = self
            .until_next_deadline()
            .map_or(max_wait, |d| d.min(max_wait));
        let ready = wait_readable(listener, wait);
        self.close_expired();
        match ready {
            Ok(true) => {}
            Ok(false) => return Arrival::Nothing,
            Err(e) => return Arrival::Failed(e),
        }
        match listener.accept() {
            Ok((stream, peer)) => {
                // Accepted sockets do not inherit O_NONBLOCK on Linux, but say so anyway.
                if let Err(e) = stream.set_nonblocking(false) {
                    return Arrival::Failed(e);
                }
                match self.admit(&stream, peer) {
                    Ok(pass) => Arrival::Connection(stream, peer, pass),
                    Err(e) => Arrival::Failed(e),
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Arrival::Nothing,
            Err(e) if matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE)) => {
                // Out of descriptors: free one by closing the oldest connection that has not
                // identified itself; the pending connection is accepted next time round.
                if !self.evict_oldest() {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                Arrival::Failed(e)
            }
            Err(e) => Arrival::Failed(e),
        }
    }

    /// Admits `stream`, accepted from `peer`, closing whatever must make room for it.
    pub fn admit(self: &Arc<Self>, stream: &TcpStream, peer: SocketAddr) -> io::Result<Pass> {
        let handle = match stream.try_clone() {
            Ok(h) => h,
            Err(_) if self.evict_oldest() => stream.try_clone()?,
            Err(e) => return Err(e),
        };
        let now = self.now();
        let (ticket, dropped) = self.lock().admit(now, peer.ip(), handle);
        dropped.into_iter().for_each(close);
        Ok(Pass {
            door: self.clone(),
            ticket,
            open: true,
        })
    }

    /// Closes every connection past its hello deadline; returns how many.
    pub fn close_expired(&self) -> usize {
        let now = self.now();
        let expired = self.lock().handle_timeout(now);
        let n = expired.len();
        expired.into_iter().for_each(close);
        n
    }

    /// Time until the next hello deadline, if a connection waits.
    pub fn until_next_deadline(&self) -> Option<std::time::Duration> {
        let at = self.lock().poll_timeout()?;
        Some(std::time::Duration::from_nanos(
            at.saturating_duration_since(self.now()).as_nanos(),
        ))
    }

    /// Closes the oldest waiting connection; false if none waits.
    pub fn evict_oldest(&self) -> bool {
        let oldest = self.lock().evict_oldest();
        oldest.map(close).is_some()
    }
}

/// A connection's place in the lobby, held by the thread that serves it until the connection
/// has identified itself. Dropping it without [`Pass::identified`] forgets the connection.
pub struct Pass {
    door: Arc<Door>,
    ticket: u64,
    open: bool,
}

impl Pass {
    /// The connection has said who it is: it leaves the lobby and is no longer subject to the
    /// hello deadline or the caps. Returns false if the lobby had already closed it (its
    /// deadline passed, or it was the oldest when room was needed): the caller must let it go.
    pub fn identified(mut self) -> bool {
        self.open = false;
        self.door.lock().identified(self.ticket).is_some()
    }
}

impl Drop for Pass {
    fn drop(&mut self) {
        if self.open {
            let _ = self.door.lock().left(self.ticket);
        }
    }
}

impl std::fmt::Debug for Pass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pass")
            .field("ticket", &self.ticket)
            .finish()
    }
}

fn close(s: TcpStream) {
    let _ = s.shutdown(Shutdown::Both);
}

/// Waits until `listener` has a connection to accept, at most `timeout`.
fn wait_readable(listener: &TcpListener, timeout: std::time::Duration) -> io::Result<bool> {
    let ns = timeout.as_nanos().clamp(1_000_000, u64::MAX as u128) as u64;
    Ok(weft_sys::readable(&[listener.as_raw_fd()], Some(ns))?[0])
}

pub use weft_sys::process::{open_files, raise_open_files_limit};

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::time::Duration;
    use weft_model::Duration as Ns;

    fn door(max_waiting: usize, hello_ms: u64) -> Arc<Door> {
        Door::new(LobbyLimits {
            hello_timeout: Ns::from_millis(hello_ms),
            max_waiting,
            max_per_source: max_waiting,
        })
    }

    fn accept(d: &Arc<Door>, l: &TcpListener) -> (TcpStream, Pass) {
        for _ in 0..100 {
            if let Arrival::Connection(s, _, p) = d.accept(l, Duration::from_millis(50)) {
                return (s, p);
            }
        }
        panic!("nothing accepted");
    }

    #[test]
    fn a_dropped_connection_sees_the_end_of_its_stream_at_once() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let d = door(1, 10_000);
        let _c1 = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (mut s1, _p1) = accept(&d, &l);
        let _c2 = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (_s2, p2) = accept(&d, &l);
        // The first was the oldest: its reader gets end-of-stream, not a 10 s wait.
        s1.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let t = std::time::Instant::now();
        assert_eq!(s1.read(&mut [0u8; 8]).unwrap(), 0);
        assert!(t.elapsed() < Duration::from_secs(1));
        assert!(p2.identified());
        assert_eq!(d.stats().evicted, 1);
        assert_eq!(d.stats().waiting, 0);
    }

    #[test]
    fn the_hello_deadline_closes_silent_connections() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let d = door(10, 100);
        let _c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (mut s, p) = accept(&d, &l);
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let t = std::time::Instant::now();
        // Nothing else arrives: the accept loop's waits end at the deadline and close it.
        let reader = std::thread::spawn(move || s.read(&mut [0u8; 8]).map(|n| (n, t.elapsed())));
        while !reader.is_finished() {
            let _ = d.accept(&l, Duration::from_millis(500));
        }
        let (n, took) = reader.join().unwrap().unwrap();
        assert_eq!(n, 0);
        assert!(took < Duration::from_secs(2), "{took:?}");
        assert!(!p.identified());
        assert_eq!(d.stats().timed_out, 1);
    }
}
