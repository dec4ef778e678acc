//! The RM-cell loop of ABR sources across a network ([`crate::shaper::AbrSource`] on a host's
//! link): forward RM cells travel as cells of the frames they were sent among (counted in the
//! train's units: they take a cell slot on the source's line and in every queue and on every
//! ATM line after it, and are lost with the frame's cells), through the same queues (any of
//! which may set EFCI on the cells, [`super::LinkSpec::efci_threshold`]); the destination turns
//! each around ([`AbrDestination`]) with CI set if the frame carried EFCI, and the backward RM
//! cell reaches the source after the circuit's return delay.
//!
//! The backward cells are not cells on the return path: each takes the shortest forward
//! transit the circuit has shown (send to delivery of an RM cell's frame: propagation,
//! serialisation and the least queueing seen), which stands for a return path with no queue.
//! Making them cells would need a train with no frame (the network carries frames, and a
//! backward RM cell belongs to none) on the destination's line and through the reverse
//! queues; one cell in Nrm of the forward rate on a path that carries only acknowledgements
//! back is not what these scenarios turn on.
//! Queues may also lower the explicit rate the RM cells carry
//! ([`super::LinkSpec::abr_er`]: a share of the line divided among the ABR circuits seen), which
//! the source then holds its ACR under: an explicit-rate source beside the binary one.
//!
//! An ABR source's frames wait in its adapter ([`AbrLoop::hold`]) while its line still has
//! cells to send, and each is given to the line when the one before has gone, so that its
//! cells leave at the ACR of that moment, not of the moment the host wrote it.

use std::collections::{HashMap, VecDeque};

use crate::engine::EventQueue;
use crate::shaper::{AbrDestination, RmCell};
use crate::time::Instant;
use crate::units::Rate;

/// The forward RM cells an ABR source sent among a frame's cells.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RmMark {
    /// How many.
    pub cells: u16,
    /// When the first of them left the source (ns).
    pub sent: u64,
    /// The lowest explicit rate a queue on the way gave them (bit/s of cells).
    pub er: u64,
}

impl Default for RmMark {
    fn default() -> Self {
        RmMark {
            cells: 0,
            sent: 0,
            er: u64::MAX,
        }
    }
}

/// RM cells delivered to a host with a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RmArrival {
    /// The frame's flow: the host that sent it.
    pub flow: u32,
    /// When the frame reached the host (ns).
    pub due: u64,
    /// The forward RM cells that came with it.
    pub rm: RmMark,
    /// Whether a queue set EFCI on the frame's cells.
    pub efci: bool,
}

/// The destinations' side of every ABR circuit, the backward RM cells on their way, and the
/// frames waiting in the sources' adapters.
#[derive(Debug)]
pub struct AbrLoop<F> {
    /// Per host: the frames its ABR adapter holds (empty for other hosts).
    held: Vec<VecDeque<F>>,
    /// The hosts that are ABR sources.
    sources: Vec<usize>,
    /// Per (source, destination) host: the destination and the shortest transit seen (ns).
    circuits: HashMap<(usize, usize), (AbrDestination, u64)>,
    /// Backward RM cells due at their source host.
    back: EventQueue<(usize, RmCell)>,
}

impl<F> AbrLoop<F> {
    /// The loop of a network of `hosts` hosts of which `sources` are ABR sources.
    pub fn new(hosts: usize, sources: Vec<usize>) -> Self {
        AbrLoop {
            held: (0..hosts).map(|_| VecDeque::new()).collect(),
            sources,
            circuits: HashMap::new(),
            back: EventQueue::new(),
        }
    }

    /// Whether host `h` is an ABR source.
    pub fn is_source(&self, h: usize) -> bool {
        self.sources.contains(&h)
    }

    /// Holds frame `f` of host `h` in its adapter until its line is free.
    pub fn hold(&mut self, h: usize, f: F) {
        if let Some(q) = self.held.get_mut(h) {
            q.push_back(f);
        }
    }

