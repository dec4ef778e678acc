//! A sans-IO TCP: one connection's state machine, driven by segments and time from outside.
//!
//! [`Connection`] has the four kinds of methods of quinn-proto's connection: input
//! (`handle_segment`, `handle_timeout`), output (`poll_transmit`, `poll_timeout`), application
//! calls (`send`, `recv`, `close`) and getters (`stats`, `cwnd`, `srtt`, ...). Time is
//! [`crate::Instant`] nanoseconds; nothing reads a clock.
//!
//! What it implements: the three-way handshake and FIN close (RFC 793), MSS negotiation with the
//! 536-byte default, a fixed receive window with the 1995 clamp at 65,535 bytes unless window
//! scaling is asked for (RFC 7323), slow start and congestion avoidance with Reno, NewReno
//! (RFC 6582) or CUBIC (RFC 9438), fast retransmit and recovery, SACK (RFC 2018) with RFC 6675
//! loss recovery paced by proportional rate reduction (RFC 6937) and with lost retransmissions
//! detected from later SACKs, RTO per RFC 6298 with a configurable minimum and 4.4BSD's 500 ms
//! timer ticks as an option, exponential backoff, delayed ACKs (timer and every second segment),
//! Nagle, zero-window probes, slow-start restart after idle, a configurable initial window and
//! initial ssthresh, and optionally RFC 7323 timestamps with Eifel detection of spurious
//! time-outs (RFC 3522) and Linux's undo. Not implemented: RTT measurement from timestamps
//! (samples stay one per round trip, Karn's), PAWS, RACK-TLP, ECN, urgent data, keep-alives,
//! D-SACK. [`Config::default`] is a 1995 BSD stack,
//! [`Config::linux`] a modern one.
//!
//! # Payload
//!
//! The connection carries sequence ranges, never payload bytes: a [`Segment`] holds its payload's
//! length, and the application's stream is a count of bytes. A simulator moving millions of
//! segments a second then copies an 80-byte `Copy` struct per segment and allocates nothing in
//! the steady state. Real bytes are attached by a thin layer, [`ByteConnection`], which keeps the
//! unacknowledged bytes and a receive ring and copies exactly the ranges the connection reports
//! ([`Connection::send_offset`] for a segment sent, [`Received`] for one received). This was
//! preferred to making the connection generic over a payload type: the state machine stays one
//! non-generic type, the length-only path cannot pay for a byte path it does not use, and the
//! byte path is small enough to check by reading (it is what the byte-exact tests run).
//!
//! [`wire`] emits and parses real TCP headers (and [`ipv4`] the IP header around them) for
//! captures and for talking to real stacks.

pub mod bytes;
pub mod cc;
pub mod config;
mod conn;
pub mod ipv4;
pub mod ranges;
pub mod rto;
pub mod segment;
pub mod seq;
pub mod stats;
pub mod wire;

#[cfg(test)]
mod harness;
#[cfg(test)]
mod interop;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tshark;

pub use bytes::ByteConnection;
pub use cc::CcAlgorithm;
pub use config::Config;
pub use conn::{Connection, Error, Received, State};
pub use rto::RtoConfig;
pub use segment::{Flags, SackBlock, SackBlocks, Segment, Timestamps};
pub use seq::SeqNum;
pub use stats::Stats;
