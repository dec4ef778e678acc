//! Available Bit Rate (ATM Forum TM 4.0, section 5.10): a source whose allowed cell rate (ACR)
//! moves between its minimum (MCR) and peak (PCR) rates under the feedback of resource
//! management (RM) cells, and the destination that turns them around.
//!
//! The source sends one forward RM cell every `nrm` cells, in rate (it takes a cell slot). The
//! destination returns each as a backward RM cell, with its congestion indication (CI) set if
//! the last data cell it received carried EFCI, the bit a congested queue sets on the cells it
//! passes (binary, EFCI-marking switches); switches on the way may lower its explicit rate
//! (ER). On a backward RM cell the source cuts its rate by `acr / rdf` if CI is set, raises it
//! by `pcr / rif` if neither CI nor NI (no increase) is, and then holds it at or below ER and
//! within [MCR, PCR]. (TM 4.0 writes RIF and RDF as fractions, 1/16 by default: here their
//! denominators.)
//!
//! Sans-IO: the caller asks for cell slots at explicit instants (ns) and hands in backward RM
//! cells as they arrive.

use serde::{Deserialize, Serialize};

use crate::units::Rate;

/// Bits in one 53-byte cell.
const CELL_BITS: u64 = 53 * 8;

/// An ABR connection's parameters (TM 4.0 names; rates as bit rates of whole cells).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AbrParams {
    /// Peak cell rate: the ACR never exceeds it.
    pub pcr: Rate,
    /// Minimum cell rate: the ACR never falls below it.
    pub mcr: Rate,
    /// Initial cell rate: the ACR before any feedback.
    pub icr: Rate,
    /// Rate increase factor, as its denominator: an increase adds `pcr / rif` (TM 4.0's
    /// default 1/16: 16).
    pub rif: u32,
    /// Rate decrease factor, as its denominator: a decrease takes `acr / rdf` away (default 16).
    pub rdf: u32,
    /// Cells between forward RM cells, the RM cell included (default 32).
    pub nrm: u32,
}

impl AbrParams {
    /// TM 4.0's defaults (RIF and RDF 1/16, Nrm 32) for peak rate `pcr`, minimum `mcr`, and an
    /// initial rate of `pcr / 16`.
    pub fn defaults(pcr: Rate, mcr: Rate) -> Self {
        AbrParams {
            pcr,
            mcr,
            icr: Rate::bps((pcr.as_bps() / 16).max(mcr.as_bps())),
            rif: 16,
            rdf: 16,
            nrm: 32,
        }
    }
}

/// The feedback a resource-management cell carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RmCell {
    /// Congestion indication: decrease.
    pub ci: bool,
    /// No increase.
    pub ni: bool,
    /// Explicit rate: the most the network lets the source send (bit rate of cells).
    pub er: Rate,
}

/// Counters of an ABR source.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct AbrStats {
    /// Forward RM cells sent.
    pub rm_sent: u64,
    /// Backward RM cells received.
    pub rm_back: u64,
    /// Of those, with CI set.
    pub rm_ci: u64,
    /// Lowest ACR reached (bit/s).
    pub acr_min_bps: u64,
    /// Highest ACR reached (bit/s).
    pub acr_max_bps: u64,
}

/// An ABR source: paces its cells at its ACR and moves the ACR on feedback.
#[derive(Clone, Debug)]
pub struct AbrSource {
    params: AbrParams,
    /// Allowed cell rate, bit/s of cells.
    acr: u64,
    /// Cells sent since the last forward RM cell.
    since_rm: u32,
    /// The earliest instant of the next cell slot (ns).
    next: u64,
    /// Counters.
    pub stats: AbrStats,
}

impl AbrSource {
    /// A source at its initial rate.
    pub fn new(params: AbrParams) -> Self {
        let acr = params.icr.as_bps().clamp(
            params.mcr.as_bps().max(CELL_BITS),
            params.pcr.as_bps().max(CELL_BITS),
        );
        AbrSource {
            params,
            acr,
            since_rm: 0,
            next: 0,
            stats: AbrStats {
                acr_min_bps: acr,
                acr_max_bps: acr,
                ..AbrStats::default()
            },
        }
    }

    /// Its allowed cell rate now.
    pub fn acr(&self) -> Rate {
        Rate::bps(self.acr)
    }

