//! Options shared by the agents and their clients: the pre-shared key, and the bounds on
//! connections that have not yet said who they are (each group one flattened struct, so that a
//! command adds it with one line).

use std::path::PathBuf;

use weft_gate::{Key, LobbyLimits};
use weft_model::Duration;

/// `--key-file` of a client of `weft serve` (`weft tput`, `weft rr`, `weft pattern`).
#[derive(Debug, Clone, clap::Args)]
pub struct ClientKey {
    /// File holding the agent's pre-shared key (`weft serve --key-file`): proven by challenge and
    /// response, never sent. With `weft pattern A:B`, agent A proves its own key to B.
    #[arg(long, value_name = "FILE")]
    pub key_file: Option<PathBuf>,
}

impl ClientKey {
    /// The key, if a file was given.
    pub fn load(&self) -> anyhow::Result<Option<Key>> {
        super::send::load_key(&None, &self.key_file)
    }
}

/// `--key` / `--key-file` of `weft serve`.
#[derive(Debug, Clone, clap::Args)]
pub struct AgentKey {
    /// Pre-shared key clients must prove (visible in the process list: prefer --key-file).
    #[arg(long, conflicts_with = "key_file")]
    pub key: Option<String>,
    /// File holding the pre-shared key clients must prove (`weft tput --key-file` with the same
    /// file); without one, the agent serves anyone who reaches it.
    #[arg(long, value_name = "FILE")]
    pub key_file: Option<PathBuf>,
}

impl AgentKey {
    /// The key, if one was given.
    pub fn load(&self) -> anyhow::Result<Option<Key>> {
        super::send::load_key(&self.key, &self.key_file)
    }
}

/// Bounds on the connections an agent has accepted but that have not yet said who they are.
#[derive(Debug, Clone, clap::Args)]
pub struct LobbyArgs {
    /// Time a new connection has to say who it is (its first message, with its proof of the
    /// key); silent ones are closed after it.
    #[arg(long, default_value = "2s", value_parser = super::bounds::duration("10ms", "1h"))]
    pub hello_timeout: Duration,
    /// Connections waiting to say who they are, at most; past it the oldest of the address that
    /// has the most waiting is closed to make room (running tests and sessions never are).
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub max_unidentified: u32,
    /// Connections from one address waiting to say who they are, at most; past it that
    /// address's oldest is closed.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub max_unidentified_per_source: u32,
}

impl LobbyArgs {
    /// The bounds as the agents take them.
    pub fn limits(&self) -> LobbyLimits {
        LobbyLimits {
            hello_timeout: self.hello_timeout,
            max_waiting: self.max_unidentified as usize,
            max_per_source: self.max_unidentified_per_source as usize,
        }
    }
}
