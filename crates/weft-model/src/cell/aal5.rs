//! AAL5 (ITU-T I.363.5): a frame plus padding plus an 8-byte trailer (UU, CPI, 16-bit length,
//! CRC-32) fills whole cells; the last cell carries the end-of-frame bit.
//!
//! Losing any cell of a frame makes its reassembly fail the length or CRC check, so that frame and
//! only that frame is discarded — unless the lost cell is the last one: then nothing delimits the
//! frame and it runs into the next, and both are discarded (why Partial Packet Discard keeps the
//! last cell).

use std::collections::HashMap;

use super::{CELL_PAYLOAD, Cell, CellHeader};

/// Bytes of AAL5 trailer.
pub const TRAILER_BYTES: usize = 8;
/// Largest frame AAL5 carries.
pub const MAX_FRAME: usize = 65_535;

/// A frame could not be segmented or reassembled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Aal5Error {
    /// The frame is longer than AAL5's 65535 bytes.
    #[error("an AAL5 frame carries at most 65535 bytes, got {0}")]
    TooLong(usize),
    /// The cells received do not add up to the length in the trailer (a cell was lost or added).
    #[error("length mismatch: trailer says {trailer} bytes, {cells} cells received")]
    Length {
        /// Length field of the trailer.
        trailer: usize,
        /// Cells received for the frame.
        cells: usize,
    },
    /// The CRC-32 over the received cells does not match the trailer.
    #[error("CRC-32 mismatch")]
    Crc,
    /// More cells arrived without an end-of-frame than any frame can have.
    #[error("more than 1366 cells without an end of frame")]
    Overrun,
}

/// Cells an AAL5 frame of `len` bytes occupies: `ceil((len + 8) / 48)`
/// ([`crate::tech::aal5_cells`] in `usize`, for indexing cell buffers).
pub const fn aal5_cells(len: usize) -> usize {
    crate::tech::aal5_cells(len as u64) as usize
}

/// CRC-32 as AAL5 uses it (generator 0x04C11DB7, MSB first, initial all ones, final complement;
/// the catalogued "CRC-32/BZIP2", also called CRC-32/AAL5).
pub fn crc32_aal5(data: &[u8]) -> u32 {
    crc32_update(0xffff_ffff, data) ^ 0xffff_ffff
}

fn crc32_update(mut crc: u32, data: &[u8]) -> u32 {
    for &b in data {
        crc ^= u32::from(b) << 24;
        for _ in 0..8 {
            crc = if crc & 0x8000_0000 != 0 {
                (crc << 1) ^ 0x04c1_1db7
            } else {
                crc << 1
            };
        }
    }
    crc
}

/// Segments `frame` into AAL5 cells on `vpi`/`vci`.
pub fn segment(frame: &[u8], vpi: u8, vci: u16) -> Result<Vec<Cell>, Aal5Error> {
    if frame.len() > MAX_FRAME {
        return Err(Aal5Error::TooLong(frame.len()));
    }
    let n = aal5_cells(frame.len());
    let mut pdu = vec![0u8; n * CELL_PAYLOAD];
    pdu[..frame.len()].copy_from_slice(frame);
    let t = pdu.len() - TRAILER_BYTES;
    // UU and CPI stay zero; the length fits in 16 bits (checked above).
    pdu[t + 2..t + 4].copy_from_slice(&(frame.len() as u16).to_be_bytes());
    let crc = crc32_aal5(&pdu[..pdu.len() - 4]);
    pdu[t + 4..].copy_from_slice(&crc.to_be_bytes());
    Ok(pdu
        .chunks_exact(CELL_PAYLOAD)
        .enumerate()
        .map(|(i, chunk)| {
            let mut payload = [0u8; CELL_PAYLOAD];
            payload.copy_from_slice(chunk);
            Cell {
                header: CellHeader::data(vpi, vci, i + 1 == n),
                payload,
            }
        })
        .collect())
}

/// Per-VC reassembly: cells in, whole checked frames (or the reason a frame was lost) out.
#[derive(Debug, Default)]
pub struct Reassembler {
    partial: HashMap<(u8, u16), Vec<u8>>,
    /// Frames delivered intact.
    pub frames_ok: u64,
    /// Frames discarded by the length or CRC check.
    pub frames_bad: u64,
}

impl Reassembler {
    /// An empty reassembler.
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes one cell; on an end-of-frame cell returns the frame on that VC or why it was
    /// discarded, otherwise `None`.
    pub fn handle_cell(&mut self, cell: &Cell) -> Option<Result<Vec<u8>, Aal5Error>> {
        let key = (cell.header.vpi, cell.header.vci);
        let buf = self.partial.entry(key).or_default();
        buf.extend_from_slice(&cell.payload);
        if !cell.header.end_of_frame() {
            if buf.len() > aal5_cells(MAX_FRAME) * CELL_PAYLOAD {
                self.partial.remove(&key);
                self.frames_bad += 1;
                return Some(Err(Aal5Error::Overrun));
            }
            return None;
        }
        let pdu = self.partial.remove(&key).unwrap_or_default();
        let result = check(pdu);
        match result {
            Ok(_) => self.frames_ok += 1,
            Err(_) => self.frames_bad += 1,
        }
        Some(result)
    }
}

