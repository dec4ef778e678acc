//! TCP headers on the wire (RFC 793, options of RFC 7323 and RFC 2018), smoltcp's way: a view
//! ([`TcpPacket`]) whose lengths are checked once, and [`Segment::parse`] / [`Segment::emit`]
//! between bytes and the representation. Untrusted bytes give a [`WireError`], never a panic
//! (fuzzed by `fuzz/fuzz_targets/tcp_segment.rs`).

use super::ipv4::{PROTO_TCP, checksum, pseudo_header_sum, sum16};
use super::segment::{Flags, MAX_OPTIONS_LEN, SackBlock, SackBlocks, Segment, Timestamps};
use super::seq::SeqNum;

/// Length of a TCP header without options, bytes.
pub const HEADER_LEN: usize = 20;

/// Why bytes are not a segment (or an IPv4 packet).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
pub enum WireError {
    /// Fewer bytes than the header says it has.
    #[error("truncated: fewer bytes than the header needs")]
    Truncated,
    /// A field or option holds an impossible value.
    #[error("malformed header or option")]
    Malformed,
    /// The checksum does not match.
    #[error("checksum mismatch")]
    Checksum,
    /// Valid but not handled here (an IP fragment).
    #[error("unsupported packet (IP fragment)")]
    Unsupported,
}

const OPT_END: u8 = 0;
const OPT_NOP: u8 = 1;
const OPT_MSS: u8 = 2;
const OPT_WS: u8 = 3;
const OPT_SACK_PERMITTED: u8 = 4;
const OPT_SACK: u8 = 5;
const OPT_TIMESTAMPS: u8 = 8;

/// A view of a TCP header and payload whose data offset has been checked against the buffer.
#[derive(Clone, Copy, Debug)]
pub struct TcpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> TcpPacket<T> {
    /// Checks that the buffer holds the fixed header and the options the data offset announces.
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        let b = buffer.as_ref();
        if b.len() < HEADER_LEN {
            return Err(WireError::Truncated);
        }
        let hl = usize::from(b[12] >> 4) * 4;
        if hl < HEADER_LEN {
            return Err(WireError::Malformed);
        }
        if hl > b.len() {
            return Err(WireError::Truncated);
        }
        Ok(TcpPacket { buffer })
    }

    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }
    fn be16(&self, i: usize) -> u16 {
        u16::from_be_bytes([self.b()[i], self.b()[i + 1]])
    }
    fn be32(&self, i: usize) -> u32 {
        let b = self.b();
        u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]])
    }

    /// Source port.
    pub fn src_port(&self) -> u16 {
        self.be16(0)
    }
    /// Destination port.
    pub fn dst_port(&self) -> u16 {
        self.be16(2)
    }
    /// Sequence number.
    pub fn seq(&self) -> SeqNum {
        SeqNum(self.be32(4))
    }
    /// Acknowledgement number.
    pub fn ack(&self) -> SeqNum {
        SeqNum(self.be32(8))
    }
    /// Header length (data offset), bytes.
    pub fn header_len(&self) -> usize {
        usize::from(self.b()[12] >> 4) * 4
    }
    /// Control bits.
    pub fn flags(&self) -> Flags {
        Flags(self.b()[13])
    }
    /// Window field (unscaled).
    pub fn window(&self) -> u16 {
        self.be16(14)
    }
    /// Checksum field.
    pub fn checksum(&self) -> u16 {
        self.be16(16)
    }
    /// Urgent pointer.
    pub fn urgent(&self) -> u16 {
        self.be16(18)
    }
    /// The option bytes.
    pub fn options(&self) -> &[u8] {
        &self.b()[HEADER_LEN..self.header_len()]
    }
    /// The payload.
    pub fn payload(&self) -> &[u8] {
        &self.b()[self.header_len()..]
    }
    /// True if the checksum is right for a segment between `src` and `dst`.
    pub fn checksum_ok(&self, src: [u8; 4], dst: [u8; 4]) -> bool {
        let b = self.b();
        b.len() <= usize::from(u16::MAX)
            && checksum(b, pseudo_header_sum(src, dst, PROTO_TCP, b.len())) == 0
    }
}

