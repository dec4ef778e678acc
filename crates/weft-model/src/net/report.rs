//! What a network did to a workload's frames, from its port counters: the whole-frame goodput
//! and cell loss at the receivers' queues, and the same per sender, so that unfairness among
//! senders shows. Both engines report it in the same shape.

use serde::Serialize;

use super::network::TrunkStats;
use super::switch::PortStats;

/// Drops, ECN marks, the largest queue and the frames forwarded over every output of a fabric
/// (the host ports and both directions of every trunk), as both engines report a fabric run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FabricCounts {
    /// Frames dropped at any output.
    pub frames_dropped: u64,
    /// Frames marked Congestion Experienced at any output.
    pub frames_marked: u64,
    /// The largest occupancy of any output, in its buffer's unit.
    pub max_queue: u64,
    /// Frames that left any output (each hop counts).
    pub frames_forwarded: u64,
    /// Frames a shared buffer's dynamic threshold refused at any output (0 without one).
    pub frames_over_threshold: u64,
}

impl FabricCounts {
    /// The counts over host ports `hosts` and trunks `trunks`.
    pub fn of(hosts: &[PortStats], trunks: &[TrunkStats]) -> Self {
        let egress = hosts
            .iter()
            .map(|p| &p.egress)
            .chain(trunks.iter().flat_map(|t| t.egress.iter()));
        let mut c = FabricCounts::default();
        for e in egress {
            c.frames_dropped += e.frames_dropped;
            c.frames_marked += e.frames_marked;
            c.max_queue = c.max_queue.max(e.max_occupancy);
            c.frames_forwarded += e.frames_out;
            c.frames_over_threshold += e.frames_over_threshold;
        }
        c
    }
}

/// One sender's frames as seen at the receivers' output queues.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SenderStats {
    /// The sending host.
    pub host: String,
    /// Frames the host handed to its link.
    pub sent: u64,
    /// Frames of it that reached a receiver's output queue.
    pub offered: u64,
    /// Frames of it delivered whole.
    pub delivered: u64,
    /// `delivered / offered`.
    pub frame_goodput: f64,
    /// Cells of it offered to the receivers' queues (ATM).
    pub cells_in: u64,
    /// Cells of it dropped there.
    pub cells_dropped: u64,
    /// `cells_dropped / cells_in` (0 without cells).
    pub cell_loss: f64,
}

/// A workload's frames at the receivers' output queues.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Delivery {
    /// Frames offered to the receivers' queues.
    pub frames_in: u64,
    /// Frames delivered whole.
    pub frames_out: u64,
    /// Frames that lost cells and failed reassembly.
    pub frames_corrupt: u64,
    /// Frames refused by EPD.
    pub frames_epd: u64,
    /// Cells offered (ATM).
    pub cells_in: u64,
    /// Cells dropped (ATM).
    pub cells_dropped: u64,
    /// `frames_out / frames_in`, if any frame was offered.
    pub frame_goodput: Option<f64>,
    /// `cells_dropped / cells_in`, if any cell was offered.
    pub cell_loss: Option<f64>,
    /// Per sender.
    pub per_sender: Vec<SenderStats>,
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 { 0.0 } else { a as f64 / b as f64 }
}

/// The delivery of frames from hosts `from` to hosts `to` (indices into `ports`, the host ports
/// in host order; `names` their names).
pub fn delivery(ports: &[PortStats], names: &[String], from: &[usize], to: &[usize]) -> Delivery {
    let mut d = Delivery::default();
    for &r in to {
        let Some(p) = ports.get(r) else { continue };
        let e = &p.egress;
        d.frames_in += e.frames_in;
        d.frames_out += e.frames_out;
        d.frames_corrupt += e.frames_corrupt;
        d.frames_epd += e.frames_epd;
        d.cells_in += e.cells_in;
        d.cells_dropped += e.cells_dropped;
    }
    d.frame_goodput = (d.frames_in > 0).then(|| ratio(d.frames_out, d.frames_in));
    d.cell_loss = (d.cells_in > 0).then(|| ratio(d.cells_dropped, d.cells_in));
    for &s in from {
        let mut st = SenderStats {
            host: names.get(s).cloned().unwrap_or_default(),
            sent: ports.get(s).map_or(0, |p| p.ingress.frames),
            ..SenderStats::default()
        };
        for &r in to {
            let Some(f) = ports.get(r).and_then(|p| p.egress.flows.get(s)) else {
                continue;
            };
            st.offered += f.frames_in;
            st.delivered += f.frames_out;
            st.cells_in += f.cells_in;
            st.cells_dropped += f.cells_dropped;
        }
        st.frame_goodput = ratio(st.delivered, st.offered);
        st.cell_loss = ratio(st.cells_dropped, st.cells_in);
        d.per_sender.push(st);
    }
    d
}
