//! Applications: the workloads that run on hosts (request/response, bulk transfer, message
//! passing), each written once as a sans-IO state machine with its metrics, and driven by every
//! engine that runs it.
//!
//! An application never touches a socket, a frame or a clock. It sees its transport through
//! [`Input`]s (a stream opened, bytes read, a datagram received, a stream closed) and asks for
//! [`Output`]s (write a message, send a datagram, close); time is an [`Instant`] of nanoseconds
//! passed in by the driver. It has the four kinds of methods of [`crate::tcp::Connection`] and
//! quinn-proto's connection: input ([`Application::handle_input`],
//! [`Application::handle_timeout`]), output ([`Application::poll_output`],
//! [`Application::poll_timeout`]), and getters for its results.
//!
//! The drivers:
//! - the simulator (`weft-sim`) puts an application on a simulated host, over the sans-IO TCP
//!   of [`crate::tcp`] or the simulator's datagrams, with the host's CPU costs charged between
//!   the application and the wire;
//! - the socket driver runs the same application on real sockets (real hosts, and the
//!   emulator's namespaced ones).
//!
//! # Call order
//!
//! Each time a driver wakes at `now`:
//! 1. [`Application::handle_timeout`] if [`Application::poll_timeout`] is at or before `now`;
//! 2. [`Application::handle_input`] for every input that arrived, each with the instant the
//!    application got it (the end of the read call that returned it: at or before `now`);
//! 3. [`Application::poll_output`] until it returns `None`, carrying out each output;
//! 4. [`Application::poll_timeout`] for when to wake next (`None`: only input can change
//!    anything).
//!
//! Streams and peers are numbered by the driver and the application together: an application
//! on one connection uses stream 0; a message-passing rank numbers its connections by peer rank.
//!
//! # Payload
//!
//! Applications count bytes; they do not make them. A message is a length and, optionally, a
//! [`Tag`]: a number its first bytes carry (a request's sequence number, which its answer
//! carries back), so that a receiver can tell a late answer from the one it waits for. A driver
//! of real sockets writes the tag's bytes at the start of the message and fills the rest; the
//! simulator carries the number in its frame descriptor. Inputs carry the bytes read when the
//! driver has them ([`Input::Read::data`], [`Input::Datagram::data`]), so an application can
//! check what a real peer sent.
//!
//! # Adding a workload
//!
//! Write its state machine here, a module of its own implementing [`Application`], with its
//! metrics computed by the module (one function that writes them under their keys, which every
//! engine reports); give it a unit test with the in-memory [`testing`] driver. Then give it its
//! scenario keys ([`crate::scenario::Workload`]) and let the engines build it from them: the
//! simulator's hosts and the socket driver run any [`Application`] unchanged. [`rr`] is the
//! example to follow; [`bulk`] (ttcp's source and sink), [`mp`] (a message-passing rank on
//! one stream per peer), [`nfs`] (NFS's READs and WRITEs over UDP RPC) and [`x11`] (a renderer's
//! frames as X11 PutImage requests to a remote display) the others.

pub mod bulk;
pub mod ftp;
pub mod mp;
pub mod nfs;
pub mod quantile;
pub mod rr;
pub mod testing;
pub mod traffic;
pub mod x11;

use crate::time::Instant;

/// A stream of the application's (a TCP connection), numbered from 0.
pub type StreamId = usize;

/// A datagram peer of the application, numbered by the driver (a simulated host's index, or an
/// entry of the socket driver's table of addresses).
pub type PeerId = usize;

/// A number carried in a message's first bytes (little-endian, truncated to `len` bytes), and
/// optionally the instant it was sent in the 8 bytes after it (a bulk datagram's, from which
/// its receiver computes the jitter).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Tag {
    /// The number.
    pub value: u64,
    /// When the message was sent, ns on the sender's clock, if it carries it (bytes 8..16).
    pub stamp: Option<u64>,
    /// Bytes of the message it occupies: 0..=8, or 16 with a stamp (at most the message's
    /// length).
    pub len: u8,
}

