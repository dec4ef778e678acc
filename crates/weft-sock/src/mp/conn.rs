//! One non-blocking TCP connection of a rank: a queue of outgoing frames written with `sendmsg`
//! (header and payload gathered, several frames per call), and a staging buffer for incoming
//! bytes that the executor parses frame by frame. Large payloads bypass the staging buffer and
//! are read straight into their destination.
//!
//! Payloads of queued frames are either a region of the executor's working buffer (passed to
//! [`Conn::flush`], so that sending a message copies nothing) or bytes owned by the frame.
//!
//! A connection remembers whether its last read found the socket empty (a read that returned
//! less than it asked for, or nothing) and whether its last write found the send buffer full,
//! so that the executor does not call `recv` or `sendmsg` again until a readiness check says
//! the socket has moved: with several peers, a `recv` per connection per look costs more than
//! one `ppoll` over all of them.

use std::collections::VecDeque;
use std::io;
use std::net::TcpStream;
use std::os::fd::{AsRawFd, RawFd};

use weft_model::mp::Region;

use super::wire::{HEADER_LEN, Header};

/// Bytes of the staging buffer: a few medium messages per `recv`.
const STAGING: usize = 256 * 1024;

/// Most payload bytes [`Conn::read_split`] reads into a destination: what the staging buffer
/// can take back behind a header if the frame turns out to be another.
pub const SPLIT_MAX: usize = STAGING - HEADER_LEN;

/// Free tail below which the staging buffer is compacted before a read: room for a whole
/// control frame.
const COMPACT_BELOW: usize = 8 * 1024;

/// Frames gathered into one `sendmsg`.
const MAX_IOV: usize = 64;

/// Where a queued frame's payload is.
#[derive(Debug)]
pub enum Body {
    /// A region of the working buffer given to [`Conn::flush`].
    Region(Region),
    /// Bytes of its own (control frames).
    Owned(Vec<u8>),
}

impl Body {
    fn len(&self) -> usize {
        match self {
            Body::Region(r) => r.len,
            Body::Owned(v) => v.len(),
        }
    }
}

/// A frame waiting to be written, and how much of it was.
#[derive(Debug)]
struct Tx {
    head: [u8; HEADER_LEN],
    body: Body,
    sent: usize,
}

/// What a read did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fill {
    /// This many bytes arrived.
    Data(usize),
    /// Nothing to read now.
    WouldBlock,
    /// The peer closed its side.
    Eof,
}

/// A rank's connection to a peer (or to its daemon).
#[derive(Debug)]
pub struct Conn {
    sock: TcpStream,
    tx: VecDeque<Tx>,
    rx: Box<[u8]>,
    lo: usize,
    hi: usize,
    /// The peer closed its side (reads return nothing more).
    pub eof: bool,
    /// The last read left the socket empty: read again after a readiness check.
    drained: bool,
    /// The last write left frames queued: write again after a readiness check.
    blocked: bool,
}

impl Conn {
    /// Wraps a connected stream: non-blocking, `TCP_NODELAY`.
    pub fn new(sock: TcpStream) -> io::Result<Conn> {
        sock.set_nonblocking(true)?;
        sock.set_nodelay(true)?;
        Ok(Conn {
            sock,
            tx: VecDeque::new(),
            rx: vec![0u8; STAGING].into_boxed_slice(),
            lo: 0,
            hi: 0,
            eof: false,
            drained: false,
            blocked: false,
        })
    }

    /// The socket's descriptor, for `poll`.
    pub fn fd(&self) -> RawFd {
        self.sock.as_raw_fd()
    }

    /// The underlying stream.
    pub fn stream(&self) -> &TcpStream {
        &self.sock
    }

    /// Queues a frame.
    pub fn queue(&mut self, head: &Header, body: Body) {
        self.tx.push_back(Tx {
            head: head.emit(),
            body,
            sent: 0,
        });
    }

    /// Whether frames are waiting to be written.
    pub fn tx_pending(&self) -> bool {
        !self.tx.is_empty()
    }

    /// Whether a read may find bytes: the socket is not known empty since the last readiness
    /// check (or the stream ended, which a read reports at once).
    pub fn may_read(&self) -> bool {
        !self.drained || self.eof
    }

