//! ATM cells (53 bytes: a 5-byte UNI header and 48 bytes of payload) and AAL5 segmentation and
//! reassembly.
//!
//! Wire formats follow smoltcp's shape: [`CellHeader::parse`] / [`CellHeader::emit`] on bytes that
//! may be untrusted, checked lengths, no panics.

pub mod aal5;

pub use aal5::{Aal5Error, Reassembler, aal5_cells, crc32_aal5, segment};

/// Bytes in one cell on the wire ([`crate::tech::CELL_BYTES`] as a `usize`).
pub const CELL_BYTES: usize = crate::tech::CELL_BYTES as usize;
/// Bytes of payload in one cell.
pub const CELL_PAYLOAD: usize = 48;
/// Bytes of cell header (UNI format).
pub const HEADER_BYTES: usize = 5;

/// A cell could not be read from bytes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CellError {
    /// Fewer than 53 bytes were given.
    #[error("a cell is 53 bytes, got {0}")]
    Truncated(usize),
    /// The header error control byte does not match the header.
    #[error("header error control mismatch: expected {expected:#04x}, found {found:#04x}")]
    BadHec {
        /// The HEC computed over the first four header bytes.
        expected: u8,
        /// The HEC carried in the cell.
        found: u8,
    },
}

/// The UNI cell header. `pti` bit 0 (the ATM-user-to-ATM-user bit) marks the last cell of an AAL5
/// frame; see [`CellHeader::end_of_frame`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct CellHeader {
    /// Generic flow control (4 bits).
    pub gfc: u8,
    /// Virtual path identifier (8 bits at the UNI).
    pub vpi: u8,
    /// Virtual channel identifier (16 bits).
    pub vci: u16,
    /// Payload type indicator (3 bits).
    pub pti: u8,
    /// Cell loss priority (1 bit): 1 marks the cell as eligible for discard first.
    pub clp: bool,
}

impl CellHeader {
    /// A user-data header on `vpi`/`vci`, with the end-of-frame bit as given.
    pub fn data(vpi: u8, vci: u16, end_of_frame: bool) -> Self {
        CellHeader {
            gfc: 0,
            vpi,
            vci,
            pti: u8::from(end_of_frame),
            clp: false,
        }
    }

    /// True on the last cell of an AAL5 frame (user data cell with the AUU bit set).
    pub fn end_of_frame(&self) -> bool {
        self.pti & 0b100 == 0 && self.pti & 1 == 1
    }

    /// Reads the header from the first five bytes of `bytes`, checking the HEC.
    pub fn parse(bytes: &[u8]) -> Result<Self, CellError> {
        let h: &[u8; HEADER_BYTES] = bytes
            .get(..HEADER_BYTES)
            .and_then(|b| b.try_into().ok())
            .ok_or(CellError::Truncated(bytes.len()))?;
        let expected = hec(&[h[0], h[1], h[2], h[3]]);
        if expected != h[4] {
            return Err(CellError::BadHec {
                expected,
                found: h[4],
            });
        }
        Ok(CellHeader {
            gfc: h[0] >> 4,
            vpi: (h[0] << 4) | (h[1] >> 4),
            vci: (u16::from(h[1] & 0x0f) << 12) | (u16::from(h[2]) << 4) | u16::from(h[3] >> 4),
            pti: (h[3] >> 1) & 0b111,
            clp: h[3] & 1 == 1,
        })
    }

    /// The five header bytes, HEC included.
    pub fn emit(&self) -> [u8; HEADER_BYTES] {
        let b0 = (self.gfc << 4) | (self.vpi >> 4);
        let b1 = (self.vpi << 4) | ((self.vci >> 12) as u8 & 0x0f);
        let b2 = (self.vci >> 4) as u8;
        let b3 = ((self.vci as u8 & 0x0f) << 4) | ((self.pti & 0b111) << 1) | u8::from(self.clp);
        [b0, b1, b2, b3, hec(&[b0, b1, b2, b3])]
    }
}

/// One ATM cell: header and 48 bytes of payload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cell {
    /// The header.
    pub header: CellHeader,
    /// The payload.
    pub payload: [u8; CELL_PAYLOAD],
}

impl Cell {
    /// Reads a cell from 53 bytes (more are ignored), checking the HEC.
    pub fn parse(bytes: &[u8]) -> Result<Self, CellError> {
        let header = CellHeader::parse(bytes)?;
        let payload: [u8; CELL_PAYLOAD] = bytes
            .get(HEADER_BYTES..CELL_BYTES)
            .and_then(|b| b.try_into().ok())
            .ok_or(CellError::Truncated(bytes.len()))?;
        Ok(Cell { header, payload })
    }

    /// The 53 bytes of the cell.
    pub fn emit(&self) -> [u8; CELL_BYTES] {
        let mut out = [0u8; CELL_BYTES];
        out[..HEADER_BYTES].copy_from_slice(&self.header.emit());
        out[HEADER_BYTES..].copy_from_slice(&self.payload);
        out
    }
}

impl crate::element::WireLen for Cell {
    fn wire_len(&self) -> usize {
        CELL_BYTES
    }
}

/// Header error control (ITU-T I.432): CRC-8 with generator x^8 + x^2 + x + 1 over the first four
/// header bytes, XORed with the coset 0x55.
pub fn hec(header4: &[u8; 4]) -> u8 {
    let mut crc = 0u8;
    for &b in header4 {
        crc ^= b;
        for _ in 0..8 {
            crc = if crc & 0x80 != 0 {
                (crc << 1) ^ 0x07
            } else {
                crc << 1
            };
        }
    }
    crc ^ 0x55
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trips_with_hec() {
        let h = CellHeader {
            gfc: 0x3,
            vpi: 0xab,
            vci: 0x1234,
            pti: 0b001,
            clp: true,
        };
        let bytes = h.emit();
        assert_eq!(CellHeader::parse(&bytes).unwrap(), h);
        assert!(h.end_of_frame());
        let mut bad = bytes;
        bad[2] ^= 0x10;
        assert!(matches!(
            CellHeader::parse(&bad),
            Err(CellError::BadHec { .. })
        ));
        assert_eq!(CellHeader::parse(&bytes[..3]), Err(CellError::Truncated(3)));
    }

    #[test]
    fn idle_cell_hec_is_the_standard_value() {
        // I.432: the idle cell header 00 00 00 01 carries HEC 0x52.
        assert_eq!(hec(&[0, 0, 0, 1]), 0x52);
    }

    #[test]
    fn oam_cells_are_not_end_of_frame() {
        let mut h = CellHeader::data(0, 5, true);
        h.pti = 0b101;
        assert!(!h.end_of_frame());
    }
}
