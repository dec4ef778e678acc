//! Scenario files: one TOML document describing hosts, switches, links, workloads and the
//! published figure the run is held against (DESIGN.md, "Scenario files").
//!
//! This module only parses and validates text; reading the file is the caller's job
//! ([`Scenario::parse`] takes the text and the file name used in error messages). Every error
//! names the file, the line and column, the key (as a path such as `link[2].delay`) and what was
//! expected.
//!
//! ```toml
//! name = "gigaswitch-contention"
//! description = "Tables 7-9 of the GIGAswitch study"
//! seed = 1
//!
//! [[host]]
//! name = "a"
//!
//! [[switch]]
//! name = "sw"
//! fabric = "input-fifo"        # output-queued | input-fifo | voq-islip
//! ports = 5
//! buffer = "512 frames"        # "N cells" | "N frames" | a size such as "64KiB"; absent = unbounded
//! drop = "tail"                # tail | ppd | epd
//! epd_threshold = 0.8          # epd only: a fraction of the buffer, or "N cells"/"N frames"/size
//!
//! [[link]]
//! ends = ["a", "sw"]
//! tech = "fddi"                # a preset, or a table: { preset = "e3", rate = "26Mbps", mtu = 4490 }
//! delay = "1us"
//! loss = 0.0                   # per frame, each direction; also corrupt, duplicate, reorder (+ reorder_delay)
//!
//! [[workload]]
//! kind = "saturated"           # saturated | bernoulli | onoff | hotspot | frames | tput | rr | mp | vc | ring | nfs | x11
//! switch = "sw"
//! inputs = [1, 2, 3, 4, 5]     # an array makes a sweep; at most one swept field per workload
//! outputs = 5
//! rate = "95Mbps"
//! slots = 1000000
//!
//! [expect]                     # or [[expect]] for several
//! source = "gigaswitch.contention_model_mbps"   # dotted key into figures.toml
//! metric = "throughput_mbps"   # the sample key engines report; default depends on the kind
//! tolerance = 0.10             # relative
//! items = ["003.t9.model.1", "003.t9.model.2", "-"]   # the catalogue item of each row ("-": none)
//!
//! [vc]                         # optional: a host database for `vc` workloads (see `parse_vc`)
//!
//! [[check]]                    # a qualitative result of the study (see `check`)
//! item = "003.t9.falls"
//! decreasing = "throughput_mbps @ w0"
//! ```
//!
//! # What engines report
//! An engine running a scenario returns one `ResultDoc` whose `samples` hold one object per point
//! of every workload, in the order of [`Scenario::points`], each with `"workload"` (its index),
//! `"point"` (the swept value or null) and the metrics it computed. The metric names are those of
//! [`Metric`]; `weft run` compares the sample key named by each [`Expect::metric`] with the
//! published figure. Every engine gets there by the one loop of [`run`]: it runs one point with
//! the point's seed ([`run::PointEngine`]) and [`run::run_points`] labels the samples.

mod check;
mod compare;
pub mod emu;
mod flows;
mod parse;
mod parse_abr;
mod parse_check;
mod parse_fabric;
mod parse_forwarding;
mod parse_lane;
mod parse_nfs;
mod parse_ring;
mod parse_segment;
mod parse_vc;
mod parse_x11;
mod reader;
pub mod run;
mod tcp;
mod topology;

use serde::Serialize;

use crate::tech::{Tech, Transport};
use crate::time::Duration;
use crate::units::{Rate, Size};

/// The published figures, at the bottom layer ([`crate::figures`]); these paths kept.
pub use crate::figures::{BUNDLED_NAME, BUNDLED_TEXT, FigureError, Figures};
pub use check::{Check, CheckCell, CheckResult, CheckTest, ValueRef};
pub use compare::{Cell, Comparison, EngineSamples, NO_ITEM, NO_SOURCE, Row};
pub use parse_fabric::FabricGen;
pub use parse_segment::SharedRing;

/// A scenario file, parsed and validated.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Scenario {
    /// Short name, used in result kinds and file names.
    pub name: String,
    /// Free text shown in reports.
    pub description: String,
    /// Seed for every random stream of the run (sources derive their own from it); default 1.
    pub seed: u64,
    /// End hosts.
    pub hosts: Vec<Host>,
    /// Switches.
    pub switches: Vec<Switch>,
    /// Links between hosts and switches.
    pub links: Vec<Link>,
    /// Traffic to run.
    pub workloads: Vec<Workload>,
    /// Published figures to compare with.
    pub expect: Vec<Expect>,
    /// Qualitative results of the studies to check (`[[check]]`).
    pub checks: Vec<Check>,
    /// The host database `vc` workloads plan their circuits from (`[vc]`, the format of
    /// `weft vc plan`'s file under one table); `None`: the file has none.
    pub vc: Option<crate::vc::HostDb>,
    /// The generator of the file's `[fabric]` table, whose hosts, switches and links are in
    /// `hosts`, `switches` and `links` after the file's own; `None`: the file has none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fabric: Option<FabricGen>,
    /// The plan the switches forward by (`[vc]`'s `forward`): the simulator's and the
    /// emulator's switches switch cells by its tables instead of by MAC address.
    pub vc_forward: Option<crate::vc::Shape>,
    /// A switch that fails during the run and is restored by the connection manager (`[vc]`'s
    /// `fail`), on the simulator and the emulator.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vc_failure: Option<crate::net::VcFailure>,
    /// Traffic contracts on circuits and paths of the plan the switches forward by
    /// (`[[vc.contract]]`), policed or shaped by the switch that enforces each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub vc_contracts: Vec<crate::vc::CircuitContract>,
    /// Hosts that share FDDI rings in front of switch ports (`[[ring]]`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rings: Vec<SharedRing>,
    /// How the emulator runs this file where it cannot run it as written (`[emu]`: a link rate
    /// this machine keeps, a congestion control standing in for one the kernel lacks);
    /// [`Scenario::as_emulated`] applies it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub emu: Option<emu::EmuSettings>,
}

