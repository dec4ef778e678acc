//! One module per subcommand; this file only lists them and dispatches.

use clap::Subcommand;

mod bounds;
mod calc;
mod client_args;
mod completions;
mod demo;
mod emu;
mod gate;
mod join;
mod man;
mod mp;
mod pattern;
mod plot;
mod recv;
mod report;
mod repro;
mod rr;
mod run;
mod send;
mod serve;
mod sim;
mod sweep;
mod tput;
mod trace;
mod vc;
mod vc_manager;

/// The subcommands of `weft`.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a short measurement against an in-process server on loopback and write JSON and SVG.
    Demo(demo::Args),
    /// Answer measurement requests from weft clients (the agent).
    Serve(serve::Args),
    /// ttcp/iperf3-style throughput to an agent.
    Tput(tput::Args),
    /// Request/response latency to an agent or an RFC 862 echo service.
    Rr(rr::Args),
    /// Concurrent sessions among several agents: pairs, many-to-one, one-to-many.
    Pattern(pattern::Args),
    /// Message passing among N ranks: ping-pong, collectives, NPB skeletons; direct or via daemons.
    Mp(mp::Args),
    /// Draw the figure that fits a result file (SVG, or PNG on request).
    Plot(plot::Args),
    /// Closed-form arithmetic: overheads, windows, head-of-line blocking, queueing, TCP bounds.
    Calc(calc::Args),
    /// Discrete-event simulation of a switch fabric, from a scenario or a quick form.
    Sim(sim::Args),
    /// Run a scenario file on one or more engines and compare with the published figure.
    ///
    /// A workload an engine cannot run (NDP on the emulator, a kernel without the congestion
    /// control asked for) is its own row saying why, `skipped` in the JSON; the other workloads
    /// run, and the exit status is 3.
    Run(run::Args),
    /// Run the catalogued results of the five studies on every engine available, with verdicts.
    Repro(repro::Args),
    /// Write one self-contained HTML page from result files (a `weft repro` result, any other).
    Report(report::Args),
    /// Emulate a topology with namespaced hosts and weft's userspace switch (needs root).
    Emu(emu::Args),
    /// Analyse captures: utilisation, flows, two-point latency; sample an interface live.
    Trace(trace::Args),
    /// Send files over UDP to a `weft recv` (SBTP, MBTP or the reliable mode).
    Send(send::Args),
    /// Receive files sent by `weft send` into a directory.
    Recv(recv::Args),
    /// Put a file that MBTP striped over separate receivers back together from its stripes.
    Join(join::Args),
    /// Plan virtual circuits from a host database: mesh, star or pairs; per-switch tables.
    Vc(vc::Args),
    /// Run a grid of scenario or simulator runs on all cores or as a Slurm job array, resumably.
    Sweep(sweep::Args),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(completions::Args),
    /// Write the manual page (roff) to stdout, or one page per command into a directory.
    Man(man::Args),
}

/// Runs one subcommand.
pub fn run(command: Command) -> anyhow::Result<()> {
    match command {
        Command::Demo(a) => demo::run(a),
        Command::Serve(a) => serve::run(a),
        Command::Tput(a) => tput::run(a),
        Command::Rr(a) => rr::run(a),
        Command::Pattern(a) => pattern::run(a),
        Command::Mp(a) => mp::run(a),
        Command::Plot(a) => plot::run(a),
        Command::Calc(a) => calc::run(a),
        Command::Sim(a) => sim::run(a),
        Command::Run(a) => run::run(a),
        Command::Repro(a) => repro::run(a),
        Command::Report(a) => report::run(a),
        Command::Emu(a) => emu::run(a),
        Command::Trace(a) => trace::run(a),
        Command::Send(a) => send::run(a),
        Command::Recv(a) => recv::run(a),
        Command::Join(a) => join::run(a),
        Command::Vc(a) => vc::run(a),
        Command::Sweep(a) => sweep::run(a),
        Command::Completions(a) => completions::run(a),
        Command::Man(a) => man::run(a),
    }
}

/// Writes bytes to stdout; a reader that went away (`| head`) is not an error.
pub(crate) fn write_stdout(bytes: &[u8]) -> anyhow::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(anyhow::anyhow!("writing to stdout: {e}"))
        }
        _ => Ok(()),
    }
}
