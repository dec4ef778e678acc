//! `weft demo`: not built yet (see the open issues).

/// Arguments of `weft demo`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `weft demo`.
pub fn run(_args: Args) -> anyhow::Result<()> {
    Err(crate::cli::usage("`weft demo` is not built yet"))
}