/// An end host.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Host {
    /// Unique name among hosts and switches.
    pub name: String,
    /// Address, if given (`None`: the engine assigns one).
    pub addr: Option<String>,
    /// The host's cost model: a preset of [`crate::host::presets`] by name (`None`: a host that
    /// costs nothing, the network alone decides).
    pub costs: Option<String>,
    /// The host's disk: a preset of [`crate::host::disk::presets`] by name (`None`: no disk;
    /// file transfers move memory).
    pub disk: Option<String>,
    /// Its ATM adapter is an ABR source (key `abr = { pcr, mcr, icr, rif, rdf, nrm }`); `None`:
    /// it sends at its line's rate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub abr: Option<crate::shaper::AbrParams>,
    /// Its ATM adapter runs a LAN Emulation client whose driver costs this on top of its stack
    /// (key `lane_driver = { packet, byte }`, [`crate::host::lane`]); only on a host whose link
    /// carries LANE encapsulation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lane_driver: Option<crate::host::lane::LaneDriver>,
}

impl Host {
    /// Its cost model, the preset `costs` names (`None`: a host that costs nothing). The parser
    /// refuses an unknown name, so `None` means none was named.
    /// A LANE driver (`lane_driver`) adds its costs to the preset's, or to a host that costs
    /// nothing else.
    pub fn cost_preset(&self) -> Option<crate::host::HostCosts> {
        let preset = self
            .costs
            .as_deref()
            .and_then(crate::host::presets::by_name);
        match self.lane_driver {
            Some(d) => Some(d.charged(&preset.unwrap_or(crate::host::HostCosts::FREE))),
            None => preset,
        }
    }

    /// Its disk, the preset `disk` names (`None`: no disk).
    pub fn disk_preset(&self) -> Option<crate::host::disk::DiskSpec> {
        self.disk
            .as_deref()
            .and_then(crate::host::disk::presets::by_name)
    }
}

/// The switching fabric of a switch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Fabric {
    /// Output-queued: every arrival reaches its output queue in the slot it arrives (with speed-up).
    OutputQueued,
    /// Input-queued with one FIFO per input: head-of-line blocking.
    InputFifo,
    /// Virtual output queues scheduled by iSLIP.
    VoqIslip,
}

/// How an input-queued FIFO fabric picks among inputs contending for one output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Contention {
    /// Uniformly at random.
    Random,
    /// Round-robin from the input after the last winner.
    RoundRobin,
}

impl From<Contention> for crate::fabric::Contention {
    fn from(c: Contention) -> Self {
        match c {
            Contention::Random => crate::fabric::Contention::Random,
            Contention::RoundRobin => crate::fabric::Contention::RoundRobin,
        }
    }
}

pub use crate::queue::{Buffer, BufferUnit};

/// What a full (or filling) queue drops, its EPD threshold as written: a [`Buffer`].
pub type DropPolicy = crate::queue::DropPolicy<Buffer>;

