//! Errors of the emulator.

use weft_model::net::TopologyError;

/// What can go wrong while building, running or removing an emulation.
#[derive(Debug, thiserror::Error)]
pub enum EmuError {
    /// This machine or user cannot run emulations (not root, no namespaces, no `ip`).
    #[error("emulation is not possible here: {0}")]
    Unsupported(String),
    /// The topology is not buildable.
    #[error(transparent)]
    Topology(#[from] TopologyError),
    /// A command (`ip`, `ethtool`) failed.
    #[error("`{cmd}` failed: {stderr}")]
    Command {
        /// The command line.
        cmd: String,
        /// What it printed on stderr.
        stderr: String,
    },
    /// A host name that is not in the emulation.
    #[error("no host {0:?} in this emulation (hosts: {1})")]
    NoHost(String, String),
    /// A run id that does not exist.
    #[error("no emulation {0:?} is running (see `weft emu list`)")]
    NoRun(String),
    /// More than one emulation is running and none was named.
    #[error("several emulations are running ({0}); name one with --run")]
    Ambiguous(String),
    /// The switch thread stopped with an error or panicked.
    #[error("the switch stopped: {0}")]
    Switch(String),
    /// A workload failed.
    #[error("workload {0}: {1}")]
    Workload(String, String),
    /// Interrupted by SIGINT/SIGTERM.
    #[error("interrupted")]
    Interrupted,
    /// An I/O error with what was being done.
    #[error("{0}")]
    Io(String, #[source] std::io::Error),
}

impl EmuError {
    /// Wraps an I/O error with a description of what was being done.
    pub fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> EmuError {
        let what = what.into();
        move |e| EmuError::Io(what, e)
    }
}
