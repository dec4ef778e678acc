//! A virtual circuit's traffic contract as a scenario gives it: peak and optional sustainable
//! rate, burst and tolerance, and whether the network shapes or polices it.

use serde::{Deserialize, Serialize};

use super::DualGcra;
use crate::time::Duration;
use crate::units::Rate;

/// Bits in one 53-byte cell.
const CELL_BITS: u64 = 53 * 8;

/// A VC traffic contract (ATM Forum TM 4.0 terms, rates given as bit rates of whole cells).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VcContract {
    /// Peak cell rate, as the bit rate of 53-byte cells.
    pub pcr: Rate,
    /// Sustainable cell rate, as a bit rate; `None`: peak rate only.
    pub scr: Option<Rate>,
    /// Maximum burst size at the peak rate, in cells (with `scr`).
    pub mbs: u64,
    /// Cell delay variation tolerance.
    pub cdvt: Duration,
    /// Drop non-conforming cells (policing, UPC) instead of delaying them (shaping).
    pub police: bool,
    /// With `police`: tag non-conforming cells (CLP = 1) instead of discarding them; they go on,
    /// and a congested queue downstream drops them first (see
    /// [`crate::net::LinkSpec::clp_threshold`]).
    #[serde(default)]
    pub tag: bool,
    /// With `police` and not `tag`: partial packet discard (PPD). Once a cell of a frame breaks
    /// the contract, the frame's later cells are discarded unjudged, all but its last (which
    /// ends the AAL5 frame and is judged as any other): they neither travel on nor use the
    /// contract's credit.
    #[serde(default)]
    pub ppd: bool,
}

impl VcContract {
    /// Cells shaped to the peak rate `pcr` alone: no sustainable rate, bursts of one cell, no
    /// tolerance, nothing policed, tagged or discarded early (set those fields on it).
    pub fn peak(pcr: Rate) -> Self {
        VcContract {
            pcr,
            scr: None,
            mbs: 1,
            cdvt: Duration::ZERO,
            police: false,
            tag: false,
            ppd: false,
        }
    }

    /// Peak cell rate in cells per second.
    pub fn pcr_cells(&self) -> u64 {
        (self.pcr.as_bps() / CELL_BITS).max(1)
    }

    /// The GCRA pair that enforces the contract (a sustainable rate equal to the peak when none
    /// is given).
    pub fn gcra(&self) -> DualGcra {
        let pcr = self.pcr_cells();
        let scr = self
            .scr
            .map_or(pcr, |r| (r.as_bps() / CELL_BITS).clamp(1, pcr));
        DualGcra::new(pcr, scr, self.mbs.max(1), self.cdvt)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Instant;

    #[test]
    fn shaping_spaces_cells_at_the_peak_rate_after_the_burst() {
        // 26 Mbit/s of cells: 61320 cells/s, one per 16.31 us.
        let c = VcContract::peak(Rate::mbps(26));
        let mut g = c.gcra();
        let mut t = Instant::ZERO;
        let mut times = Vec::new();
        for _ in 0..5 {
            t = g.earliest(t);
            assert!(g.police(t));
            times.push(t.as_nanos());
        }
        let gap = 1_000_000_000u64.div_ceil(26_000_000 / 424);
        assert!(times.windows(2).all(|w| w[1] - w[0] == gap), "{times:?}");
    }

    #[test]
    fn policing_refuses_a_back_to_back_burst_beyond_mbs() {
        let c = VcContract {
            pcr: Rate::mbps(100),
            scr: Some(Rate::mbps(10)),
            mbs: 4,
            cdvt: Duration::ZERO,
            police: true,
            tag: false,
            ppd: false,
        };
        let mut g = c.gcra();
        // Cells at the peak rate: the first `mbs` conform, then the sustainable GCRA refuses.
        let t_pcr = 1_000_000_000u64.div_ceil(100_000_000 / 424);
        let ok: Vec<bool> = (0..8).map(|k| g.police(Instant(k * t_pcr))).collect();
        assert_eq!(ok, [true, true, true, true, false, false, false, false]);
    }
}
