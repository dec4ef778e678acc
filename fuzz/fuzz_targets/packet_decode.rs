//! Any bytes as a frame of any link type: decoding must never panic, and the payload it points
//! at must lie inside the frame.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&sel, frame)) = data.split_first() else {
        return;
    };
    const LINKS: [u16; 13] = [0, 1, 10, 12, 14, 101, 108, 113, 123, 228, 229, 276, 0xffff];
    let link = LINKS[sel as usize % LINKS.len()];
    let info = weft_trace::decode(link, frame);
    let p = info.payload(frame);
    assert!(p.len() <= frame.len());
    let _ = weft_trace::tech::Framing::Captured.wire_bytes(link, frame.len() as u32, &info);
});
