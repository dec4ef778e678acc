//! Message passing among N processes (`weft mp`): the agents that run ranks and the coordinator
//! that launches them over weft's control protocol. The ranks themselves (the executor of the
//! plans of [`weft_model::mp`] over real sockets, the daemons, the results) are the socket
//! driver's, [`weft_sock::mp`], re-exported here under their old paths.
//!
//! - [`agent`]: a rank inside `weft serve`;
//! - [`launch`]: the coordinator;
//! - [`local`]: `--local N`, N agents of this binary on loopback.

pub mod agent;
pub mod launch;
pub mod local;

pub use weft_sock::mp::{
    DaemonParams, Engine, MP_VERSION, MpError, MpResult, MpSample, MpSpec, Placement, Route,
    Waiting, conn, engine, error, inproc, kernel, mesh, model, msg, place, pvmd, rank, result,
    spec, wire,
};

pub use launch::{Launch, run};

use crate::error::ProbeError;

/// An agent's failure of one of its ranks as the agent reports it to the coordinator (an
/// `Error` message whose text is the error's, prefixed with the rank).
pub fn into_probe(e: MpError, rank: usize) -> ProbeError {
    match e {
        MpError::Agent(b) => match b.downcast::<ProbeError>() {
            Ok(p) => *p,
            Err(b) => ProbeError::Io {
                context: format!("rank {rank}"),
                error: std::io::Error::other(b.to_string()),
            },
        },
        MpError::Timeout { .. } => ProbeError::Timeout(format!("rank {rank}: {e}")),
        MpError::During { ref source, .. } if matches!(**source, MpError::Timeout { .. }) => {
            ProbeError::Timeout(format!("rank {rank}: {e}"))
        }
        MpError::Config(m) => ProbeError::Config(format!("rank {rank}: {m}")),
        MpError::Mismatch(m) => ProbeError::Unsupported(format!("rank {rank}: {m}")),
        MpError::Io { context, source } => ProbeError::Io {
            context: format!("rank {rank}: {context}"),
            error: source,
        },
        other => ProbeError::Io {
            context: format!("rank {rank}"),
            error: std::io::Error::other(other.to_string()),
        },
    }
}

impl From<ProbeError> for MpError {
    fn from(e: ProbeError) -> Self {
        MpError::Agent(Box::new(e))
    }
}
