//! `weft calc`: not built yet (see the open issues).

/// Arguments of `weft calc`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `weft calc`.
pub fn run(_args: Args) -> anyhow::Result<()> {
    Err(crate::cli::usage("`weft calc` is not built yet"))
}
