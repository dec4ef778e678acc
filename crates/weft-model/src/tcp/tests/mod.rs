//! Tests of the connection, one file per mechanism, on the two-endpoint harness of
//! [`super::harness`]. Each checks behaviour that disappears when its mechanism is removed.

mod close;
mod congestion;
mod cubic;
mod delayed_ack;
mod delivery;
mod ecn;
mod handshake;
mod nagle;
mod recovery;
mod robustness;
mod rto;
mod spurious;
mod window;

use super::harness::{Dir, PipeConfig, Sim};
use super::{Config, Connection, Segment, SeqNum};
use crate::time::{Duration, Instant};

/// Milliseconds.
fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// The instant `n` milliseconds after the start.
fn at_ms(n: u64) -> Instant {
    Instant::ZERO + ms(n)
}

/// A client (`a`, port 1000, ISS near the wrap) connecting to a listener (`b`, port 80).
fn pair(a: Config, b: Config, ab: PipeConfig, ba: PipeConfig) -> Sim<Connection, Connection> {
    pair_seeded(a, b, ab, ba, 7)
}

fn pair_seeded(
    a: Config,
    b: Config,
    ab: PipeConfig,
    ba: PipeConfig,
    seed: u64,
) -> Sim<Connection, Connection> {
    let client = Connection::connect(a, 1000, 80, SeqNum(0xffff_ff00), Instant::ZERO);
    let server = Connection::listen(b, 80, SeqNum(0x7fff_fff0));
    Sim::new(client, server, ab, ba, seed)
}

/// Symmetric clean pipes of `one_way` delay.
fn clean(one_way: Duration) -> (PipeConfig, PipeConfig) {
    (PipeConfig::delay(one_way), PipeConfig::delay(one_way))
}

/// An application step: `a` keeps offering data until `total` bytes were accepted, then closes
/// if `close` (once connected: a close in SYN-SENT abandons the connection); `b` reads whatever
/// arrives.
fn bulk(total: u64, close: bool) -> impl FnMut(&mut Sim<Connection, Connection>) {
    let mut written = 0u64;
    let mut closed = false;
    move |s| {
        if written < total {
            written += s.a.send((total - written) as usize) as u64;
        } else if close && !closed && s.a.state().is_synchronized() {
            s.a.close();
            closed = true;
        }
        let r = s.b.readable();
        s.b.recv(r as usize);
    }
}

/// The data segments in the trace going `dir`, with their send times.
fn data_segments(trace: &[(Instant, Dir, Segment)], dir: Dir) -> Vec<(Instant, Segment)> {
    trace
        .iter()
        .filter(|(_, d, s)| *d == dir && s.len > 0)
        .map(|(t, _, s)| (*t, *s))
        .collect()
}

/// A config without delayed ACKs and with exact timers, for tests that count rounds.
fn plain(mss: u16) -> Config {
    Config {
        mss,
        delayed_ack: None,
        rto: super::RtoConfig {
            min: ms(200),
            ..super::RtoConfig::RFC6298
        },
        ..Config::default()
    }
}