/// A switch.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Switch {
    /// Unique name among hosts and switches.
    pub name: String,
    /// The fabric.
    pub fabric: Fabric,
    /// Number of ports; `None`: as many as links attached.
    pub ports: Option<u32>,
    /// Buffer per queue; `None`: unbounded.
    pub buffer: Option<Buffer>,
    /// Drop policy of its queues.
    pub drop: DropPolicy,
    /// Output-queued speed-up (cells an output can accept per slot); default 1 per input = N.
    pub speedup: Option<u32>,
    /// iSLIP iterations per slot (default 1).
    pub iterations: u32,
    /// Contention resolution of an input-FIFO fabric (default random).
    pub contention: Contention,
    /// Fixed forwarding latency added to every item, ns (default 0).
    pub latency: Duration,
    /// Frames go on as their first bits arrive (after `latency`), not once whole (default
    /// false: store and forward).
    pub cut_through: bool,
    /// Share of the buffer from which its queues drop the cells of tagged frames (CLP = 1),
    /// 0..=1; `None`: tagged cells are queued like the others.
    pub clp_threshold: Option<f64>,
    /// ECN marking threshold K of its queues onto Ethernet links (in frames, bytes or
    /// cells): ECN-capable frames that find a queue this full are marked Congestion
    /// Experienced; `None`: no marking.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ecn_threshold: Option<Buffer>,
    /// RED-style ECN marking of its queues onto Ethernet links (`ecn_red = "dcqcn"`: the DCQCN
    /// paper's 5 KB, 200 KB, 1%, [`crate::net::RedSpec::DCQCN`]); `None`: none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ecn_red: Option<crate::net::RedSpec>,
    /// Its queues onto Ethernet links trim: a frame that finds one full is cut to its headers,
    /// which go ahead of the data in a priority queue (NDP, Ultra Ethernet); default false.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub trim: bool,
    /// Priority flow control on its Ethernet links (`pfc = true`, 802.1Qbb): each input pauses
    /// its far end past XOFF and resumes it at XON, with the headroom the link needs
    /// ([`crate::net::PfcSpec::headroom_for`]); `None`: lossy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pfc: Option<PfcThresholds>,
    /// Share of the buffer from which its queues onto ATM links mark the cells they take in
    /// EFCI, 0..=1; `None`: no marking.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub efci_threshold: Option<f64>,
    /// Share of each ATM line's rate its queues offer the ABR circuits through them as an
    /// explicit rate, divided equally among them, 0..=1; `None`: no explicit rate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub abr_er: Option<f64>,
    /// One buffer its Ethernet output queues share (`buffer = "shared 2MB"`, then `buffer` is
    /// its size), each admitting a frame only while its queue is below `alpha` times the free
    /// buffer (`alpha`, default 1: [`crate::net::SharedBuffer`]); `None`: a buffer per queue.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shared: Option<crate::net::SharedBufferSpec>,
    /// A store-and-forward router's forwarding processors (`forwarding = { per_packet = "20us",
    /// per_byte = "1ns" }`): every packet it routes waits for one, whole, before its output
    /// queue ([`crate::net::Forwarder`]); `None`: packets cost it no processing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub forwarding: Option<crate::net::ForwardingSpec>,
}

/// A switch's PFC thresholds, per input and class (`pfc_xoff`, `pfc_xon`; frames count as
/// MTU-sized).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct PfcThresholds {
    /// Pause the far end from this much.
    pub xoff: Buffer,
    /// Resume it at or below this much.
    pub xon: Buffer,
}

/// A link between two named nodes (hosts or switches), the same in both directions.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Link {
    /// The two nodes it joins.
    pub ends: [String; 2],
    /// The technology, after any field-by-field overrides.
    pub tech: Tech,
    /// One-way propagation delay, ns.
    pub delay: Duration,
    /// Probability that a frame is lost, each direction, 0..=1.
    pub loss: f64,
    /// Probability that a frame is delivered with a bit flipped (the receiver's checksum drops
    /// it), 0..=1.
    pub corrupt: f64,
    /// Probability that a frame is delivered twice, 0..=1.
    pub duplicate: f64,
    /// Probability that a frame is held back by `reorder_delay` so later ones overtake it.
    pub reorder: f64,
    /// How long a reordered frame is held back (default 1 ms).
    pub reorder_delay: Duration,
    /// The traffic contract of the VC the link carries, shaped or policed where it enters the
    /// network (keys `pcr`, `scr`, `mbs`, `cdvt`, `police`); `None`: no contract.
    pub contract: Option<crate::shaper::VcContract>,
}

impl Link {
    /// The link's faults, as the engines inject them.
    pub fn faults(&self) -> crate::net::Faults {
        crate::net::Faults {
            loss: self.loss,
            corrupt: self.corrupt,
            duplicate: self.duplicate,
            reorder: self.reorder,
            reorder_delay: self.reorder_delay,
        }
    }
}

/// What traffic a workload generates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum WorkloadKind {
    /// Every input always has traffic, to destinations uniform over `outputs` (the head-of-line
    /// and GIGAswitch contention experiments).
    Saturated,
    /// Bernoulli arrivals at `load` per input per slot, uniform destinations.
    Bernoulli,
    /// Bursty on-off arrivals with mean burst `burst` at mean `load`.
    Onoff,
    /// Bernoulli arrivals with a fraction `hotspot` of traffic aimed at output 0 (many-to-one).
    Hotspot,
    /// Fixed-rate frame sources of `size` bytes at `rate`, segmented into cells.
    Frames,
    /// Bulk transfer (ttcp): `proto` from `from` to `to` with `window`, path `mtu`, for `time`.
    Tput,
    /// Request/response (echo): `count` requests of `size` bytes from `from` to a server on `to`,
    /// one at a time over UDP or one TCP connection (`proto`), each answered with
    /// `response_size` bytes (default `size`); one unanswered within `timeout` is counted as
    /// lost.
    Rr,
    /// Message passing among the hosts `ranks` (in rank order): a `pattern` of `weft mp` at
    /// `size`, or an NPB skeleton (`bt.S`, `lu.A`, ...), for `iterations`, by `route`.
    Mp,
    /// A file transfer by RIACS's protocols (study 004): SBTP or MBTP from `from` to `to`, from
    /// the sender's disk to the receiver's (`mode`, `file`, `buffer`, `packet`, `receivers`,
    /// `stripes`, `socket_buffer`).
    Xfer,
    /// Virtual circuits planned from the scenario's `[vc]` host database: a `plan` (mesh,
    /// sites, star around `hub`, or the database's pairs) among the hosts of `sites` (default
    /// all) or its first `hosts`; the counts of circuits and cross-connect entries.
    Vc,
    /// A shared FDDI ring under the timed-token protocol: `active` of its `stations` always
    /// have frames of `size` bytes (study 003's concentrators and its "small FDDI network").
    Ring,
    /// NFS over UDP RPC ([`crate::app::nfs`]): the client on `from` reads or writes (`op`)
    /// `count` transfers of `size` bytes (default 8192) through the server on `to`, `biods`
    /// at once, the server's `disk` holding the file.
    Nfs,
    /// X11 display traffic ([`crate::app::x11`]): the renderer on `from` draws `frames` frames
    /// of `width` x `height` pixels at `depth` bits, each after `render` of its own time, and
    /// shows each on the X server on `to` as PutImage requests over one TCP connection,
    /// calling XSync after each.
    X11,
}

