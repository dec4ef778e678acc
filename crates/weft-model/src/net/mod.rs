//! The fabric both engines run: links, queues, switches and networks of switches, sans-IO.
//!
//! A [`Topology`] (hosts, switches, trunks; from a scenario file with
//! [`Topology::from_scenario`]) becomes a [`Network`]: one [`SwitchCore`] per switch, each port
//! an output queue and line ([`Egress`]) and, on a host's port, the host's side of its link
//! ([`Ingress`]); between ports nothing (output-queued) or an input-queued cell fabric
//! ([`FabricStage`]). Frames travel between these parts as [`Train`]s of cells or frames with
//! exact arrival instants. Faults ([`FaultInjector`]) and capture taps ([`Tap`]) are middleware
//! around the links. The simulator (`weft-sim`) runs a network on virtual time with simulated
//! hosts; the emulator (`weft-emu`) runs the same network on the wall clock between namespaced
//! Linux hosts ([`crate::engine`]).
//!
//! Frames are generic ([`Frame`]): real Ethernet bytes in the emulator, small descriptors in the
//! simulator.

mod abr_loop;
mod capture;
mod egress;
mod fabric_stage;
mod fat_tree;
mod faults;
mod flow_table;
mod forwarding;
pub mod forwarding_presets;
mod frame;
mod ingress;
pub mod ip;
mod link;
mod link_failure;
mod multipath;
mod network;
mod pfc;
mod pfc_loop;
mod port_failure;
mod red;
mod report;
mod ring;
mod ring_segment;
mod serialiser;
mod shared_buffer;
mod switch;
mod topology;
mod train;
mod trim;
mod vc_contract;
mod vc_failure;
mod vc_switch;

pub use abr_loop::{AbrLoop, RmArrival};
pub use capture::{
    Direction, LinkId, LinkType, PcapTap, PcapWriter, Record, Recorder, Tap, capture_files,
};
pub use egress::{Egress, EgressStats, FlowStats, Released};
pub use fabric_stage::{
    FRAME_CELL_BYTES, FabricKind, FabricSpec, FabricStage, FabricStageError, FabricStats,
    frame_cells,
};
pub use fat_tree::{MAX_GENERATED_HOSTS, Shape, ShapeSpec, Tier, oversubscription, spines_for};
pub use faults::{FaultInjector, FaultStats, Faults};
pub use flow_table::FlowTable;
pub use forwarding::{Forwarded, Forwarder, ForwardingSpec, ForwardingStats};
pub use frame::{
    BROADCAST, ETH_HEADER, Ecn, FlowKey, Frame, Mac, TRIMMED_DSCP, host_mac, host_of_mac, is_group,
};
pub use ingress::{Ingress, IngressStats};
pub use link::{IDEAL_ETHERNET, LinkSpec, Vc, aal5_payload_bound, ip_len};
pub use link_failure::{FailTarget, LinkFailure};
pub use multipath::{Multipath, PathChooser, flow_hash};
pub use network::{Network, NetworkError, TrunkStats};
pub use pfc::{
    Admit, CLASSES, MAX_QUANTA, PauseFrame, PfcEgress, PfcIngress, PfcIngressStats, PfcSpec,
    find_deadlock, quanta_ns,
};
pub use port_failure::DownPorts;
pub use red::RedSpec;
pub use report::{Delivery, FabricCounts, SenderStats, delivery};
pub use ring::{
    FDDI_TOKEN_BYTES, FIBRE_NS_PER_KM, RingSpec, RingStats, TokenRing, saturated_efficiency,
};
pub use ring_segment::{RingSegment, Ringed};
pub use serialiser::Serialiser;
pub use shared_buffer::{SharedBuffer, SharedBufferSpec};
pub use switch::{MAX_LEARNED, PauseOut, PortDeadlines, PortKind, PortStats, SwitchCore};
pub use topology::{HostSpec, MAX_HOSTS, SwitchSpec, Topology, TopologyError, TrunkSpec};
pub use train::{Counted, Train};
pub use trim::{HEADER_CLASS, Started, TrimQueue, TrimStats, TrimVerdict};
pub use vc_contract::{Enforced, Verdict};
pub use vc_failure::{VcFailure, VcManaged};
pub use vc_switch::{Circuits, PortRef, VcStats, VcSwitch};
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_failure;
#[cfg(test)]
mod tests_router;
#[cfg(test)]
mod tests_shared;