    /// Whether host `h` has frames held.
    pub fn holds(&self, h: usize) -> bool {
        self.held.get(h).is_some_and(|q| !q.is_empty())
    }

    /// The next frame host `h` holds.
    pub fn release(&mut self, h: usize) -> Option<F> {
        self.held.get_mut(h)?.pop_front()
    }

    /// The ABR sources.
    pub fn sources(&self) -> &[usize] {
        &self.sources
    }

    /// RM cells delivered to host `to`: each turned around and sent back to its source with the
    /// explicit rate the queues on the way gave it, at most `er` (the source's peak rate).
    pub fn handle_arrival(&mut self, to: usize, a: RmArrival, er: Rate) {
        let from = a.flow as usize;
        let transit = a.due.saturating_sub(a.rm.sent);
        let er = Rate::bps(er.as_bps().min(a.rm.er));
        let (dest, best) = self
            .circuits
            .entry((from, to))
            .or_insert((AbrDestination::default(), u64::MAX));
        *best = (*best).min(transit);
        let back_at = a.due + *best;
        for _ in 0..a.rm.cells {
            // The frame's EFCI stands for that of the data cells before each of its RM cells.
            dest.handle_data(a.efci);
            let rm = dest.turn_around(RmCell {
                ci: false,
                ni: false,
                er,
            });
            self.back.push(Instant(back_at), (from, rm));
        }
    }

    /// The next backward RM cell due at its source by `now`: the source host and the cell.
    pub fn poll_backward(&mut self, now: Instant) -> Option<(usize, RmCell)> {
        self.back.pop_due(now).map(|(_, x)| x)
    }

    /// When the next backward RM cell is due.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.back.peek_time()
    }
}

#[cfg(test)]
mod tests {
    use super::super::{FabricSpec, HostSpec, LinkSpec, Network, Topology, host_mac};
    use crate::queue::Buffer;
    use crate::shaper::AbrParams;
    use crate::time::Duration;
    use crate::units::Rate;

    const OC3C: Rate = Rate(149_760_000);

    /// Host `alpha` on line `a` and host `rs6000` on line `b`, on one switch.
    fn alpha_to_rs6000(a: &LinkSpec, b: &LinkSpec) -> Network<Vec<u8>> {
        let host = |name: &str, link: &LinkSpec| HostSpec {
            name: name.into(),
            addr: None,
            link: link.clone(),
            switch: 0,
        };
        let topo = Topology::star(
            vec![host("alpha", a), host("rs6000", b)],
            FabricSpec::default(),
            3,
        );
        Network::new(&topo).unwrap()
    }

    /// A 9180-byte datagram from alpha (host 0) to rs6000 (host 1), with its Ethernet header.
    fn datagram() -> Vec<u8> {
        let mut f = vec![0u8; 9180 + 14];
        f[0..6].copy_from_slice(&host_mac(1));
        f[6..12].copy_from_slice(&host_mac(0));
        f
    }