impl Tag {
    /// Bytes of a tag with its stamp.
    pub const STAMPED_LEN: usize = 16;

    /// `value` in the first `len` bytes (at most 8) of a message.
    pub fn new(value: u64, len: usize) -> Self {
        Tag {
            value,
            stamp: None,
            len: len.min(8) as u8,
        }
    }

    /// `value` and the send time `at` in the first 16 bytes of a message of `len` bytes; a
    /// shorter message has no room for the time and carries `value` only.
    pub fn stamped(value: u64, at: Instant, len: usize) -> Self {
        if len < Self::STAMPED_LEN {
            return Tag::new(value, len);
        }
        Tag {
            value,
            stamp: Some(at.0),
            len: Self::STAMPED_LEN as u8,
        }
    }

    /// The tag the first `len` bytes of `bytes` carry (`None` if there are fewer); `len` of
    /// [`Tag::STAMPED_LEN`] reads the stamp too.
    pub fn read(bytes: &[u8], len: usize) -> Option<Self> {
        let word = |at: usize, n: usize| -> Option<u64> {
            let mut b = [0u8; 8];
            b.get_mut(..n)?.copy_from_slice(bytes.get(at..at + n)?);
            Some(u64::from_le_bytes(b))
        };
        if len >= Self::STAMPED_LEN {
            return Some(Tag {
                value: word(0, 8)?,
                stamp: Some(word(8, 8)?),
                len: Self::STAMPED_LEN as u8,
            });
        }
        let len = len.min(8);
        Some(Tag::new(word(0, len)?, len))
    }

    /// Writes the tag into the first bytes of `buf` (as many as fit).
    pub fn write(&self, buf: &mut [u8]) {
        let mut b = [0u8; Self::STAMPED_LEN];
        b[..8].copy_from_slice(&self.value.to_le_bytes());
        let n = match self.stamp {
            Some(t) => {
                b[8..].copy_from_slice(&t.to_le_bytes());
                Self::STAMPED_LEN
            }
            None => usize::from(self.len).min(8),
        };
        let n = n.min(buf.len());
        if let (Some(dst), Some(src)) = (buf.get_mut(..n), b.get(..n)) {
            dst.copy_from_slice(src);
        }
    }

    /// True if this tag carries `value` (compared on the tag's bytes only).
    pub fn carries(&self, value: u64) -> bool {
        let mask = match self.len {
            8.. => u64::MAX,
            n => (1u64 << (8 * u32::from(n))) - 1,
        };
        self.value & mask == value & mask
    }
}

/// Why a stream ended other than by the peer's orderly close.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum StreamError {
    /// The peer reset the connection.
    #[error("connection reset by peer")]
    Reset,
    /// The peer refused the connection.
    #[error("connection refused")]
    Refused,
    /// The transport gave up retransmitting (or connecting).
    #[error("connection timed out")]
    TimedOut,
    /// Any other failure of the transport (the socket driver logs its details).
    #[error("connection failed")]
    Failed,
}

impl From<crate::tcp::Error> for StreamError {
    fn from(e: crate::tcp::Error) -> Self {
        match e {
            crate::tcp::Error::Reset => StreamError::Reset,
            crate::tcp::Error::Refused => StreamError::Refused,
            crate::tcp::Error::TimedOut => StreamError::TimedOut,
        }
    }
}

/// What happened on the application's transport.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Input<'a> {
    /// Stream `stream` is open both ways.
    Connected {
        /// The stream.
        stream: StreamId,
    },
    /// The last write call on `stream` returned: the send buffer has taken all its bytes.
    Written {
        /// The stream.
        stream: StreamId,
    },
    /// A read call on `stream` returned `len` bytes.
    Read {
        /// The stream.
        stream: StreamId,
        /// Bytes read.
        len: u64,
        /// The bytes, if the driver carries real ones.
        data: Option<&'a [u8]>,
    },
    /// The peer closed `stream` and every byte it sent has been read (`error: None`), or the
    /// stream failed.
    Closed {
        /// The stream.
        stream: StreamId,
        /// Why it failed, if it did.
        error: Option<StreamError>,
    },
    /// A whole datagram of `len` bytes from `peer`.
    Datagram {
        /// Who sent it.
        peer: PeerId,
        /// Bytes of payload.
        len: u64,
        /// The tag it carries, if the driver carries tags instead of bytes (the simulator).
        tag: Option<Tag>,
        /// Its bytes, if the driver carries real ones.
        data: Option<&'a [u8]>,
    },
}

