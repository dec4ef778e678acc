//! Progress bars for every command that runs longer than a couple of seconds, through
//! `indicatif`: drawn on stderr only when it is a terminal and `-q/--quiet` was not given, so
//! that pipes, files and CI logs never see them. Log lines (`-v`) are written through
//! [`suspend`], which lifts the bars for the time of the write.
//!
//! The libraries know nothing of this: they call a closure or update counters (the simulator's
//! `progress` closures, `rr::run_with_progress`, `weft_xfer`'s `Progress` atomics), and the
//! command turns those into a [`Progress`].

use std::io::IsTerminal;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

static QUIET: AtomicBool = AtomicBool::new(false);
static BARS: OnceLock<MultiProgress> = OnceLock::new();

/// Sets the global `-q/--quiet` (called once, before any command runs).
pub fn set_quiet(quiet: bool) {
    QUIET.store(quiet, Ordering::Relaxed);
}

/// Whether `-q/--quiet` was given.
pub fn quiet() -> bool {
    QUIET.load(Ordering::Relaxed)
}

/// Whether bars are drawn at all: stderr is a terminal and not `--quiet`.
pub fn enabled() -> bool {
    !quiet() && std::io::stderr().is_terminal()
}

fn bars() -> &'static MultiProgress {
    BARS.get_or_init(|| MultiProgress::with_draw_target(ProgressDrawTarget::stderr()))
}

/// Runs `f` (a write to stderr) with the bars lifted, so that a log line does not tear them.
pub fn suspend<R>(f: impl FnOnce() -> R) -> R {
    match BARS.get() {
        Some(m) => m.suspend(f),
        None => f(),
    }
}

/// One progress bar or spinner; hidden when [`enabled`] is false. Cleared when finished or
/// dropped.
pub struct Progress {
    bar: ProgressBar,
    ticker: Option<std::thread::JoinHandle<()>>,
}

impl Progress {
    /// A bar over `total` steps (`unit` names them: "sizes", "points"; "" shows a percentage,
    /// for steps nobody counts, such as simulated nanoseconds).
    pub fn bar(label: &str, total: u64, unit: &str) -> Progress {
        let style = if unit.is_empty() {
            "{prefix} [{bar:30}] {percent:>3}%  {msg} eta {eta}".to_string()
        } else {
            format!("{{prefix}} [{{bar:30}}] {{pos}}/{{len}} {unit}  {{msg}} eta {{eta}}")
        };
        Progress::make(label, Some(total), &style, false)
    }

    /// A bar over `total` steps of which one may last long (a message-passing sample at 4 MiB
    /// over PVM's daemons): the elapsed time ticks on, so that a long step does not look stuck.
    pub fn steps(label: &str, total: u64, unit: &str) -> Progress {
        let style = format!("{{prefix}} [{{bar:30}}] {{pos}}/{{len}} {unit} {{elapsed}}  {{msg}}");
        Progress::make(label, Some(total), &style, true)
    }

    /// A bar over `total` bytes, with rate and time left.
    pub fn bytes(label: &str, total: u64) -> Progress {
        let style =
            "{prefix} [{bar:30}] {bytes}/{total_bytes} {binary_bytes_per_sec} {msg} eta {eta}";
        Progress::make(label, Some(total), style, false)
    }

    /// A spinner with the elapsed time, for work of unknown length.
    pub fn spinner(label: &str) -> Progress {
        Progress::make(label, None, "{prefix} {spinner} {elapsed} {msg}", true)
    }

    /// A bar that fills with wall-clock time over `total` (a timed test): it moves by itself.
    pub fn timed(label: &str, total: Duration) -> Progress {
        let ms = u64::try_from(total.as_millis()).unwrap_or(u64::MAX).max(1);
        let mut p = Progress::make(
            label,
            Some(ms),
            "{prefix} [{bar:30}] {elapsed} / {msg}",
            false,
        );
        p.bar.set_message(format!("{:.0?}", total));
        if !p.bar.is_hidden() {
            let bar = p.bar.clone();
            let start = std::time::Instant::now();
            p.ticker = Some(std::thread::spawn(move || {
                while !bar.is_finished() {
                    let done = u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX);
                    bar.set_position(done.min(ms));
                    std::thread::sleep(Duration::from_millis(200));
                }
            }));
        }
        p
    }

    fn make(label: &str, total: Option<u64>, template: &str, tick: bool) -> Progress {
        if !enabled() {
            return Progress {
                bar: ProgressBar::hidden(),
                ticker: None,
            };
        }
        let bar = match total {
            Some(n) => ProgressBar::new(n),
            None => ProgressBar::new_spinner(),
        };
        // The templates are constants of this file; a bad one falls back to the default look.
        let style = ProgressStyle::with_template(template)
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("#>-");
        let bar = bars().add(bar.with_style(style).with_prefix(label.to_string()));
        if tick {
            bar.enable_steady_tick(Duration::from_millis(120));
        }
        Progress { bar, ticker: None }
    }

    /// Sets the number of steps done.
    pub fn set(&self, done: u64) {
        self.bar.set_position(done);
    }

    /// Adds `n` steps done.
    pub fn inc(&self, n: u64) {
        self.bar.inc(n);
    }

    /// Changes the total number of steps.
    pub fn set_total(&self, total: u64) {
        self.bar.set_length(total);
    }

    /// Sets the text after the bar (the current item, a running figure).
    pub fn message(&self, msg: impl Into<String>) {
        self.bar.set_message(msg.into());
    }

    /// A reader that advances the bar by the bytes read through it (a capture being analysed).
    pub fn wrap_read<R: std::io::Read + Send>(&self, r: R) -> impl std::io::Read + Send + use<R> {
        self.bar.wrap_read(r)
    }

    /// Removes the bar from the terminal.
    pub fn finish(mut self) {
        self.clear();
    }

    fn clear(&mut self) {
        self.bar.finish_and_clear();
        if let Some(t) = self.ticker.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.clear();
    }
}