    /// Whether a write may take bytes: frames queued and the send buffer not known full.
    pub fn may_write(&self) -> bool {
        !self.tx.is_empty() && !self.blocked
    }

    /// Forgets what the last read and write found (a readiness check saw the socket move, or
    /// the caller probes by reading and writing).
    pub fn mark_ready(&mut self, readable: bool, writable: bool) {
        self.drained &= !readable;
        self.blocked &= !writable;
    }

    /// Writes as much of the queue as the socket takes now; `buf` holds the regions that
    /// queued payloads refer to. Returns the bytes written.
    pub fn flush(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut total = 0;
        let empty = libc::iovec {
            iov_base: std::ptr::null_mut(),
            iov_len: 0,
        };
        // On the stack: no allocation per write (and `Conn` stays `Send`).
        let mut iov = [empty; 2 * MAX_IOV];
        while !self.tx.is_empty() {
            let mut k = 0;
            let mut asked = 0;
            for t in self.tx.iter().take(MAX_IOV) {
                let body: &[u8] = match &t.body {
                    Body::Region(r) => buf.get(r.offset..r.end()).unwrap_or(&[]),
                    Body::Owned(v) => v,
                };
                let (head, rest) = if t.sent < HEADER_LEN {
                    (&t.head[t.sent..], body)
                } else {
                    (&t.head[..0], body.get(t.sent - HEADER_LEN..).unwrap_or(&[]))
                };
                for part in [head, rest] {
                    asked += part.len();
                    if !part.is_empty() {
                        iov[k] = libc::iovec {
                            iov_base: part.as_ptr() as *mut libc::c_void,
                            iov_len: part.len(),
                        };
                        k += 1;
                    }
                }
            }
            let n = if k == 0 {
                0
            } else {
                // SAFETY: the first `k` iovecs point into slices (`t.head`, `buf` or an owned
                // body) that live until this call returns and are not written meanwhile; the
                // msghdr is fully initialised and names those `k` entries.
                let r = unsafe {
                    let mut msg: libc::msghdr = std::mem::zeroed();
                    msg.msg_iov = iov.as_mut_ptr();
                    msg.msg_iovlen = k;
                    libc::sendmsg(
                        self.sock.as_raw_fd(),
                        &msg,
                        libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT,
                    )
                };
                if r < 0 {
                    let e = io::Error::last_os_error();
                    match e.kind() {
                        io::ErrorKind::WouldBlock => {
                            self.blocked = true;
                            return Ok(total);
                        }
                        io::ErrorKind::Interrupted => continue,
                        _ => return Err(e),
                    }
                }
                r as usize
            };
            total += n;
            // Retire what was written.
            let mut left = n;
            while let Some(t) = self.tx.front_mut() {
                let size = HEADER_LEN + t.body.len();
                let take = left.min(size - t.sent);
                t.sent += take;
                left -= take;
                if t.sent == size {
                    self.tx.pop_front();
                } else {
                    break;
                }
            }
            if n == 0 {
                // Only empty frames could be left, which `size` retires above; nothing to do.
                break;
            }
            if n < asked {
                // The send buffer is full: the next write would find no room.
                self.blocked = !self.tx.is_empty();
                return Ok(total);
            }
        }
        Ok(total)
    }

    /// The bytes staged and not yet consumed.
    pub fn staged(&self) -> &[u8] {
        &self.rx[self.lo..self.hi]
    }

    /// Marks `n` staged bytes as consumed.
    pub fn consume(&mut self, n: usize) {
        self.lo = (self.lo + n).min(self.hi);
        if self.lo == self.hi {
            self.lo = 0;
            self.hi = 0;
        }
    }

    /// Reads what the socket has into the staging buffer (after moving the unconsumed bytes to
    /// its start when the tail is short).
    pub fn fill(&mut self) -> io::Result<Fill> {
        if self.eof {
            return Ok(Fill::Eof);
        }
        if self.rx.len() - self.hi < COMPACT_BELOW && self.lo > 0 {
            self.rx.copy_within(self.lo..self.hi, 0);
            self.hi -= self.lo;
            self.lo = 0;
        }
        let hi = self.hi;
        let r = self.read(hi..self.rx.len());
        if let Ok(Fill::Data(n)) = r {
            self.hi += n;
        }
        r
    }