impl Segment {
    /// Reads a segment from `bytes` (TCP header and payload, nothing after); with `addrs`
    /// (source, destination) the checksum is verified too. Returns the segment and its payload.
    pub fn parse(
        bytes: &[u8],
        addrs: Option<([u8; 4], [u8; 4])>,
    ) -> Result<(Segment, &[u8]), WireError> {
        let p = TcpPacket::new_checked(bytes)?;
        if let Some((src, dst)) = addrs
            && !p.checksum_ok(src, dst)
        {
            return Err(WireError::Checksum);
        }
        let payload = &bytes[p.header_len()..];
        let mut seg = Segment {
            src_port: p.src_port(),
            dst_port: p.dst_port(),
            seq: p.seq(),
            ack: p.ack(),
            flags: p.flags(),
            window: p.window(),
            len: payload.len() as u32,
            ..Default::default()
        };
        parse_options(p.options(), &mut seg)?;
        Ok((seg, payload))
    }

    /// Writes the header and `payload` (which must be `self.len` bytes) to the start of `out`,
    /// checksum computed for `addrs` (source, destination). Returns the bytes written.
    pub fn emit(
        &self,
        payload: &[u8],
        addrs: ([u8; 4], [u8; 4]),
        out: &mut [u8],
    ) -> Result<usize, WireError> {
        if payload.len() != self.len as usize {
            return Err(WireError::Malformed);
        }
        let hl = self.header_len();
        let total = hl + payload.len();
        if total > out.len() {
            return Err(WireError::Truncated);
        }
        out[hl..total].copy_from_slice(payload);
        self.emit_header(sum16(payload, 0), addrs, &mut out[..hl])?;
        Ok(total)
    }

    /// Writes only the header to the start of `out`, with the checksum of a payload of
    /// `self.len` bytes whose [`sum16`] is `payload_sum` (0 for a payload of zeros, which is what
    /// a simulator that carries no bytes writes into a capture). Returns the header length.
    pub fn emit_header(
        &self,
        payload_sum: u32,
        addrs: ([u8; 4], [u8; 4]),
        out: &mut [u8],
    ) -> Result<usize, WireError> {
        let hl = self.header_len();
        let total = hl + self.len as usize;
        if total > usize::from(u16::MAX) {
            return Err(WireError::Malformed);
        }
        let h = out.get_mut(..hl).ok_or(WireError::Truncated)?;
        h[0..2].copy_from_slice(&self.src_port.to_be_bytes());
        h[2..4].copy_from_slice(&self.dst_port.to_be_bytes());
        h[4..8].copy_from_slice(&self.seq.0.to_be_bytes());
        // Written as held, ACK flag or not, so that captures keep what a stack really sent.
        h[8..12].copy_from_slice(&self.ack.0.to_be_bytes());
        h[12] = ((hl / 4) as u8) << 4;
        h[13] = self.flags.0;
        h[14..16].copy_from_slice(&self.window.to_be_bytes());
        h[16..20].fill(0);
        emit_options(self, &mut h[HEADER_LEN..]);
        let (src, dst) = addrs;
        let c = checksum(
            h,
            payload_sum + pseudo_header_sum(src, dst, PROTO_TCP, total),
        );
        h[16..18].copy_from_slice(&c.to_be_bytes());
        Ok(hl)
    }
}

fn parse_options(mut o: &[u8], seg: &mut Segment) -> Result<(), WireError> {
    while let Some(&kind) = o.first() {
        match kind {
            OPT_END => break,
            OPT_NOP => {
                o = &o[1..];
                continue;
            }
            _ => {}
        }
        let len = usize::from(*o.get(1).ok_or(WireError::Malformed)?);
        if len < 2 || len > o.len() {
            return Err(WireError::Malformed);
        }
        let body = &o[2..len];
        match (kind, body.len()) {
            (OPT_MSS, 2) => seg.mss = Some(u16::from_be_bytes([body[0], body[1]])),
            (OPT_WS, 1) => seg.window_scale = Some(body[0]),
            (OPT_SACK_PERMITTED, 0) => seg.sack_permitted = true,
            (OPT_TIMESTAMPS, 8) => {
                seg.timestamps = Some(Timestamps {
                    value: u32::from_be_bytes([body[0], body[1], body[2], body[3]]),
                    echo: u32::from_be_bytes([body[4], body[5], body[6], body[7]]),
                })
            }
            (OPT_SACK, n) if n > 0 && n % 8 == 0 => {
                let mut blocks = SackBlocks::EMPTY;
                for b in body.chunks_exact(8) {
                    blocks.push(SackBlock {
                        left: SeqNum(u32::from_be_bytes([b[0], b[1], b[2], b[3]])),
                        right: SeqNum(u32::from_be_bytes([b[4], b[5], b[6], b[7]])),
                    });
                }
                seg.sack = blocks;
            }
            (OPT_MSS | OPT_WS | OPT_SACK_PERMITTED | OPT_TIMESTAMPS | OPT_SACK, _) => {
                return Err(WireError::Malformed);
            }
            // Unknown options are skipped by their length (RFC 1122 4.2.2.5).
            _ => {}
        }
        o = &o[len..];
    }
    Ok(())
}

