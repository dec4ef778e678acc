//! Writing captures: pcap and pcapng writers, frame builders, and a generator that streams an
//! arbitrarily large synthetic capture through `Read` without storing it. Used by the tests, the
//! fuzz seeds, `weft trace synth` and the benchmark.

use std::io::{self, Read, Write};
use std::net::Ipv4Addr;

use crate::decode::linktype;

/// Writes a classic pcap file.
pub struct PcapWriter<W: Write> {
    w: W,
    nanos: bool,
    big_endian: bool,
}

impl<W: Write> PcapWriter<W> {
    /// Writes the file header: link type, micro- or nanosecond timestamps, byte order.
    pub fn new(mut w: W, link: u16, nanos: bool, big_endian: bool) -> io::Result<Self> {
        let magic: u32 = if nanos { 0xa1b2_3c4d } else { 0xa1b2_c3d4 };
        let mut h = Vec::with_capacity(24);
        let put32 = |h: &mut Vec<u8>, v: u32| {
            h.extend_from_slice(&if big_endian {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            })
        };
        put32(&mut h, magic);
        let ver: [u8; 4] = if big_endian {
            [0, 2, 0, 4]
        } else {
            [2, 0, 4, 0]
        };
        h.extend_from_slice(&ver);
        put32(&mut h, 0);
        put32(&mut h, 0);
        put32(&mut h, 262_144);
        put32(&mut h, link as u32);
        w.write_all(&h)?;
        Ok(PcapWriter {
            w,
            nanos,
            big_endian,
        })
    }

    /// Writes one record at `ts_ns` (ns since the epoch), `orig_len` bytes on the wire.
    pub fn write(&mut self, ts_ns: u64, orig_len: u32, data: &[u8]) -> io::Result<()> {
        let sec = (ts_ns / 1_000_000_000) as u32;
        let sub = ts_ns % 1_000_000_000;
        let frac = if self.nanos { sub } else { sub / 1000 } as u32;
        let mut h = [0u8; 16];
        for (i, v) in [sec, frac, data.len() as u32, orig_len]
            .into_iter()
            .enumerate()
        {
            let b = if self.big_endian {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            };
            h[i * 4..i * 4 + 4].copy_from_slice(&b);
        }
        self.w.write_all(&h)?;
        self.w.write_all(data)
    }

    /// The underlying writer.
    pub fn into_inner(self) -> W {
        self.w
    }
}

/// Writes a pcapng file: one section, any number of interfaces.
pub struct PcapngWriter<W: Write> {
    w: W,
    be: bool,
    /// Units per second of each interface.
    units: Vec<u64>,
}

impl<W: Write> PcapngWriter<W> {
    /// Writes a section header in the chosen byte order.
    pub fn new(mut w: W, big_endian: bool) -> io::Result<Self> {
        let mut b = Vec::new();
        let p32 = |b: &mut Vec<u8>, v: u32| {
            b.extend_from_slice(&if big_endian {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            })
        };
        p32(&mut b, 0x0a0d_0d0a);
        p32(&mut b, 28);
        p32(&mut b, 0x1a2b_3c4d);
        let ver: [u8; 4] = if big_endian {
            [0, 1, 0, 0]
        } else {
            [1, 0, 0, 0]
        };
        b.extend_from_slice(&ver);
        b.extend_from_slice(&[0xff; 8]);
        p32(&mut b, 28);
        w.write_all(&b)?;
        Ok(PcapngWriter {
            w,
            be: big_endian,
            units: Vec::new(),
        })
    }

    fn p32(&self, b: &mut Vec<u8>, v: u32) {
        b.extend_from_slice(&if self.be {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        });
    }

    fn p16(&self, b: &mut Vec<u8>, v: u16) {
        b.extend_from_slice(&if self.be {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        });
    }

