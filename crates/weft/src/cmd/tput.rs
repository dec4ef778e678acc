//! `weft tput`: not built yet (see the open issues).

/// Arguments of `weft tput`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `weft tput`.
pub fn run(_args: Args) -> anyhow::Result<()> {
    Err(crate::cli::usage("`weft tput` is not built yet"))
}
