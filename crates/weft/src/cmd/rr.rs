//! `weft rr`: not built yet (see the open issues).

/// Arguments of `weft rr`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `weft rr`.
pub fn run(_args: Args) -> anyhow::Result<()> {
    Err(crate::cli::usage("`weft rr` is not built yet"))
}
