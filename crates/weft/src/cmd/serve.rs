//! `weft serve`: not built yet (see the open issues).

/// Arguments of `weft serve`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `weft serve`.
pub fn run(_args: Args) -> anyhow::Result<()> {
    Err(crate::cli::usage("`weft serve` is not built yet"))
}
