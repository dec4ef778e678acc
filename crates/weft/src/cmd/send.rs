//! `weft send`: not built yet (see the open issues).

/// Arguments of `weft send`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `weft send`.
pub fn run(_args: Args) -> anyhow::Result<()> {
    Err(crate::cli::usage("`weft send` is not built yet"))
}
