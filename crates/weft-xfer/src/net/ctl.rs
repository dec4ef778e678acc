//! The control channel: framed [`Control`] messages over a non-blocking TCP stream; after an
//! authenticated handshake each frame carries a tag ([`FrameAuth`]) checked before it is parsed.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::fd::{AsRawFd, RawFd};
use std::time::Instant as StdInstant;

use super::XferError;
use super::sys;
use crate::auth::FrameAuth;
use crate::wire::Control;
use crate::wire::control::{FRAME_HEADER_LEN, frame_len};

/// A control connection with read and write buffers.
#[derive(Debug)]
pub struct CtlConn {
    stream: TcpStream,
    rbuf: Vec<u8>,
    wbuf: Vec<u8>,
    eof: bool,
    auth: Option<FrameAuth>,
    /// The silence after which the kernel aborts the connection ([`CtlConn::watch_peer`]), ms.
    dead_after_ms: Option<u64>,
}

impl CtlConn {
    /// Wraps a connected stream (made non-blocking, Nagle off).
    pub fn new(stream: TcpStream) -> io::Result<Self> {
        stream.set_nodelay(true)?;
        stream.set_nonblocking(true)?;
        // A lost control segment stalls the transfer behind it: recover it in tens of ms.
        super::sys::quick_tcp_recovery(&stream);
        Ok(CtlConn {
            stream,
            rbuf: Vec::with_capacity(1 << 16),
            wbuf: Vec::with_capacity(1 << 16),
            eof: false,
            auth: None,
            dead_after_ms: None,
        })
    }

    /// From now on, a peer that acknowledges nothing for max(3 x the connection's measured
    /// RTO, 2 s) is declared gone: reads and writes then fail with [`XferError::PeerSilent`].
    /// Called once the handshake has given the kernel a round trip to measure. Returns the
    /// bound, ms.
    pub fn watch_peer(&mut self) -> u64 {
        let bound = sys::dead_peer_bound_ms(sys::tcp_rto_us(&self.stream));
        if sys::abort_when_silent(&self.stream, bound) {
            self.dead_after_ms = Some(bound);
        }
        bound
    }

    /// The error for a failed read or write: a peer declared gone by [`CtlConn::watch_peer`],
    /// else the system's error.
    fn io_error(&self, what: &str, e: io::Error) -> XferError {
        match (e.raw_os_error(), self.dead_after_ms) {
            (Some(libc::ETIMEDOUT), Some(ms)) => XferError::PeerSilent(ms),
            _ => XferError::io(what, e),
        }
    }

    /// From now on, tags every frame sent and refuses every frame received without a valid tag.
    pub fn authenticate(&mut self, auth: FrameAuth) {
        self.auth = Some(auth);
    }

