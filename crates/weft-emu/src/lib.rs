//! Emulation: namespaced Linux hosts talking through weft's userspace switch.
//!
//! Each host of a [`topo::Topology`] gets a network namespace (`weft-<run>-<host>`) joined by a
//! veth pair to the switch's namespace (`weft-<run>`). One thread of this process is the switch:
//! it reads whole Ethernet frames from AF_PACKET sockets on the switch ends, runs them through
//! per-link models (serialisation at the line rate with the technology's framing — whole cells on
//! ATM —, propagation delay, finite buffers with tail/PPD/EPD, random loss) in wall-clock time,
//! and writes them out when due ([`driver`]). Namespaces are created and removed with `ip`
//! (iproute2); offloads are turned off with `ethtool` so that frames are real-sized.

pub mod driver;
pub mod emulation;
pub mod error;
pub mod framing;
pub mod lag;
pub mod netns;
pub mod pcap;
pub mod port;
pub mod scenario;
pub mod signals;
pub mod state;
pub mod switch;
pub mod sys;
pub mod topo;
pub mod workload;

pub use emulation::{Emulation, HostInfo, UpOptions};
pub use error::EmuError;
pub use topo::{Buffer, DropPolicy, HostSpec, LinkSpec, Topology};
