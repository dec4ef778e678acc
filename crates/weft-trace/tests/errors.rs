//! Truncated and corrupt captures: an error naming the byte offset and what was wrong, with the
//! packets before it analysed and the result flagged partial; never a panic on any bytes.
#![allow(clippy::unwrap_used)] // Tests: a failed unwrap is a failed test.

mod common;

use proptest::prelude::*;
use weft_trace::decode::linktype;
use weft_trace::synth::{PcapngWriter, ethernet_frame};
use weft_trace::tech::Framing;
use weft_trace::util::UtilConfig;
use weft_trace::{CaptureErrorKind, CaptureReader};

fn ten_records() -> Vec<u8> {
    let recs: Vec<(u64, Vec<u8>)> = (0..10)
        .map(|i| (i * 1_000_000_000, common::udp_frame(100, 1, 2)))
        .collect();
    common::pcap_of(&recs)
}

fn util_of(
    bytes: Vec<u8>,
) -> Result<weft_trace::Outcome<weft_trace::util::UtilReport>, weft_trace::CaptureError> {
    let mut r = CaptureReader::new(std::io::Cursor::new(bytes))?;
    Ok(weft_trace::analyse_util(
        &mut r,
        UtilConfig::sandia(weft_model::Rate(10_000_000), Framing::Captured),
    ))
}

#[test]
fn truncated_record_names_its_offset_and_keeps_earlier_packets() {
    let full = ten_records();
    // Each record is 16 + 100 bytes after the 24-byte header; cut inside the 8th record's data.
    let cut = 24 + 7 * 116 + 16 + 50;
    let o = util_of(full[..cut].to_vec()).unwrap();
    assert!(o.partial());
    let e = o.error.unwrap();
    assert_eq!(e.offset, 24 + 7 * 116);
    assert!(
        matches!(
            e.kind,
            CaptureErrorKind::Truncated {
                what: "pcap record",
                needed: 116,
                have: 66
            }
        ),
        "{e:?}"
    );
    assert!(
        e.to_string().contains(&format!("byte {}", 24 + 7 * 116)),
        "{e}"
    );
    assert_eq!(o.result.packets, 7);
    // Cut inside a record header.
    let o = util_of(full[..24 + 3 * 116 + 5].to_vec()).unwrap();
    let e = o.error.unwrap();
    assert_eq!(e.offset, 24 + 3 * 116);
    assert!(matches!(
        e.kind,
        CaptureErrorKind::Truncated {
            what: "pcap record header",
            ..
        }
    ));
    assert_eq!(o.result.packets, 3);
}

#[test]
fn corrupt_length_and_timestamp_are_named() {
    let mut b = ten_records();
    let at = 24 + 2 * 116;
    b[at + 8..at + 12].copy_from_slice(&0x7fff_ffffu32.to_le_bytes());
    let o = util_of(b).unwrap();
    let e = o.error.unwrap();
    assert_eq!(e.offset, at as u64);
    assert!(e.to_string().contains("captured bytes"), "{e}");
    assert_eq!(o.result.packets, 2);
    let mut b = ten_records();
    b[at + 4..at + 8].copy_from_slice(&2_000_000u32.to_le_bytes());
    let e = util_of(b).unwrap().error.unwrap();
    assert!(e.to_string().contains("sub-second"), "{e}");
}

#[test]
fn bad_headers_fail_at_open() {
    let e = util_of(b"hello world, not a capture".to_vec())
        .err()
        .unwrap();
    assert!(matches!(e.kind, CaptureErrorKind::UnknownFormat(_)));
    assert_eq!(e.offset, 0);
    let e = util_of(ten_records()[..10].to_vec()).err().unwrap();
    assert!(
        matches!(e.kind, CaptureErrorKind::Truncated { .. }),
        "{e:?}"
    );
    let e = util_of(vec![]).err().unwrap();
    assert!(e.to_string().contains("magic"), "{e}");
    let mut b = ten_records();
    b[4] = 9;
    assert!(
        util_of(b)
            .err()
            .unwrap()
            .to_string()
            .contains("major version")
    );
}

