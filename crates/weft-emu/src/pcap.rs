//! Capture files in the classic pcap format (nanosecond variant): Ethernet frames
//! (LINKTYPE_ETHERNET = 1) and, for ATM links, AAL5 PDUs with their VPI/VCI in the SunATM pseudo
//! header (LINKTYPE_SUNATM = 123): one flags byte (bit 7 set = from the host, DTE to DCE; low nibble 2 = LLC/SNAP
//! multiplexed), VPI (1 byte), VCI (2 bytes big-endian), then the PDU (LLC/SNAP + IP packet).

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

/// Link type of a capture file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkType {
    /// Ethernet frames as carried.
    Ethernet,
    /// AAL5 PDUs of Classical IP over ATM, with VPI/VCI.
    SunAtm,
}

impl LinkType {
    /// The number written in the file header.
    pub fn code(self) -> u32 {
        match self {
            LinkType::Ethernet => 1,
            LinkType::SunAtm => 123,
        }
    }
}

/// Which way a frame crossed the link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// From the host to the switch.
    FromHost,
    /// From the switch to the host.
    ToHost,
}

const MAGIC_NS: u32 = 0xa1b2_3c4d;
const LLC_SNAP_IPV4: [u8; 8] = [0xaa, 0xaa, 0x03, 0x00, 0x00, 0x00, 0x08, 0x00];

/// Writes one capture file.
#[derive(Debug)]
pub struct PcapWriter<W: Write> {
    out: W,
    link: LinkType,
    vpi: u8,
    vci: u16,
    snaplen: u32,
}

impl PcapWriter<BufWriter<File>> {
    /// Creates `path` for frames of `link` type (VPI/VCI used for SunATM).
    pub fn create(path: &Path, link: LinkType, vpi: u8, vci: u16) -> io::Result<Self> {
        PcapWriter::new(BufWriter::new(File::create(path)?), link, vpi, vci)
    }
}

impl<W: Write> PcapWriter<W> {
    /// Starts a capture on `out`, writing the file header.
    pub fn new(mut out: W, link: LinkType, vpi: u8, vci: u16) -> io::Result<Self> {
        let snaplen = 262_144u32;
        let mut h = Vec::with_capacity(24);
        h.extend_from_slice(&MAGIC_NS.to_le_bytes());
        h.extend_from_slice(&2u16.to_le_bytes());
        h.extend_from_slice(&4u16.to_le_bytes());
        h.extend_from_slice(&0i32.to_le_bytes());
        h.extend_from_slice(&0u32.to_le_bytes());
        h.extend_from_slice(&snaplen.to_le_bytes());
        h.extend_from_slice(&link.code().to_le_bytes());
        out.write_all(&h)?;
        Ok(PcapWriter {
            out,
            link,
            vpi,
            vci,
            snaplen,
        })
    }

    /// Records an Ethernet `frame` that crossed the link at `t_ns` (ns since the Unix epoch).
    /// On a SunATM capture the Ethernet header is replaced by the SunATM header and LLC/SNAP;
    /// non-IPv4 frames are skipped there (Classical IP carries IP only).
    pub fn write(&mut self, t_ns: u64, dir: Direction, frame: &[u8]) -> io::Result<()> {
        let mut rec = Vec::with_capacity(frame.len() + 12);
        match self.link {
            LinkType::Ethernet => rec.extend_from_slice(frame),
            LinkType::SunAtm => {
                if frame.len() < 14 || frame[12..14] != [0x08, 0x00] {
                    return Ok(());
                }
                let dirbit = if dir == Direction::FromHost {
                    0x80
                } else {
                    0x00
                };
                rec.push(dirbit | 0x02);
                rec.push(self.vpi);
                rec.extend_from_slice(&self.vci.to_be_bytes());
                rec.extend_from_slice(&LLC_SNAP_IPV4);
                rec.extend_from_slice(&frame[14..]);
            }
        }
        let caplen = (rec.len() as u32).min(self.snaplen);
        let mut h = [0u8; 16];
        h[0..4].copy_from_slice(&((t_ns / 1_000_000_000) as u32).to_le_bytes());
        h[4..8].copy_from_slice(&((t_ns % 1_000_000_000) as u32).to_le_bytes());
        h[8..12].copy_from_slice(&caplen.to_le_bytes());
        h[12..16].copy_from_slice(&(rec.len() as u32).to_le_bytes());
        self.out.write_all(&h)?;
        self.out.write_all(&rec[..caplen as usize])
    }

    /// Flushes buffered records.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_and_sunatm_record_layout() {
        let mut buf = Vec::new();
        {
            let mut w = PcapWriter::new(&mut buf, LinkType::SunAtm, 1, 138).unwrap();
            let mut f = vec![0u8; 14 + 20];
            f[12] = 0x08;
            w.write(1_500_000_123, Direction::ToHost, &f).unwrap();
            w.write(0, Direction::ToHost, &[0u8; 20]).unwrap(); // not IPv4: skipped
        }
        assert_eq!(&buf[0..4], &MAGIC_NS.to_le_bytes());
        assert_eq!(u32::from_le_bytes(buf[20..24].try_into().unwrap()), 123);
        let rec = &buf[24..];
        assert_eq!(u32::from_le_bytes(rec[0..4].try_into().unwrap()), 1);
        assert_eq!(
            u32::from_le_bytes(rec[4..8].try_into().unwrap()),
            500_000_123
        );
        assert_eq!(
            u32::from_le_bytes(rec[8..12].try_into().unwrap()),
            4 + 8 + 20
        );
        assert_eq!(&rec[16..20], &[0x02, 1, 0, 138]);
        assert_eq!(&rec[20..28], &LLC_SNAP_IPV4);
        assert_eq!(buf.len(), 24 + 16 + 32);
    }
}
