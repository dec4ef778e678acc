//! Shared helpers for the loopback integration tests.
#![allow(dead_code, clippy::unwrap_used)]

use std::time::Duration;

use weft_probe::proto::{Amount, Direction, TputSpec, Transport};
use weft_probe::server::{Limits, Server, ServerConfig, ServerHandle};
use weft_probe::tput::{TputConfig, TputResult};

/// An agent on 127.0.0.1:0 with a short idle time-out, open (it relays toward loopback).
pub fn agent(idle: Duration) -> ServerHandle {
    let mut cfg = ServerConfig::loopback();
    cfg.open = true;
    cfg.limits = Limits {
        idle_timeout: idle,
        max_duration: Duration::from_secs(5),
        ..Limits::default()
    };
    Server::bind(cfg).unwrap().spawn()
}

/// A test spec of `ms` milliseconds: 1200-byte datagrams over UDP, 128 KiB writes over TCP.
pub fn spec(transport: Transport, direction: Direction, ms: u64) -> TputSpec {
    let len = if transport == Transport::Udp {
        1200
    } else {
        128 * 1024
    };
    TputSpec {
        transport,
        direction,
        ..TputSpec::tcp(len, Amount::TimeNs(ms * 1_000_000))
    }
}

/// Runs `spec` against `h`.
pub fn run(h: &ServerHandle, spec: TputSpec) -> Result<TputResult, weft_probe::ProbeError> {
    let cfg = TputConfig {
        server: h.local_addr(),
        spec,
        connect_timeout: Duration::from_secs(5),
        key: None,
    };
    weft_probe::tput::run(&cfg, &mut |_| {})
}
