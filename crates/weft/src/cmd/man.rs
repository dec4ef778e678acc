//! `weft man`: the manual page, generated from the argument definitions.

use std::path::PathBuf;

use anyhow::Context;
use clap::CommandFactory;

/// Arguments of `weft man`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Read it with `weft man | man -l -`, or install the pages:\n  \
    weft man --dir /usr/local/share/man/man1"
)]
pub struct Args {
    /// Write weft.1 and one page per command (weft-rr.1, weft-emu-run.1, ...) into this
    /// directory (created if missing) instead of weft.1 on stdout.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// Runs `weft man`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let cmd = crate::cli::Cli::command();
    match args.dir {
        Some(dir) => {
            std::fs::create_dir_all(&dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
            let mut cmd = cmd.disable_help_subcommand(true);
            cmd.build();
            let n = write_pages(cmd, &dir)?;
            eprintln!("wrote {n} manual pages into {}", dir.display());
            Ok(())
        }
        None => {
            let mut out = Vec::new();
            clap_mangen::Man::new(cmd)
                .render(&mut out)
                .context("rendering the manual page")?;
            super::write_stdout(&out)
        }
    }
}

/// Writes the page of `cmd` and of every subcommand below it into `dir`, each atomically (as
/// `clap_mangen::generate_to` does, but through `write_atomic`); returns how many.
fn write_pages(cmd: clap::Command, dir: &std::path::Path) -> anyhow::Result<usize> {
    let mut n = 0;
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        n += write_pages(sub.clone(), dir)?;
    }
    let man = clap_mangen::Man::new(cmd);
    let path = dir.join(man.get_filename());
    let mut page = Vec::new();
    man.render(&mut page).context("rendering a manual page")?;
    weft_report::write_atomic(&path, &page)
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(n + 1)
}
