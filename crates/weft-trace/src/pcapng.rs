//! pcapng blocks: section header, interface description (link type, `if_tsresol`,
//! `if_tsoffset`), enhanced, simple and obsolete packet blocks. Other blocks are skipped.

use crate::capture::{MAX_PACKET, io_err};
use crate::error::CaptureError;
use crate::input::Input;

/// Interface description block type.
pub(crate) const IDB: u32 = 1;
/// Obsolete packet block type.
pub(crate) const OPB: u32 = 2;
/// Simple packet block type.
pub(crate) const SPB: u32 = 3;
/// Enhanced packet block type.
pub(crate) const EPB: u32 = 6;

/// One interface of a section.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Interface {
    pub(crate) linktype: u16,
    pub(crate) snaplen: u32,
    /// Timestamp units: 10^-k when `pow10`, else 2^-k seconds.
    tsres: u8,
    pow10: bool,
    /// Seconds added to every timestamp.
    tsoffset: i64,
}

impl Interface {
    fn ts_ns(&self, units: u64) -> u64 {
        let ns: u64 = if self.pow10 {
            let k = self.tsres as u32;
            if k <= 9 {
                units.saturating_mul(10u64.pow(9 - k))
            } else {
                let div = 10u128.pow(k - 9);
                (units as u128 / div) as u64
            }
        } else {
            ((units as u128 * 1_000_000_000) >> self.tsres.min(127)) as u64
        };
        ns.saturating_add_signed(self.tsoffset.saturating_mul(1_000_000_000))
    }
}

/// Where a packet is inside a packet block's body.
pub(crate) struct Record {
    /// Nanoseconds since the epoch; `None` for a simple packet block, which has no timestamp.
    pub(crate) ts_ns: Option<u64>,
    pub(crate) orig_len: u32,
    pub(crate) caplen: usize,
    /// Offset of the data from the start of the body.
    pub(crate) data_start: usize,
    pub(crate) linktype: u16,
    pub(crate) iface: u32,
}

fn rd32(b: &[u8], i: usize, be: bool) -> Option<u32> {
    let s = b.get(i..i + 4)?;
    let a = [s[0], s[1], s[2], s[3]];
    Some(if be {
        u32::from_be_bytes(a)
    } else {
        u32::from_le_bytes(a)
    })
}

fn rd16(b: &[u8], i: usize, be: bool) -> Option<u16> {
    let s = b.get(i..i + 2)?;
    let a = [s[0], s[1]];
    Some(if be {
        u16::from_be_bytes(a)
    } else {
        u16::from_le_bytes(a)
    })
}

/// Reads a section header block at the input's position; returns its byte order and length.
pub(crate) fn read_shb(input: &mut Input) -> Result<(bool, u32), CaptureError> {
    let off = input.offset();
    let have = input.fill(28).map_err(|e| io_err(off, e))?;
    if have < 28 {
        return Err(CaptureError::truncated(
            off,
            "pcapng section header",
            28,
            have as u64,
        ));
    }
    let h = input.peek();
    let bom = [h[8], h[9], h[10], h[11]];
    let be = match bom {
        [0x1a, 0x2b, 0x3c, 0x4d] => true,
        [0x4d, 0x3c, 0x2b, 0x1a] => false,
        _ => {
            return Err(CaptureError::corrupt(
                off + 8,
                format!("pcapng byte-order magic {bom:02x?} is neither 1a2b3c4d nor 4d3c2b1a"),
            ));
        }
    };
    let len = rd32(h, 4, be).unwrap_or(0);
    let major = rd16(h, 12, be).unwrap_or(0);
    if major != 1 {
        return Err(CaptureError::corrupt(
            off + 12,
            format!("pcapng major version {major}, expected 1"),
        ));
    }
    if len < 28 || len % 4 != 0 || len > MAX_PACKET {
        return Err(CaptureError::corrupt(
            off,
            format!("pcapng section header length {len} is invalid"),
        ));
    }
    let have = input.fill(len as usize).map_err(|e| io_err(off, e))?;
    if have < len as usize {
        return Err(CaptureError::truncated(
            off,
            "pcapng section header",
            len as u64,
            have as u64,
        ));
    }
    input.consume(len as usize);
    Ok((be, len))
}

