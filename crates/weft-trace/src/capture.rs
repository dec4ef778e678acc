//! Streaming capture reader: pcap (micro- and nanosecond, either byte order, and the modified
//! "Kuznetzov" variant) and pcapng (any number of sections and interfaces), optionally gzipped.
//!
//! ```no_run
//! # fn main() -> Result<(), weft_trace::CaptureError> {
//! let mut r = weft_trace::CaptureReader::open(std::path::Path::new("x.pcap"))?;
//! while let Some(p) = r.next_packet()? {
//!     println!("{} ns, {} bytes on the wire", p.ts_ns, p.orig_len);
//! }
//! # Ok(()) }
//! ```

use std::fs::File;
use std::io::{self, Cursor, Read};
use std::path::Path;

use crate::error::{CaptureError, CaptureErrorKind};
use crate::input::{DEFAULT_CHUNK, Input};
use crate::pcapng::{self, Interface};

/// Largest captured length of one packet accepted, in bytes; anything larger is taken as corrupt.
pub const MAX_PACKET: u32 = 16 << 20;

/// The container format of a capture.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// libpcap format.
    Pcap,
    /// pcapng.
    Pcapng,
}

/// One packet record, borrowed from the reader's buffer until the next call.
#[derive(Clone, Copy, Debug)]
pub struct Packet<'a> {
    /// Timestamp in nanoseconds since the Unix epoch (as recorded).
    pub ts_ns: u64,
    /// Length of the packet on the wire as recorded by the capturer, in bytes (never less than
    /// the captured length).
    pub orig_len: u32,
    /// The captured bytes (possibly cut at the snap length).
    pub data: &'a [u8],
    /// Link-layer type of the interface (LINKTYPE_* numbering).
    pub linktype: u16,
    /// Interface number (0 for pcap).
    pub iface: u32,
    /// Byte offset of the record in the capture.
    pub offset: u64,
}

#[derive(Clone, Copy)]
struct PcapState {
    big_endian: bool,
    nanos: bool,
    /// Extra bytes per record header (8 for the modified format).
    extra: usize,
    linktype: u16,
}

enum State {
    Pcap(PcapState),
    Pcapng {
        big_endian: bool,
        ifaces: Vec<Interface>,
    },
}

/// Reads packets one at a time from a capture stream in constant memory.
pub struct CaptureReader {
    input: Input,
    state: State,
    format: Format,
    gzip: bool,
    packets: u64,
    last_ts: u64,
}

