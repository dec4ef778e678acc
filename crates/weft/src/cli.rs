//! Top-level argument parsing and exit codes (0 success, 1 runtime failure, 2 usage error, 3 a
//! `weft run` whose engines skipped some of the file's workloads and ran the rest).

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser};

use crate::cmd::Command;

/// A workbench for evaluating network fabrics for distributed computing: measure real networks,
/// emulate and simulate fabrics, model them in closed form, and move bulk data over UDP.
#[derive(Debug, Parser)]
#[command(name = "weft", version, propagate_version = true, max_term_width = 100)]
pub struct Cli {
    /// No progress bars, and `weft serve` logs no connections; errors are still printed.
    #[arg(short, long, global = true, help_heading = "Global options")]
    pub quiet: bool,
    /// Log what weft does on stderr: -v connections and tests, -vv every step (without -v,
    /// RUST_LOG if set).
    #[arg(short, long, action = clap::ArgAction::Count, global = true, help_heading = "Global options")]
    pub verbose: u8,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

impl Cli {
    /// Parses the process's arguments (exiting on `--help` or a usage error, as
    /// [`Parser::parse`]), with every flag that takes a value accepting a negative number, so
    /// that `-t -5` reaches the flag's parser and is refused with its range rather than taken
    /// for an unknown flag `-5`.
    pub fn parse_args() -> Cli {
        let mut matches = negatives_are_values(Cli::command()).get_matches();
        Cli::from_arg_matches_mut(&mut matches).unwrap_or_else(|e| e.exit())
    }
}

/// `cmd` and its subcommands with [`clap::Arg::allow_negative_numbers`] on every flag that takes
/// a value.
pub fn negatives_are_values(cmd: clap::Command) -> clap::Command {
    cmd.mut_args(|a| {
        if a.get_action().takes_values() {
            a.allow_negative_numbers(true)
        } else {
            a
        }
    })
    .mut_subcommands(negatives_are_values)
}

/// An error in how `weft` was asked to do something (exit code 2), as opposed to a failure while
/// doing it (exit code 1). Return it wrapped in `anyhow::Error` from a command.
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// Builds a usage error (exit code 2) from a message.
pub fn usage(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(UsageError(msg.into()))
}

/// A run that did what it could but not all it was asked (exit code 3): `weft run` whose
/// engines skipped workloads they cannot run and ran the others. Not a failure of what ran.
#[derive(Debug)]
pub struct PartialRun(pub String);

impl std::fmt::Display for PartialRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PartialRun {}

/// The exit code an error from a command maps to.
pub fn exit_code_for(err: &anyhow::Error) -> ExitCode {
    if err.downcast_ref::<UsageError>().is_some() {
        ExitCode::from(2)
    } else if err.downcast_ref::<PartialRun>().is_some() {
        ExitCode::from(3)
    } else {
        ExitCode::from(1)
    }
}

/// How `main` prints an error before exiting with [`exit_code_for`]: `weft: error: ...`, or
/// `weft: ...` for a [`PartialRun`] (what ran is fine).
pub fn error_line(err: &anyhow::Error) -> String {
    if err.downcast_ref::<PartialRun>().is_some() {
        format!("weft: {err:#}")
    } else {
        format!("weft: error: {err:#}")
    }
}
