//! Bulk transfer over UDP with a TCP control channel: SBTP and MBTP as published in the RIACS
//! study (Johnson and Townsend, "Achieving High Throughput for Data Transfer over ATM Networks",
//! 1996), and a reliable rate-controlled mode in the manner of NETBLT (RFC 998) and RBUDP.
//!
//! - [`wire`]: the data datagram and control message formats (view + representation, fuzzed).
//! - [`proto`]: the sans-IO sender and receiver state machines, pacing and rate control.
//! - [`auth`]: the pre-shared-key MAC of the control handshake.
//! - [`net`]: the real driver over TCP and UDP sockets and files (`weft send` / `weft recv`).
//! - [`report`]: the `xfer` result documents.
//!
//! # Modes
//! - **SBTP**: per buffer, `Start(size, packet size)` / `Ready` over TCP, the data in datagrams
//!   striped over the receiver's K UDP sockets, `End`; the receiver answers `Done` with the
//!   packets it never got, zero-fills them and records the gaps, writes the buffer, and only then
//!   grants `Ready` for the next (one buffer in flight: the sender waits for the disk, as
//!   published).
//! - **MBTP**: R SBTP sessions to R receivers; one sender, so one buffer is on the network at a
//!   time (a token passes between sessions) while the other receivers write theirs.
//! - **Reliable** (default): up to `window` buffers in flight (the receiver writes one while the
//!   next arrives), each blasted at the paced rate, then `End`; the receiver answers `Nack` with
//!   the missing packet ranges (retransmitted first, NETBLT/RBUDP style) until complete, checks
//!   the buffer's BLAKE3 and answers `Done`. At the end of a file the sender sends the whole-file
//!   digest (BLAKE3 over the blocks' BLAKE3s); the receiver reads the file back from disk, checks
//!   it, and only then renames it into place. A journal of written buffers beside the hidden part
//!   file lets `--resume` continue after either side dies.
//!
//! # Rate control and fairness
//! See [`proto::RateMode`]: fixed, unlimited, or adaptive AIMD on per-round loss and the
//! receiver-measured arrival rate. The adaptive controller shares a bottleneck fairly with other
//! flows of the same controller; it is not TCP-friendly (it ignores random loss under its
//! threshold and backs off by 1/16), so against TCP it takes more than an equal share.
//!
//! # Time breakdown
//! As in the study's Table 2, the sender's elapsed time is split into *sync* (waiting for the
//! receiver with nothing to send), *disk* (waiting for file data), and *transfer* (sending and
//! pacing datagrams); the rest (handshake, fingerprinting) is *other*.

pub mod auth;
pub mod net;
pub mod proto;
pub mod report;
pub mod wire;
