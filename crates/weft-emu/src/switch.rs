//! The switch as a sans-IO element: frames from hosts in (`handle_frame`), frames to hosts out
//! (`poll_transmit`), next deadline (`poll_timeout`). Each host's link has an ingress line (host
//! to switch) and an egress queue and line (switch to host); between them, either nothing
//! (output-queued) or an input-queued cell fabric ([`FabricStage`]). Frames go to the port that
//! owns the destination MAC (learned, and pre-seeded with the hosts' addresses); broadcast and
//! unknown destinations are flooded, bypassing the fabric.

use std::collections::HashMap;

use serde::Serialize;
use weft_model::{Element, Instant, element::PortId};

use crate::fabric_stage::{FabricStage, FabricStageError, FabricStats};
use crate::port::{Egress, EgressStats, Ingress, IngressStats, Train};
use crate::topo::Topology;

/// A frame the switch sends to a host.
#[derive(Debug)]
pub struct Transmit {
    /// The host's port.
    pub port: PortId,
    /// When the frame was due at the host (its last bit after the propagation delay).
    pub due: Instant,
    /// The frame.
    pub frame: Vec<u8>,
}

/// The counters of one port.
#[derive(Clone, Debug, Default, Serialize)]
pub struct PortStats {
    /// Host to switch.
    pub ingress: IngressStats,
    /// Switch to host.
    pub egress: EgressStats,
}

/// The userspace switch's fabric model.
#[derive(Debug)]
pub struct SwitchCore {
    ingress: Vec<Ingress>,
    egress: Vec<Egress>,
    fabric: Option<FabricStage>,
    macs: HashMap<[u8; 6], PortId>,
    next_port: usize,
    /// Frames that arrived on a port that does not exist or were too short to switch.
    pub runts: u64,
}

impl SwitchCore {
    /// A switch with one port per host of `topo`, in host order.
    pub fn new(topo: &Topology) -> Result<Self, FabricStageError> {
        let mut macs = HashMap::new();
        let mut ingress = Vec::new();
        let mut egress = Vec::new();
        for (i, h) in topo.hosts.iter().enumerate() {
            let s = topo
                .seed
                .wrapping_mul(0x1000_0000_01b3)
                .wrapping_add(i as u64 * 2);
            ingress.push(Ingress::new(&h.link, s));
            egress.push(Egress::new(&h.link, s.wrapping_add(1)));
            macs.insert(Topology::mac_of(i), i);
        }
        let framings = topo.hosts.iter().map(|h| h.link.framing).collect();
        let fabric = FabricStage::new(&topo.fabric, framings, topo.seed ^ 0xfab)?;
        Ok(SwitchCore {
            ingress,
            egress,
            fabric,
            macs,
            next_port: 0,
            runts: 0,
        })
    }

    /// Number of ports.
    pub fn ports(&self) -> usize {
        self.ingress.len()
    }

    /// A frame from the host on `port` at `now`.
    pub fn handle_frame(&mut self, now: Instant, port: PortId, frame: Vec<u8>) {
        if port >= self.ingress.len() || frame.len() < 14 {
            self.runts += 1;
            return;
        }
        let mut dst = [0u8; 6];
        dst.copy_from_slice(&frame[0..6]);
        let mut src = [0u8; 6];
        src.copy_from_slice(&frame[6..12]);
        if src[0] & 1 == 0 {
            self.macs.entry(src).or_insert(port);
        }
        let out = if dst[0] & 1 == 0 {
            self.macs.get(&dst).copied()
        } else {
            None
        };
        let Some(mut train) = self.ingress[port].handle_frame(now, frame) else {
            return;
        };
        train.flow = port as u32;
        match out {
            Some(o) if o != port => match &mut self.fabric {
                Some(f) => f.handle_train(port, o, train),
                None => self.egress[o].handle_train(train),
            },
            Some(_) => {}
            None => {
                let n = self.egress.len();
                for o in (0..n).filter(|&o| o != port) {
                    self.egress[o].handle_train(train.clone());
                }
            }
        }
    }

    /// The next frame due at a host at or before `now`. Ports are served round-robin.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        if let Some(f) = &mut self.fabric {
            let egress = &mut self.egress;
            f.advance(now.as_nanos(), &mut |o: usize, t: Train| {
                if let Some(e) = egress.get_mut(o) {
                    e.handle_train(t);
                }
            });
        }
        let n = self.egress.len();
        for k in 0..n {
            let port = (self.next_port + k) % n;
            if let Some((due, frame)) = self.egress[port].poll_frame(now.as_nanos()) {
                self.next_port = (port + 1) % n;
                return Some(Transmit {
                    port,
                    due: Instant(due),
                    frame,
                });
            }
        }
        None
    }

    /// The earliest instant at which something changes without new input.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.egress
            .iter()
            .filter_map(|e| e.poll_timeout())
            .chain(self.fabric.as_ref().and_then(FabricStage::poll_timeout))
            .min()
            .map(Instant)
    }

    /// The fabric's counters (`None`: output-queued).
    pub fn fabric_stats(&self) -> Option<FabricStats> {
        self.fabric.as_ref().map(|f| f.stats.clone())
    }

    /// Counters per port, in host order.
    pub fn stats(&self) -> Vec<PortStats> {
        self.ingress
            .iter()
            .zip(&self.egress)
            .map(|(i, e)| PortStats {
                ingress: i.stats.clone(),
                egress: e.stats.clone(),
            })
            .collect()
    }
}

impl Element<Vec<u8>> for SwitchCore {
    fn handle_input(&mut self, now: Instant, port: PortId, item: Vec<u8>) {
        self.handle_frame(now, port, item);
    }
    fn poll_output(&mut self, now: Instant) -> Option<(PortId, Vec<u8>)> {
        self.poll_transmit(now).map(|t| (t.port, t.frame))
    }
    fn poll_timeout(&self) -> Option<Instant> {
        SwitchCore::poll_timeout(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topo::{HostSpec, LinkSpec};
    use weft_model::{Duration, Rate};

    fn frame(dst: [u8; 6], src: [u8; 6], len: usize) -> Vec<u8> {
        let mut f = vec![0u8; len];
        f[0..6].copy_from_slice(&dst);
        f[6..12].copy_from_slice(&src);
        f
    }

    #[test]
    fn forwards_by_mac_and_floods_broadcast() {
        let link = LinkSpec::ethernet(Some(Rate::mbps(100)), Duration::from_micros(10));
        let hosts = (0..3)
            .map(|i| HostSpec {
                name: format!("h{i}"),
                addr: None,
                link: link.clone(),
            })
            .collect();
        let mut sw = SwitchCore::new(&Topology {
            hosts,
            seed: 3,
            fabric: Default::default(),
        })
        .unwrap();
        let m = Topology::mac_of;
        sw.handle_frame(Instant(0), 0, frame(m(2), m(0), 1000));
        sw.handle_frame(Instant(0), 1, frame([0xff; 6], m(1), 100));
        let mut got = Vec::new();
        let mut now = Instant(0);
        while let Some(t) = sw.poll_timeout() {
            now = now.max(t);
            while let Some(tx) = sw.poll_transmit(now) {
                assert!(tx.due <= now);
                got.push((tx.port, tx.frame.len()));
            }
        }
        got.sort();
        assert_eq!(got, vec![(0, 100), (2, 100), (2, 1000)]);
        // 1000 bytes at 100 Mbit/s twice (80 us each) plus 10 us of delay twice.
        assert!(now.as_nanos() >= 180_000);
    }
}