    /// Adds an interface with `if_tsresol` byte `tsresol` (6 = µs, 9 = ns, 0x80|k = 2^-k s).
    /// Returns its number.
    pub fn add_interface(&mut self, link: u16, tsresol: u8) -> io::Result<u32> {
        let mut b = Vec::new();
        self.p32(&mut b, 1);
        self.p32(&mut b, 32);
        self.p16(&mut b, link);
        self.p16(&mut b, 0);
        self.p32(&mut b, 0);
        self.p16(&mut b, 9);
        self.p16(&mut b, 1);
        b.extend_from_slice(&[tsresol, 0, 0, 0]);
        self.p16(&mut b, 0);
        self.p16(&mut b, 0);
        self.p32(&mut b, 32);
        self.w.write_all(&b)?;
        let units = if tsresol & 0x80 == 0 {
            10u64.pow((tsresol as u32).min(19))
        } else {
            1u64 << (tsresol & 0x7f).min(63)
        };
        self.units.push(units);
        Ok(self.units.len() as u32 - 1)
    }

    /// Writes an unknown block (to be skipped by readers) of `body` bytes, padded.
    pub fn write_custom(&mut self, btype: u32, body: &[u8]) -> io::Result<()> {
        let pad = body.len().div_ceil(4) * 4;
        let total = 12 + pad as u32;
        let mut b = Vec::new();
        self.p32(&mut b, btype);
        self.p32(&mut b, total);
        b.extend_from_slice(body);
        b.resize(8 + pad, 0);
        self.p32(&mut b, total);
        self.w.write_all(&b)
    }

    /// Writes an enhanced packet block.
    pub fn write_epb(
        &mut self,
        iface: u32,
        ts_ns: u64,
        orig_len: u32,
        data: &[u8],
    ) -> io::Result<()> {
        let units = self.units.get(iface as usize).copied().unwrap_or(1_000_000);
        let ts = (ts_ns as u128 * units as u128 / 1_000_000_000) as u64;
        let pad = data.len().div_ceil(4) * 4;
        let total = 32 + pad as u32;
        let mut b = Vec::with_capacity(total as usize);
        self.p32(&mut b, 6);
        self.p32(&mut b, total);
        self.p32(&mut b, iface);
        self.p32(&mut b, (ts >> 32) as u32);
        self.p32(&mut b, ts as u32);
        self.p32(&mut b, data.len() as u32);
        self.p32(&mut b, orig_len);
        b.extend_from_slice(data);
        b.resize(28 + pad, 0);
        self.p32(&mut b, total);
        self.w.write_all(&b)
    }

    /// Writes a simple packet block (interface 0, no timestamp).
    pub fn write_spb(&mut self, orig_len: u32, data: &[u8]) -> io::Result<()> {
        let pad = data.len().div_ceil(4) * 4;
        let total = 16 + pad as u32;
        let mut b = Vec::new();
        self.p32(&mut b, 3);
        self.p32(&mut b, total);
        self.p32(&mut b, orig_len);
        b.extend_from_slice(data);
        b.resize(12 + pad, 0);
        self.p32(&mut b, total);
        self.w.write_all(&b)
    }

    /// The underlying writer.
    pub fn into_inner(self) -> W {
        self.w
    }
}

/// What a synthetic frame carries above IP.
#[derive(Clone, Copy, Debug)]
pub enum L4 {
    /// UDP from `sport` to `dport`.
    Udp(u16, u16),
    /// TCP from `sport` to `dport` with sequence, acknowledgement and flags.
    Tcp(u16, u16, u32, u32, u8),
    /// ICMP echo request.
    Icmp,
}

