//! What a [`Sender`](super::Sender) is configured with, what it is given and what it gives:
//! its parameters, the files it sends, the datagrams it asks the driver to send, the events it
//! raises and its counters.

use weft_model::Duration;

use super::rate::RateMode;
use crate::wire::{Mode, RefuseCode};

/// Sender parameters.
#[derive(Debug, Clone)]
pub struct SenderConfig {
    /// Transfer mode.
    pub mode: Mode,
    /// Payload bytes per datagram.
    pub packet_size: u32,
    /// Buffer size, bytes.
    pub buffer_size: u32,
    /// Buffers in flight (granted by the receiver's `ServerHello`; 1 in SBTP/MBTP).
    pub window: u32,
    /// Rate mode.
    pub rate: RateMode,
    /// Number of receiving UDP sockets to stripe over.
    pub stripes: u32,
    /// Pacing burst allowance.
    pub burst: Duration,
    /// The receiver takes the probe round of the first buffer before it has granted the buffer
    /// (protocol 4): the probe train leaves with the offer instead of a round trip later, when
    /// `Ready` comes back.
    pub early_probe: bool,
}

/// A file to send.
#[derive(Debug, Clone)]
pub struct FileMeta {
    /// Relative name at the receiver (`/`-separated).
    pub name: String,
    /// Size, bytes.
    pub size: u64,
    /// Identity of this version of the file, for resuming (zero in unreliable modes).
    pub hash: [u8; 32],
    /// Ask the receiver to continue from its journal.
    pub resume: bool,
}

/// One datagram to send: its bytes were appended to the caller's buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transmit {
    /// Index of the receiver's UDP port to send it to.
    pub stripe: u32,
    /// Length of the datagram, bytes.
    pub len: usize,
}

/// One datagram to send without copying its payload: the header was appended to the caller's
/// buffer, and the payload is [`Sender::payload`]`(buf, start, len)` (a zero-copy driver hands
/// both to the kernel as two pieces of one datagram).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TransmitRef {
    /// Index of the receiver's UDP port to send it to.
    pub stripe: u32,
    /// Buffer sequence number the payload lies in.
    pub buf: u32,
    /// Byte offset of the payload in that buffer.
    pub start: usize,
    /// Payload length, bytes.
    pub len: usize,
}

/// Something the driver must do or know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SenderEvent {
    /// The receiver took file `file`; it already holds the buffer indices in `have`.
    FileAccepted {
        /// File number.
        file: u32,
        /// Half-open ranges of buffer indices already at the receiver.
        have: Vec<(u32, u32)>,
    },
    /// The receiver refused file `file`; the sender goes on with the next file.
    FileRejected {
        /// File number.
        file: u32,
        /// Why.
        code: RefuseCode,
        /// Receiver's reason.
        msg: String,
    },
    /// Read the next buffer of `file` and call [`Sender::provide_buffer`].
    NeedBuffer {
        /// File number.
        file: u32,
    },
    /// A buffer is at the receiver.
    BufferDone {
        /// File number.
        file: u32,
        /// Buffer index in the file.
        index: u32,
        /// Bytes in the buffer.
        size: u32,
        /// Packets lost for good (unreliable modes).
        lost: u32,
    },
    /// The receiver's verdict on a file.
    FileDone {
        /// File number.
        file: u32,
        /// Whether it is in place.
        ok: bool,
        /// Receiver's details.
        msg: String,
    },
    /// Every file has been dealt with and `Bye` is queued.
    Finished,
}

/// Counters, for the summary.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SenderStats {
    /// Datagrams sent, retransmissions included.
    pub packets_sent: u64,
    /// Datagrams that were retransmissions.
    pub packets_retransmitted: u64,
    /// Payload bytes sent, retransmissions included.
    pub payload_bytes_sent: u64,
    /// Packets the receiver reported lost for good (unreliable modes).
    pub packets_lost: u64,
    /// Packets the receiver reported missing at round ends (reliable mode).
    pub packets_nacked: u64,
    /// Duplicate packets the receiver saw.
    pub packets_dup: u64,
    /// Buffers completed.
    pub buffers_done: u64,
    /// Payload bytes of completed buffers.
    pub bytes_done: u64,
    /// Files the receiver put in place.
    pub files_ok: u64,
    /// Files refused or failed.
    pub files_failed: u64,
}