impl CaptureReader {
    /// Opens a capture file (pcap or pcapng, gzipped or not).
    pub fn open(path: &Path) -> Result<Self, CaptureError> {
        let f = File::open(path).map_err(|e| CaptureError {
            offset: 0,
            kind: CaptureErrorKind::Io(format!("{}: {e}", path.display())),
        })?;
        // Tell the kernel the file is read once, front to back (more read-ahead, less caching).
        {
            use std::os::fd::AsRawFd;
            // SAFETY: a valid open descriptor; the call only gives advice and cannot fail unsafely.
            unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_SEQUENTIAL) };
        }
        Self::new(f)
    }

    /// Reads a capture from any byte stream, detecting the format (and gzip) from its first bytes.
    pub fn new(r: impl Read + Send + 'static) -> Result<Self, CaptureError> {
        Self::with_chunk(r, DEFAULT_CHUNK)
    }

    /// As [`CaptureReader::new`], reading `chunk` bytes at a time from `r`.
    pub fn with_chunk(
        mut r: impl Read + Send + 'static,
        chunk: usize,
    ) -> Result<Self, CaptureError> {
        let mut magic = [0u8; 4];
        let n = read_up_to(&mut r, &mut magic).map_err(|e| io_err(0, e))?;
        let head = Cursor::new(magic[..n].to_vec());
        let gzip = n >= 2 && magic[0] == 0x1f && magic[1] == 0x8b;
        let stream: Box<dyn Read + Send> = if gzip {
            Box::new(flate2::read::MultiGzDecoder::new(head.chain(r)))
        } else {
            Box::new(head.chain(r))
        };
        let mut input = Input::new(stream, chunk);
        let (state, format) = read_file_header(&mut input)?;
        Ok(CaptureReader {
            input,
            state,
            format,
            gzip,
            packets: 0,
            last_ts: 0,
        })
    }

    /// The container format.
    pub fn format(&self) -> Format {
        self.format
    }

    /// True if the input was gzip-compressed (offsets are then in the decompressed stream).
    pub fn gzip(&self) -> bool {
        self.gzip
    }

    /// Packets returned so far.
    pub fn packets(&self) -> u64 {
        self.packets
    }

    /// Bytes of (decompressed) capture consumed so far.
    pub fn offset(&self) -> u64 {
        self.input.offset()
    }

    /// Link type of the first interface (pcap: the file's), if known yet.
    pub fn linktype(&self) -> Option<u16> {
        match &self.state {
            State::Pcap(s) => Some(s.linktype),
            State::Pcapng { ifaces, .. } => ifaces.first().map(|i| i.linktype),
        }
    }

    /// The next packet, `None` at a clean end of the capture, or the error that stopped reading.
    #[inline]
    pub fn next_packet(&mut self) -> Result<Option<Packet<'_>>, CaptureError> {
        match self.state {
            State::Pcap(s) => self.next_pcap(s),
            State::Pcapng { .. } => self.next_pcapng(),
        }
    }

    #[inline]
    fn next_pcap(&mut self, s: PcapState) -> Result<Option<Packet<'_>>, CaptureError> {
        let off = self.input.offset();
        let hlen = 16 + s.extra;
        let have = if self.input.available() >= hlen {
            self.input.available()
        } else {
            self.input.fill(hlen).map_err(|e| io_err(off, e))?
        };
        if have == 0 {
            return Ok(None);
        }
        if have < hlen {
            return Err(CaptureError::truncated(
                off,
                "pcap record header",
                hlen as u64,
                have as u64,
            ));
        }
        let h = self.input.peek();
        let rd = |i: usize| -> u32 {
            let b = [h[i], h[i + 1], h[i + 2], h[i + 3]];
            if s.big_endian {
                u32::from_be_bytes(b)
            } else {
                u32::from_le_bytes(b)
            }
        };
        let (sec, frac, incl, orig) = (rd(0), rd(4), rd(8), rd(12));
        if incl > MAX_PACKET {
            return Err(CaptureError::corrupt(
                off,
                format!("pcap record claims {incl} captured bytes (limit {MAX_PACKET})"),
            ));
        }
        let frac_limit = if s.nanos { 1_000_000_000 } else { 1_000_000 };
        if frac >= frac_limit {
            return Err(CaptureError::corrupt(
                off,
                format!("pcap record sub-second timestamp {frac} is out of range"),
            ));
        }
        let total = hlen + incl as usize;
        if have < total {
            let have = self.input.fill(total).map_err(|e| io_err(off, e))?;
            if have < total {
                return Err(CaptureError::truncated(
                    off,
                    "pcap record",
                    total as u64,
                    have as u64,
                ));
            }
        }
        let ts_ns = sec as u64 * 1_000_000_000
            + if s.nanos {
                frac as u64
            } else {
                frac as u64 * 1000
            };
        self.input.consume(total);
        self.packets += 1;
        let buf = self.input.peek_consumed(total);
        Ok(Some(Packet {
            ts_ns,
            orig_len: orig.max(incl),
            data: &buf[hlen..],
            linktype: s.linktype,
            iface: 0,
            offset: off,
        }))
    }

    fn next_pcapng(&mut self) -> Result<Option<Packet<'_>>, CaptureError> {
        loop {
            let off = self.input.offset();
            let have = self.input.fill(12).map_err(|e| io_err(off, e))?;
            if have == 0 {
                return Ok(None);
            }
            if have < 8 {
                return Err(CaptureError::truncated(
                    off,
                    "pcapng block header",
                    12,
                    have as u64,
                ));
            }
            let State::Pcapng { big_endian, .. } = self.state else {
                return Ok(None);
            };
            let h = self.input.peek();
            let raw_type = [h[0], h[1], h[2], h[3]];
            if raw_type == [0x0a, 0x0d, 0x0d, 0x0a] {
                // A new section: byte order and interfaces start afresh.
                let (be, _len) = pcapng::read_shb(&mut self.input)?;
                self.state = State::Pcapng {
                    big_endian: be,
                    ifaces: Vec::new(),
                };
                continue;
            }
            let u32at = |i: usize| -> u32 {
                let b = [h[i], h[i + 1], h[i + 2], h[i + 3]];
                if big_endian {
                    u32::from_be_bytes(b)
                } else {
                    u32::from_le_bytes(b)
                }
            };
            let btype = u32at(0);
            let blen = u32at(4);
            if blen < 12 || blen % 4 != 0 || blen > MAX_PACKET + 4096 {
                return Err(CaptureError::corrupt(
                    off,
                    format!("pcapng block of type {btype:#x} has invalid total length {blen}"),
                ));
            }
            let blen_us = blen as usize;
            let have = self.input.fill(blen_us).map_err(|e| io_err(off, e))?;
            if have < blen_us {
                return Err(CaptureError::truncated(
                    off,
                    "pcapng block",
                    blen as u64,
                    have as u64,
                ));
            }
            let block = &self.input.peek()[..blen_us];
            if u32at_slice(block, blen_us - 4, big_endian) != blen {
                return Err(CaptureError::corrupt(
                    off,
                    format!(
                        "pcapng block of type {btype:#x}: trailing length differs from leading {blen}"
                    ),
                ));
            }
            let State::Pcapng { ifaces, .. } = &mut self.state else {
                return Ok(None);
            };
            let body = &block[8..blen_us - 4];
            match btype {
                pcapng::IDB => {
                    let iface = pcapng::parse_idb(body, big_endian, off)?;
                    ifaces.push(iface);
                    self.input.consume(blen_us);
                }
                pcapng::EPB | pcapng::OPB | pcapng::SPB => {
                    let rec = pcapng::parse_packet(btype, body, big_endian, ifaces, off)?;
                    self.input.consume(blen_us);
                    self.packets += 1;
                    let buf = self.input.peek_consumed(blen_us);
                    let data = &buf[8 + rec.data_start..8 + rec.data_start + rec.caplen];
                    // A simple packet block has no timestamp: it takes its predecessor's.
                    let ts_ns = rec.ts_ns.unwrap_or(self.last_ts);
                    self.last_ts = ts_ns;
                    return Ok(Some(Packet {
                        ts_ns,
                        orig_len: rec.orig_len,
                        data,
                        linktype: rec.linktype,
                        iface: rec.iface,
                        offset: off,
                    }));
                }
                _ => self.input.consume(blen_us),
            }
        }
    }
}

