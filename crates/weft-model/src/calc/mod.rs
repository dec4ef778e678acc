//! Closed-form answers (`weft calc` and the `model` engine of `weft run`): rate chains, windows,
//! head-of-line blocking, queueing, the TCP loss bound, host-limited transfers and request/response
//! round trips. Pure arithmetic, no I/O.

pub mod alpha_beta;
pub mod ebn;
pub mod engine;
pub mod fct;
pub mod fit;
pub mod fit_workstations;
pub mod ftp;
pub mod hol;
pub mod host;
pub mod mathis;
pub mod mp_point;
pub mod nfs;
pub mod overhead;
pub mod policed;
pub mod queue;
pub mod ring;
pub mod router;
pub mod rr_point;
pub mod rr_tcp;
pub mod rtt;
pub mod server;
pub mod shared_host;
pub mod udp;
pub mod vc_point;
pub mod window;
pub mod x11;
pub mod xfer;

pub use alpha_beta::AlphaBeta;
pub use engine::{ModelEngine, ModelPoint, evaluate, evaluate_point};
pub use hol::{SATURATION_LIMIT, gigaswitch_efficiency, saturation_throughput};
pub use host::{BulkBound, BulkLimit, BulkShape, host_rate};
pub use mathis::Mathis;
pub use overhead::{Chain, Layer, SandiaNote};
pub use queue::{Md1, output_queued_wait};
pub use rr_tcp::{Answer, TcpExchange, tcp_request_response};
pub use rtt::{Hop, RttBreakdown, request_response};
pub use server::{SharedServer, SharedServerLoad};
pub use shared_host::{PingPongPoint, SharedHost};
pub use window::{TransferBound, bdp, window_rate};
