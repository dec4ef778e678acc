//! Stripe manifests of MBTP over separate receivers (read by `weft join`): any bytes either
//! fail to parse or parse to a manifest that is consistent in itself and re-serialises to one
//! that parses back to the same.
#![no_main]

use libfuzzer_sys::fuzz_target;
use weft_xfer::net::stripe::Manifest;

fuzz_target!(|data: &[u8]| {
    if let Ok(m) = Manifest::parse(data, "fuzz") {
        let again = Manifest::parse(m.to_json().as_bytes(), "fuzz").expect("re-parses");
        assert_eq!(again, m);
    }
});
