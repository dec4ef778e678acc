//! The weft control protocol, version 2: framed messages on a TCP control connection, data on
//! separate TCP connections or UDP sockets that attach to their test with a random cookie.
//!
//! - [`frame`]: the 12-byte binary header (magic `WEFT`, version, type, length) as a checked view;
//! - [`message`]: the messages and their JSON bodies, with `parse`/`emit`;
//! - [`spec`]: the test request (`TestSpec::Tput`, `TestSpec::Rr`);
//! - [`rr_spec`]: the request/response test's parameters (owned by the rr module);
//! - [`relay`]: asking an agent to run a test toward another agent, and its report;
//! - [`auth`]: the hello of a client that proves a pre-shared key;
//! - [`data`]: the data-path hello and the UDP datagram header;
//! - [`io`]: reading and writing messages on a stream with a size bound.
//!
//! Nothing here panics on any input; `fuzz/fuzz_targets/control_message.rs` checks that.

pub mod auth;
pub mod data;
pub mod frame;
pub mod io;
pub mod message;
pub mod relay;
pub mod rr_spec;
pub mod spec;

pub use auth::{AuthChallenge, AuthHello, AuthOk, AuthProof, Hex};
pub use data::{Cookie, Hello};
pub use frame::{DEFAULT_MAX_MESSAGE, Frame, HEADER_LEN, MAGIC, VERSION};
pub use io::{read_frame, read_message, write_message};
pub use message::{
    Accept, CpuUse, ErrorMsg, Finished, Interval, Message, MessageType, Ready, SenderDone,
    SockInfo, StreamEnd, UdpCounts,
};
pub use relay::{DirCounts, RELAY_VERSION, RelayReport, RelayRr, RelaySpec, RelayTest, RelayTput};
pub use rr_spec::RrSpec;
pub use spec::{Amount, Direction, TestSpec, TputSpec, Transport};

/// Why bytes are not a valid control message (or a data hello).
#[derive(Debug, thiserror::Error)]
pub enum ProtoError {
    /// The buffer or stream ended early.
    #[error("message truncated: need {need} bytes, have {have}")]
    Truncated {
        /// Bytes needed.
        need: usize,
        /// Bytes present.
        have: usize,
    },
    /// The first four bytes are not a weft magic.
    #[error("not a weft message (magic {0:02x?}); is this a weft agent/client?")]
    BadMagic([u8; 4]),
    /// Another protocol version.
    #[error(
        "protocol version {0} not supported (this build speaks version {VERSION}); use the same weft version on both ends"
    )]
    UnsupportedVersion(u8),
    /// Reserved header bits set.
    #[error("reserved header field is {0:#x}, must be 0 in version {VERSION}")]
    ReservedBits(u16),
    /// The header announces a body larger than allowed.
    #[error("message body of {len} bytes exceeds the limit of {max} bytes")]
    TooLarge {
        /// Announced body length.
        len: u32,
        /// The limit.
        max: u32,
    },
    /// Unknown message-type code.
    #[error("unknown message type {0}")]
    UnknownType(u8),
    /// The JSON body does not fit the message type.
    #[error("malformed body of message type {msg_type}: {reason}")]
    BadBody {
        /// The type code.
        msg_type: u8,
        /// The JSON error.
        reason: String,
    },
    /// The peer closed the connection between messages.
    #[error("connection closed by peer")]
    Closed,
    /// An I/O error (including read time-outs). Its message includes the I/O error's, which is
    /// therefore not also its `source` (a report of the chain would say it twice).
    #[error("control connection: {0}")]
    Io(std::io::Error),
}

impl From<std::io::Error> for ProtoError {
    fn from(e: std::io::Error) -> Self {
        ProtoError::Io(e)
    }
}

impl PartialEq for ProtoError {
    /// Compares variants and fields; I/O errors compare by kind.
    fn eq(&self, other: &Self) -> bool {
        use ProtoError::*;
        match (self, other) {
            (Truncated { need: a, have: b }, Truncated { need: c, have: d }) => a == c && b == d,
            (BadMagic(a), BadMagic(b)) => a == b,
            (UnsupportedVersion(a), UnsupportedVersion(b)) => a == b,
            (ReservedBits(a), ReservedBits(b)) => a == b,
            (TooLarge { len: a, max: b }, TooLarge { len: c, max: d }) => a == c && b == d,
            (UnknownType(a), UnknownType(b)) => a == b,
            (
                BadBody {
                    msg_type: a,
                    reason: b,
                },
                BadBody {
                    msg_type: c,
                    reason: d,
                },
            ) => a == c && b == d,
            (Closed, Closed) => true,
            (Io(a), Io(b)) => a.kind() == b.kind(),
            _ => false,
        }
    }
}

impl ProtoError {
    /// The error code sent to the peer in an `Error` message for this failure.
    pub fn code(&self) -> &'static str {
        match self {
            ProtoError::TooLarge { .. } => "limit",
            ProtoError::Io(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                "timeout"
            }
            _ => "bad-message",
        }
    }

    /// Whether this is a read time-out (idle peer).
    pub fn is_timeout(&self) -> bool {
        self.code() == "timeout"
    }
}