/// Writes the options in the layout [`Segment::options_len`] counts (`out` is exactly that long).
fn emit_options(seg: &Segment, out: &mut [u8]) {
    let mut i = 0;
    let mut put = |bytes: &[u8]| {
        out[i..i + bytes.len()].copy_from_slice(bytes);
        i += bytes.len();
    };
    if let Some(mss) = seg.mss {
        let m = mss.to_be_bytes();
        put(&[OPT_MSS, 4, m[0], m[1]]);
    }
    if let Some(ws) = seg.window_scale {
        put(&[OPT_NOP, OPT_WS, 3, ws]);
    }
    if seg.sack_permitted {
        put(&[OPT_NOP, OPT_NOP, OPT_SACK_PERMITTED, 2]);
    }
    if let Some(ts) = seg.timestamps {
        put(&[OPT_NOP, OPT_NOP, OPT_TIMESTAMPS, 10]);
        put(&ts.value.to_be_bytes());
        put(&ts.echo.to_be_bytes());
    }
    if let Some(n) = seg.sack_blocks_on_wire() {
        put(&[OPT_NOP, OPT_NOP, OPT_SACK, (2 + 8 * n) as u8]);
        for b in &seg.sack.as_slice()[..n] {
            put(&b.left.0.to_be_bytes());
            put(&b.right.0.to_be_bytes());
        }
    }
    debug_assert!(i <= MAX_OPTIONS_LEN);
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// A SYN Linux sent on loopback (tcpdump -x): MSS 65495, SACK permitted, timestamps,
    /// window scale 10. The capture holds a partial checksum (loopback offload), so it is parsed
    /// without checking it.
    const LINUX_SYN: [u8; 40] = [
        0xe1, 0x30, 0xb8, 0x13, 0xfc, 0x60, 0xa2, 0xf6, 0x00, 0x00, 0x00, 0x00, 0xa0, 0x02, 0xff,
        0xd7, 0xfe, 0x30, 0x00, 0x00, 0x02, 0x04, 0xff, 0xd7, 0x04, 0x02, 0x08, 0x0a, 0x26, 0x9c,
        0x7a, 0x0d, 0x00, 0x00, 0x00, 0x00, 0x01, 0x03, 0x03, 0x0a,
    ];
    const LO: [u8; 4] = [127, 0, 0, 1];

    #[test]
    fn parses_a_linux_syn() {
        let (seg, payload) = Segment::parse(&LINUX_SYN, None).unwrap();
        assert_eq!((seg.src_port, seg.dst_port), (57648, 47123));
        assert_eq!(seg.seq, SeqNum(4_234_191_606));
        assert_eq!(seg.flags, Flags::SYN);
        assert_eq!(seg.window, 65495);
        assert_eq!(seg.mss, Some(65495));
        assert!(seg.sack_permitted);
        assert_eq!(
            seg.timestamps,
            Some(Timestamps {
                value: 647_789_069,
                echo: 0
            })
        );
        assert_eq!(seg.window_scale, Some(10));
        assert!(payload.is_empty());
        // Its checksum field is the offload's partial sum, so a full check rejects it.
        assert_eq!(
            Segment::parse(&LINUX_SYN, Some((LO, LO))).unwrap_err(),
            WireError::Checksum
        );
    }

    #[test]
    fn emit_then_parse_round_trips_with_checksum() {
        let mut seg = Segment {
            src_port: 5001,
            dst_port: 80,
            seq: SeqNum(0xffff_fff0),
            ack: SeqNum(77),
            flags: Flags::ACK.with(Flags::PSH),
            window: 1234,
            len: 5,
            ..Default::default()
        };
        for i in 0..3 {
            seg.sack.push(SackBlock {
                left: SeqNum(1000 * i),
                right: SeqNum(1000 * i + 500),
            });
        }
        let mut buf = [0u8; 100];
        let n = seg.emit(b"hello", (LO, [10, 0, 0, 2]), &mut buf).unwrap();
        assert_eq!(n, seg.header_len() + 5);
        let (back, payload) = Segment::parse(&buf[..n], Some((LO, [10, 0, 0, 2]))).unwrap();
        assert_eq!(back, seg);
        assert_eq!(payload, b"hello");
        // The header-only form gives the same checksum for a payload of zeros.
        let zeros = Segment { len: 5, ..seg };
        let n = zeros.emit(&[0; 5], (LO, LO), &mut buf).unwrap();
        let mut hdr = [0u8; 60];
        let h = zeros.emit_header(0, (LO, LO), &mut hdr).unwrap();
        assert_eq!(buf[..h], hdr[..h]);
        assert!(
            TcpPacket::new_checked(&buf[..n])
                .unwrap()
                .checksum_ok(LO, LO)
        );
    }

    #[test]
    fn syn_options_round_trip() {
        let seg = Segment {
            flags: Flags::SYN,
            mss: Some(536),
            window_scale: Some(7),
            sack_permitted: true,
            timestamps: Some(Timestamps { value: 1, echo: 2 }),
            ..Default::default()
        };
        let mut buf = [0u8; 60];
        let n = seg.emit(&[], (LO, LO), &mut buf).unwrap();
        assert_eq!(n, 20 + 24);
        assert_eq!(Segment::parse(&buf[..n], Some((LO, LO))).unwrap().0, seg);
    }

    #[test]
    fn bad_bytes_are_errors() {
        assert_eq!(
            Segment::parse(&LINUX_SYN[..19], None).unwrap_err(),
            WireError::Truncated
        );
        let mut short = LINUX_SYN;
        short[12] = 0x40; // data offset 16 bytes
        assert_eq!(
            Segment::parse(&short, None).unwrap_err(),
            WireError::Malformed
        );
        let mut long = LINUX_SYN;
        long[12] = 0xf0; // 60-byte header in 40 bytes
        assert_eq!(
            Segment::parse(&long, None).unwrap_err(),
            WireError::Truncated
        );
        // An MSS option of length 3, and an option running past the header.
        let mut bad = LINUX_SYN;
        bad[21] = 3;
        assert_eq!(
            Segment::parse(&bad, None).unwrap_err(),
            WireError::Malformed
        );
        let mut over = LINUX_SYN;
        over[38] = 9;
        assert_eq!(
            Segment::parse(&over, None).unwrap_err(),
            WireError::Malformed
        );
    }

    fn blocks() -> impl Strategy<Value = SackBlocks> {
        proptest::collection::vec((any::<u32>(), any::<u32>()), 0..=4).prop_map(|v| {
            let mut b = SackBlocks::EMPTY;
            for (l, r) in v {
                b.push(SackBlock {
                    left: SeqNum(l),
                    right: SeqNum(r),
                });
            }
            b
        })
    }

    proptest! {
        /// What the fuzz target checks, on random bytes in every test run.
        #[test]
        fn any_bytes_are_a_segment_or_an_error(bytes in proptest::collection::vec(any::<u8>(), 0..100)) {
            if let Ok((seg, payload)) = Segment::parse(&bytes, None) {
                prop_assert!(payload.len() <= bytes.len());
                let mut buf = vec![0u8; seg.header_len() + payload.len()];
                let n = seg.emit(payload, (LO, LO), &mut buf).unwrap();
                let (back, p) = Segment::parse(&buf[..n], Some((LO, LO))).unwrap();
                let mut expect = seg;
                expect.sack.truncate(seg.sack_blocks_on_wire().unwrap_or(0));
                prop_assert_eq!(back, expect);
                prop_assert_eq!(p, payload);
            }
        }

        #[test]
        fn every_header_round_trips(
            ports in any::<(u16, u16)>(),
            seq in any::<u32>(),
            ack in any::<u32>(),
            flags in any::<u8>(),
            window in any::<u16>(),
            mss in proptest::option::of(any::<u16>()),
            ws in proptest::option::of(0u8..15),
            sack_permitted in any::<bool>(),
            ts in proptest::option::of(any::<(u32, u32)>()),
            sack in blocks(),
            payload in proptest::collection::vec(any::<u8>(), 0..64),
        ) {
            let seg = Segment {
                src_port: ports.0,
                dst_port: ports.1,
                seq: SeqNum(seq),
                ack: SeqNum(ack),
                flags: Flags(flags),
                window,
                len: payload.len() as u32,
                mss,
                window_scale: ws,
                sack_permitted,
                timestamps: ts.map(|(value, echo)| Timestamps { value, echo }),
                sack,
            };
            let mut buf = [0u8; 128];
            let n = seg.emit(&payload, (LO, [192, 0, 2, 1]), &mut buf).unwrap();
            let (back, p) = Segment::parse(&buf[..n], Some((LO, [192, 0, 2, 1]))).unwrap();
            let mut expect = seg;
            expect.sack.truncate(seg.sack_blocks_on_wire().unwrap_or(0));
            prop_assert_eq!(back, expect);
            prop_assert_eq!(p, &payload[..]);
        }
    }
}
