//! Wire formats of the transfer protocol: data datagrams over UDP ([`data`]) and framed control
//! messages over TCP ([`control`]). Each has a checked view and a representation with
//! `parse`/`emit`; nothing here panics on untrusted bytes (fuzz targets `xfer_data` and
//! `xfer_control`).

pub mod control;
pub mod data;

pub use control::{Control, FRAME_HEADER_LEN, MAX_FRAME, Mode, RefuseCode};
pub use data::{DataPacket, DataRepr};

/// Why some bytes are not a valid message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// Fewer bytes than the message needs.
    #[error("message truncated")]
    Truncated,
    /// Bytes left over after a complete message.
    #[error("{0} unexpected trailing bytes")]
    Trailing(usize),
    /// Not a weft data datagram.
    #[error("not a weft-xfer datagram (bad magic)")]
    BadMagic,
    /// A version this build does not speak.
    #[error("unsupported protocol version {0}")]
    Version(u16),
    /// A message type this build does not know.
    #[error("unknown message type {0}")]
    UnknownType(u8),
    /// A frame longer than [`MAX_FRAME`].
    #[error("control frame of {0} bytes exceeds the limit")]
    TooLong(usize),
    /// A field with a value outside its range.
    #[error("invalid field: {0}")]
    Invalid(&'static str),
}

/// A bounds-checked reader over untrusted bytes.
pub(crate) struct Reader<'a> {
    b: &'a [u8],
}

impl<'a> Reader<'a> {
    pub(crate) fn new(b: &'a [u8]) -> Self {
        Reader { b }
    }
    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8], WireError> {
        if self.b.len() < n {
            return Err(WireError::Truncated);
        }
        let (h, t) = self.b.split_at(n);
        self.b = t;
        Ok(h)
    }
    pub(crate) fn u8(&mut self) -> Result<u8, WireError> {
        Ok(self.take(1)?[0])
    }
    pub(crate) fn u16(&mut self) -> Result<u16, WireError> {
        let s = self.take(2)?;
        Ok(u16::from_be_bytes([s[0], s[1]]))
    }
    pub(crate) fn u32(&mut self) -> Result<u32, WireError> {
        let s = self.take(4)?;
        Ok(u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
    }
    pub(crate) fn u64(&mut self) -> Result<u64, WireError> {
        let mut a = [0u8; 8];
        a.copy_from_slice(self.take(8)?);
        Ok(u64::from_be_bytes(a))
    }
    pub(crate) fn array<const N: usize>(&mut self) -> Result<[u8; N], WireError> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }
    pub(crate) fn finish(&self) -> Result<(), WireError> {
        if self.b.is_empty() {
            Ok(())
        } else {
            Err(WireError::Trailing(self.b.len()))
        }
    }
}
