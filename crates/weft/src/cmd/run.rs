//! `weft run`: not built yet (see the open issues).

/// Arguments of `weft run`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `weft run`.
pub fn run(_args: Args) -> anyhow::Result<()> {
    Err(crate::cli::usage("`weft run` is not built yet"))
}
