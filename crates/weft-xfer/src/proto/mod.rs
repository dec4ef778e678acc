//! The sans-IO protocol core: a [`Sender`] and a [`Receiver`] state machine.
//!
//! Neither touches a socket, a file or a clock. A driver (the real UDP/TCP driver in
//! [`crate::net`], or the deterministic channel harness in the tests) calls, each time it wakes at
//! `now`:
//! 1. `handle_control(now, msg)` for each control message read from TCP, `handle_datagram(now,
//!    bytes)` (receiver) for each UDP datagram, and `handle_timeout(now)`;
//! 2. `poll_control()` until `None`, writing each message to TCP; `poll_transmit(now, buf)` (sender)
//!    until `None`, sending each datagram on the stripe it names; `poll_event()` until `None`,
//!    doing what each asks (read or write a buffer, check a file) and answering with the matching
//!    call (`provide_buffer`, `buffer_written`, `accept_file`, `file_result`);
//! 3. `poll_timeout()` to learn when to wake next.

mod checksum;
mod rate;
mod receiver;
mod sender;
mod sender_api;
mod span;
mod stall;

pub use checksum::{BlockHasher, Checksum};
pub use rate::{Pacer, RateControl, RateMode, Report};
pub use receiver::{Receiver, ReceiverConfig, ReceiverEvent, ReceiverStats};
pub use sender::{FileMeta, Sender, SenderConfig, SenderEvent, SenderStats, Transmit, TransmitRef};
pub use stall::{DEFAULT_STALL_FLOOR, STALL_RTTS, Stalled, stall_bound};

/// IPv4 and UDP header bytes added to every datagram on the wire (for pacing).
pub const IP_UDP_OVERHEAD: usize = 28;

/// A protocol violation by the peer: the session must be closed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProtoError {
    /// A message that does not fit the current state.
    #[error("unexpected {0} from peer")]
    Unexpected(&'static str),
    /// A message with out-of-range fields.
    #[error("invalid {0} from peer")]
    Invalid(&'static str),
}

/// Number of datagrams a buffer of `size` bytes takes at `packet_size` payload bytes each.
pub fn packets_in(size: u32, packet_size: u32) -> u32 {
    if packet_size == 0 {
        return 0;
    }
    size.div_ceil(packet_size)
}

/// Number of buffers a file of `size` bytes takes at `buffer_size` bytes each.
pub fn buffers_in(size: u64, buffer_size: u32) -> u64 {
    if buffer_size == 0 {
        return 0;
    }
    size.div_ceil(buffer_size as u64)
}

/// Size of buffer `index` of a file of `size` bytes (the last one may be short).
pub fn buffer_len(size: u64, buffer_size: u32, index: u32) -> u32 {
    let start = index as u64 * buffer_size as u64;
    size.saturating_sub(start).min(buffer_size as u64) as u32
}

/// The whole-file digest of reliable mode: BLAKE3 over the concatenated BLAKE3s of the file's
/// buffer-size blocks, in order. Each buffer's hash is checked as it arrives; this one, checked
/// against the file read back from disk, covers order, completeness and the disk.
pub fn file_digest<'a>(block_hashes: impl IntoIterator<Item = &'a [u8; 32]>) -> [u8; 32] {
    let mut h = blake3::Hasher::new();
    for b in block_hashes {
        h.update(b);
    }
    *h.finalize().as_bytes()
}

/// A fixed-size set of packet indices.
#[derive(Debug, Clone)]
pub(crate) struct Bitmap {
    words: Vec<u64>,
    len: u32,
    count: u32,
}

impl Bitmap {
    pub(crate) fn new(len: u32) -> Self {
        Bitmap {
            words: vec![0; (len as usize).div_ceil(64)],
            len,
            count: 0,
        }
    }
    /// Sets bit `i`; returns false if it was already set or out of range.
    pub(crate) fn insert(&mut self, i: u32) -> bool {
        if i >= self.len {
            return false;
        }
        let (w, b) = ((i / 64) as usize, i % 64);
        let Some(word) = self.words.get_mut(w) else {
            return false;
        };
        if *word & (1 << b) != 0 {
            return false;
        }
        *word |= 1 << b;
        self.count += 1;
        true
    }
    pub(crate) fn contains(&self, i: u32) -> bool {
        self.words
            .get((i / 64) as usize)
            .is_some_and(|w| w & (1 << (i % 64)) != 0)
    }
    pub(crate) fn count(&self) -> u32 {
        self.count
    }
    pub(crate) fn len_missing(&self) -> u32 {
        self.len - self.count
    }
    pub(crate) fn is_full(&self) -> bool {
        self.count == self.len
    }
    pub(crate) fn clear(&mut self) {
        self.words.iter_mut().for_each(|w| *w = 0);
        self.count = 0;
    }
    /// Half-open ranges of indices not set.
    pub(crate) fn missing(&self) -> Vec<(u32, u32)> {
        let mut out = Vec::new();
        let mut start = None;
        for i in 0..self.len {
            match (self.contains(i), start) {
                (false, None) => start = Some(i),
                (true, Some(s)) => {
                    out.push((s, i));
                    start = None;
                }
                _ => {}
            }
        }
        if let Some(s) = start {
            out.push((s, self.len));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bitmap_tracks_missing_ranges() {
        let mut b = Bitmap::new(130);
        assert_eq!(b.missing(), vec![(0, 130)]);
        assert!(b.insert(0));
        assert!(!b.insert(0));
        assert!(!b.insert(130));
        for i in 5..70 {
            b.insert(i);
        }
        assert_eq!(b.missing(), vec![(1, 5), (70, 130)]);
        assert_eq!(b.count(), 66);
        for i in (1..5).chain(70..130) {
            b.insert(i);
        }
        assert!(b.is_full());
        assert!(b.missing().is_empty());
    }

    #[test]
    fn sizes() {
        assert_eq!(packets_in(0, 9000), 0);
        assert_eq!(packets_in(9001, 9000), 2);
        assert_eq!(buffers_in(10, 4), 3);
        assert_eq!(buffer_len(10, 4, 2), 2);
        assert_eq!(buffer_len(10, 4, 3), 0);
    }
}
