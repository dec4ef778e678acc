//! One TCP segment as the connection sees it: header fields and options, and the length of its
//! payload but not the payload itself (see the module documentation of [`super`] for why).
//!
//! A [`Segment`] is `Copy` and about 80 bytes, so a simulator can queue millions of them without
//! allocating. [`super::wire`] turns one into real header bytes and back.

use super::seq::SeqNum;

/// The most option bytes a TCP header holds (data offset 15 words).
pub const MAX_OPTIONS_LEN: usize = 40;

/// The control bits of a segment (RFC 793, RFC 3168).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Flags(pub u8);

impl Flags {
    /// No more data from the sender.
    pub const FIN: Flags = Flags(0x01);
    /// Synchronise sequence numbers.
    pub const SYN: Flags = Flags(0x02);
    /// Reset the connection.
    pub const RST: Flags = Flags(0x04);
    /// Push.
    pub const PSH: Flags = Flags(0x08);
    /// The acknowledgement field is significant.
    pub const ACK: Flags = Flags(0x10);
    /// The urgent pointer is significant (never set by weft).
    pub const URG: Flags = Flags(0x20);
    /// ECN echo: on a SYN, ECN offered; later, a mark was received (RFC 3168).
    pub const ECE: Flags = Flags(0x40);
    /// Congestion window reduced: on a SYN, ECN offered; later, the sender answered an echo.
    pub const CWR: Flags = Flags(0x80);

    /// True if every bit of `other` is set here.
    #[inline]
    pub const fn contains(self, other: Flags) -> bool {
        self.0 & other.0 == other.0
    }

    /// These bits and those of `other`.
    #[inline]
    pub const fn with(self, other: Flags) -> Flags {
        Flags(self.0 | other.0)
    }
}

/// A range of sequence numbers the receiver holds above its cumulative acknowledgement
/// (RFC 2018): `left` is the first, `right` the one after the last.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SackBlock {
    /// First sequence number of the block.
    pub left: SeqNum,
    /// Sequence number just after the block.
    pub right: SeqNum,
}

/// Up to four SACK blocks, the most a 40-byte option space can carry without timestamps.
/// Equal when the blocks held are equal (slots beyond `len` do not count).
#[derive(Clone, Copy, Debug, Default)]
pub struct SackBlocks {
    len: u8,
    blocks: [SackBlock; SackBlocks::MAX],
}

impl PartialEq for SackBlocks {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for SackBlocks {}

impl std::hash::Hash for SackBlocks {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_slice().hash(state);
    }
}

impl SackBlocks {
    /// The most blocks one segment carries.
    pub const MAX: usize = 4;

    /// No blocks.
    pub const EMPTY: SackBlocks = SackBlocks {
        len: 0,
        blocks: [SackBlock {
            left: SeqNum(0),
            right: SeqNum(0),
        }; SackBlocks::MAX],
    };

    /// Appends a block; returns false (and keeps the blocks) when four are already held.
    pub fn push(&mut self, b: SackBlock) -> bool {
        if (self.len as usize) < Self::MAX {
            self.blocks[self.len as usize] = b;
            self.len += 1;
            true
        } else {
            false
        }
    }

    /// Drops blocks beyond the first `n`.
    pub fn truncate(&mut self, n: usize) {
        self.len = self.len.min(n as u8);
    }

    /// The blocks held, in the order they were pushed (most recent first, RFC 2018).
    pub fn as_slice(&self) -> &[SackBlock] {
        &self.blocks[..self.len as usize]
    }

    /// Number of blocks.
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// The RFC 7323 timestamp option's two values. weft's connection carries them when
/// [`super::Config::timestamps`] is agreed (1995 stacks did not), and the wire format reads and
/// writes them so that captures of real stacks parse.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Timestamps {
    /// TSval: the sender's clock.
    pub value: u32,
    /// TSecr: the echoed peer clock.
    pub echo: u32,
}

/// A TCP segment without its payload bytes: what the connection emits and consumes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Segment {
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// Sequence number of the first octet (of the SYN, if set).
    pub seq: SeqNum,
    /// Next sequence number expected by the sender; meaningful with [`Flags::ACK`].
    pub ack: SeqNum,
    /// Control bits.
    pub flags: Flags,
    /// The window field as sent (before the peer applies its window-scale shift).
    pub window: u16,
    /// Payload length, bytes (SYN and FIN not included).
    pub len: u32,
    /// MSS option (SYN segments), bytes.
    pub mss: Option<u16>,
    /// Window-scale option (SYN segments): the shift count.
    pub window_scale: Option<u8>,
    /// SACK-permitted option (SYN segments).
    pub sack_permitted: bool,
    /// Timestamp option.
    pub timestamps: Option<Timestamps>,
    /// SACK option blocks.
    pub sack: SackBlocks,
}

impl Segment {
    /// True if all of `f` are set.
    #[inline]
    pub fn has(&self, f: Flags) -> bool {
        self.flags.contains(f)
    }

    /// Sequence space the segment occupies: payload plus one each for SYN and FIN.
    #[inline]
    pub fn seq_len(&self) -> u64 {
        self.len as u64 + u64::from(self.has(Flags::SYN)) + u64::from(self.has(Flags::FIN))
    }

    /// Bytes of TCP options this segment takes on the wire, as [`super::wire`] lays them out:
    /// each option NOP-padded to a 4-byte boundary (MSS 4, window scale 4, SACK-permitted 4,
    /// timestamps 12, SACK 4 + 8 per block), SACK blocks dropped beyond the 40-byte limit.
    pub fn options_len(&self) -> usize {
        self.fixed_options_len() + self.sack_blocks_on_wire().map_or(0, |n| 4 + 8 * n)
    }

    fn fixed_options_len(&self) -> usize {
        4 * usize::from(self.mss.is_some())
            + 4 * usize::from(self.window_scale.is_some())
            + 4 * usize::from(self.sack_permitted)
            + 12 * usize::from(self.timestamps.is_some())
    }

    /// How many SACK blocks fit beside the other options (`None` if there are none to send).
    pub fn sack_blocks_on_wire(&self) -> Option<usize> {
        if self.sack.is_empty() {
            return None;
        }
        let room = MAX_OPTIONS_LEN.saturating_sub(self.fixed_options_len() + 4) / 8;
        let n = self.sack.len().min(room);
        (n > 0).then_some(n)
    }

    /// TCP header length on the wire, bytes (20 plus options).
    pub fn header_len(&self) -> usize {
        20 + self.options_len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequence_space_and_option_lengths() {
        let mut s = Segment {
            flags: Flags::SYN,
            mss: Some(1460),
            window_scale: Some(7),
            sack_permitted: true,
            ..Default::default()
        };
        assert_eq!(s.seq_len(), 1);
        // MSS 4, NOP + WS 4, NOP NOP + SACK-permitted 4.
        assert_eq!(s.header_len(), 32);
        s.flags = Flags::ACK.with(Flags::FIN);
        s.len = 100;
        s.mss = None;
        s.window_scale = None;
        s.sack_permitted = false;
        assert_eq!(s.seq_len(), 101);
        for i in 0..5 {
            let pushed = s.sack.push(SackBlock {
                left: SeqNum(i),
                right: SeqNum(i + 1),
            });
            assert_eq!(pushed, i < 4);
        }
        assert_eq!(s.sack.len(), 4);
        assert_eq!(s.header_len(), 20 + 36);
        // With timestamps only three blocks fit in 40 bytes.
        s.timestamps = Some(Timestamps::default());
        assert_eq!(s.sack_blocks_on_wire(), Some(3));
        assert_eq!(s.header_len(), 20 + 12 + 28);
    }
}