    /// The connection's descriptor, borrowed.
    pub fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        std::os::fd::AsFd::as_fd(&self.stream)
    }

    /// The descriptor to poll for readability.
    pub fn fd(&self) -> RawFd {
        self.stream.as_raw_fd()
    }

    /// The connection's smoothed round-trip time as the kernel measures it (zero: unknown).
    pub fn rtt(&self) -> weft_model::Duration {
        weft_model::Duration::from_micros(sys::tcp_rtt_us(&self.stream).unwrap_or(0) as u64)
    }

    /// The peer's address.
    pub fn peer(&self) -> io::Result<std::net::SocketAddr> {
        self.stream.peer_addr()
    }

    /// The local address.
    pub fn local(&self) -> io::Result<std::net::SocketAddr> {
        self.stream.local_addr()
    }

    /// Queues a message.
    pub fn queue(&mut self, msg: &Control) {
        let start = self.wbuf.len();
        msg.emit(&mut self.wbuf);
        if let Some(a) = self.auth.as_mut() {
            a.seal(&mut self.wbuf, start);
        }
    }

    /// Whether queued bytes are still unwritten.
    pub fn has_pending_writes(&self) -> bool {
        !self.wbuf.is_empty()
    }

    /// Writes as much as the socket takes now.
    pub fn flush(&mut self) -> Result<(), XferError> {
        while !self.wbuf.is_empty() {
            match self.stream.write(&self.wbuf) {
                Ok(0) => return Err(XferError::PeerClosed),
                Ok(n) => {
                    self.wbuf.drain(..n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionReset
                    ) =>
                {
                    return Err(XferError::PeerClosed);
                }
                Err(e) => return Err(self.io_error("writing the control channel", e)),
            }
        }
        Ok(())
    }

    /// Writes everything queued, waiting up to `timeout_ms`.
    pub fn flush_all(&mut self, timeout_ms: u64) -> Result<(), XferError> {
        let start = StdInstant::now();
        loop {
            self.flush()?;
            if self.wbuf.is_empty() {
                return Ok(());
            }
            if start.elapsed().as_millis() as u64 > timeout_ms {
                return Err(XferError::Timeout("writing the control channel"));
            }
            std::thread::sleep(std::time::Duration::from_micros(200));
        }
    }

    /// Reads whatever has arrived, without blocking.
    pub fn read_available(&mut self) -> Result<(), XferError> {
        let mut chunk = [0u8; 16384];
        loop {
            match self.stream.read(&mut chunk) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(());
                }
                Ok(n) => {
                    self.rbuf.extend_from_slice(&chunk[..n]);
                    if self.rbuf.len() > 4 * crate::wire::MAX_FRAME {
                        return Ok(());
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::ConnectionReset => {
                    self.eof = true;
                    return Ok(());
                }
                Err(e) => return Err(self.io_error("reading the control channel", e)),
            }
        }
    }

    /// The next complete message already read, if any. Malformed frames are errors (the session
    /// must end).
    pub fn next_msg(&mut self) -> Result<Option<Control>, XferError> {
        let Some(total) = frame_len(&self.rbuf)? else {
            return self.eof_check();
        };
        if self.rbuf.len() < total {
            return self.eof_check();
        }
        let body = &self.rbuf[FRAME_HEADER_LEN..total];
        let body = match self.auth.as_mut() {
            Some(a) => a
                .open(body)
                .map_err(|e| XferError::Auth(format!("{e}: the session is closed")))?,
            None => body,
        };
        let msg = Control::parse(body)?;
        self.rbuf.drain(..total);
        Ok(Some(msg))
    }

    fn eof_check(&self) -> Result<Option<Control>, XferError> {
        if self.eof {
            Err(XferError::PeerClosed)
        } else {
            Ok(None)
        }
    }

    /// Waits up to `timeout_ms` for the next message (for the handshake).
    pub fn recv_wait(&mut self, timeout_ms: u64) -> Result<Control, XferError> {
        let start = StdInstant::now();
        loop {
            if let Some(m) = self.next_msg()? {
                return Ok(m);
            }
            let left = timeout_ms.saturating_sub(start.elapsed().as_millis() as u64);
            if left == 0 {
                return Err(XferError::Timeout("waiting for the peer's control message"));
            }
            sys::poll_readable(&[self.fd()], left.min(i32::MAX as u64) as i32)
                .map_err(|e| XferError::io("polling the control channel", e))?;
            self.read_available()?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::{Key, Role};
    use std::net::TcpListener;

    fn pair() -> (CtlConn, TcpStream) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let raw = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (s, _) = l.accept().unwrap();
        (CtlConn::new(s).unwrap(), raw)
    }

    #[test]
    fn tampered_and_replayed_frames_are_refused() {
        let k = Key::from_derived([1; 32]);
        let mut tx = k.frames(Role::Client, &[3; 16], &[4; 16], 5);
        let mut f1 = Vec::new();
        Control::Ready { buf: 2 }.emit(&mut f1);
        tx.seal(&mut f1, 0);
        let mut f2 = Vec::new();
        Control::Bye.emit(&mut f2);
        tx.seal(&mut f2, 0);

        // In order and intact: accepted.
        let (mut c, mut raw) = pair();
        c.authenticate(k.frames(Role::Server, &[3; 16], &[4; 16], 5));
        raw.write_all(&f1).unwrap();
        raw.write_all(&f2).unwrap();
        assert_eq!(c.recv_wait(2000).unwrap(), Control::Ready { buf: 2 });
        assert_eq!(c.recv_wait(2000).unwrap(), Control::Bye);

        // Replayed: the first frame again after it was accepted.
        let (mut c, mut raw) = pair();
        c.authenticate(k.frames(Role::Server, &[3; 16], &[4; 16], 5));
        raw.write_all(&f1).unwrap();
        raw.write_all(&f1).unwrap();
        assert_eq!(c.recv_wait(2000).unwrap(), Control::Ready { buf: 2 });
        assert!(matches!(c.recv_wait(2000), Err(XferError::Auth(_))));

        // Tampered: a changed buffer number.
        let (mut c, mut raw) = pair();
        c.authenticate(k.frames(Role::Server, &[3; 16], &[4; 16], 5));
        let mut t = f1.clone();
        t[FRAME_HEADER_LEN + 4] ^= 0x40;
        raw.write_all(&t).unwrap();
        assert!(matches!(c.recv_wait(2000), Err(XferError::Auth(_))));

        // Unauthenticated frame on an authenticated channel.
        let (mut c, mut raw) = pair();
        c.authenticate(k.frames(Role::Server, &[3; 16], &[4; 16], 5));
        let mut plain = Vec::new();
        Control::Ready { buf: 2 }.emit(&mut plain);
        raw.write_all(&plain).unwrap();
        assert!(matches!(c.recv_wait(2000), Err(XferError::Auth(_))));
    }
}
