//! `weft sim`: not built yet (see the open issues).

/// Arguments of `weft sim`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `weft sim`.
pub fn run(_args: Args) -> anyhow::Result<()> {
    Err(crate::cli::usage("`weft sim` is not built yet"))
}
