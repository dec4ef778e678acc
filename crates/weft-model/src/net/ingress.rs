//! The host-to-switch direction of a host's link: the host's interface queue, serialisation at
//! the line rate (whole cells on ATM, paced by the VC's contract when it has one, or at an ABR
//! source's allowed rate, with its forward RM cells), propagation delay and faults. A frame becomes the [`Train`] of units that reaches the switch.

use serde::Serialize;

use super::abr_loop::RmMark;
use super::faults::{FaultInjector, FaultStats};
use super::frame::Frame;
use super::link::LinkSpec;
use super::serialiser::Serialiser;
use super::train::Train;
use crate::rng::Rng;
use crate::shaper::{AbrSource, AbrStats, Fate, Policer, RmCell};
use crate::tech::CELL_BYTES;
use crate::time::{Duration, Instant};

/// Counters of a link's host-to-switch direction.
#[derive(Clone, Debug, Default, Serialize)]
pub struct IngressStats {
    /// Frames the host sent.
    pub frames: u64,
    /// Bytes the host sent (frames, Ethernet header included).
    pub bytes: u64,
    /// Frames dropped because the host's queue for the line was full.
    pub overflow: u64,
    /// Frames lost at random on the line.
    pub lost: u64,
    /// Cells that broke the VC's contract at the policer (dropped, or tagged).
    pub cells_policed: u64,
    /// Frames discarded because a cell of theirs was policed (their cells that passed go on and
    /// fail reassembly at the far end).
    pub frames_policed: u64,
    /// Cells of those frames partial packet discard dropped unjudged
    /// ([`crate::shaper::VcContract::ppd`]; absent from the JSON while zero).
    #[serde(skip_serializing_if = "is_zero")]
    pub cells_discarded: u64,
    /// Frames the policer tagged (CLP = 1) instead.
    pub frames_tagged: u64,
    /// Other faults injected on the line.
    pub faults: FaultStats,
    /// The host's ABR source, if its link has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub abr: Option<AbrStats>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The host-to-switch direction of a link.
#[derive(Debug)]
pub struct Ingress {
    line: Serialiser,
    link: LinkSpec,
    faults: FaultInjector,
    /// The VC's contract.
    contract: Option<Policer>,
    /// The host's ABR source.
    abr: Option<AbrSource>,
    /// Counters of this direction.
    pub stats: IngressStats,
}

impl Ingress {
    /// The host-to-switch direction of `link`, its faults drawn from `rng`.
    pub fn new(link: &LinkSpec, rng: Rng) -> Self {
        Ingress {
            line: Serialiser::new(link.rate),
            faults: FaultInjector::new(link.faults, rng),
            contract: link.contract.filter(|_| link.is_atm()).map(Policer::new),
            abr: link.abr.filter(|_| link.is_atm()).map(AbrSource::new),
            link: link.clone(),
            stats: IngressStats::default(),
        }
    }

    /// A backward RM cell reaches the host's ABR source (ignored if it has none).
    pub fn handle_backward_rm(&mut self, rm: RmCell) {
        if let Some(a) = self.abr.as_mut() {
            a.handle_backward(rm);
            self.stats.abr = Some(a.stats);
        }
    }

    /// When the line is free of the cells given it so far (ns).
    pub fn free_at(&self) -> u64 {
        self.line.free_at()
    }

    /// The peak rate of the host's ABR source: the explicit rate its destinations return.
    pub fn abr_peak(&self) -> Option<crate::units::Rate> {
        self.link.abr.map(|p| p.pcr)
    }

