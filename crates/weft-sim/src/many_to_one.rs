//! Many hosts into one output port, the many-to-one bottleneck of the Sandia study (two hosts to
//! one receiver over OC-3c: congestion and cell loss in the output buffer), as a star network on
//! the one event engine: each sender on its own link (rates may differ) into an output-queued
//! switch whose queue towards the receiver has the given buffer and drop policy.

use weft_model::fabric::Rng;
use weft_model::net::{EgressStats, HostSpec, IDEAL_ETHERNET, LinkSpec, NetworkError, Topology};
use weft_model::queue::{Buffer, Capacity, DropPolicy};
use weft_model::tech::{Encap, Framing};
use weft_model::{Duration, Instant, Rate};

use crate::metrics::Histogram;
use crate::net::{App, Cbr, CbrSpec, DEFAULT_JITTER_FRACTION, RunOptions, Sink, run};

/// Whether the run moves ATM cells (frames segmented by AAL5) or whole frames.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Each frame becomes `ceil((bytes + 8) / 48)` cells of 53 bytes.
    Cells,
    /// Each frame is one item of its own length (a packet network).
    Frames,
}

/// One sending host.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Host {
    /// Rate of the host's link into the switch.
    pub rate: Rate,
    /// Fraction of that rate the host offers, in `(0, 1]`.
    pub load: f64,
}

/// A many-to-one run.
#[derive(Clone, Debug, PartialEq)]
pub struct ManyToOne {
    /// The senders.
    pub hosts: Vec<Host>,
    /// Rate of the switch's output port towards the receiver.
    pub out_rate: Rate,
    /// Frame length in bytes (AAL5 payload, or packet length on the line in frame mode).
    pub frame_bytes: usize,
    /// Cells or frames.
    pub unit: Unit,
    /// Cells per frame when it is not plain AAL5 of `frame_bytes` (encapsulation added).
    pub frame_cells: Option<u64>,
    /// Output buffer.
    pub capacity: Capacity,
    /// Output buffer drop policy.
    pub policy: DropPolicy,
    /// Simulated time.
    pub duration: Duration,
    /// Record the occupancy every this long (zero: never).
    pub sample_every: Duration,
    /// Experiment seed (each host's phase and jitter are drawn from its own stream).
    pub seed: u64,
}

/// What a many-to-one run measured.
#[derive(Clone, Debug)]
pub struct ManyToOneResult {
    /// Work items of the engine: units (cells or frames) the hosts put on their lines, units
    /// offered to the output queue, and frames delivered.
    pub events: u64,
    /// Units (cells or frames) each host sent.
    pub per_host_sent: Vec<u64>,
    /// Units that left the output port.
    pub delivered: u64,
    /// The output queue's counters (units in, dropped, frames whole and damaged, per sender).
    pub output: EgressStats,
    /// Frames the hosts started.
    pub frames_sent: u64,
    /// Frames that arrived whole.
    pub frames_good: u64,
    /// Delay from a host handing a frame over to its last bit reaching the receiver, ns.
    pub delay: Histogram,
    /// `(ns, units held)` samples of the output buffer.
    pub occupancy: Vec<(u64, u64)>,
    /// Bytes of good frames delivered (frame payload only).
    pub good_bytes: u64,
    /// Simulated time.
    pub duration: Duration,
}

impl ManyToOneResult {
    /// Rate of payload in frames that arrived whole.
    pub fn goodput(&self) -> Rate {
        Rate::from_bytes_over(self.good_bytes, self.duration)
    }

    /// Units dropped over units offered to the output port.
    pub fn loss(&self) -> f64 {
        let o = &self.output;
        let (dropped, offered) = if o.cells_in > 0 {
            (o.cells_dropped, o.cells_in)
        } else {
            (o.frames_dropped, o.frames_in)
        };
        if offered == 0 {
            0.0
        } else {
            dropped as f64 / offered as f64
        }
    }
}

/// The link of a host or of the output: cells of plain AAL5 (`frame_bytes` or `frame_cells`
/// fixing the cell count), or frames charged exactly their length.
fn link(p: &ManyToOne, rate: Rate) -> (LinkSpec, u32) {
    match p.unit {
        Unit::Cells => {
            let mut l = LinkSpec::atm(Some(rate), Duration::ZERO, 0, 100);
            l.encap = Encap::Null;
            l.mtu = 65_000;
            // The datagram whose AAL5 PDU has exactly the frame's cells.
            let ip_len = match p.frame_cells {
                Some(c) => (c.max(1) * 48 - 8) as u32,
                None => p.frame_bytes as u32,
            };
            (l, ip_len)
        }
        Unit::Frames => {
            let mut l = LinkSpec::ethernet(Some(rate), Duration::ZERO);
            l.framing = Framing::Frame(weft_model::tech::FrameFormat {
                header: 0,
                ..IDEAL_ETHERNET
            });
            l.mtu = 65_000;
            (l, p.frame_bytes as u32)
        }
    }
}

