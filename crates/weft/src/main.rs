//! The `weft` command line: argument parsing and wiring only. Each subcommand lives in its own
//! file under `cmd/` with an `Args` struct and a `run` function.

mod cli;
mod cmd;
mod logging;
mod output;
mod progress;

use std::process::ExitCode;

fn main() -> ExitCode {
    let args = cli::Cli::parse_args();
    progress::set_quiet(args.quiet);
    logging::init(args.verbose);
    match cmd::run(args.command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("{}", cli::error_line(&err));
            cli::exit_code_for(&err)
        }
    }
}
