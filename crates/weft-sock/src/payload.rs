//! The bytes of a message: a recognisable filler (byte `i` is `i % 251`, as `weft rr`'s
//! requests have always been), with the message's [`weft_model::app::Tag`] over its first bytes.

/// The filler's period, bytes.
pub const PERIOD: usize = 251;

/// Byte `i` of a message's filler.
pub fn filler(i: usize) -> u8 {
    (i % PERIOD) as u8
}

/// A filler of `len` bytes, to write messages from (a message longer than it is written from it
/// again and again: its bytes after the first `len` are not checked).
pub fn buffer(len: usize) -> Vec<u8> {
    (0..len).map(filler).collect()
}
