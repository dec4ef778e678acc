//! `-v`/`-vv`: log lines on stderr through `tracing`.
//!
//! The libraries emit `tracing` events (connection set-up, test start and end, retries); this
//! installs the one subscriber that prints them. Without `-v` only warnings and errors are
//! printed; `-v` adds `info` (what weft does), `-vv` `debug` (every step), `-vvv` `trace`.
//! Without `-v`, `RUST_LOG` (the usual `tracing` filter syntax, e.g. `weft_probe=debug`) is used
//! when set; `-v` always means what it says.
//!
//! Convention for simulated and emulated time: an event about a simulated instant carries it as
//! the field `t_ns` (virtual nanoseconds since the start of the run, a `u64`), e.g.
//! `tracing::debug!(t_ns = now.as_nanos(), port, "cell dropped")`, so that a log of a simulation
//! reads in the simulation's own time; the wall-clock timestamp of the line is then only when it
//! was printed.

use std::io::Write;

use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::MakeWriter;

/// Installs the stderr subscriber for `verbose` (`-v` count).
pub fn init(verbose: u8) {
    let level = match verbose {
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    let filter = match verbose {
        0 => EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(level)),
        _ => EnvFilter::new(level),
    };
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    // A second initialisation (never in the binary) is harmless: the first one stays.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(Stderr)
        .with_ansi(ansi)
        .with_target(verbose >= 2)
        .try_init();
}

/// Stderr, written with the progress bars lifted.
#[derive(Clone, Copy)]
struct Stderr;

/// One log line, buffered so that it is written in one piece while the bars are lifted.
struct Line(Vec<u8>);

impl Write for Line {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for Line {
    fn drop(&mut self) {
        let bytes = std::mem::take(&mut self.0);
        crate::progress::suspend(|| {
            let _ = std::io::stderr().lock().write_all(&bytes);
        });
    }
}

impl<'a> MakeWriter<'a> for Stderr {
    type Writer = Line;
    fn make_writer(&'a self) -> Line {
        Line(Vec::new())
    }
}
