//! Bulk transfer over UDP with a TCP control channel: SBTP and MBTP as published in the RIACS
//! study (Johnson and Townsend, 1996), and a reliable rate-controlled mode in the manner of
//! NETBLT (RFC 998) and RBUDP.
//!
//! - [`wire`]: the data datagram and control message formats (view + representation).
//! - [`proto`]: the sans-IO sender and receiver state machines.
//! - [`auth`]: the pre-shared-key MAC of the control handshake.
//! - [`net`]: the real driver over TCP and UDP sockets and files.

pub mod auth;
pub mod net;
pub mod proto;
pub mod report;
pub mod wire;
