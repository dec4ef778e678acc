//! Message passing, sans IO: what each rank of a pattern sends and receives, step by step.
//!
//! - [`plan`]: a rank's [`Plan`] for one iteration (steps of sends and receives over regions of
//!   a working buffer, then local reductions);
//! - [`pattern`]: the patterns of `weft mp` (OSU ping-pong, ring exchange, all-to-all,
//!   all-reduce by ring and by recursive doubling, dissemination barrier);
//! - [`npb`]: the communication skeletons of NPB BT, SP and LU;
//! - [`program`]: a rank's whole run (barriers, warm-up, timed blocks) that executors walk;
//! - [`replay`]: all ranks' plans run against each other in memory (consistency, deadlock,
//!   reduction results, alpha-beta timing);
//!
//! The plans live here, below every engine, so that `weft mp`'s socket driver (`weft-sock`), the
//! emulator's workload and the simulator all run the same schedules, each through the one rank
//! of [`crate::app::mp`], and the model engine can time them; the closed forms are in
//! [`crate::calc::alpha_beta`].

pub mod npb;
pub mod pattern;
pub mod plan;
pub mod program;
pub mod replay;

pub use npb::{Benchmark, Class, Skeleton};
pub use pattern::{AllReduceAlgo, Pattern};
pub use plan::{Local, Op, Plan, Region, Step};

use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Bytes of the header in front of every message on a rank's connection (weft's mp frame:
/// magic, version, kind, ranks, sequence, length, offset, total); the simulator charges it
/// like the real executor sends it.
pub const FRAME_HEADER: usize = 24;

/// How messages travel between ranks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Route {
    /// Rank to rank over one TCP connection per pair (PVM's Direct Route, MPI over TCP).
    #[default]
    Direct,
    /// Rank to its daemon over TCP, daemon to daemon over UDP with fragmentation and
    /// acknowledgements, daemon to rank over TCP (PVM's default route).
    Daemon,
}

impl Route {
    /// The name used on the command line, in scenarios and in results.
    pub const fn name(self) -> &'static str {
        match self {
            Route::Direct => "direct",
            Route::Daemon => "daemon",
        }
    }
}

impl FromStr for Route {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "direct" => Ok(Route::Direct),
            "daemon" => Ok(Route::Daemon),
            _ => Err(format!("unknown route {s:?}: expected direct or daemon")),
        }
    }
}
