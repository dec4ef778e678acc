//! `weft plot`: not built yet (see the open issues).

/// Arguments of `weft plot`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `weft plot`.
pub fn run(_args: Args) -> anyhow::Result<()> {
    Err(crate::cli::usage("`weft plot` is not built yet"))
}