    /// Host 0 (OC-3c, an ABR source if `abr`) sends `n` 9180-byte datagrams, one every 5 ms
    /// (16 Mbit/s), to host 1 behind a 3.3 Mbit/s line whose 1000-cell queue marks EFCI from a
    /// quarter full; returns the frames delivered, the cells that queue dropped, and the
    /// source's lowest ACR and CI count.
    fn run(abr: bool, er: bool, n: u64) -> (usize, u64, Option<(u64, u64)>) {
        let mut fast = LinkSpec::atm(Some(OC3C), Duration::from_micros(10), 0, 100);
        if abr {
            // Binary feedback needs small increases to settle: 1/1024 of PCR a backward RM cell
            // (TM 4.0 allows 1/32768 to 1; its default 1/16 takes the ACR to PCR between two
            // decreases of 1/16).
            // A start at 1.5 Mbit/s: at TM 4.0's ICR of PCR / 16 the source would overrun the
            // queue before the first RM cell came back (a frame time at the bottleneck and a
            // round trip), since RM cells ride at the end of their frame.
            fast.abr = Some(AbrParams {
                rif: 1024,
                icr: Rate::bps(1_500_000),
                ..AbrParams::defaults(OC3C, Rate::bps(64_000))
            });
        }
        let mut slow = LinkSpec::atm(
            Some(Rate::bps(3_300_000)),
            Duration::from_millis(15),
            0,
            100,
        );
        slow.buffer = Buffer::cells(1000);
        slow.efci_threshold = Some(0.25);
        if er {
            slow.abr_er = Some(0.95);
        }
        let mut net = alpha_to_rs6000(&fast, &slow);
        let mut got = 0;
        let mut now = crate::time::Instant(0);
        let mut k = 0;
        loop {
            let next_send = (k < n).then(|| crate::time::Instant(k * 5_000_000));
            let t = match (net.poll_timeout(), next_send) {
                (Some(a), Some(b)) => a.min(b),
                (a, b) => match a.or(b) {
                    Some(t) => t,
                    None => break,
                },
            };
            now = now.max(t);
            if next_send.is_some_and(|s| s <= now) {
                net.handle_frame(now, 0, datagram());
                k += 1;
            }
            while let Some((h, _, _)) = net.poll_transmit(now) {
                assert_eq!(h, 1);
                got += 1;
            }
        }
        let dropped = net.host_stats(1).unwrap().egress.cells_dropped;
        let acr = net
            .host_stats(0)
            .unwrap()
            .ingress
            .abr
            .map(|a| (a.acr_min_bps, a.rm_ci));
        (got, dropped, acr)
    }

    /// One 9180-byte datagram (192 cells) from an ABR source at its peak rate (OC-3c, one RM
    /// cell in 32) to a host on another OC-3c line: the destination's queue takes the six
    /// forward RM cells sent among the datagram's cells as cells.
    #[test]
    fn forward_rm_cells_take_cell_slots_downstream() {
        let mut src = LinkSpec::atm(Some(OC3C), Duration::from_micros(10), 0, 100);
        src.abr = Some(AbrParams {
            icr: OC3C,
            ..AbrParams::defaults(OC3C, Rate::bps(64_000))
        });
        let dst = LinkSpec::atm(Some(OC3C), Duration::from_micros(10), 0, 100);
        let mut net = alpha_to_rs6000(&src, &dst);
        net.handle_frame(crate::time::Instant(0), 0, datagram());
        let mut got = 0;
        while let Some(t) = net.poll_timeout() {
            while net.poll_transmit(t).is_some() {
                got += 1;
            }
        }
        assert_eq!(got, 1);
        let rm = net.host_stats(0).unwrap().ingress.abr.unwrap().rm_sent;
        assert_eq!(rm, 6);
        assert_eq!(net.host_stats(1).unwrap().egress.cells_in, 192 + rm);
    }

    #[test]
    fn efci_feedback_slows_an_abr_source_below_the_bottleneck() {
        let (got_none, dropped_none, acr) = run(false, false, 60);
        assert!(acr.is_none());
        assert!(
            dropped_none > 0 && got_none < 60,
            "{got_none} {dropped_none}"
        );
        // Binary feedback a frame late on a 30 ms round trip: the ACR swings from well below
        // the 3.3 Mbit/s line to above it, and the queue still overflows on the swings up, but
        // it loses far less than the source at the line rate.
        let (got, dropped, acr) = run(true, false, 60);
        let (acr_min, ci) = acr.unwrap();
        assert!(ci > 0 && acr_min < 3_300_000, "{acr:?}");
        assert!(
            got > got_none && dropped < dropped_none / 4,
            "{got} {dropped}"
        );
    }

    #[test]
    fn an_explicit_rate_holds_the_source_under_its_share_of_the_bottleneck() {
        // The queue offers 95% of its line: the source never exceeds it, loses nothing, and the
        // queue never reaches its EFCI threshold.
        let (got, dropped, acr) = run(true, true, 60);
        assert_eq!((got, dropped), (60, 0));
        assert_eq!(acr.map(|a| a.1), Some(0));
    }
}
