//! Measurement of real networks: control protocol, agent, throughput, request/response, patterns.

pub mod rr;
