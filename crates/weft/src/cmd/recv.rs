//! `weft recv`: not built yet (see the open issues).

/// Arguments of `weft recv`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `weft recv`.
pub fn run(_args: Args) -> anyhow::Result<()> {
    Err(crate::cli::usage("`weft recv` is not built yet"))
}