/// The NFS part of a workload of kind `nfs`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct NfsWorkload {
    /// Read or write.
    pub op: crate::app::nfs::NfsOp,
    /// Requests outstanding at most (the client's biods).
    pub biods: u32,
}

/// The X11 part of a workload of kind `x11`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct X11Workload {
    /// The frame each PutImage sequence shows.
    pub frame: crate::app::x11::Frame,
    /// The renderer's time per frame before it sends it.
    pub render: Duration,
    /// Frames to show.
    pub frames: u64,
}

/// Which TCP implementation a simulated host runs (the emulator always runs Linux's).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TcpStack {
    /// A 1995 BSD-derived stack ([`crate::tcp::Config::default`]): initial window 1, 200 ms
    /// delayed ACKs, 500 ms timer ticks, no SACK.
    #[default]
    Bsd,
    /// A modern Linux stack ([`crate::tcp::Config::linux`]): initial window 10, SACK, 40 ms
    /// delayed ACKs, 200 ms minimum RTO.
    Linux,
}

/// The message-passing part of a workload of kind `mp`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MpWorkload {
    /// The hosts that run the ranks, rank 0 first.
    pub ranks: Vec<String>,
    /// What they run.
    pub pattern: crate::mp::Pattern,
    /// Timed iterations (NPB: time steps); `None`: the engine's default (NPB: the benchmark's).
    pub iterations: Option<u64>,
    /// Direct or through daemons.
    pub route: crate::mp::Route,
}

/// SBTP or MBTP (RIACS, study 004).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum XferMode {
    /// The Simple Buffer Transfer Protocol: one receiver, one buffer at a time.
    Sbtp,
    /// The Multiple Buffer Transfer Protocol: one sender, several receivers taking turns.
    Mbtp,
}

/// The transfer part of a workload of kind `xfer`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct XferWorkload {
    /// The protocol.
    pub mode: XferMode,
    /// Bytes of the file.
    pub file: Size,
    /// Bytes of each buffer (default 1 MiB, MBTP's in RIACS's Table 3).
    pub buffer: Size,
    /// Payload bytes of each datagram (default 9000, RIACS's).
    pub packet: Size,
    /// MBTP's receivers (default 5, RIACS's); SBTP has one.
    pub receivers: u32,
    /// UDP sockets each receiver stripes a buffer over (default 4).
    pub stripes: u32,
    /// Receive buffer of each of those sockets (default 41600 bytes, 4.3BSD's `udp_recvspace`,
    /// which SunOS 4.1 kept).
    pub socket_buffer: Size,
}

/// The circuit part of a workload of kind `vc`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct VcWorkload {
    /// Which circuits (`plan = "mesh" | "sites" | "star" | "pairs"`, `hub` for a star).
    pub shape: crate::vc::Shape,
    /// Only the database's hosts at these sites, and the hub (empty: every host).
    pub sites: Vec<String>,
    /// Only the first this many of those hosts (`None`: all); sweepable, for the growth.
    pub hosts: Option<u32>,
}

/// The ring of a workload of kind `ring`: a shared FDDI ring ([`crate::net::TokenRing`]) whose
/// `active` stations always have frames of the workload's `size` (an IP datagram) to send.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RingWorkload {
    /// Stations on the ring (`stations`), each a MAC repeating what passes it.
    pub stations: u32,
    /// Stations that always have frames (`active`, default all; with `acks`, at most
    /// `stations - 1`).
    pub active: u32,
    /// Kilometres of fibre around the ring (`fibre_km`, default 0).
    pub fibre_km: f64,
    /// Latency each station adds repeating the signal (`station_delay`, default 1 us).
    pub station_delay: Duration,
    /// Target token rotation time (`ttrt`, default 8 ms).
    pub ttrt: Duration,
    /// The active stations' frames are TCP segments to the ring's last station, which answers
    /// every second one with a 40-byte ACK on the same ring (`acks`, default false).
    pub acks: bool,
}

