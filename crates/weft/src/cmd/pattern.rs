//! `weft pattern`: not built yet (see the open issues).

/// Arguments of `weft pattern`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `weft pattern`.
pub fn run(_args: Args) -> anyhow::Result<()> {
    Err(crate::cli::usage("`weft pattern` is not built yet"))
}
