//! Relayed tests: weft asks agent A to be the client of a test toward agent B, so that a pattern
//! can run sessions between two remote agents (`weft pattern --pairs A:B`).
//!
//! - [`client`]: what `weft pattern` runs: [`client::tput`] and [`client::rr`] send a `Relay`
//!   request to A and turn A's report into the same results a direct test gives, reconciling
//!   the sender's and the receiver's byte counts itself;
//! - [`agent`]: what A runs: it checks the request against its limits, then runs an ordinary
//!   `weft tput` / `weft rr` client toward B and reports.
//!
//! The messages, and the bounds that keep an agent from becoming an amplifier, are described in
//! [`crate::proto::relay`]. `weft serve --no-relay` refuses relay requests.
//!
//! ```no_run
//! use std::time::Duration;
//! use weft_probe::relay::{self, RelayConfig};
//! # fn spec() -> weft_probe::proto::TputSpec { unimplemented!() }
//! let cfg = RelayConfig {
//!     relay: "10.0.0.1:5301".parse().unwrap(),
//!     target: "10.0.0.2:5301".parse().unwrap(),
//!     connect_timeout: Duration::from_secs(5),
//!     key: None,
//! };
//! let r = relay::client::tput(&cfg, &spec()).unwrap(); // data flows 10.0.0.1 -> 10.0.0.2
//! println!("{}", r.to_table());
//! ```

pub mod agent;
pub mod client;

pub use client::RelayConfig;

use std::net::SocketAddr;

use crate::proto::{RelayRr, Transport};
use crate::rr::{Peer, Proto, RrConfig, StopRule};

/// The request/response run that `r` describes, against the agent at `target`.
pub fn rr_config(target: SocketAddr, r: &RelayRr) -> RrConfig {
    let mut rc = RrConfig::new(Peer::Agent(target), vec![r.size]);
    rc.proto = match r.transport {
        Transport::Tcp => Proto::Tcp,
        Transport::Udp => Proto::Udp,
    };
    rc.warmup = r.warmup;
    rc.stop = match (r.time_ns, r.count) {
        (Some(duration_ns), _) => StopRule::Time { duration_ns },
        (None, Some(count)) => StopRule::Count { count },
        (None, None) => StopRule::Count { count: 0 },
    };
    rc
}
