//! The datagrams between daemons: a 16-byte header (modelled on the pvmd-pvmd header of PVM 3,
//! "PVM: Parallel Virtual Machine", MIT Press 1994, section 7.5.2: source and destination,
//! sequence and acknowledgement numbers, DAT/ACK/FIN flags), then for a data packet one rank
//! frame chunk ([`crate::mp::wire`]).
//!
//! ```text
//!  0     2     3       4       6       8          12         16             24
//!  +-----+-----+-------+-------+-------+----------+----------+--------------+------------------+
//!  | WD  | ver | flags | src   | dst   | seq      | ack      | run token    | chunk (DAT only) |
//!  +-----+-----+-------+-------+-------+----------+----------+--------------+------------------+
//! ```
//!
//! Version 2 added the run token: 64 random bits that only the run's ranks know (derived from
//! the secret cookies of the roster), so that a datagram from outside the run (a stranger
//! injecting data, filling reorder buffers or forging cumulative acknowledgements to keep a
//! window open toward a victim) is dropped. The daemon also takes a rank's datagrams only from
//! that rank's daemon's address in the roster (`super::driver`). A version 1 packet is foreign.
//!
//! Unlike PVM's 16-bit per-packet acknowledgements, `seq` and `ack` are 32-bit and the
//! acknowledgement is cumulative (every packet before `ack` arrived), which needs no wrap-around
//! handling in a run and acknowledges a window with one packet.

/// First two bytes of a daemon packet.
pub const MAGIC: [u8; 2] = *b"WD";
/// Version of the daemon packet format.
pub const VERSION: u8 = 2;
/// Header length, bytes.
pub const HEADER_LEN: usize = 24;
/// The packet carries data (`seq` is valid).
pub const DAT: u8 = 1;
/// The packet acknowledges (`ack` is valid).
pub const ACK: u8 = 2;

/// Why a datagram is not a daemon packet.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PacketError {
    /// Shorter than a header.
    #[error("daemon packet truncated ({0} bytes)")]
    Truncated(usize),
    /// Wrong magic or version.
    #[error("not a weft daemon packet of version {VERSION}")]
    Foreign,
    /// Unknown flags, or data flagged without payload.
    #[error("bad daemon packet flags {0:#x}")]
    Flags(u8),
}

/// A packet header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacketHeader {
    /// [`DAT`] and/or [`ACK`].
    pub flags: u8,
    /// Sending daemon (its rank).
    pub src: u16,
    /// Receiving daemon.
    pub dst: u16,
    /// Sequence number of a data packet.
    pub seq: u32,
    /// Next sequence number the sender expects from the receiver.
    pub ack: u32,
    /// The run's token (version 2).
    pub token: u64,
}

impl PacketHeader {
    /// Parses a datagram: its header and payload.
    pub fn parse(b: &[u8]) -> Result<(PacketHeader, &[u8]), PacketError> {
        let h: &[u8; HEADER_LEN] = b
            .get(..HEADER_LEN)
            .and_then(|s| s.try_into().ok())
            .ok_or(PacketError::Truncated(b.len()))?;
        if h[..2] != MAGIC || h[2] != VERSION {
            return Err(PacketError::Foreign);
        }
        let flags = h[3];
        let payload = &b[HEADER_LEN..];
        if flags & !(DAT | ACK) != 0 || flags == 0 || (flags & DAT != 0) == payload.is_empty() {
            return Err(PacketError::Flags(flags));
        }
        let u32_at = |i: usize| u32::from_be_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]);
        Ok((
            PacketHeader {
                flags,
                src: u16::from_be_bytes([h[4], h[5]]),
                dst: u16::from_be_bytes([h[6], h[7]]),
                seq: u32_at(8),
                ack: u32_at(12),
                token: u64::from_be_bytes([h[16], h[17], h[18], h[19], h[20], h[21], h[22], h[23]]),
            },
            payload,
        ))
    }

    /// Writes the header into the first [`HEADER_LEN`] bytes of `out` (which must hold them).
    pub fn emit_into(&self, out: &mut [u8]) {
        if let Some(h) = out.get_mut(..HEADER_LEN) {
            h[..2].copy_from_slice(&MAGIC);
            h[2] = VERSION;
            h[3] = self.flags;
            h[4..6].copy_from_slice(&self.src.to_be_bytes());
            h[6..8].copy_from_slice(&self.dst.to_be_bytes());
            h[8..12].copy_from_slice(&self.seq.to_be_bytes());
            h[12..16].copy_from_slice(&self.ack.to_be_bytes());
            h[16..24].copy_from_slice(&self.token.to_be_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packets_round_trip_and_garbage_is_refused() {
        let h = PacketHeader {
            flags: DAT | ACK,
            src: 2,
            dst: 5,
            seq: 7,
            ack: 9,
            token: 0x0102_0304_0506_0708,
        };
        let mut b = vec![0u8; HEADER_LEN + 3];
        h.emit_into(&mut b);
        let (p, payload) = PacketHeader::parse(&b).unwrap();
        assert_eq!(p, h);
        assert_eq!(payload.len(), 3);
        assert_eq!(
            PacketHeader::parse(&b[..HEADER_LEN]),
            Err(PacketError::Flags(DAT | ACK))
        );
        assert_eq!(PacketHeader::parse(&b[..3]), Err(PacketError::Truncated(3)));
        let mut f = b.clone();
        f[0] = b'X';
        assert_eq!(PacketHeader::parse(&f), Err(PacketError::Foreign));
        let mut f = b.clone();
        f[3] = 8;
        assert_eq!(PacketHeader::parse(&f), Err(PacketError::Flags(8)));
        // A pure acknowledgement has no payload.
        let a = PacketHeader { flags: ACK, ..h };
        let mut b = vec![0u8; HEADER_LEN];
        a.emit_into(&mut b);
        assert_eq!(PacketHeader::parse(&b).unwrap().0, a);
    }
}