/// One workload. Fields a kind does not use are `None`; [`Scenario::parse`] checks that each
/// kind has the fields it needs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Workload {
    /// What traffic.
    pub kind: WorkloadKind,
    /// The switch whose ports the synthetic kinds drive (default: the only switch).
    pub switch: Option<String>,
    /// Sending hosts (tput, frames).
    pub from: Vec<String>,
    /// Receiving hosts (tput, frames).
    pub to: Vec<String>,
    /// Number of inputs offering traffic (default: all ports).
    pub inputs: Option<u32>,
    /// Number of outputs destinations are drawn from (default: all ports).
    pub outputs: Option<u32>,
    /// Ports of a square fabric (sets both inputs and outputs when they are absent).
    pub ports: Option<u32>,
    /// Offered load per input, 0..=1 of a port's rate.
    pub load: Option<f64>,
    /// Mean burst length in cells or frames (onoff).
    pub burst: Option<f64>,
    /// Fraction of traffic to the hot output (hotspot).
    pub hotspot: Option<f64>,
    /// Slots to simulate (slotted kinds).
    pub slots: Option<u64>,
    /// Slots to run before measuring.
    pub warmup: Option<u64>,
    /// Transport (tput).
    pub proto: Option<Transport>,
    /// TCP window, bytes.
    pub window: Option<Size>,
    /// TCP maximum segment size, bytes (default: the path MTU less 40 bytes of headers).
    pub mss: Option<Size>,
    /// TCP congestion control (default: Reno on the `bsd` stack, CUBIC on `linux`).
    pub cc: Option<crate::tcp::CcAlgorithm>,
    /// The TCP implementation simulated hosts run (default `bsd`).
    pub stack: Option<TcpStack>,
    /// Requests of a request/response workload.
    pub count: Option<u64>,
    /// How long a request waits for its answer before it is counted as lost.
    pub timeout: Option<Duration>,
    /// Path MTU the transfer uses (default: the smallest link MTU on its path), bytes.
    pub mtu: Option<Size>,
    /// Frame or message size, bytes.
    pub size: Option<Size>,
    /// Bytes of each answer of a request/response workload (default: `size`).
    pub response_size: Option<Size>,
    /// Request/response over TCP: `TCP_NODELAY` on both ends (default: Nagle's algorithm on, as
    /// the stack has it).
    pub nodelay: bool,
    /// TCP asks for ECN (RFC 3168) whatever its congestion control: set where cubic with ECN
    /// stands in for dctcp ([`Scenario::as_emulated`]); dctcp asks for it anyway. Not a file key.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub ecn: bool,
    /// Request/response over TCP: the server is an RFC 862 echo service, writing back what each
    /// read returns at once, instead of answering once the whole request has arrived.
    pub echo: bool,
    /// Per-source rate (frames), or the rate a port achieves without contention (saturated).
    pub rate: Option<Rate>,
    /// Duration of the run (tput, frames).
    pub time: Option<Duration>,
    /// Round-trip time to assume when the topology gives none, ns.
    pub rtt: Option<Duration>,
    /// The swept field, if any: one point per value.
    pub sweep: Option<Sweep>,
    /// Kind `mp`: ranks, pattern, iterations and route.
    pub mp: Option<MpWorkload>,
    /// Kind `xfer`: the protocol and its sizes.
    pub xfer: Option<XferWorkload>,
    /// Kind `tput` over TCP: FTP of a file of this many bytes, which the sender reads from its
    /// host's `disk` and the receiver writes to its own (`None`: memory to memory, as ttcp).
    pub file: Option<Size>,
    /// Kind `vc`: the circuits to plan.
    pub vc: Option<VcWorkload>,
    /// Kind `ring`: the shared ring and its stations.
    pub ring: Option<RingWorkload>,
    /// Kind `nfs`: the operation and the biods.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nfs: Option<NfsWorkload>,
    /// Kind `x11`: the frames and the renderer's time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub x11: Option<X11Workload>,
    /// An earlier `tput` workload of the file (its index) whose flows run at the same time as
    /// this `rr` workload's requests on the simulator: request/response beside bulk traffic.
    pub beside: Option<usize>,
    /// Request/response: every (`from`, `to`) pair at once instead of one pair after another:
    /// each client a process of its own on its host, each server host one echo process that
    /// answers all its clients (the GIGAswitch study's one-to-many and many-to-one tests).
    pub together: bool,
    /// How the fabric's switches spread this workload's frames over equal-cost ports, in
    /// place of the `[fabric]`'s (`multipath`, `flowlet_gap`); `None`: the fabric's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub multipath: Option<crate::net::Multipath>,
    /// The pattern of a `tput` workload's flows (`traffic = "permutation" | "incast" | "pairs"`);
    /// `None`: every `from` host to every `to` host.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub traffic: Option<crate::app::traffic::Traffic>,
    /// Bytes of each flow of a `tput` workload over TCP: each flow closes once it has sent
    /// them, and its completion time is reported; `None`: flows send until `time`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flow_size: Option<Size>,
    /// A `tput` workload's flows run NDP ([`crate::ndp`]; `transport = "ndp"`) instead of
    /// TCP: receiver-driven pulls, meant for a fabric whose switches trim (`trim = true`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub ndp: bool,
    /// A `tput` workload's flows run DCQCN ([`crate::dcqcn`]; `transport = "dcqcn"`) instead
    /// of TCP: RoCEv2's rate control, meant for switches that mark ECN (`ecn_red`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub dcqcn: bool,
}

