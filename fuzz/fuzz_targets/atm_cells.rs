//! ATM cells and AAL5 reassembly on untrusted bytes: parsing never panics, a parsed cell emits
//! back to the same bytes, and reassembly of any cell sequence never panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use weft_model::cell::{CELL_BYTES, Cell, Reassembler, segment};

fuzz_target!(|data: &[u8]| {
    let mut r = Reassembler::new();
    for chunk in data.chunks(CELL_BYTES) {
        if let Ok(cell) = Cell::parse(chunk) {
            assert_eq!(&cell.emit()[..], chunk);
            let _ = r.handle_cell(&cell);
        }
    }
    // Whatever the bytes, segmenting them as a frame and reassembling gives them back.
    if let Ok(cells) = segment(data, 1, 42) {
        let mut r = Reassembler::new();
        let out = cells.iter().filter_map(|c| r.handle_cell(c)).last();
        assert_eq!(out, Some(Ok(data.to_vec())));
    }
});
