//! Message passing among N processes (`weft mp`), the ranks' side: the ranks run the plans of
//! [`weft_model::mp`] (OSU ping-pong, ring exchange, all-to-all, all-reduce, barrier, NPB
//! skeletons) over real sockets, directly or through PVM-style daemons, and report per-iteration
//! times that become HDR-histogram percentiles.
//!
//! - [`wire`]: the frames between ranks (24-byte header, chunks), fuzzed;
//! - [`conn`]: one non-blocking connection (gathered writes, staged reads);
//! - [`engine`]: the socket driver of the core's rank ([`weft_model::app::mp::Rank`], which
//!   walks the plans) over a rank's connections (an MPI-like progress engine);
//! - [`kernel`]: the reduction kernel timed on its own (the model's `gamma`);
//! - [`mesh`]: the direct route's connections and the hellos that refuse mismatched ranks;
//! - [`pvmd`]: the daemon route (PVM's default: TCP to a daemon, UDP between daemons);
//! - [`spec`]: the request each rank gets (control protocol `Request`, kind `mp`);
//! - [`msg`]: the coordinator's conversation with a rank (`Ext` messages);
//! - [`place`]: a rank's CPU and scheduling class for the run;
//! - [`rank`]: one rank's run over all patterns and sizes;
//! - [`inproc`]: ranks as threads of this process (the emulator's hosts);
//!
//! The agents that run ranks and the coordinator that launches them over weft's control
//! protocol are `weft-probe`'s (`weft_probe::mp`).
//! - [`result`]: samples, percentiles, the table and the result document;
//! - [`model`]: the model fitted from a ping-pong, beside each sample.

pub mod conn;
pub mod engine;
pub mod error;
pub mod inproc;
pub mod kernel;
pub mod mesh;
pub mod model;
pub mod msg;
pub mod place;
pub mod pvmd;
pub mod rank;
pub mod result;
pub mod spec;
pub mod wire;

pub use engine::{Engine, Waiting};
pub use error::MpError;
pub use result::{MpResult, MpSample};
pub use spec::{DaemonParams, MP_VERSION, MpSpec, Placement, Route};