/// A value of a swept field.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Param {
    /// A count (inputs, outputs, ports, slots).
    Count(u64),
    /// A fraction or plain number (load, burst, hotspot).
    Number(f64),
    /// A size in bytes (window, mtu, size).
    Size(Size),
    /// A rate (rate).
    Rate(Rate),
    /// A duration (time, rtt).
    Duration(Duration),
}

/// A list of values for one workload field.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Sweep {
    /// The field name as written in the file (`inputs`, `load`, `window`, ...).
    pub field: String,
    /// The values, in file order.
    pub values: Vec<Param>,
}

/// A comparison with a published figure.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Expect {
    /// Dotted key into figures.toml (`gigaswitch.contention_observed_mbps`); a key that crosses an
    /// array of tables collects that field from each (`dhpc_ebn.runs.payload_kib_s`).
    pub source: String,
    /// Indices to keep from a list-valued figure (default: all).
    pub select: Option<Vec<usize>>,
    /// The sample key compared with the figure.
    pub metric: String,
    /// Largest acceptable relative miss, |got - paper| / |paper|.
    pub tolerance: f64,
    /// Which workload's points are compared (default 0).
    pub workload: usize,
    /// The catalogue item (`data/catalogue.toml`) of each row of the comparison, in row order;
    /// [`NO_ITEM`] for a row that is none. Empty when the file names none.
    pub items: Vec<String>,
}

impl Expect {
    /// The catalogue item of row `row`, if the file names one.
    pub fn item(&self, row: usize) -> Option<&str> {
        self.items
            .get(row)
            .map(String::as_str)
            .filter(|i| *i != NO_ITEM)
    }
}

/// Well-known metric names reported in samples, with their units.
pub struct Metric;

impl Metric {
    /// [`Metric::IDLE_SHARE`] and [`Metric::GAIN_BOUND`] of a file transfer whose sender spent
    /// `transfer_pct` percent of its time transferring.
    pub fn idle(transfer_pct: f64) -> [(String, f64); 2] {
        [
            (Self::IDLE_SHARE.into(), 1.0 - transfer_pct / 100.0),
            (Self::GAIN_BOUND.into(), 100.0 / transfer_pct.max(1e-9)),
        ]
    }
}

impl Metric {
    /// Efficiency times the workload's `rate` (the rate an uncontended port achieves), Mbit/s:
    /// for the GIGAswitch experiment, the aggregate into the contended output port.
    pub const THROUGHPUT_MBPS: &'static str = "throughput_mbps";
    /// Fraction of offered input slots that were served, 0..=1 (saturated: per input).
    pub const EFFICIENCY: &'static str = "efficiency";
    /// The GIGAswitch study's one-slot formula E = (N/M)(1-(1-1/N)^M) (model engine only).
    pub const FORMULA_EFFICIENCY: &'static str = "formula_efficiency";
    /// The formula times the uncontended port rate, Mbit/s (the study's Table 9 "expected rate").
    pub const FORMULA_MBPS: &'static str = "formula_mbps";
    /// Mean queueing wait, in slots.
    pub const MEAN_WAIT_SLOTS: &'static str = "mean_wait_slots";
    /// Share of a file transfer's elapsed time the sender spent waiting for its receivers
    /// (RIACS's "sync"), percent.
    pub const SYNC_PCT: &'static str = "sync_pct";
    /// Share spent reading the file from the sender's disk ("disk I/O"), percent.
    pub const DISK_PCT: &'static str = "disk_pct";
    /// Share spent sending datagrams ("data transfer"), percent.
    pub const TRANSFER_PCT: &'static str = "transfer_pct";
    /// Share of the sender's time not spent transferring (RIACS's "nonproductive work": sync,
    /// disk and the rest), 0..=1.
    pub const IDLE_SHARE: &'static str = "idle_share";
    /// The throughput a sender that did nothing but transfer would reach, as a multiple of the
    /// measured one (100 over the transfer share: RIACS's "approximately double").
    pub const GAIN_BOUND: &'static str = "gain_bound";
    /// Transport payload rate, Mbit/s.
    pub const GOODPUT_MBPS: &'static str = crate::app::bulk::keys::GOODPUT_MBPS;
    /// Prefix of a kind of sender's goodput, Mbit/s, followed by its host preset's name (a
    /// study that ran several kinds' sessions at once reports each kind's aggregate).
    pub const GOODPUT_OF: &'static str = crate::app::bulk::keys::GOODPUT_OF;
    /// Transport payload rate in KiB/s (ttcp's unit).
    pub const PAYLOAD_KIB_S: &'static str = crate::app::bulk::keys::PAYLOAD_KIB_S;
    /// Fraction of frames delivered whole.
    pub const FRAME_GOODPUT: &'static str = "frame_goodput";
    /// Fraction of cells lost.
    pub const CELL_LOSS: &'static str = "cell_loss";
    /// Mean round trip of the answered requests of a request/response workload, microseconds.
    pub const RTT_MEAN_US: &'static str = crate::app::rr::keys::RTT_MEAN_US;
    /// Requests of a request/response workload that got no answer in time, a fraction 0..=1.
    pub const RR_LOSS: &'static str = crate::app::rr::keys::RR_LOSS;
    /// TCP segments the senders sent again.
    pub const RETRANSMITS: &'static str = "retransmits";
    /// What the TCP senders' write calls that returned handed to their sockets over the run,
    /// KiB ([`crate::app::bulk::BulkSource::written_returned`]; simulator).
    pub const APP_WRITTEN_KIB: &'static str = "app_written_kib";
    /// Mean time of one iteration of a message-passing pattern (one NPB time step's
    /// communication), µs.
    pub const MEAN_US: &'static str = "mean_us";
    /// A ring's transport payload over its line rate, 0..=1: study 003's "line efficiency", the
    /// sessions' aggregate over 100 Mbit/s.
    pub const LINE_EFFICIENCY: &'static str = "line_efficiency";
    /// Transport payload each active station of a ring carries, Mbit/s.
    pub const STATION_MBPS: &'static str = "station_mbps";
    /// Duplex circuits a `vc` workload planned (the PVCs an operator enters once).
    pub const PVCS: &'static str = "pvcs";
    /// Degree of the polynomial the planned PVCs follow over the first 2, 3, ... n hosts
    /// (Sandia's O(n^2): 2).
    pub const PVC_GROWTH_DEGREE: &'static str = "pvc_growth_degree";
}

