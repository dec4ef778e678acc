//! A sweep's results.jsonl is read back on every resume and by `weft plot`: any bytes must give
//! the records they hold (torn and foreign lines left out), and their table, CSV and chart, never
//! a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use weft_sweep::chart::{self, ChartSpec};
use weft_sweep::{Table, store};

fuzz_target!(|data: &[u8]| {
    let parsed = store::parse(data);
    if let Some(at) = parsed.torn_at {
        assert!(at < data.len());
    }
    let table = Table::from_records(&parsed.records);
    let _ = table.to_csv();
    let _ = table.summary(6);
    if let Ok(c) = chart::chart(&table, &ChartSpec::default(), "fuzz") {
        let svg = weft_report::plot::render_svg(&weft_report::plot::sweep::figure(&c));
        assert!(svg.starts_with("<svg"));
    }
});