    /// Takes the next cell slot at or after `now` (ns): when the cell may start, and whether
    /// the slot is a forward RM cell's (the caller then asks again for its data cell).
    pub fn next_cell(&mut self, now: u64) -> (u64, bool) {
        let at = now.max(self.next);
        // One cell time at the ACR, rounded up to whole ns.
        self.next = at + (CELL_BITS * 1_000_000_000).div_ceil(self.acr);
        let rm = self.since_rm + 1 >= self.params.nrm.max(2);
        if rm {
            self.since_rm = 0;
            self.stats.rm_sent += 1;
        } else {
            self.since_rm += 1;
        }
        (at, rm)
    }

    /// A backward RM cell arrives: the ACR moves as the feedback says.
    pub fn handle_backward(&mut self, rm: RmCell) {
        self.stats.rm_back += 1;
        let (pcr, mcr) = (self.params.pcr.as_bps(), self.params.mcr.as_bps());
        let mut acr = self.acr;
        if rm.ci {
            self.stats.rm_ci += 1;
            acr -= acr / u64::from(self.params.rdf.max(1));
        } else if !rm.ni {
            acr += pcr / u64::from(self.params.rif.max(1));
        }
        acr = acr.min(rm.er.as_bps()).min(pcr).max(mcr).max(CELL_BITS);
        self.acr = acr;
        self.stats.acr_min_bps = self.stats.acr_min_bps.min(acr);
        self.stats.acr_max_bps = self.stats.acr_max_bps.max(acr);
    }
}

/// An ABR destination: remembers whether the last data cell carried EFCI and turns forward RM
/// cells around with it as CI.
#[derive(Clone, Copy, Debug, Default)]
pub struct AbrDestination {
    efci: bool,
}

impl AbrDestination {
    /// A data cell arrives, with its EFCI bit.
    pub fn handle_data(&mut self, efci: bool) {
        self.efci = efci;
    }

    /// A forward RM cell arrives: the backward RM cell it becomes (CI set if the last data cell
    /// carried EFCI, which is then forgotten).
    pub fn turn_around(&mut self, forward: RmCell) -> RmCell {
        let ci = forward.ci || self.efci;
        self.efci = false;
        RmCell { ci, ..forward }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source() -> AbrSource {
        AbrSource::new(AbrParams::defaults(Rate::mbps(155), Rate::mbps(1)))
    }

    fn back(ci: bool) -> RmCell {
        RmCell {
            ci,
            ni: false,
            er: Rate::mbps(155),
        }
    }

    #[test]
    fn cells_leave_at_the_acr_with_one_rm_cell_in_nrm() {
        let mut s = source();
        // 155/16 Mbit/s of cells: one per 43.76 us.
        let gap = (424u64 * 1_000_000_000).div_ceil(155_000_000 / 16);
        let slots: Vec<(u64, bool)> = (0..64).map(|_| s.next_cell(0)).collect();
        assert!(slots.windows(2).all(|w| w[1].0 - w[0].0 == gap));
        let rm: Vec<usize> = (0..64).filter(|&i| slots[i].1).collect();
        assert_eq!(rm, [31, 63]);
        assert_eq!(s.stats.rm_sent, 2);
    }

    #[test]
    fn the_acr_falls_on_ci_rises_without_it_and_stays_between_mcr_and_pcr() {
        let mut s = source();
        let icr = s.acr().as_bps();
        s.handle_backward(back(true));
        assert_eq!(s.acr().as_bps(), icr - icr / 16);
        for _ in 0..200 {
            s.handle_backward(back(true));
        }
        assert_eq!(s.acr(), Rate::mbps(1));
        for _ in 0..40 {
            s.handle_backward(back(false));
        }
        assert_eq!(s.acr(), Rate::mbps(155));
        // An explicit rate caps it; no-increase holds it.
        s.handle_backward(RmCell {
            er: Rate::mbps(30),
            ..back(false)
        });
        assert_eq!(s.acr(), Rate::mbps(30));
        s.handle_backward(RmCell {
            ni: true,
            ..back(false)
        });
        assert_eq!(s.acr(), Rate::mbps(30));
        assert_eq!(
            (s.stats.acr_min_bps, s.stats.acr_max_bps),
            (1_000_000, 155_000_000)
        );
    }

    #[test]
    fn the_destination_returns_efci_as_ci_once() {
        let mut d = AbrDestination::default();
        d.handle_data(true);
        assert!(d.turn_around(back(false)).ci);
        assert!(!d.turn_around(back(false)).ci);
        d.handle_data(true);
        d.handle_data(false);
        assert!(!d.turn_around(back(false)).ci);
    }
}
