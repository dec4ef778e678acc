//! The socket driver: the core's applications ([`weft_model::app`]) on real sockets and the wall
//! clock. The emulator runs its hosts' workloads with it, inside their namespaces; real hosts
//! run the same applications with it.
//!
//! The driver holds no workload logic: it turns the application's outputs into socket calls
//! (a message's bytes are its [`Tag`] and a filler, [`payload`]), the socket's events into the
//! application's inputs, and the application's deadline into the time it waits (`ppoll`), in
//! the call order of [`weft_model::app`]. Time is [`Clock`]: nanoseconds since the driver's
//! start, as [`weft_model::Instant`].
//!
//! - [`stream`]: an application on one TCP connection;
//! - [`datagram`]: an application on a UDP socket, with a table of its peers' addresses;
//! - [`mp`]: the message-passing ranks on real sockets (the core's rank,
//!   [`weft_model::app::mp::Rank`], driven over `weft mp`'s frames, directly or through
//!   PVM-style daemons), moved here from `weft-probe` so that the emulator
//!   runs them without the measurement tool; [`stats`]: the latency statistics they report.

pub mod buf;
pub mod datagram;
pub mod mp;
pub mod payload;
pub mod stats;
pub mod stream;

use std::time::Duration as StdDuration;

use weft_model::app::{Application, StreamError, Tag};
use weft_model::{Duration, Instant};

/// The wall clock as the applications see it: nanoseconds since it started.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    base: std::time::Instant,
}

impl Clock {
    /// A clock at zero now.
    pub fn start() -> Self {
        Clock {
            base: std::time::Instant::now(),
        }
    }

    /// A clock at zero at `base`.
    pub fn since(base: std::time::Instant) -> Self {
        Clock { base }
    }

    /// The current instant.
    pub fn now(&self) -> Instant {
        Instant(u64::try_from(self.base.elapsed().as_nanos()).unwrap_or(u64::MAX))
    }

    /// The instant of the wall-clock instant `t` (zero if before the clock's start): a time
    /// the caller already read, without reading the clock again.
    pub fn of(&self, t: std::time::Instant) -> Instant {
        Instant(
            u64::try_from(t.saturating_duration_since(self.base).as_nanos()).unwrap_or(u64::MAX),
        )
    }

    /// The wall-clock instant of `t`.
    pub fn at(&self, t: Instant) -> std::time::Instant {
        self.base + StdDuration::from_nanos(t.0)
    }
}

/// How the driver waits and when it stops.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Stop at this instant whatever the application still has to do.
    pub until: Option<Instant>,
    /// Longest single wait, so that a stop condition is looked at this often.
    pub tick: Duration,
    /// Wait by spinning on the socket instead of sleeping once this long has passed since the
    /// last output (the host's wake-up latency then stays out of round trips); `None`: always
    /// sleep.
    pub spin_after: Option<Duration>,
    /// Streams: keep at most this many bytes unacknowledged in the socket (`SIOCOUTQ`), by
    /// writing only what fits: a window enforced at the sender.
    pub max_outq: Option<u32>,
    /// Streams: bytes asked of each read call at most (the read buffer's length).
    pub read_len: usize,
    /// Datagrams: a datagram the socket cannot take now (its buffer full) waits until it can,
    /// as a blocking send call does, instead of being dropped (a throughput test counts what
    /// it sent, and loses nothing before the wire).
    pub block_full: bool,
    /// Datagrams: a datagram refused by the peer's host (ICMP port unreachable, seen on a
    /// connected socket) ends the run with an error of kind `ConnectionRefused`, instead of
    /// counting as lost.
    pub refused_ends: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            until: None,
            tick: Duration::from_millis(100),
            spin_after: None,
            max_outq: None,
            refused_ends: false,
            block_full: false,
            read_len: 64 * 1024,
        }
    }
}

impl Options {
    /// How long to wait at `now` for an application whose next deadline is `deadline`, the last
    /// output having been at `last_output`: `None` to spin (poll without waiting).
    fn wait(
        &self,
        now: Instant,
        deadline: Option<Instant>,
        last_output: Instant,
    ) -> Option<Duration> {
        let mut until = now + self.tick;
        for t in [deadline, self.until].into_iter().flatten() {
            until = until.min(t);
        }
        if let Some(after) = self.spin_after {
            let spin_at = last_output + after;
            if now >= spin_at {
                return None;
            }
            until = until.min(spin_at);
        }
        Some(Duration(until.0.saturating_sub(now.0)))
    }

    fn expired(&self, now: Instant) -> bool {
        self.until.is_some_and(|u| now >= u)
    }
}

/// Runs `app`'s timer if it is due at `now`.
fn timers<A: Application + ?Sized>(app: &mut A, now: Instant) {
    if app.poll_timeout().is_some_and(|t| t <= now) {
        app.handle_timeout(now);
    }
}

/// What a failed socket call means to the application.
fn stream_error(e: &std::io::Error) -> StreamError {
    use std::io::ErrorKind as K;
    match e.kind() {
        K::ConnectionReset | K::ConnectionAborted | K::BrokenPipe => StreamError::Reset,
        K::ConnectionRefused => StreamError::Refused,
        K::TimedOut => StreamError::TimedOut,
        _ => StreamError::Failed,
    }
}

/// A message's bytes in `buf`: its tag, then the filler, `len` bytes in all. (A buffer that
/// already holds a message of that length has only its first bytes rewritten.)
pub fn message(buf: &mut Vec<u8>, len: usize, tag: Option<Tag>) {
    if buf.len() == len {
        for (i, b) in buf.iter_mut().take(8).enumerate() {
            *b = payload::filler(i);
        }
    } else {
        *buf = payload::buffer(len);
    }
    if let Some(t) = tag {
        t.write(buf);
    }
}
