//! What the coordinator asks of each rank: the body of a `Request` of kind `mp` in the control
//! protocol (`weft_probe::proto::TestSpec::Mp`), its checks, and the digest ranks compare at the
//! start so that ranks running different plans refuse each other.

use std::str::FromStr;

use serde::{Deserialize, Serialize};
use weft_model::mp::Pattern;
pub use weft_model::mp::Route;
use weft_model::mp::program::Counts;

use super::error::MpError;

/// Version of the message-passing request; an agent refuses any other.
pub const MP_VERSION: u32 = 1;

/// Most ranks in one run.
pub const MAX_RANKS: u32 = 64;

/// Largest message size, bytes.
pub const MAX_SIZE: u64 = 16 << 20;

/// Most iterations of one pattern and size.
pub const MAX_ITERATIONS: u32 = 1_000_000;

/// Sizes above this use [`MpSpec::iterations_large`] (OSU's `LARGE_MESSAGE_SIZE`, 8 KiB).
pub const LARGE_MESSAGE: u64 = 8 * 1024;

/// PVM's default fragment: `UDPMAXLEN = 4096 - 16` bytes (PVM 3.4 `src/global.h`).
pub const PVM_FRAGMENT: u32 = 4080;

/// PVM's default number of unacknowledged packets per daemon pair: `nopax = 1` (PVM 3.4
/// `src/pvmd.c`).
pub const PVM_WINDOW: u32 = 1;

/// How long a waiting rank polls before it sleeps when it has a CPU to itself, µs: long enough
/// that a ping-pong never sleeps. Measured on the shared 2-core VM (load average about 14):
/// 2 local ranks, 8-byte ping-pong p50 10 µs with this against 64 µs with [`SPIN_SHARED_US`]
/// (the wake-up from `poll` waits for a CPU behind other work).
pub const SPIN_DEDICATED_US: u32 = 20_000;

/// How long a waiting rank polls before it sleeps when ranks (and daemons) outnumber the CPUs,
/// µs: polling then takes the CPU a peer needs. Same VM: 4 local ranks, all-reduce of 1 MiB p50
/// 6.2 ms with this against 42 ms with [`SPIN_DEDICATED_US`] (MPICH, which polls without end,
/// took 76 ms over shared memory and 200 ms over TCP).
pub const SPIN_SHARED_US: u32 = 50;

/// The spin for `threads` busy threads on the busiest host (a rank, plus its daemon on the
/// daemon route): dedicated if they fit this host's CPUs, shared otherwise.
pub fn default_spin_us(threads: usize) -> u32 {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    if threads <= cores {
        SPIN_DEDICATED_US
    } else {
        SPIN_SHARED_US
    }
}

/// Where a rank runs on its host, and in which scheduling class.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placement {
    /// The rank's place among the ranks of its host (0, 1, ...): for the run the rank pins its
    /// thread to the `slot % n`-th of the `n` CPUs the agent may use (mpiexec's `-bind-to core`,
    /// round-robin where ranks outnumber CPUs). `None`: the scheduler places it.
    #[serde(default)]
    pub slot: Option<u32>,
    /// Run the rank's thread in the SCHED_FIFO class: other work on the host (compiles, other
    /// users' jobs) can then neither take its CPU nor keep a woken rank waiting (the kernel's
    /// real-time throttling still leaves them 5% of each CPU). Needs root or CAP_SYS_NICE.
    #[serde(default)]
    pub realtime: bool,
}

/// Smallest daemon fragment, bytes: a control frame (hello, abort, bye) must fit one packet.
pub const MIN_FRAGMENT: u32 = 2048;

/// Parameters of the daemon route.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DaemonParams {
    /// Largest UDP datagram between daemons, bytes (headers included).
    pub fragment: u32,
    /// Packets a daemon may have unacknowledged toward one peer.
    pub window: u32,
}

impl Default for DaemonParams {
    fn default() -> Self {
        DaemonParams {
            fragment: PVM_FRAGMENT,
            window: PVM_WINDOW,
        }
    }
}

/// One rank's request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MpSpec {
    /// [`MP_VERSION`].
    pub version: u32,
    /// This rank.
    pub rank: u32,
    /// Ranks in the run.
    pub ranks: u32,
    /// How messages travel.
    pub route: Route,
    /// Pattern names, run in order (`pingpong`, `allreduce`, `bt.S`, ...).
    pub patterns: Vec<String>,
    /// Message sizes, bytes, for the patterns that take sizes.
    pub sizes: Vec<u64>,
    /// Timed iterations per pattern and size up to [`LARGE_MESSAGE`].
    pub iterations: u32,
    /// Timed iterations above [`LARGE_MESSAGE`].
    pub iterations_large: u32,
    /// Untimed iterations before the timed ones (at most the timed count).
    pub warmup: u32,
    /// Time steps of an NPB skeleton; `None`: the benchmark's own.
    #[serde(default)]
    pub npb_steps: Option<u32>,
    /// A rank that sees nothing move for this long fails, ms.
    pub timeout_ms: u64,
    /// How long a waiting rank spins before it sleeps, µs.
    pub spin_us: u32,
    /// Daemon-route parameters.
    #[serde(default)]
    pub daemon: DaemonParams,
    /// This rank's CPU and scheduling class.
    #[serde(default)]
    pub place: Placement,
}

impl MpSpec {
    /// The patterns, parsed.
    pub fn parsed_patterns(&self) -> Result<Vec<Pattern>, MpError> {
        self.patterns
            .iter()
            .map(|p| Pattern::from_str(p).map_err(MpError::Config))
            .collect()
    }

