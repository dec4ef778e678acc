//! The daemon route of PVM: every rank talks TCP to its own daemon, daemons talk UDP to each
//! other with fragmentation, sequence numbers, acknowledgements and retransmission, so that a
//! message makes three hops (rank -> daemon -> daemon -> rank) where the direct route makes one.
//! NASA's LACE study (seed 001) measured PVM this way against its Direct Route.
//!
//! - [`packet`]: the daemon-to-daemon datagram header;
//! - [`core`]: the protocol, sans IO (fragmenting, windows, retransmission, delivery in order);
//! - [`driver`]: the thread that runs it with real sockets.
//!
//! PVM ran one daemon per host for all its tasks; here each rank has its own (a rank is one
//! agent's test), so ranks on one host still cross UDP between their daemons.

pub mod core;
pub mod driver;
pub mod packet;

pub use self::core::{CoreConfig, DaemonCore, DaemonStats};
pub use driver::{Daemon, DaemonHandle};
