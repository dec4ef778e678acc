//! Measurement of real networks: control protocol, agent, throughput, request/response, patterns.
//!
//! - [`proto`]: the versioned control protocol (framed messages, data hellos, UDP header);
//! - [`server`]: the agent (`weft serve`), runnable in-process on `127.0.0.1:0`;
//! - [`tput`]: throughput tests (`weft tput`), client and agent side;
//! - [`rr`]: request/response latency tests (`weft rr`);
//! - [`pattern`]: concurrent sessions among several agents (`weft pattern`);
//! - [`relay`]: tests that one agent runs toward another on a client's request;
//! - [`mp`]: message passing among N ranks (`weft mp`);
//! - [`auth`]: agents that serve only clients holding their pre-shared key.

pub mod auth;
pub mod control;
pub mod cpu;
pub mod error;
pub mod mp;
pub mod pattern;
pub mod proto;
pub mod relay;
pub mod rr;
pub mod server;
pub mod sockopt;
pub mod tput;

pub use error::ProbeError;
