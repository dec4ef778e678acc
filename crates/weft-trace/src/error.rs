//! Errors of capture reading: every one names the byte offset where reading stopped and why.

use std::fmt;

/// What was wrong with a capture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CaptureErrorKind {
    /// The input ended inside a header, record or block.
    Truncated {
        /// What was being read when the bytes ran out.
        what: &'static str,
        /// Bytes that were needed from the offset on.
        needed: u64,
        /// Bytes that were there.
        have: u64,
    },
    /// The bytes at the offset are not a valid header, record or block.
    Corrupt(String),
    /// The file is neither pcap, pcapng nor gzip of either.
    UnknownFormat([u8; 4]),
    /// The operating system failed to read (or to decompress) the input.
    Io(String),
}

/// A capture could not be read past `offset` (bytes from the start of the capture; for gzip input,
/// of the decompressed stream).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct CaptureError {
    /// Byte offset of the header, record or block that failed.
    pub offset: u64,
    /// What was wrong there.
    pub kind: CaptureErrorKind,
}

impl CaptureError {
    pub(crate) fn corrupt(offset: u64, msg: impl Into<String>) -> Self {
        CaptureError {
            offset,
            kind: CaptureErrorKind::Corrupt(msg.into()),
        }
    }

    pub(crate) fn truncated(offset: u64, what: &'static str, needed: u64, have: u64) -> Self {
        CaptureError {
            offset,
            kind: CaptureErrorKind::Truncated { what, needed, have },
        }
    }
}

impl fmt::Display for CaptureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            CaptureErrorKind::Truncated { what, needed, have } => write!(
                f,
                "capture truncated at byte {}: {} needs {} bytes but only {} remain",
                self.offset, what, needed, have
            ),
            CaptureErrorKind::Corrupt(m) => {
                write!(f, "capture corrupt at byte {}: {}", self.offset, m)
            }
            CaptureErrorKind::UnknownFormat(m) => write!(
                f,
                "not a capture at byte {}: magic {:02x}{:02x}{:02x}{:02x} is neither pcap, pcapng nor gzip",
                self.offset, m[0], m[1], m[2], m[3]
            ),
            CaptureErrorKind::Io(m) => write!(f, "read failed at byte {}: {}", self.offset, m),
        }
    }
}