    /// A frame from the host at `now`: the trains it becomes at the switch (none if dropped,
    /// two if duplicated), handed to `out`.
    pub fn handle_frame<F: Frame>(
        &mut self,
        now: Instant,
        frame: F,
        out: &mut impl FnMut(Train<F>),
    ) {
        let now = now.as_nanos();
        let len = frame.frame_len();
        self.stats.frames += 1;
        self.stats.bytes += len as u64;
        if let Some(rate) = self.link.rate {
            let waiting = rate.bytes_in(Duration(self.line.free_at().saturating_sub(now)));
            if waiting.as_bytes() > self.link.ingress_buffer {
                self.stats.overflow += 1;
                return;
            }
        }
        let units = self.link.units(len);
        let mut tagged = false;
        let mut damaged = false;
        let mut units = units;
        let mut rm = RmMark::default();
        // When the first and the last unit have left the host (ns).
        let (first_end, end) = match &mut self.contract {
            None if self.abr.is_some() => {
                let Some(a) = self.abr.as_mut() else {
                    return;
                };
                let (first_end, end, r) = abr_cells(&mut self.line, a, now, units);
                self.stats.abr = Some(a.stats);
                rm = r;
                units += u64::from(r.cells);
                (first_end, end)
            }
            None => {
                let start = now.max(self.line.free_at());
                let end = self.line.send(now, self.link.wire_bytes(len));
                (start + (end - start) / units.max(1), end)
            }
            Some(policer) => {
                let c = contract_cells(&mut self.line, policer, now, units);
                self.stats.cells_discarded += c.discarded;
                if c.broken > 0 {
                    self.stats.cells_policed += c.broken;
                    if policer.tags() {
                        self.stats.frames_tagged += 1;
                        tagged = true;
                    } else {
                        // The cells that passed go on, and fail reassembly at the far end.
                        self.stats.frames_policed += 1;
                        if c.passed == 0 {
                            return;
                        }
                        damaged = true;
                        units = c.passed;
                    }
                }
                (c.first_end, c.end)
            }
        };
        if self.faults.lose() {
            self.stats.lost += 1;
            return;
        }
        let delay = self.link.delay.as_nanos();
        self.faults.pass(end + delay, frame, &mut |last, f| {
            let held = last - (end + delay);
            let mut t = Train::between(f, first_end + held, end + held, units, delay, 0);
            t.tagged = tagged;
            t.damaged = damaged;
            t.rm = rm;
            out(t);
        });
        self.stats.faults = self.faults.stats;
    }
}

/// Sends a frame's `units` cells on `line` from `now` at an ABR source's allowed rate, with
/// the forward RM cells that fall among them. Returns when the first and the last cell (data or
/// RM) ended (ns), and the RM cells sent with the frame and when the first of them left. The RM
/// cells travel on as cells of the frame's train ([`RmMark::cells`] of its units), taking their
/// slots in every queue and on every line to the destination.
fn abr_cells(
    line: &mut Serialiser,
    abr: &mut AbrSource,
    now: u64,
    units: u64,
) -> (u64, u64, RmMark) {
    let mut first_end = None;
    let mut end = now;
    let mut rm = RmMark::default();
    let mut sent = 0;
    while sent < units {
        let (at, is_rm) = abr.next_cell(now.max(line.free_at()));
        end = line.send(at, CELL_BYTES);
        first_end.get_or_insert(end);
        if is_rm {
            if rm.cells == 0 {
                rm.sent = end;
            }
            rm.cells = rm.cells.saturating_add(1);
            continue;
        }
        sent += 1;
    }
    (first_end.unwrap_or(end), end, rm)
}

/// What a VC contract did to the cells of one frame on a host's line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Policed {
    /// When the first and the last cell ended on the line (ns).
    first_end: u64,
    end: u64,
    /// Cells that broke the contract.
    broken: u64,
    /// Cells partial packet discard dropped unjudged after a broken one.
    discarded: u64,
    /// Cells that conformed.
    passed: u64,
}

