//! Throughput tests (`weft tput`): the client, the agent side, and the data path they share.
//!
//! The receiver's count is the headline and is final: a TCP receiver counts to end of stream
//! (the sender half-closes after its last write), a UDP receiver drains after the sender's count
//! arrives (see [`stream::UdpDrain`]). The agent reports its counts only after that, so the
//! client's "stop" never races data in flight; both ends' counts are reported and checked
//! against each other ([`result::DirResult::reconcile`]).

pub mod agent;
pub mod client;
pub mod opts;
pub mod result;
pub mod session;
pub mod stream;

pub use client::{TputConfig, TputEvent, run};
pub use result::{DirResult, IntervalSample, TputResult};
