//! DCQCN on simulated hosts: the core's sans-IO DCQCN ([`weft_model::dcqcn`]) as applications,
//! one sender per flow and one receiver per receiving host, and the `tput` workloads of a
//! scenario that ask for it (`transport = "dcqcn"`): sized flows, their completion times beside
//! the ideal, and the fabric's marks, drops and queues. Data goes ECN-capable in the lossless
//! class ([`weft_model::dcqcn::DATA_DSCP`]), CNPs and acknowledgements in the priority class.

use std::any::Any;
use std::collections::HashMap;
use std::path::Path;

use serde_json::{Map, Value, json};
use weft_model::dcqcn::{
    DEFAULT_RTO, FlowDone, HEADER_BYTES, Params, Receiver, Sender, SenderStats, slowdown,
};
use weft_model::net::{ETH_HEADER, Topology};
use weft_model::scenario::{Scenario, Workload};
use weft_model::{Duration, Instant, Rate};

use super::frame::{SimFrame, UDP_IP_HEADERS};
use super::hosts::App;
use super::sized_flows::{FlowReceiver, FlowSender, run_sized_flows};
use super::tput::{FlowApps, flow_pairs};

/// The sending end of one DCQCN flow on its host.
pub struct DcqcnSend {
    host: usize,
    peer: usize,
    /// The flow's state machine.
    pub sender: Sender,
}

impl App for DcqcnSend {
    fn poll_send(&mut self, now: Instant) -> Option<(Instant, SimFrame)> {
        self.sender.handle_timeout(now.0);
        let p = self.sender.poll_transmit(now.0)?;
        Some((now, SimFrame::dcqcn(self.host, self.peer, p, now.0)))
    }
    fn deliver(&mut self, now: Instant, frame: SimFrame) {
        if let Some(p) = frame.dcqcn_packet().filter(|_| frame.checksum_ok()) {
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

/// The receiving end of every DCQCN flow into one host.
pub struct DcqcnRecv {
    host: usize,
    /// Each flow's sending host.
    peers: HashMap<u32, usize>,
    /// The host's state machine.
    pub receiver: Receiver,
}

impl App for DcqcnRecv {
    fn poll_send(&mut self, now: Instant) -> Option<(Instant, SimFrame)> {
        let p = self.receiver.poll_transmit(now.0)?;
        let peer = *self.peers.get(&p.flow)?;
        Some((now, SimFrame::dcqcn(self.host, peer, p, now.0)))
    }
    fn deliver(&mut self, now: Instant, frame: SimFrame) {
        if let Some(p) = frame.dcqcn_packet().filter(|_| frame.checksum_ok()) {
            if self.peers.contains_key(&p.flow) {
                let ce = frame.tos & 3 == weft_model::net::Ecn::Ce as u8;
                self.receiver.handle(now.0, &p, ce);
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

/// DCQCN's parameters on a host's line of `line`: the paper's ([`Params::PAPER`]), slowed down
/// on a line slower than 10 Gbit/s ([`Params::slowed`]).
fn params(line: Rate) -> Params {
    Params::PAPER.slowed(slowdown(line))
}

/// The line rate of host `h`'s link (100 Gbit/s if it names none).
fn host_line(topo: &Topology, h: usize) -> Rate {
    topo.hosts[h].link.rate.unwrap_or(Rate::mbps(100_000))
}

/// The applications of `w`'s flows of `size` bytes as DCQCN with the paper's parameters
/// ([`params`]): a sender per flow, a receiver per receiving host; with the `from` and `to`
/// hosts.
pub fn dcqcn_apps(
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
        // What a full packet takes on the wire beyond its payload: the pacer's spacing.
        let wire = link.wire_bytes(link.mtu as usize + ETH_HEADER);
        let overhead = (wire - u64::from(mss)) as u32;
        let line = host_line(topo, f);
        // Below 10 Gbit/s, the paper's dynamics slowed down by as much, its time-out too.
        let slow = slowdown(line);
        let sender = Sender::new(k as u32, size, mss, overhead, line, params(line), 0)
            .with_rto(Duration((DEFAULT_RTO.as_nanos() as f64 * slow) as u64));
        apps.push((
            f,
            Box::new(DcqcnSend {
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
        let peers = receivers.remove(&h).unwrap_or_default();
        apps.push((
            h,
            Box::new(DcqcnRecv {
                host: h,
                peers,
                receiver: Receiver::new(params(host_line(topo, h)).cnp_interval),
            }),
        ));
    }
    Ok((apps, (pairs, from, to)))
}

/// Runs a `tput` workload over DCQCN: completion times of its sized flows beside the ideal,
/// CNPs, go-back-N's retransmissions, and the fabric's marks, drops and largest queue.
pub fn tput_dcqcn(
    s: &Scenario,
    topo: &Topology,
    w: &Workload,
    capture: Option<&Path>,
    m: &mut Map<String, Value>,
    notes: &mut Vec<String>,
) {
    let run =
        run_sized_flows::<DcqcnSend, DcqcnRecv>("DCQCN", dcqcn_apps, s, topo, w, capture, m, notes);
    let Some(r) = run else { return };
    let cnps: u64 = r
        .hosts
        .apps_of::<DcqcnSend>()
        .map(|(_, a)| a.sender.rate.stats.cnps)
        .sum();
    m.insert("cnps".into(), json!(cnps));
}

impl FlowSender for DcqcnSend {
    fn stats(&self) -> &SenderStats {
        &self.sender.stats
    }
}

impl FlowReceiver for DcqcnRecv {
    fn done(&self) -> &[FlowDone] {
        self.receiver.done()
    }
}