fn u32at_slice(b: &[u8], i: usize, be: bool) -> u32 {
    let Some(s) = b.get(i..i + 4) else { return 0 };
    let a = [s[0], s[1], s[2], s[3]];
    if be {
        u32::from_be_bytes(a)
    } else {
        u32::from_le_bytes(a)
    }
}

pub(crate) fn io_err(offset: u64, e: io::Error) -> CaptureError {
    CaptureError {
        offset,
        kind: CaptureErrorKind::Io(e.to_string()),
    }
}

fn read_up_to(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

fn read_file_header(input: &mut Input) -> Result<(State, Format), CaptureError> {
    let have = input.fill(24).map_err(|e| io_err(0, e))?;
    if have < 4 {
        return Err(CaptureError::truncated(
            0,
            "capture magic number",
            4,
            have as u64,
        ));
    }
    let h = input.peek();
    let m = [h[0], h[1], h[2], h[3]];
    if m == [0x0a, 0x0d, 0x0d, 0x0a] {
        let (be, _) = pcapng::read_shb(input)?;
        return Ok((
            State::Pcapng {
                big_endian: be,
                ifaces: Vec::new(),
            },
            Format::Pcapng,
        ));
    }
    let le = u32::from_le_bytes(m);
    let (big_endian, nanos, extra) = match le {
        0xa1b2_c3d4 => (false, false, 0),
        0xd4c3_b2a1 => (true, false, 0),
        0xa1b2_3c4d => (false, true, 0),
        0x4d3c_b2a1 => (true, true, 0),
        0xa1b2_cd34 => (false, false, 8),
        0x34cd_b2a1 => (true, false, 8),
        _ => {
            return Err(CaptureError {
                offset: 0,
                kind: CaptureErrorKind::UnknownFormat(m),
            });
        }
    };
    if have < 24 {
        return Err(CaptureError::truncated(
            0,
            "pcap file header",
            24,
            have as u64,
        ));
    }
    let rd = |i: usize| -> u32 {
        let b = [h[i], h[i + 1], h[i + 2], h[i + 3]];
        if big_endian {
            u32::from_be_bytes(b)
        } else {
            u32::from_le_bytes(b)
        }
    };
    let major = rd(4) & 0xffff;
    let major = if big_endian { rd(4) >> 16 } else { major };
    if major != 2 {
        return Err(CaptureError::corrupt(
            4,
            format!("pcap major version {major}, expected 2"),
        ));
    }
    // The upper bits of the link-type field carry FCS information; the type is the low 16 bits.
    let linktype = (rd(20) & 0xffff) as u16;
    input.consume(24);
    Ok((
        State::Pcap(PcapState {
            big_endian,
            nanos,
            extra,
            linktype,
        }),
        Format::Pcap,
    ))
}
