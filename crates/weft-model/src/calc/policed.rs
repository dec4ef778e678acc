//! TCP into a policed contract in closed form: whether any data segment gets through, and what
//! the sending application has handed its transport when none does (study 002's hung FTP to
//! Monash: "approximately 30 Kilobytes before any large transfer ... hung").
//!
//! A policer that discards (not tags) judges each cell against the contract's GCRA
//! ([`crate::shaper::Policer`], the simulator's own). A segment's cells leave the host back to
//! back at its line's rate; if even a rested policer (the best case: after a time-out the
//! contract's credit is whole again) breaks one of them, the segment never arrives, nor does
//! its retransmission, and the connection hangs in time-outs (its SYN, two cells, passes). The
//! sending application then blocks once its writes have filled the send buffer: the writes that
//! returned are the whole writes that fit it.

use crate::shaper::{Fate, Policer, VcContract};
use crate::tech::Tech;

/// True if a datagram of `datagram` bytes on `line`, its cells arriving back to back at the
/// line's rate, passes `contract` whole from a rested policer: always for a contract that only
/// shapes or tags, or a line without cells.
pub fn passes_whole(contract: &VcContract, line: &Tech, datagram: u64) -> bool {
    if !contract.police || contract.tag {
        return true;
    }
    let (Some(cells), Some(gap)) = (line.cells(datagram), line.cell_time()) else {
        return true;
    };
    // The first cell the policer breaks breaks the segment: it is judged no further.
    let mut policer = Policer::new(*contract);
    (0..cells).all(|k| policer.judge(k * gap.0, k, cells, false) == Fate::Passed)
}

/// Bytes of the whole writes of `call` bytes that fit a send buffer of `buffer` bytes: what an
/// application's write calls that returned handed its transport when nothing is ever
/// acknowledged (the next write blocks for good).
pub fn whole_writes(buffer: u64, call: u64) -> u64 {
    let call = call.max(1);
    buffer / call * call
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Duration;
    use crate::units::Rate;

    /// The EBN's contract at the VP's 27 Mbit/s, policed, 50 us of tolerance.
    fn ebn(cdvt_us: u64) -> VcContract {
        VcContract {
            cdvt: Duration::from_micros(cdvt_us),
            police: true,
            ..VcContract::peak(Rate::mbps(27))
        }
    }

    /// From an Alpha at OC-3c (a cell every 2.8 us against the contract's 15.7): a 2-cell SYN
    /// passes, a 9180-byte segment (192 cells) does not; the tolerance lets about 50 / (15.7 -
    /// 2.8) + 1 cells through back to back, so 2.4 ms of it passes the segment. A contract that
    /// tags or only shapes passes everything.
    #[test]
    fn a_rested_policer_breaks_a_segment_longer_than_its_tolerance() {
        let oc3 = Tech::preset("oc3c").unwrap();
        assert!(passes_whole(&ebn(50), &oc3, 44));
        assert!(!passes_whole(&ebn(50), &oc3, 9180));
        assert!(passes_whole(&ebn(2_500), &oc3, 9180));
        let tag = VcContract {
            tag: true,
            ..ebn(50)
        };
        assert!(passes_whole(&tag, &oc3, 9180));
        let shaped = VcContract {
            police: false,
            ..ebn(50)
        };
        assert!(passes_whole(&shaped, &oc3, 9180));
    }

    #[test]
    fn whole_writes_fill_the_send_buffer() {
        // DU 3.2c's 35600 bytes: four 8 KiB writes, 32 KiB.
        assert_eq!(whole_writes(35_600, 8192), 32_768);
        assert_eq!(whole_writes(8191, 8192), 0);
    }
}
