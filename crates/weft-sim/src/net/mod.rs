//! Networks of switches with simulated hosts: the topology of a scenario file (or one built in
//! code) run on virtual time through the same switch code the emulator runs
//! ([`weft_model::net`]), with applications on the hosts: the core's applications
//! ([`weft_model::app`]) on TCP byte streams ([`stream`]) or UDP sockets ([`datagram`]) through
//! [`hosted`] (request/response, [`rr_workload`]; the bulk transfers of `tput` workloads,
//! [`tput`]), constant-rate frame sources and sinks ([`cbr`]), message-passing ranks ([`mp`],
//! [`mp_workload`]), NFS over UDP RPC ([`nfs_workload`]), X11 display traffic
//! ([`x11_workload`]), FTP from disk to disk ([`ftp_workload`]).

pub mod cbr;
pub mod datagram;
pub mod dcqcn;
pub mod frame;
pub mod ftp_workload;
pub mod hosted;
pub mod hosts;
pub mod mp;
pub mod mp_workload;
pub mod ndp;
pub mod nfs_workload;
pub mod nic;
pub mod rr_workload;
pub mod run;
pub mod sized_flows;
pub mod stream;
pub mod tput;
pub mod workload;
pub mod x11_workload;
pub mod xfer;

#[cfg(test)]
mod xfer_tests;

pub use cbr::{Cbr, CbrSpec, DEFAULT_JITTER_FRACTION, Sink};
pub use frame::SimFrame;
pub use hosted::{Hosted, TcpEnd};
pub use hosts::{App, SimHosts};
pub use run::{NetRun, RunOptions, run};

#[cfg(test)]
mod ftp_tests;
#[cfg(test)]
mod tcp_tests;
#[cfg(test)]
mod udp_tests;