impl WorkloadKind {
    /// The metric compared by default for this kind.
    pub const fn default_metric(self) -> &'static str {
        match self {
            WorkloadKind::Saturated => Metric::THROUGHPUT_MBPS,
            WorkloadKind::Bernoulli | WorkloadKind::Onoff | WorkloadKind::Hotspot => {
                Metric::MEAN_WAIT_SLOTS
            }
            WorkloadKind::Frames => Metric::FRAME_GOODPUT,
            WorkloadKind::Tput => Metric::GOODPUT_MBPS,
            WorkloadKind::Rr => Metric::RTT_MEAN_US,
            WorkloadKind::Mp => Metric::MEAN_US,
            WorkloadKind::Xfer => Metric::GOODPUT_MBPS,
            WorkloadKind::Vc => Metric::PVCS,
            WorkloadKind::Ring => Metric::EFFICIENCY,
            WorkloadKind::Nfs => crate::app::nfs::keys::NFS_MBPS,
            WorkloadKind::X11 => crate::app::x11::keys::X11_MBPS,
        }
    }

    /// The name used in scenario files.
    pub const fn name(self) -> &'static str {
        match self {
            WorkloadKind::Saturated => "saturated",
            WorkloadKind::Bernoulli => "bernoulli",
            WorkloadKind::Onoff => "onoff",
            WorkloadKind::Hotspot => "hotspot",
            WorkloadKind::Frames => "frames",
            WorkloadKind::Tput => "tput",
            WorkloadKind::Rr => "rr",
            WorkloadKind::Mp => "mp",
            WorkloadKind::Xfer => "xfer",
            WorkloadKind::Vc => "vc",
            WorkloadKind::Ring => "ring",
            WorkloadKind::Nfs => "nfs",
            WorkloadKind::X11 => "x11",
        }
    }
}

/// One point of one workload: a workload with its swept field set and `sweep` cleared.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Point {
    /// Index of the workload in [`Scenario::workloads`].
    pub workload: usize,
    /// The swept value at this point, if the workload has a sweep.
    pub value: Option<Param>,
    /// The workload with that value in place.
    pub spec: Workload,
}

impl Scenario {
    /// Parses and validates scenario text; `file` names it in errors.
    pub fn parse(text: &str, file: &str) -> Result<Scenario, ScenarioError> {
        parse::parse(text, file)
    }

    /// Every point of every workload, in order: workloads in file order, sweep values in order.
    pub fn points(&self) -> Vec<Point> {
        self.workloads
            .iter()
            .enumerate()
            .flat_map(|(i, w)| w.expand().into_iter().map(move |p| (i, p)))
            .map(|(workload, (value, spec))| Point {
                workload,
                value,
                spec,
            })
            .collect()
    }

    /// The host called `name`, if there is one.
    pub fn host(&self, name: &str) -> Option<&Host> {
        self.hosts.iter().find(|h| h.name == name)
    }

    /// The switch a workload drives: the one it names, or the only one.
    pub fn switch_for(&self, w: &Workload) -> Option<&Switch> {
        match &w.switch {
            Some(name) => self.switches.iter().find(|s| &s.name == name),
            None if self.switches.len() == 1 => self.switches.first(),
            None => None,
        }
    }

