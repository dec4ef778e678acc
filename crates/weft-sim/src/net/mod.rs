//! Networks of switches with simulated hosts: the topology of a scenario file (or one built in
//! code) run on virtual time through the same switch code the emulator runs
//! ([`weft_model::net`]), with applications on the hosts: constant-rate frame sources and sinks
//! ([`cbr`]).

pub mod cbr;
pub mod frame;
pub mod hosts;
pub mod run;
pub mod workload;

pub use cbr::{Cbr, CbrSpec, DEFAULT_JITTER_FRACTION, Sink};
pub use frame::SimFrame;
pub use hosts::{App, SimHosts};
pub use run::{NetRun, RunOptions, run};
