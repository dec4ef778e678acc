//! Why a message-passing run failed, in terms of ranks.

use crate::mp::wire::WireError;

/// A failure of one rank's run (or of the set-up before it).
#[derive(Debug, thiserror::Error)]
pub enum MpError {
    /// A peer's connection ended before it said goodbye: it exited, crashed or was killed.
    #[error("rank {rank} closed its connection mid-run (it exited or died)")]
    PeerClosed {
        /// The rank.
        rank: usize,
    },
    /// A peer gave up and said why.
    #[error("rank {rank} aborted: {reason}")]
    PeerAborted {
        /// The rank.
        rank: usize,
        /// Its reason.
        reason: String,
    },
    /// Nothing moved for the time-out.
    #[error("nothing arrived for {secs:.1} s{waiting} (a rank is stuck, or the network is down)")]
    Timeout {
        /// The time-out, seconds.
        secs: f64,
        /// Which ranks this rank was waiting for, as text (" from rank 2").
        waiting: String,
    },
    /// A peer's frame is malformed.
    #[error("from rank {rank}: {source}")]
    Wire {
        /// The rank (or the connection's peer).
        rank: usize,
        /// What was wrong.
        #[source]
        source: WireError,
    },
    /// The ranks do not run the same plan (sizes, patterns, iterations, rank count or version).
    #[error("{0}")]
    Mismatch(String),
    /// A socket operation failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// The run was stopped from outside (the coordinator went away, the agent shuts down).
    #[error("{0}")]
    Interrupted(String),
    /// A request that cannot run (too many ranks, sizes beyond the limits, an unknown pattern).
    #[error("{0}")]
    Config(String),
    /// A failure with what the rank was doing (`allreduce at 1 MiB`).
    #[error("{what}: {source}")]
    During {
        /// What was being done.
        what: String,
        /// The failure.
        #[source]
        source: Box<MpError>,
    },
    /// A rank's agent reported a failure (its text names the rank).
    #[error("{0}")]
    Remote(String),
    /// The agent side of the set-up failed (control protocol, limits): the agent's error,
    /// kept whole for the agent to report.
    #[error(transparent)]
    Agent(Box<dyn std::error::Error + Send + Sync>),
}

impl MpError {
    /// An I/O error with what was being done.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        MpError::Io {
            context: context.into(),
            source,
        }
    }

    /// This error with what was being done in front.
    pub fn during(self, what: impl Into<String>) -> Self {
        MpError::During {
            what: what.into(),
            source: Box::new(self),
        }
    }
}
