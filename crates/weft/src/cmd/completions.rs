//! `weft completions SHELL`: a completion script generated from the argument definitions.

use clap::CommandFactory;
use clap_complete::Shell;

/// Arguments of `weft completions`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Install, for example:\n  \
    weft completions bash > ~/.local/share/bash-completion/completions/weft\n  \
    weft completions zsh > ~/.zfunc/_weft        # with fpath+=(~/.zfunc) before compinit\n  \
    weft completions fish > ~/.config/fish/completions/weft.fish")]
pub struct Args {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: Shell,
}

/// Runs `weft completions`: the script on stdout.
pub fn run(args: Args) -> anyhow::Result<()> {
    let mut cmd = crate::cli::Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "weft", &mut out);
    super::write_stdout(&out)
}