/// Builds an IPv4 packet (no link header) with `payload`.
pub fn ipv4_packet(src: Ipv4Addr, dst: Ipv4Addr, id: u16, l4: L4, payload: &[u8]) -> Vec<u8> {
    let (proto, l4h): (u8, Vec<u8>) = match l4 {
        L4::Udp(s, d) => {
            let mut h = Vec::with_capacity(8);
            h.extend_from_slice(&s.to_be_bytes());
            h.extend_from_slice(&d.to_be_bytes());
            h.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
            h.extend_from_slice(&[0, 0]);
            (17, h)
        }
        L4::Tcp(s, d, seq, ack, flags) => {
            let mut h = Vec::with_capacity(20);
            h.extend_from_slice(&s.to_be_bytes());
            h.extend_from_slice(&d.to_be_bytes());
            h.extend_from_slice(&seq.to_be_bytes());
            h.extend_from_slice(&ack.to_be_bytes());
            h.extend_from_slice(&[5 << 4, flags, 0xff, 0xff, 0, 0, 0, 0]);
            (6, h)
        }
        L4::Icmp => (1, vec![8, 0, 0, 0, 0, 1, 0, 1]),
    };
    let total = 20 + l4h.len() + payload.len();
    let mut p = Vec::with_capacity(total);
    p.extend_from_slice(&[0x45, 0]);
    p.extend_from_slice(&(total as u16).to_be_bytes());
    p.extend_from_slice(&id.to_be_bytes());
    p.extend_from_slice(&[0x40, 0, 64, proto, 0, 0]);
    p.extend_from_slice(&src.octets());
    p.extend_from_slice(&dst.octets());
    p.extend_from_slice(&l4h);
    p.extend_from_slice(payload);
    p
}

/// Wraps an IP packet in an Ethernet header (EtherType from the IP version).
pub fn ethernet_frame(ip: &[u8]) -> Vec<u8> {
    let et: u16 = if ip.first().is_some_and(|b| b >> 4 == 6) {
        0x86dd
    } else {
        0x0800
    };
    let mut f = Vec::with_capacity(14 + ip.len());
    f.extend_from_slice(&[0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1]);
    f.extend_from_slice(&et.to_be_bytes());
    f.extend_from_slice(ip);
    f
}

/// Wraps an IP packet for link type `link` (one of those in [`linktype`]).
pub fn frame_for(link: u16, ip: &[u8]) -> Vec<u8> {
    let v6 = ip.first().is_some_and(|b| b >> 4 == 6);
    let et: u16 = if v6 { 0x86dd } else { 0x0800 };
    let mut f = Vec::new();
    match link {
        linktype::ETHERNET => return ethernet_frame(ip),
        linktype::NULL => f.extend_from_slice(&(if v6 { 30u32 } else { 2 }).to_le_bytes()),
        linktype::LOOP => f.extend_from_slice(&(if v6 { 24u32 } else { 2 }).to_be_bytes()),
        linktype::LINUX_SLL => {
            f.extend_from_slice(&[0, 0, 0, 1, 0, 6, 2, 0, 0, 0, 0, 1, 0, 0]);
            f.extend_from_slice(&et.to_be_bytes());
        }
        linktype::LINUX_SLL2 => {
            f.extend_from_slice(&et.to_be_bytes());
            f.extend_from_slice(&[0, 0, 0, 0, 0, 1, 0, 1, 0, 6, 2, 0, 0, 0, 0, 1, 0, 0]);
        }
        linktype::SUNATM => {
            f.extend_from_slice(&[0x02, 0, 0, 32, 0xaa, 0xaa, 0x03, 0, 0, 0]);
            f.extend_from_slice(&et.to_be_bytes());
        }
        linktype::FDDI => {
            f.extend_from_slice(&[0x50, 2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1]);
            f.extend_from_slice(&[0xaa, 0xaa, 0x03, 0, 0, 0]);
            f.extend_from_slice(&et.to_be_bytes());
        }
        _ => {}
    }
    f.extend_from_slice(ip);
    f
}

/// A synthetic pcap stream (Ethernet, microsecond timestamps) produced on the fly: `packets`
/// UDP frames of `frame_len` bytes, one every `gap_ns` nanoseconds from `start_ns`, cycling the
/// source over `hosts` addresses (or, with [`SyntheticPcap::distinct_flows`], giving each
/// packet a flow of its own). Memory use is one frame, whatever the length.
pub struct SyntheticPcap {
    header: Vec<u8>,
    frame: Vec<u8>,
    record: Vec<u8>,
    pos: usize,
    next: u64,
    packets: u64,
    start_ns: u64,
    gap_ns: u64,
    hosts: u8,
    distinct_flows: bool,
}

