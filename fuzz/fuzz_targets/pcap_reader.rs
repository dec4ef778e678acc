//! Any bytes as a capture file (pcap, pcapng, gzip): reading and analysing must never panic, and
//! an error must name an offset within what was read.
#![no_main]

use libfuzzer_sys::fuzz_target;
use weft_trace::CaptureReader;
use weft_trace::flows::{FlowTable, SortBy};

fuzz_target!(|data: &[u8]| {
    // A small chunk size exercises refills and block growth.
    let Ok(mut r) = CaptureReader::with_chunk(std::io::Cursor::new(data.to_vec()), 64) else {
        return;
    };
    let mut flows = FlowTable::new(1000);
    let err = weft_trace::for_each_packet(&mut r, |p, info| {
        assert!(p.data.len() <= p.orig_len as usize);
        flows.add(p.ts_ns, p.orig_len, info);
    });
    if let Some(e) = err {
        // Offsets are into the (decompressed) stream; for plain input, within the data.
        if !r.gzip() {
            assert!(e.offset <= data.len() as u64);
        }
    }
    let _ = flows.finish(SortBy::Bytes);
});