    /// Reads the rest of a frame header (`head` bytes, into the staging buffer) and what
    /// follows it straight into `dst` (at most [`SPLIT_MAX`] bytes), in one `recvmsg`: the
    /// payload of an expected message then lands where it belongs without passing through the
    /// staging buffer. Returns the bytes read (header bytes first); if the frame is not the
    /// expected one, the caller hands the payload bytes back with [`Conn::restage`].
    pub fn read_split(&mut self, head: usize, dst: &mut [u8]) -> io::Result<Fill> {
        if self.eof {
            return Ok(Fill::Eof);
        }
        if self.lo > 0 {
            self.rx.copy_within(self.lo..self.hi, 0);
            self.hi -= self.lo;
            self.lo = 0;
        }
        let head = head.min(self.rx.len() - self.hi);
        let dst_len = dst.len().min(SPLIT_MAX);
        let mut iov = [
            libc::iovec {
                iov_base: self.rx[self.hi..].as_mut_ptr().cast(),
                iov_len: head,
            },
            libc::iovec {
                iov_base: dst.as_mut_ptr().cast(),
                iov_len: dst_len,
            },
        ];
        let r = loop {
            // SAFETY: both iovecs point into live, writable slices of the lengths given (the
            // staging buffer's free tail, which is at least `head` long, and `dst`), borrowed
            // mutably for the duration of the call; the msghdr names exactly those two.
            let n = unsafe {
                let mut msg: libc::msghdr = std::mem::zeroed();
                msg.msg_iov = iov.as_mut_ptr();
                msg.msg_iovlen = iov.len();
                libc::recvmsg(self.sock.as_raw_fd(), &mut msg, libc::MSG_DONTWAIT)
            };
            if let Some(r) = read_outcome(n) {
                break r;
            }
        };
        self.note_read(&r, head + dst_len);
        if let Ok(Fill::Data(n)) = r {
            self.hi += n.min(head);
        }
        r
    }

    /// Puts payload bytes that [`Conn::read_split`] read into a destination back behind the
    /// staged header (they belong to another frame than the one expected).
    pub fn restage(&mut self, bytes: &[u8]) {
        let n = bytes.len().min(self.rx.len() - self.hi);
        self.rx[self.hi..self.hi + n].copy_from_slice(&bytes[..n]);
        self.hi += n;
    }

    /// Reads straight into `dst` (staging must be empty: the caller takes staged bytes first).
    pub fn read_direct(&mut self, dst: &mut [u8]) -> io::Result<Fill> {
        if self.eof {
            return Ok(Fill::Eof);
        }
        let r = read_into(self.sock.as_raw_fd(), dst);
        self.note_read(&r, dst.len());
        r
    }

    fn read(&mut self, range: std::ops::Range<usize>) -> io::Result<Fill> {
        let asked = range.len();
        let r = read_into(self.sock.as_raw_fd(), &mut self.rx[range]);
        self.note_read(&r, asked);
        r
    }

    /// A read that returned less than it asked for emptied the socket's receive queue.
    fn note_read(&mut self, r: &io::Result<Fill>, asked: usize) {
        match r {
            Ok(Fill::Data(n)) => self.drained = *n < asked,
            Ok(Fill::WouldBlock) if asked > 0 => self.drained = true,
            Ok(Fill::WouldBlock) => {}
            Ok(Fill::Eof) => self.eof = true,
            Err(_) => {}
        }
    }
}

fn read_into(fd: RawFd, dst: &mut [u8]) -> io::Result<Fill> {
    if dst.is_empty() {
        return Ok(Fill::WouldBlock);
    }
    loop {
        // SAFETY: `dst` is a live, writable slice of `dst.len()` bytes.
        let r = unsafe { libc::recv(fd, dst.as_mut_ptr().cast(), dst.len(), libc::MSG_DONTWAIT) };
        if let Some(r) = read_outcome(r) {
            return r;
        }
    }
}