impl SyntheticPcap {
    /// A generator of `packets` frames of `frame_len` bytes (at least 42), `gap_ns` apart.
    pub fn new(packets: u64, frame_len: usize, start_ns: u64, gap_ns: u64, hosts: u8) -> Self {
        let mut header = Vec::new();
        // Writing into a Vec cannot fail.
        let _ = PcapWriter::new(&mut header, linktype::ETHERNET, false, false);
        let payload = vec![0x5a; frame_len.max(42) - 42];
        let ip = ipv4_packet(
            Ipv4Addr::new(10, 0, 0, 1),
            Ipv4Addr::new(10, 0, 1, 1),
            0,
            L4::Udp(40000, 2049),
            &payload,
        );
        let frame = ethernet_frame(&ip);
        SyntheticPcap {
            record: Vec::with_capacity(16 + frame.len()),
            header,
            frame,
            pos: 0,
            next: 0,
            packets,
            start_ns,
            gap_ns,
            hosts: hosts.max(1),
            distinct_flows: false,
        }
    }

    /// Gives packet `i` a UDP flow of its own: source address 10.0.0.0 + `i >> 16` (so
    /// `10.a.b.c`), source port `i & 0xffff` (a capture of N one-packet flows, for the flow
    /// table's memory and time).
    pub fn distinct_flows(mut self) -> Self {
        self.distinct_flows = true;
        self
    }

    /// Total bytes the stream will yield.
    pub fn total_len(&self) -> u64 {
        self.header.len() as u64 + self.packets * (16 + self.frame.len() as u64)
    }

    fn refill(&mut self) -> bool {
        if self.next >= self.packets {
            return false;
        }
        let i = self.next;
        self.next += 1;
        let ts = self.start_ns + i * self.gap_ns;
        // Vary the source host (last octet, byte 29 of the frame) and the IP id; or, for
        // distinct flows, the whole source address (bytes 26..30) and port (34..36).
        if self.distinct_flows {
            let src = 0x0a00_0000u32 | ((i >> 16) as u32 & 0x00ff_ffff);
            if let Some(b) = self.frame.get_mut(26..30) {
                b.copy_from_slice(&src.to_be_bytes());
            }
            if let Some(b) = self.frame.get_mut(34..36) {
                b.copy_from_slice(&(i as u16).to_be_bytes());
            }
        } else {
            let host = 1 + (i % self.hosts as u64) as u8;
            if let Some(b) = self.frame.get_mut(29) {
                *b = host;
            }
        }
        if let Some(b) = self.frame.get_mut(18..20) {
            b.copy_from_slice(&(i as u16).to_be_bytes());
        }
        self.record.clear();
        let len = self.frame.len() as u32;
        for v in [
            (ts / 1_000_000_000) as u32,
            ((ts % 1_000_000_000) / 1000) as u32,
            len,
            len,
        ] {
            self.record.extend_from_slice(&v.to_le_bytes());
        }
        self.record.extend_from_slice(&self.frame);
        self.pos = 0;
        true
    }
}

impl Read for SyntheticPcap {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let mut n = 0;
        if !self.header.is_empty() {
            let k = self.header.len().min(out.len());
            out[..k].copy_from_slice(&self.header[..k]);
            self.header.drain(..k);
            n += k;
        }
        while n < out.len() {
            if self.pos >= self.record.len() && !self.refill() {
                break;
            }
            let k = (self.record.len() - self.pos).min(out.len() - n);
            out[n..n + k].copy_from_slice(&self.record[self.pos..self.pos + k]);
            self.pos += k;
            n += k;
        }
        Ok(n)
    }
}