    /// Checks the request against the fixed bounds and an agent's largest message `max_len`.
    pub fn check(&self, max_len: u64) -> Result<(), MpError> {
        if self.version != MP_VERSION {
            return Err(MpError::Mismatch(format!(
                "message-passing request version {} is not supported (this agent speaks {}): \
                 run the same weft version on every host",
                self.version, MP_VERSION
            )));
        }
        if !(2..=MAX_RANKS).contains(&self.ranks) || self.rank >= self.ranks {
            return Err(MpError::Config(format!(
                "rank {} of {}: a run needs 2 to {MAX_RANKS} ranks",
                self.rank, self.ranks
            )));
        }
        let patterns = self.parsed_patterns()?;
        if patterns.is_empty() {
            return Err(MpError::Config("no pattern to run".into()));
        }
        for p in &patterns {
            // Building rank 0's plan checks that the pattern exists for this many ranks.
            p.plan(0, self.ranks as usize, 0)
                .map_err(|e| MpError::Config(format!("{p}: {e}")))?;
        }
        if patterns.iter().any(|p| p.sized()) && self.sizes.is_empty() {
            return Err(MpError::Config("no message size given".into()));
        }
        let max = MAX_SIZE.min(max_len);
        if let Some(s) = self.sizes.iter().find(|&&s| s > max) {
            return Err(MpError::Config(format!(
                "message size {s} bytes exceeds this agent's limit of {max} bytes"
            )));
        }
        let iters = [self.iterations, self.iterations_large];
        if iters.iter().any(|&i| i == 0 || i > MAX_ITERATIONS)
            || self.npb_steps.is_some_and(|i| i == 0 || i > MAX_ITERATIONS)
        {
            return Err(MpError::Config(format!(
                "iterations must be between 1 and {MAX_ITERATIONS}"
            )));
        }
        if self.timeout_ms == 0 || self.timeout_ms > 3_600_000 || self.spin_us > 1_000_000 {
            return Err(MpError::Config(
                "the time-out must be between 1 ms and 1 h, the spin at most 1 s".into(),
            ));
        }
        let d = self.daemon;
        if self.route == Route::Daemon
            && (!(MIN_FRAGMENT..=65_000).contains(&d.fragment) || !(1..=1024).contains(&d.window))
        {
            return Err(MpError::Config(format!(
                "daemon fragment must be {MIN_FRAGMENT} to 65000 bytes and its window 1 to 1024 \
                 packets"
            )));
        }
        Ok(())
    }

    /// The iteration counts of the request, as a rank's [`Program`] takes them.
    ///
    /// [`Program`]: weft_model::mp::program::Program
    pub fn counts(&self) -> Counts {
        Counts {
            iterations: self.iterations,
            iterations_large: self.iterations_large,
            large_above: LARGE_MESSAGE as usize,
            warmup: self.warmup,
            npb_steps: self.npb_steps,
        }
    }

    /// The message sizes, bytes.
    pub fn sizes_usize(&self) -> Vec<usize> {
        self.sizes.iter().map(|&s| s as usize).collect()
    }

    /// Timed iterations for `size` bytes.
    pub fn iterations_for(&self, size: u64) -> u32 {
        if size > LARGE_MESSAGE {
            self.iterations_large
        } else {
            self.iterations
        }
    }

    /// A fingerprint of everything but the rank, and of this build's version: ranks exchange it
    /// in their hellos and refuse a peer whose fingerprint differs. FNV-1a over the canonical
    /// JSON (a non-cryptographic checksum is all this needs).
    pub fn digest(&self) -> u64 {
        let mut s = self.clone();
        s.rank = 0;
        s.place.slot = None;
        let mut bytes = serde_json::to_vec(&s).unwrap_or_default();
        bytes.extend_from_slice(env!("CARGO_PKG_VERSION").as_bytes());
        bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn spec() -> MpSpec {
        MpSpec {
            version: MP_VERSION,
            rank: 1,
            ranks: 4,
            route: Route::Direct,
            patterns: vec!["pingpong".into(), "bt.S".into()],
            sizes: vec![8, 1 << 20],
            iterations: 100,
            iterations_large: 10,
            warmup: 5,
            npb_steps: None,
            timeout_ms: 10_000,
            spin_us: 50,
            daemon: DaemonParams::default(),
            place: Placement::default(),
        }
    }

    #[test]
    fn checks_and_digest() {
        let s = spec();
        assert!(s.check(16 << 20).is_ok());
        assert!(matches!(s.check(1024), Err(MpError::Config(_))));
        let mut v = s.clone();
        v.version = 2;
        assert!(matches!(v.check(1 << 30), Err(MpError::Mismatch(_))));
        let mut r = s.clone();
        r.ranks = 3; // BT needs a square
        assert!(r.check(1 << 30).is_err());
        let mut p = s.clone();
        p.patterns = vec!["nope".into()];
        assert!(p.check(1 << 30).is_err());
        // The digest ignores the rank but not the sizes.
        let mut other = s.clone();
        other.rank = 3;
        other.place.slot = Some(1);
        assert_eq!(
            other.digest(),
            s.digest(),
            "rank and CPU slot differ per rank"
        );
        other.sizes = vec![8];
        assert_ne!(other.digest(), s.digest());
        let json = serde_json::to_string(&s).unwrap();
        assert_eq!(serde_json::from_str::<MpSpec>(&json).unwrap(), s);
        assert_eq!(s.iterations_for(8192), 100);
        assert_eq!(s.iterations_for(8193), 10);
    }
}