    /// Links attached to the node called `name`.
    pub fn links_of<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Link> + 'a {
        self.links
            .iter()
            .filter(move |l| l.ends.iter().any(|e| e == name))
    }

    /// The links of a shortest path (fewest hops) from node `from` to node `to`, or `None` if
    /// they are not connected.
    pub fn path(&self, from: &str, to: &str) -> Option<Vec<&Link>> {
        use std::collections::{HashMap, VecDeque};
        // Each node's links, then breadth-first over node names; `prev` maps a node to
        // (previous node, link index). Linear in the links: a generated fabric has thousands.
        let mut adjacent: HashMap<&str, Vec<(usize, &str)>> = HashMap::new();
        for (i, l) in self.links.iter().enumerate() {
            adjacent
                .entry(&l.ends[0])
                .or_default()
                .push((i, &l.ends[1]));
            adjacent
                .entry(&l.ends[1])
                .or_default()
                .push((i, &l.ends[0]));
        }
        let mut prev: HashMap<&str, (&str, usize)> = HashMap::new();
        let mut queue = VecDeque::from([from]);
        while let Some(node) = queue.pop_front() {
            if node == to {
                let mut links = Vec::new();
                let mut at = to;
                while at != from {
                    let (p, l) = prev.get(at)?;
                    links.push(self.links.get(*l)?);
                    at = p;
                }
                links.reverse();
                return Some(links);
            }
            for &(i, other) in adjacent.get(node).map_or(&[][..], Vec::as_slice) {
                if other != from && !prev.contains_key(other) {
                    prev.insert(other, (node, i));
                    queue.push_back(other);
                }
            }
        }
        None
    }
}

impl Param {
    /// The value as a number in its base unit: a count, a plain number, bytes, bits per second
    /// or nanoseconds.
    pub fn as_f64(&self) -> f64 {
        match *self {
            Param::Count(n) => n as f64,
            Param::Number(x) => x,
            Param::Size(s) => s.0 as f64,
            Param::Rate(r) => r.0 as f64,
            Param::Duration(d) => d.as_nanos() as f64,
        }
    }
}

impl Workload {
    /// The points of this workload: one per sweep value, or the workload itself.
    pub fn expand(&self) -> Vec<(Option<Param>, Workload)> {
        let Some(sweep) = &self.sweep else {
            return vec![(None, self.clone())];
        };
        sweep
            .values
            .iter()
            .map(|v| {
                let mut w = self.clone();
                w.sweep = None;
                w.set(&sweep.field, *v);
                (Some(*v), w)
            })
            .collect()
    }

    /// Sets the field `field` to `value` (used by sweeps; unknown names and mismatched value
    /// types are ignored, which the parser never produces).
    fn set(&mut self, field: &str, value: Param) {
        match (field, value) {
            ("inputs", Param::Count(n)) => self.inputs = u32::try_from(n).ok(),
            ("outputs", Param::Count(n)) => self.outputs = u32::try_from(n).ok(),
            ("ports", Param::Count(n)) => self.ports = u32::try_from(n).ok(),
            ("slots", Param::Count(n)) => self.slots = Some(n),
            ("load", Param::Number(x)) => self.load = Some(x),
            ("burst", Param::Number(x)) => self.burst = Some(x),
            ("hotspot", Param::Number(x)) => self.hotspot = Some(x),
            ("window", Param::Size(s)) => self.window = Some(s),
            ("mss", Param::Size(s)) => self.mss = Some(s),
            ("count", Param::Count(n)) => self.count = Some(n),
            ("timeout", Param::Duration(d)) => self.timeout = Some(d),
            ("mtu", Param::Size(s)) => self.mtu = Some(s),
            ("size", Param::Size(s)) => self.size = Some(s),
            ("response_size", Param::Size(s)) => self.response_size = Some(s),
            ("rate", Param::Rate(r)) => self.rate = Some(r),
            ("time", Param::Duration(d)) => self.time = Some(d),
            ("rtt", Param::Duration(d)) => self.rtt = Some(d),
            ("hosts", Param::Count(n)) => {
                if let Some(vc) = &mut self.vc {
                    vc.hosts = u32::try_from(n).ok();
                }
            }
            _ => {}
        }
    }

    /// Inputs offering traffic: `inputs`, else `ports`.
    pub fn input_count(&self) -> Option<u32> {
        self.inputs.or(self.ports)
    }

    /// Outputs destinations are drawn from: `outputs`, else `ports`.
    pub fn output_count(&self) -> Option<u32> {
        self.outputs.or(self.ports)
    }
}

/// A scenario file that cannot be used: where, which key, and what was expected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}:{column}: {key}: {message}")]
pub struct ScenarioError {
    /// The file name given to [`Scenario::parse`].
    pub file: String,
    /// Line, from 1.
    pub line: usize,
    /// Column, from 1.
    pub column: usize,
    /// The key, as a path (`link[2].delay`); `(document)` for syntax errors.
    pub key: String,
    /// What was wrong and what was expected.
    pub message: String,
}

#[cfg(test)]
mod tests;