/// Sends a frame's `units` cells on `line` from `now` under a VC contract: shaped, each cell
/// waits until it conforms; policed, cells go back to back and each is judged as it has
/// arrived whole ([`Policer::judge`]).
fn contract_cells(line: &mut Serialiser, policer: &mut Policer, now: u64, units: u64) -> Policed {
    let mut first_end = None;
    let mut end = now;
    let (mut broken, mut discarded, mut passed) = (0, 0, 0);
    for k in 0..units {
        let free = now.max(line.free_at());
        if !policer.polices() {
            end = line.send(policer.shape(free), CELL_BYTES);
            first_end.get_or_insert(end);
            passed += 1;
            continue;
        }
        end = line.send(free, CELL_BYTES);
        first_end.get_or_insert(end);
        match policer.judge(end, k, units, broken > 0) {
            Fate::Passed => passed += 1,
            Fate::Broken => broken += 1,
            Fate::Discarded => discarded += 1,
        }
    }
    Policed {
        first_end: first_end.unwrap_or(end),
        end,
        broken,
        discarded,
        passed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shaper::VcContract;
    use crate::units::Rate;

    fn trains(i: &mut Ingress, now: u64, len: usize) -> Vec<Train<Vec<u8>>> {
        let mut v = Vec::new();
        i.handle_frame(Instant(now), vec![0u8; len], &mut |t| v.push(t));
        v
    }

    fn vc(pcr: Rate, police: bool, scr: Option<Rate>, mbs: u64) -> LinkSpec {
        let mut l = LinkSpec::atm(Some(Rate::bps(149_760_000)), Duration::ZERO, 0, 100);
        l.contract = Some(VcContract {
            pcr,
            scr,
            mbs,
            cdvt: Duration::ZERO,
            police,
            tag: false,
            ppd: false,
        });
        l
    }

    #[test]
    fn frames_serialise_back_to_back_and_arrive_after_the_delay() {
        let link = LinkSpec::ethernet(Some(Rate::mbps(8)), Duration::from_millis(5));
        let mut i = Ingress::new(&link, Rng::new(1));
        let a = trains(&mut i, 0, 1000);
        let b = trains(&mut i, 0, 1000);
        // 1000 bytes at 8 Mbit/s: 1 ms each, then 5 ms of delay.
        assert_eq!((a[0].first, a[0].units), (6_000_000, 1));
        assert_eq!(b[0].last(), 7_000_000);
    }

    #[test]
    fn a_shaped_vc_spaces_its_cells_at_the_peak_rate() {
        let mut i = Ingress::new(&vc(Rate::mbps(26), false, None, 1), Rng::new(1));
        // Two 10-cell frames back to back at t = 0: 20 cells at 26 Mbit/s of cells, one per
        // 16.308 us, instead of one per 2.83 us on the OC-3c line.
        let a = trains(&mut i, 0, 10 * 48 - 8 + 14 - 8);
        let b = trains(&mut i, 0, 10 * 48 - 8 + 14 - 8);
        assert_eq!((a[0].units, b[0].units), (10, 10));
        let gap = 1_000_000_000u64.div_ceil(26_000_000 / 424);
        assert_eq!(b[0].last() - a[0].first, 19 * gap);
        assert_eq!(i.stats.cells_policed, 0);
    }

    #[test]
    fn a_policed_vc_loses_the_frames_that_break_its_contract() {
        // PCR at the line rate, SCR a tenth of it, bursts of 30 cells: the first three 10-cell
        // frames sent back to back conform; the burst tolerance is then spent, and each later
        // frame loses cells: only its last, a sustained increment after the last that passed,
        // goes on, and the frame fails reassembly.
        let line = Rate::bps(149_760_000);
        let mut link = vc(line, true, Some(Rate::bps(14_976_000)), 30);
        // A tolerance of a microsecond absorbs the rounding of the cell times to whole ns.
        if let Some(c) = link.contract.as_mut() {
            c.cdvt = Duration(1_000);
        }
        let mut i = Ingress::new(&link, Rng::new(1));
        let on: Vec<(u64, bool)> = (0..6)
            .flat_map(|_| trains(&mut i, 0, 10 * 48 - 8 + 14 - 8))
            .map(|t| (t.units, t.damaged))
            .collect();
        let (whole, broken) = ((10, false), (1, true));
        assert_eq!(on, [whole, whole, whole, broken, broken, broken]);
        assert_eq!((i.stats.frames_policed, i.stats.cells_policed), (3, 27));
    }

    #[test]
    fn partial_packet_discard_drops_a_broken_frame_s_cells_but_its_last_on_the_line() {
        // A peak of half the line: every other cell of a 10-cell frame breaks it.
        let mut link = vc(Rate::bps(74_880_000), true, None, 1);
        if let Some(c) = link.contract.as_mut() {
            c.cdvt = Duration(1_000);
        }
        let frame = 10 * 48 - 8 + 14 - 8;
        let plain = trains(&mut Ingress::new(&link, Rng::new(1)), 0, frame);
        assert_eq!((plain[0].units, plain[0].damaged), (5, true));
        if let Some(c) = link.contract.as_mut() {
            c.ppd = true;
        }
        let mut i = Ingress::new(&link, Rng::new(1));
        let t = trains(&mut i, 0, frame);
        assert_eq!((t[0].units, t[0].damaged), (2, true));
        assert_eq!((i.stats.cells_policed, i.stats.cells_discarded), (1, 7));
    }
}
