//! A host's `abr` key: its ATM adapter is an ABR source.
//!
//! ```toml
//! [[host]]
//! name = "alpha"
//! abr = { pcr = "149.76Mbps", mcr = "64kbps", icr = "1.5Mbps", rif = 1024, rdf = 16, nrm = 32 }
//! ```
//!
//! `pcr` is required; `mcr` defaults to one cell a second's rate, and `icr`, `rif`, `rdf` and
//! `nrm` to TM 4.0's defaults ([`AbrParams::defaults`]).

use super::reader::{Result, Tbl};
use crate::shaper::AbrParams;
use crate::units::Rate;

const RATES: (Rate, Rate) = (Rate(424), Rate(10_000_000_000_000));

/// The host `h`'s `abr` table, if it has one.
pub(super) fn abr(h: &Tbl<'_, '_>) -> Result<Option<AbrParams>> {
    let Some(a) = h.table(
        "abr",
        "expected a table such as { pcr = \"155Mbps\", mcr = \"1Mbps\" }",
    )?
    else {
        return Ok(None);
    };
    a.check_keys(&["pcr", "mcr", "icr", "rif", "rdf", "nrm"])?;
    let Some(pcr) = a.rate("pcr", RATES.0, RATES.1)? else {
        return Err(a.err_table("an ABR source needs `pcr`, its peak cell rate as a bit rate"));
    };
    let mcr = a.rate("mcr", RATES.0, pcr)?.unwrap_or(RATES.0);
    let d = AbrParams::defaults(pcr, mcr);
    let factor =
        |k: &str, default: u32| -> Result<u32> { Ok(a.count32(k, 1, 1 << 15)?.unwrap_or(default)) };
    Ok(Some(AbrParams {
        icr: a.rate("icr", mcr, pcr)?.unwrap_or(d.icr),
        rif: factor("rif", d.rif)?,
        rdf: factor("rdf", d.rdf)?,
        nrm: a.count32("nrm", 2, 256)?.unwrap_or(d.nrm),
        ..d
    }))
}