/// Parses an interface description block's body.
pub(crate) fn parse_idb(body: &[u8], be: bool, off: u64) -> Result<Interface, CaptureError> {
    let (Some(linktype), Some(snaplen)) = (rd16(body, 0, be), rd32(body, 4, be)) else {
        return Err(CaptureError::corrupt(
            off,
            "pcapng interface block shorter than 8 bytes",
        ));
    };
    let mut iface = Interface {
        linktype,
        snaplen,
        tsres: 6,
        pow10: true,
        tsoffset: 0,
    };
    let mut i = 8;
    while let (Some(code), Some(len)) = (rd16(body, i, be), rd16(body, i + 2, be)) {
        let len = len as usize;
        let Some(val) = body.get(i + 4..i + 4 + len) else {
            return Err(CaptureError::corrupt(
                off + 8 + i as u64,
                format!("pcapng interface option {code} of {len} bytes overruns its block"),
            ));
        };
        match (code, val) {
            (0, _) => break,
            (9, [v]) => {
                iface.pow10 = v & 0x80 == 0;
                iface.tsres = v & 0x7f;
                if iface.pow10 && iface.tsres > 19 || !iface.pow10 && iface.tsres > 63 {
                    return Err(CaptureError::corrupt(
                        off + 12 + i as u64,
                        format!("pcapng if_tsresol {v:#x} is out of range"),
                    ));
                }
            }
            (14, v) if v.len() == 8 => {
                let a = [v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]];
                iface.tsoffset = if be {
                    i64::from_be_bytes(a)
                } else {
                    i64::from_le_bytes(a)
                };
            }
            _ => {}
        }
        i += 4 + len.div_ceil(4) * 4;
    }
    Ok(iface)
}

/// Parses an enhanced, simple or obsolete packet block's body.
pub(crate) fn parse_packet(
    btype: u32,
    body: &[u8],
    be: bool,
    ifaces: &[Interface],
    off: u64,
) -> Result<Record, CaptureError> {
    let short = || {
        CaptureError::corrupt(
            off,
            format!("pcapng packet block of type {btype} is too short"),
        )
    };
    let (iface_id, ts_units, caplen, orig, start) =
        match btype {
            SPB => {
                let orig = rd32(body, 0, be).ok_or_else(short)?;
                let snap = ifaces.first().map_or(u32::MAX, |i| {
                    if i.snaplen == 0 { u32::MAX } else { i.snaplen }
                });
                let room = body.len().saturating_sub(4) as u32;
                (0u32, None, orig.min(snap).min(room), orig, 4usize)
            }
            _ => {
                let (id, hi, lo, cap, orig) = if btype == EPB {
                    (
                        rd32(body, 0, be).ok_or_else(short)?,
                        rd32(body, 4, be).ok_or_else(short)?,
                        rd32(body, 8, be).ok_or_else(short)?,
                        rd32(body, 12, be).ok_or_else(short)?,
                        rd32(body, 16, be).ok_or_else(short)?,
                    )
                } else {
                    (
                        rd16(body, 0, be).ok_or_else(short)? as u32,
                        rd32(body, 4, be).ok_or_else(short)?,
                        rd32(body, 8, be).ok_or_else(short)?,
                        rd32(body, 12, be).ok_or_else(short)?,
                        rd32(body, 16, be).ok_or_else(short)?,
                    )
                };
                (
                    id,
                    Some(((hi as u64) << 32) | lo as u64),
                    cap,
                    orig,
                    20usize,
                )
            }
        };
    let Some(iface) = ifaces.get(iface_id as usize) else {
        return Err(CaptureError::corrupt(
            off,
            format!(
                "pcapng packet names interface {iface_id}, but the section has {} interfaces",
                ifaces.len()
            ),
        ));
    };
    if caplen as usize > body.len().saturating_sub(start) {
        return Err(CaptureError::corrupt(
            off,
            format!(
                "pcapng packet claims {caplen} captured bytes but its block holds {}",
                body.len().saturating_sub(start)
            ),
        ));
    }
    Ok(Record {
        ts_ns: ts_units.map(|u| iface.ts_ns(u)),
        orig_len: orig.max(caplen),
        caplen: caplen as usize,
        data_start: start,
        linktype: iface.linktype,
        iface: iface_id,
    })
}
