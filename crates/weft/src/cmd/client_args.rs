//! The arguments every client of the agents takes, declared once and flattened into
//! `weft tput`, `rr`, `pattern` and `mp`: the agent's port ([`PortArg`]) and how long to wait
//! for it ([`ConnectArg`]), and where the result document goes ([`ResultArgs`]). A command whose
//! meaning differs rewords a help line with `#[command(mut_arg(...))]` (rr's port defaults to
//! 7 with --echo); the flags themselves are the same everywhere. `--key-file` is
//! [`super::gate::ClientKey`].

use std::path::PathBuf;

use weft_model::Duration;

/// `-p/--port`: the agents' port where a HOST names none.
#[derive(Debug, Clone, clap::Args)]
pub struct PortArg {
    /// The agents' port where a HOST names none (iperf3 -p) [default: 5301].
    #[arg(short, long)]
    pub port: Option<u16>,
}

impl PortArg {
    /// The port given, or `default`.
    pub fn or(&self, default: u16) -> u16 {
        self.port.unwrap_or(default)
    }
}

/// `--connect-timeout`: how long a client waits for an agent.
#[derive(Debug, Clone, clap::Args)]
pub struct ConnectArg {
    /// Time-out for connecting to an agent and each set-up step.
    #[arg(long, default_value = "5s", value_parser = super::bounds::duration("1ms", "1h"))]
    pub connect_timeout: Duration,
}

/// Where the result document goes besides the table: `--json`, `-o/--output`, `--csv`.
#[derive(Debug, Clone, clap::Args)]
pub struct ResultArgs {
    /// Print the result document (JSON) on stdout instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Also write the result document to FILE.
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub csv: crate::output::CsvArg,
}