impl Input<'_> {
    /// The tag of `len` bytes a datagram or read carries: from its bytes if it has them, else
    /// the one the driver carried.
    pub fn tag(&self, len: usize) -> Option<Tag> {
        match *self {
            Input::Datagram {
                data: Some(d), tag, ..
            } => Tag::read(d, len).or(tag),
            Input::Datagram { tag, .. } => tag,
            Input::Read { data: Some(d), .. } => Tag::read(d, len),
            _ => None,
        }
    }
}

/// What the application asks of its transport.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Output {
    /// Write a message of `len` bytes on `stream` with one write call (the driver blocks the
    /// writer while the send buffer is full, as a blocking socket does).
    Write {
        /// The stream.
        stream: StreamId,
        /// Bytes of the message.
        len: u64,
        /// The tag its first bytes carry.
        tag: Option<Tag>,
    },
    /// Send a datagram of `len` bytes of payload to `peer` (one send call; the driver or the
    /// network fragments it if it exceeds the path's MTU).
    Send {
        /// Where to.
        peer: PeerId,
        /// Bytes of payload.
        len: u64,
        /// The tag its first bytes carry.
        tag: Option<Tag>,
    },
    /// Write back on `stream` the `len` bytes just read from it (an echo; a driver without
    /// bytes writes `len` bytes).
    Echo {
        /// The stream.
        stream: StreamId,
        /// Bytes to write back.
        len: u64,
    },
    /// Close the sending direction of `stream` once what was written has been sent.
    Close {
        /// The stream.
        stream: StreamId,
    },
}

/// A sans-IO application. See the module documentation for the call order.
pub trait Application {
    /// Something happened on the transport at `now` (when the application got it).
    fn handle_input(&mut self, now: Instant, input: Input<'_>);

    /// [`Application::poll_timeout`] has passed: a deadline is due at `now`.
    fn handle_timeout(&mut self, now: Instant);

    /// The next thing the application asks of its transport at `now`.
    fn poll_output(&mut self, now: Instant) -> Option<Output>;

    /// The next instant the application has something to do without new input.
    fn poll_timeout(&self) -> Option<Instant>;

    /// True once the application has done all it was asked to (a driver may stop it).
    fn is_done(&self) -> bool {
        false
    }

    /// The application is in a call of its own until this instant (a disk write, [`ftp`]): a
    /// driver reads none of its streams before it, so that their receive buffers fill as a
    /// blocked process's do. `None` (the default): it reads whenever data arrive.
    fn busy_until(&self) -> Option<Instant> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stamped_tag_carries_its_send_time_in_the_8_bytes_after_its_number() {
        let t = Tag::stamped(0x0102, Instant(0x0304), 20);
        let mut b = [0xffu8; 20];
        t.write(&mut b);
        assert_eq!(&b[..16], &[2, 1, 0, 0, 0, 0, 0, 0, 4, 3, 0, 0, 0, 0, 0, 0]);
        assert_eq!(b[16], 0xff, "the filler after it is left alone");
        assert_eq!(Tag::read(&b, Tag::STAMPED_LEN), Some(t));
        assert_eq!(Tag::read(&b[..15], Tag::STAMPED_LEN), None);
        assert_eq!(Tag::read(&b, 8), Some(Tag::new(0x0102, 8)));
        let short = Tag::stamped(5, Instant(9), 12);
        assert_eq!((short.stamp, short.len), (None, 8), "no room for the time");
    }
}
