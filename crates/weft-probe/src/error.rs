//! The error type of the probe library.

use crate::proto::ProtoError;

/// Why a measurement or the agent failed.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// A control message was malformed, oversized, of another version, or the peer vanished.
    #[error(transparent)]
    Proto(#[from] ProtoError),
    /// A socket operation failed; `context` says which. (The message includes the I/O
    /// error's, which is therefore not also a `source`: a report of the chain would repeat it.)
    #[error("{context}: {error}")]
    Io {
        /// What was being done.
        context: String,
        /// The underlying error.
        error: std::io::Error,
    },
    /// The peer reported an error (`code` as in [`crate::proto::ErrorMsg`]).
    #[error("the agent reported an error ({code}): {message}")]
    Remote {
        /// Machine-readable code.
        code: String,
        /// The peer's explanation.
        message: String,
    },
    /// A request exceeds one of the agent's limits.
    #[error("{0}")]
    Limit(String),
    /// The agent is running as many tests as it allows.
    #[error("{0}")]
    Busy(String),
    /// Something the peer or this build does not support.
    #[error("{0}")]
    Unsupported(String),
    /// Nothing arrived in time.
    #[error("{0}")]
    Timeout(String),
    /// The peer broke the protocol (unexpected message, count mismatch, ...).
    #[error("protocol violation: {0}")]
    Protocol(String),
    /// The configuration asked for is invalid (a usage error at the command line).
    #[error("{0}")]
    Config(String),
    /// The agent will not do this by its operator's choice (e.g. `weft serve --no-relay`).
    #[error("{0}")]
    Refused(String),
    /// The key was missing, wrong, or not proven (see [`crate::auth`]).
    #[error("authentication failed: {0}")]
    Auth(String),
    /// A relayed test failed between the relay and its target.
    #[error("the relayed test toward {target} failed: {message}")]
    Relay {
        /// The target agent's control address.
        target: std::net::SocketAddr,
        /// What failed, as the relay saw it.
        message: String,
    },
}

impl ProbeError {
    /// An I/O error with what was being done.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        ProbeError::Io {
            context: context.into(),
            error: source,
        }
    }

    /// The code sent to the peer in an `Error` message.
    pub fn code(&self) -> &str {
        match self {
            ProbeError::Proto(p) => p.code(),
            ProbeError::Io { .. } => "socket",
            ProbeError::Remote { code, .. } => code,
            ProbeError::Limit(_) => "limit",
            ProbeError::Busy(_) => "busy",
            ProbeError::Unsupported(_) => "unsupported",
            ProbeError::Timeout(_) => "timeout",
            ProbeError::Protocol(_) => "bad-message",
            ProbeError::Config(_) => "bad-request",
            ProbeError::Refused(_) => "refused",
            ProbeError::Relay { .. } => "relay",
            ProbeError::Auth(_) => "auth",
        }
    }
}