/// What a `recv` or `recvmsg` that returned `r` did; `None`: a signal interrupted it, call it
/// again.
fn read_outcome(r: isize) -> Option<io::Result<Fill>> {
    if r > 0 {
        return Some(Ok(Fill::Data(r as usize)));
    }
    if r == 0 {
        return Some(Ok(Fill::Eof));
    }
    let e = io::Error::last_os_error();
    match e.kind() {
        io::ErrorKind::WouldBlock => Some(Ok(Fill::WouldBlock)),
        io::ErrorKind::Interrupted => None,
        _ => Some(Err(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    fn pair() -> (Conn, Conn) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (b, _) = l.accept().unwrap();
        (Conn::new(a).unwrap(), Conn::new(b).unwrap())
    }

    #[test]
    fn frames_cross_gathered_and_parse_on_the_other_side() {
        let (mut a, mut b) = pair();
        let buf: Vec<u8> = (0..=255u8).cycle().take(300_000).collect();
        a.queue(&Header::data(0, 1, 0, 5), Body::Region(Region::new(10, 5)));
        a.queue(&Header::data(0, 1, 1, 0), Body::Region(Region::new(0, 0)));
        a.queue(
            &Header::data(0, 1, 2, 300_000),
            Body::Region(Region::new(0, 300_000)),
        );
        let mut got = Vec::new();
        while a.tx_pending() || got.len() < 3 * HEADER_LEN + 300_005 {
            a.flush(&buf).unwrap();
            if let Fill::Data(_) = b.fill().unwrap() {
                let s = b.staged().to_vec();
                got.extend_from_slice(&s);
                b.consume(s.len());
            }
        }
        let h = Header::parse(&got).unwrap();
        assert_eq!((h.seq, h.len), (0, 5));
        assert_eq!(&got[HEADER_LEN..HEADER_LEN + 5], &buf[10..15]);
        let h2 = Header::parse(&got[HEADER_LEN + 5..]).unwrap();
        assert_eq!((h2.seq, h2.len), (1, 0));
        let h3 = Header::parse(&got[2 * HEADER_LEN + 5..]).unwrap();
        assert_eq!(h3.len, 300_000);
        assert_eq!(&got[3 * HEADER_LEN + 5..], &buf[..]);
        drop(a);
        let mut eof = false;
        for _ in 0..1000 {
            if b.fill().unwrap() == Fill::Eof {
                eof = true;
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert!(eof && b.eof);
    }

    #[test]
    fn a_short_read_or_a_full_send_buffer_waits_for_a_readiness_check() {
        let (mut a, mut b) = pair();
        assert!(b.may_read(), "a new connection is read once to find out");
        assert_eq!(b.fill().unwrap(), Fill::WouldBlock);
        assert!(!b.may_read(), "found empty");
        a.queue(&Header::data(0, 1, 0, 5), Body::Region(Region::new(0, 5)));
        assert!(a.may_write());
        assert_eq!(a.flush(&[7u8; 5]).unwrap(), HEADER_LEN + 5);
        assert!(!a.may_write(), "nothing left to write");
        b.mark_ready(true, false);
        let mut got = 0;
        for _ in 0..1000 {
            if let Fill::Data(n) = b.fill().unwrap() {
                got += n;
            }
            if got == HEADER_LEN + 5 {
                break;
            }
            b.mark_ready(true, false);
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert_eq!(got, HEADER_LEN + 5);
        assert!(
            !b.may_read(),
            "a read shorter than the buffer emptied the socket"
        );
        // Nobody reads b: a's send buffer fills, and a stops writing until told it moved.
        let big = vec![0u8; 1 << 20];
        for seq in 0..64 {
            a.queue(
                &Header::data(0, 1, seq, 1 << 20),
                Body::Region(Region::new(0, 1 << 20)),
            );
        }
        while a.may_write() {
            a.flush(&big).unwrap();
        }
        assert!(a.tx_pending(), "64 MiB do not fit the socket buffers");
        assert_eq!(a.flush(&big).unwrap(), 0);
        a.mark_ready(false, true);
        assert!(a.may_write());
    }
}
