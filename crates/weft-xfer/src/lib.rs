//! Bulk transfer over UDP with a TCP control channel: SBTP and MBTP as published in the RIACS
//! study (Johnson and Townsend, "Achieving High Throughput for Data Transfer over ATM Networks",
//! 1996), and a reliable rate-controlled mode in the manner of NETBLT (RFC 998) and RBUDP.
//!
//! - [`wire`]: the data datagram and control message formats (view + representation, fuzzed).
//! - [`proto`]: the sans-IO sender and receiver state machines, pacing and rate control.
//! - [`auth`]: the pre-shared-key MAC of the control handshake and the per-frame tags after it.
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
//!   the missing packet ranges (retransmitted first, NETBLT/RBUDP style; at a file's tail, where
//!   only repairs are left and the link is otherwise idle, each missing packet is sent two to
//!   four times so that a lost repair does not cost another round trip) until complete, checks
//!   the buffer's BLAKE3, writes it and answers `Done`. At the end of a file the sender sends the
//!   whole-file digest (BLAKE3 over the blocks' BLAKE3s); the receiver checks it against the
//!   hashes of the buffers it verified (reading back those resumed from a journal), and only
//!   then renames the file into place. A journal of written buffers beside the hidden part
//!   file lets `--resume` continue after either side dies.
//!
//! # Rate control and fairness
//! See [`proto::RateMode`] and the `proto::rate` module: fixed, unlimited, or adaptive at the
//! receiver-measured delivery rate (BBR-like startup, cruise and probing). Random loss under the
//! threshold is not taken as congestion, and datagrams the receiver's own sockets dropped are
//! reported apart and answered with flow control, not a congestion back-off. It shares a
//! bottleneck with flows of its own kind; it is not TCP-friendly (it ignores loss under its
//! threshold and never halves), so against loss-based TCP it takes more than an equal share.
//!
//! # Receiver pipeline
//! The receiver's network thread only receives and reassembles; BLAKE3 checks and disk writes
//! run on a pipeline thread, bounded by the window of buffer slots. `Done` is sent once a buffer
//! is verified and written. The whole-file digest comes from the verified buffers' hashes (only
//! buffers resumed from a journal are read back, unless `read_back` asks for all).
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
