//! `weft trace`: not built yet (see the open issues).

/// Arguments of `weft trace`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `weft trace`.
pub fn run(_args: Args) -> anyhow::Result<()> {
    Err(crate::cli::usage("`weft trace` is not built yet"))
}
