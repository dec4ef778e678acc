//! NDP on simulated hosts: the core's sans-IO NDP ([`weft_model::ndp`]) as applications, one
//! sender per flow and one receiver per receiving host (its pull pacer serves all the host's
//! flows), and the `tput` workloads of a scenario that ask for it (`transport = "ndp"`): sized
//! flows, their completion times beside the ideal, and the fabric's trims, drops and queues.

use std::any::Any;
use std::collections::HashMap;
use std::path::Path;

use serde_json::{Map, Value, json};
use weft_model::ndp::{DEFAULT_WINDOW, FlowDone, HEADER_BYTES, Receiver, Sender, SenderStats};
use weft_model::net::{ETH_HEADER, Topology};
use weft_model::scenario::{Scenario, Workload};
use weft_model::{Duration, Instant};

use super::frame::{SimFrame, UDP_IP_HEADERS};
use super::hosts::App;
use super::sized_flows::{FlowReceiver, FlowSender, run_sized_flows};
use super::tput::{FlowApps, flow_pairs};

/// The retransmission time-out of a sender: htsim's NDP examples' minimum RTO (`main_ndp.cpp`,
/// `setMinRTO(50000)` us), long enough that trimming, not the timer, repairs an incast.
pub const RTO: Duration = Duration::from_millis(50);

/// The sending end of one NDP flow on its host.
pub struct NdpSend {
    host: usize,
    peer: usize,
    /// The flow's state machine.
    pub sender: Sender,
}

impl App for NdpSend {
    fn poll_send(&mut self, now: Instant) -> Option<(Instant, SimFrame)> {
        self.sender.handle_timeout(now.0);
        let p = self.sender.poll_transmit(now.0)?;
        Some((now, SimFrame::ndp(self.host, self.peer, p, now.0)))
    }
    fn deliver(&mut self, now: Instant, frame: SimFrame) {
        if let Some(p) = frame.ndp_packet().filter(|_| !frame.corrupted) {
            self.sender.handle(now.0, &p);
        }
    }
    fn poll_timeout(&self) -> Option<Instant> {
        self.sender.poll_timeout().map(Instant)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The receiving end of every NDP flow into one host.
pub struct NdpRecv {
    host: usize,
    /// Each flow's sending host.
    peers: HashMap<u32, usize>,
    /// The host's state machine.
    pub receiver: Receiver,
}

impl App for NdpRecv {
    fn poll_send(&mut self, now: Instant) -> Option<(Instant, SimFrame)> {
        let p = self.receiver.poll_transmit(now.0)?;
        let peer = *self.peers.get(&p.flow)?;
        Some((now, SimFrame::ndp(self.host, peer, p, now.0)))
    }
    fn deliver(&mut self, now: Instant, frame: SimFrame) {
        if let Some(p) = frame.ndp_packet().filter(|_| !frame.corrupted) {
            if self.peers.contains_key(&p.flow) {
                self.receiver.handle(now.0, &p, frame.trimmed);
            }
        }
    }
    fn poll_timeout(&self) -> Option<Instant> {
        self.receiver.poll_timeout().map(Instant)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The applications of `w`'s flows of `size` bytes as NDP: a sender per flow, a receiver per
/// receiving host; with the `from` and `to` hosts.
pub fn ndp_apps(
    s: &Scenario,
    topo: &Topology,
    w: &Workload,
    size: u64,
) -> Result<FlowApps, String> {
    let (pairs, from, to) = flow_pairs(s, topo, w)?;
    let mut apps: Vec<(usize, Box<dyn App>)> = Vec::new();
    let mut receivers: HashMap<usize, HashMap<u32, usize>> = HashMap::new();
    for (k, &(f, t)) in pairs.iter().enumerate() {
        let link = &topo.hosts[f].link;
        let mss = link
            .mtu
            .saturating_sub(UDP_IP_HEADERS + HEADER_BYTES)
            .max(1);
        let sender = Sender::new(k as u32, size, mss, DEFAULT_WINDOW, RTO, 0);
        apps.push((
            f,
            Box::new(NdpSend {
                host: f,
                peer: t,
                sender,
            }),
        ));
        receivers.entry(t).or_default().insert(k as u32, f);
    }
    let mut hosts: Vec<usize> = receivers.keys().copied().collect();
    hosts.sort_unstable();
    for h in hosts {
        let link = &topo.hosts[h].link;
        // A pull per full data packet's time on the receiver's link.
        let pace = link.rate.map_or(0, |r| {
            let bytes = link.wire_bytes(link.mtu as usize + ETH_HEADER);
            r.time_to_send(weft_model::Size(bytes)).as_nanos()
        });
        let peers = receivers.remove(&h).unwrap_or_default();
        apps.push((
            h,
            Box::new(NdpRecv {
                host: h,
                peers,
                receiver: Receiver::new(pace),
            }),
        ));
    }
    Ok((apps, (pairs, from, to)))
}

/// Runs a `tput` workload over NDP: completion times of its sized flows beside the ideal, and
/// the fabric's trims, drops and largest queue.
pub fn tput_ndp(
    s: &Scenario,
    topo: &Topology,
    w: &Workload,
    capture: Option<&Path>,
    m: &mut Map<String, Value>,
    notes: &mut Vec<String>,
) {
    let run = run_sized_flows::<NdpSend, NdpRecv>("NDP", ndp_apps, s, topo, w, capture, m, notes);
    let Some(r) = run else { return };
    let hosts = r.network.all_host_stats();
    let trunks = r.network.trunk_stats();
    let trimmed: u64 = hosts
        .iter()
        .map(|p| p.egress.frames_trimmed)
        .chain(
            trunks
                .iter()
                .flat_map(|t| t.egress.iter().map(|e| e.frames_trimmed)),
        )
        .sum();
    m.insert("frames_trimmed".into(), json!(trimmed));
}

impl FlowSender for NdpSend {
    fn stats(&self) -> &SenderStats {
        &self.sender.stats
    }
}

impl FlowReceiver for NdpRecv {
    fn done(&self) -> &[FlowDone] {
        self.receiver.done()
    }
}
