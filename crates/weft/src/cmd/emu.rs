//! `weft emu`: not built yet (see the open issues).

/// Arguments of `weft emu`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `weft emu`.
pub fn run(_args: Args) -> anyhow::Result<()> {
    Err(crate::cli::usage("`weft emu` is not built yet"))
}
