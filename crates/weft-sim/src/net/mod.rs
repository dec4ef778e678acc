//! Networks of switches with simulated hosts: the topology of a scenario file (or one built in
//! code) run on virtual time through the same switch code the emulator runs
//! ([`weft_model::net`]), with applications on the hosts: constant-rate frame sources and sinks
//! ([`cbr`]), TCP endpoints ([`tcp`]) and the bulk transfers of `tput` workloads ([`tput`]),
//! request/response clients and servers over UDP ([`rr`]) and TCP ([`rr_tcp`], on the
//! byte streams of [`stream`]), message-passing ranks ([`mp`],
//! [`mp_workload`]).

pub mod cbr;
pub mod frame;
pub mod hosts;
pub mod mp;
pub mod mp_workload;
pub mod nic;
pub mod rr;
pub mod rr_tcp;
pub mod rr_workload;
pub mod run;
pub mod stream;
pub mod tcp;
pub mod tput;
pub mod workload;

pub use cbr::{Cbr, CbrSpec, DEFAULT_JITTER_FRACTION, Sink};
pub use frame::SimFrame;
pub use hosts::{App, SimHosts};
pub use run::{NetRun, RunOptions, run};
pub use tcp::TcpApp;

#[cfg(test)]
mod tcp_tests;