fn check(mut pdu: Vec<u8>) -> Result<Vec<u8>, Aal5Error> {
    let cells = pdu.len() / CELL_PAYLOAD;
    let t = pdu.len().saturating_sub(TRAILER_BYTES);
    let trailer = pdu.get(t..).unwrap_or_default();
    if trailer.len() != TRAILER_BYTES {
        return Err(Aal5Error::Length { trailer: 0, cells });
    }
    let len = usize::from(u16::from_be_bytes([trailer[2], trailer[3]]));
    let crc = u32::from_be_bytes([trailer[4], trailer[5], trailer[6], trailer[7]]);
    if aal5_cells(len) != cells {
        return Err(Aal5Error::Length {
            trailer: len,
            cells,
        });
    }
    if crc32_aal5(&pdu[..pdu.len() - 4]) != crc {
        return Err(Aal5Error::Crc);
    }
    pdu.truncate(len);
    Ok(pdu)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc_matches_the_catalogue_check_value() {
        assert_eq!(crc32_aal5(b"123456789"), 0xfc89_1918);
    }

    #[test]
    fn cell_counts() {
        assert_eq!(aal5_cells(0), 1);
        assert_eq!(aal5_cells(40), 1);
        assert_eq!(aal5_cells(41), 2);
        // A 9180-byte Classical IP MTU plus LLC/SNAP (8) is 9188 bytes: 192 cells.
        assert_eq!(aal5_cells(9188), 192);
    }

    #[test]
    fn round_trip_and_end_of_frame_bit() {
        let frame: Vec<u8> = (0..1000u32).map(|i| i as u8).collect();
        let cells = segment(&frame, 1, 100).unwrap();
        assert_eq!(cells.len(), aal5_cells(1000));
        assert!(cells.last().unwrap().header.end_of_frame());
        assert!(
            cells[..cells.len() - 1]
                .iter()
                .all(|c| !c.header.end_of_frame())
        );
        let mut r = Reassembler::new();
        let mut out = None;
        for c in &cells {
            // Cells go through their wire form, as they would on a link.
            out = r.handle_cell(&Cell::parse(&c.emit()).unwrap());
        }
        assert_eq!(out, Some(Ok(frame)));
    }

    #[test]
    fn a_lost_cell_corrupts_exactly_its_frame() {
        let frames: Vec<Vec<u8>> = (0..3).map(|k| vec![k as u8 + 1; 500]).collect();
        for lost_frame in 0..3 {
            let mut r = Reassembler::new();
            let mut results = Vec::new();
            for (k, f) in frames.iter().enumerate() {
                for (i, c) in segment(f, 0, 42).unwrap().iter().enumerate() {
                    if k == lost_frame && i == 3 {
                        continue; // a middle cell is lost
                    }
                    if let Some(res) = r.handle_cell(c) {
                        results.push(res);
                    }
                }
            }
            assert_eq!(results.len(), 3);
            for (k, res) in results.iter().enumerate() {
                if k == lost_frame {
                    assert!(res.is_err(), "frame {k} should be lost");
                } else {
                    assert_eq!(res.as_ref().unwrap(), &frames[k]);
                }
            }
            assert_eq!((r.frames_ok, r.frames_bad), (2, 1));
        }
    }

    #[test]
    fn losing_the_last_cell_merges_into_the_next_frame() {
        let a = segment(&[1; 200], 0, 7).unwrap();
        let b = segment(&[2; 200], 0, 7).unwrap();
        let mut r = Reassembler::new();
        let mut results = Vec::new();
        for c in a[..a.len() - 1].iter().chain(b.iter()) {
            if let Some(res) = r.handle_cell(c) {
                results.push(res);
            }
        }
        assert_eq!(results.len(), 1);
        assert!(results[0].is_err());
    }

    #[test]
    fn untrusted_cells_never_panic() {
        let mut r = Reassembler::new();
        let mut c = Cell {
            header: CellHeader::data(0, 1, true),
            payload: [0xff; 48],
        };
        assert!(r.handle_cell(&c).unwrap().is_err());
        c.header.pti = 0;
        for _ in 0..2000 {
            if let Some(res) = r.handle_cell(&c) {
                assert_eq!(res, Err(Aal5Error::Overrun));
            }
        }
        assert!(segment(&vec![0; MAX_FRAME + 1], 0, 1).is_err());
    }
}