fn buffer(c: Capacity) -> Buffer {
    match c {
        Capacity::Cells(n) => Buffer::cells(n),
        Capacity::Frames(n) => Buffer::frames(n),
        Capacity::Bytes(n) => Buffer::bytes(n),
    }
}

/// Runs a many-to-one experiment; `progress(now)` is called now and then. Fails only for a
/// run with no sender or more than 249.
pub fn run_many_to_one(
    p: &ManyToOne,
    progress: impl FnMut(Instant),
) -> Result<ManyToOneResult, NetworkError> {
    let n = p.hosts.len();
    let mut hosts: Vec<HostSpec> = Vec::new();
    let mut apps: Vec<(usize, Box<dyn App>)> = Vec::new();
    let end = Instant(p.duration.as_nanos());
    let mut ip_len = 0;
    for (i, h) in p.hosts.iter().enumerate() {
        let (l, len) = link(p, h.rate);
        ip_len = len;
        let frame_len = len as usize + weft_model::net::ETH_HEADER;
        let load = h.load.clamp(1e-9, 1.0);
        let rate = Rate((h.rate.as_bps() as f64 * load) as u64);
        apps.push((
            i,
            Box::new(Cbr::new(
                CbrSpec {
                    host: i,
                    dst: n,
                    ip_len: len,
                    wire_bytes: l.wire_bytes(frame_len),
                    rate,
                    jitter: DEFAULT_JITTER_FRACTION,
                    until: end,
                },
                Rng::for_stream(p.seed, i as u64),
            )),
        ));
        hosts.push(HostSpec {
            name: format!("h{i}"),
            addr: None,
            link: l,
            switch: 0,
        });
    }
    let (mut out, _) = link(p, p.out_rate);
    out.buffer = buffer(p.capacity);
    out.drop = match p.policy {
        DropPolicy::Tail => DropPolicy::Tail,
        DropPolicy::Ppd => DropPolicy::Ppd,
        DropPolicy::Epd { threshold } => DropPolicy::Epd {
            threshold: buffer(match p.capacity {
                Capacity::Cells(_) => Capacity::Cells(threshold),
                Capacity::Frames(_) => Capacity::Frames(threshold),
                Capacity::Bytes(_) => Capacity::Bytes(threshold),
            }),
        },
    };
    hosts.push(HostSpec {
        name: "receiver".into(),
        addr: None,
        link: out,
        switch: 0,
    });
    apps.push((n, Box::new(Sink::default())));
    let topo = Topology::star(hosts, Default::default(), p.seed);
    let opts = RunOptions {
        duration: p.duration,
        sample: (p.sample_every.as_nanos() > 0).then_some((n, p.sample_every)),
        tap: None,
    };
    let r = run(&topo, apps, opts, progress)?;
    let ports = r.network.all_host_stats();
    let output = ports.get(n).map(|s| s.egress.clone()).unwrap_or_default();
    let cells = p.unit == Unit::Cells;
    let units = |frames: u64| -> u64 {
        if cells {
            frames * weft_model::tech::aal5_cells(u64::from(ip_len))
        } else {
            frames
        }
    };
    let per_host_sent: Vec<u64> = ports
        .iter()
        .take(n)
        .map(|s| units(s.ingress.frames))
        .collect();
    let frames_sent: u64 = ports.iter().take(n).map(|s| s.ingress.frames).sum();
    let sink = r.hosts.app::<Sink>(n);
    let frames_good = sink.map_or(0, Sink::total);
    let delivered = if cells {
        output.cells_out
    } else {
        output.frames_out
    };
    let offered = if cells {
        output.cells_in
    } else {
        output.frames_in
    };
    Ok(ManyToOneResult {
        events: per_host_sent.iter().sum::<u64>() + offered + r.hosts.delivered,
        per_host_sent,
        delivered,
        output,
        frames_sent,
        frames_good,
        delay: sink.map(|s| s.delay.clone()).unwrap_or_default(),
        occupancy: r.occupancy,
        good_bytes: frames_good * p.frame_bytes as u64,
        duration: p.duration,
    })
}
