//! The control channel: framed [`Control`] messages over a non-blocking TCP stream.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::fd::{AsRawFd, RawFd};
use std::time::Instant as StdInstant;

use super::XferError;
use super::sys;
use crate::wire::Control;
use crate::wire::control::{FRAME_HEADER_LEN, frame_len};

/// A control connection with read and write buffers.
#[derive(Debug)]
pub struct CtlConn {
    stream: TcpStream,
    rbuf: Vec<u8>,
    wbuf: Vec<u8>,
    eof: bool,
}

impl CtlConn {
    /// Wraps a connected stream (made non-blocking, Nagle off).
    pub fn new(stream: TcpStream) -> io::Result<Self> {
        stream.set_nodelay(true)?;
        stream.set_nonblocking(true)?;
        Ok(CtlConn {
            stream,
            rbuf: Vec::with_capacity(1 << 16),
            wbuf: Vec::with_capacity(1 << 16),
            eof: false,
        })
    }

    /// The descriptor to poll for readability.
    pub fn fd(&self) -> RawFd {
        self.stream.as_raw_fd()
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
        msg.emit(&mut self.wbuf);
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
                Err(e) => return Err(XferError::io("writing the control channel", e)),
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
                Err(e) => return Err(XferError::io("reading the control channel", e)),
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
        let msg = Control::parse(&self.rbuf[FRAME_HEADER_LEN..total])?;
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