#[test]
fn pcapng_errors() {
    let frame = ethernet_frame(&[0x45; 40]);
    let mut w = PcapngWriter::new(Vec::new(), false).unwrap();
    let i = w.add_interface(linktype::ETHERNET, 6).unwrap();
    w.write_epb(i, 1, 60, &frame).unwrap();
    w.write_epb(i, 2, 60, &frame).unwrap();
    let good = w.into_inner();
    let epb2 = good.len() - 32 - frame.len().div_ceil(4) * 4;
    // Trailing length differs.
    let mut b = good.clone();
    let n = b.len();
    b[n - 4] ^= 4;
    let o = util_of(b).unwrap();
    assert_eq!(o.result.packets, 1);
    let e = o.error.unwrap();
    assert_eq!(e.offset, epb2 as u64);
    assert!(e.to_string().contains("trailing length"), "{e}");
    // Unknown interface.
    let mut b = good.clone();
    b[epb2 + 8] = 3;
    assert!(
        util_of(b)
            .unwrap()
            .error
            .unwrap()
            .to_string()
            .contains("interface 3")
    );
    // Length not a multiple of 4.
    let mut b = good.clone();
    b[epb2 + 4] = 33;
    assert!(
        util_of(b)
            .unwrap()
            .error
            .unwrap()
            .to_string()
            .contains("invalid total length")
    );
    // Truncated block.
    let o = util_of(good[..good.len() - 3].to_vec()).unwrap();
    assert!(matches!(
        o.error.unwrap().kind,
        CaptureErrorKind::Truncated {
            what: "pcapng block",
            ..
        }
    ));
    // Bad byte-order magic.
    let mut b = good.clone();
    b[8] = 0;
    let e = util_of(b).err().unwrap();
    assert_eq!(e.offset, 8);
}

/// Reads every packet the reader gives from `bytes`, decoding each, and returns how many there
/// were. What the reader hands out must lie in the capture: records in order, each record's
/// bytes inside the file, its wire length never below its captured length (as `Packet` says).
fn read_everything(bytes: &[u8]) -> Result<usize, TestCaseError> {
    let Ok(mut r) = CaptureReader::with_chunk(std::io::Cursor::new(bytes.to_vec()), 64) else {
        return Ok(0);
    };
    let (mut n, mut last) = (0, None);
    while let Ok(Some(p)) = r.next_packet() {
        prop_assert!(
            last.is_none_or(|l| p.offset > l),
            "record at {} after {last:?}",
            p.offset
        );
        prop_assert!(
            p.offset as usize + p.data.len() <= bytes.len(),
            "record at {} of {} bytes past the end",
            p.offset,
            p.data.len()
        );
        prop_assert!(
            p.orig_len as usize >= p.data.len(),
            "wire length {} below captured {}",
            p.orig_len,
            p.data.len()
        );
        let info = weft_trace::decode(p.linktype, p.data);
        if info.ports().is_some() {
            prop_assert!(info.payload_off as usize <= p.data.len(), "{info:?}");
        }
        last = Some(p.offset);
        n += 1;
    }
    Ok(n)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]
    #[test]
    fn no_panic_on_mutated_captures(flips in proptest::collection::vec((0usize..2000, any::<u8>()), 0..20), cut in 0usize..2000) {
        let mut w = PcapngWriter::new(Vec::new(), false).unwrap();
        let i = w.add_interface(linktype::ETHERNET, 9).unwrap();
        for k in 0..6 { w.write_epb(i, k, 100, &common::udp_frame(100, 1, 2)).unwrap(); }
        for (mut b, records) in [(w.into_inner(), 6), (ten_records(), 10)] {
            prop_assert_eq!(read_everything(&b)?, records);
            let n = b.len(); for &(at, v) in &flips { b[at % n] = v; }
            let whole = flips.is_empty() && cut >= n;
            b.truncate(cut.max(1).min(b.len()));
            let read = read_everything(&b)?;
            // Untouched, every record is read; a record takes at least 16 bytes of the file.
            prop_assert!(!whole || read == records, "{read} of {records} records from the whole file");
            prop_assert!(read <= b.len() / 16, "{read} records from {} bytes", b.len());
        }
    }

    /// Whatever the bytes, the decoded offsets stay inside the frame: ports come only from a
    /// captured transport header, and an unknown link type decodes to nothing.
    #[test]
    fn no_panic_decoding_any_bytes(link in prop::sample::select(vec![0u16, 1, 10, 12, 14, 101, 108, 113, 123, 228, 229, 276, 999]), data in proptest::collection::vec(any::<u8>(), 0..200)) {
        let info = weft_trace::decode(link, &data);
        if info.ports().is_some() {
            prop_assert!(info.payload_off as usize <= data.len(), "{info:?} from {} bytes", data.len());
        }
        if link == 999 {
            prop_assert_eq!(info, weft_trace::PacketInfo::default());
        }
    }
}

#[test]
fn truncated_gzip_is_partial_with_an_offset_in_the_decompressed_stream() {
    use std::io::Write;
    let plain: Vec<u8> = {
        let recs: Vec<(u64, Vec<u8>)> = (0..2000)
            .map(|i| {
                (
                    i * 1_000_000,
                    common::udp_frame(100 + (i as usize * 7) % 900, 1, 2),
                )
            })
            .collect();
        common::pcap_of(&recs)
    };
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&plain).unwrap();
    let gz = gz.finish().unwrap();
    let o = util_of(gz[..gz.len() / 2].to_vec()).unwrap();
    assert!(o.partial());
    assert!(o.result.packets > 0 && o.result.packets < 2000);
    let e = o.error.unwrap();
    assert!(e.offset > 0 && e.offset < plain.len() as u64, "{e}");
    assert!(e.to_string().contains(&format!("byte {}", e.offset)), "{e}");
}
