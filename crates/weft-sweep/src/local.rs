//! Runs on this machine's cores: a rayon pool of `jobs` threads, each waiting on one `weft`
//! subprocess at a time, every record appended as its run finishes, and a progress bar on stderr
//! (indicatif, drawn only when stderr is a terminal). The same loop runs a Slurm array task's pack.

use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Instant;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rayon::prelude::*;

use crate::SweepError;
use crate::invoke;
use crate::plan::Target;
use crate::runs::Run;
use crate::store::{Appender, Status};

/// How to run.
pub struct LocalOptions<'a> {
    /// The `weft` binary each run executes.
    pub exe: PathBuf,
    /// Runs at a time.
    pub jobs: usize,
    /// Whether to draw a progress bar (it is drawn only when stderr is also a terminal).
    pub progress: bool,
    /// True once the sweep should stop starting runs (SIGINT, SIGTERM).
    pub stopping: &'a (dyn Fn() -> bool + Sync),
}

/// What a call to [`run_pending`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Outcome {
    /// Runs recorded as ok.
    pub ok: usize,
    /// Runs recorded as failed.
    pub failed: usize,
    /// Whether it stopped before running them all.
    pub interrupted: bool,
    /// Wall time, seconds.
    pub elapsed_s: f64,
}

/// The number of runs at a time that uses every core.
pub fn all_cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Runs `pending` runs of `target`, appending each record to `appender` as it finishes. `done`
/// and `total` place the progress bar in the whole sweep. Stops starting runs once
/// `opts.stopping()` is true, or when a record cannot be written (that error is returned).
pub fn run_pending(
    target: &Target,
    pending: &[Run],
    appender: &mut Appender,
    done: usize,
    total: usize,
    opts: &LocalOptions<'_>,
) -> Result<Outcome, SweepError> {
    let start = Instant::now();
    let bar = progress_bar(opts.progress, done, total);
    let appender = Mutex::new(appender);
    let ok = AtomicUsize::new(0);
    let failed = AtomicUsize::new(0);
    let broken = AtomicBool::new(false);
    let store_error: Mutex<Option<SweepError>> = Mutex::new(None);
    let stop = || broken.load(Ordering::SeqCst) || (opts.stopping)();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(opts.jobs.max(1))
        .thread_name(|i| format!("weft-sweep-{i}"))
        .build()
        .map_err(|e| SweepError::Nothing(format!("cannot start the sweep's threads: {e}")))?;
    pool.install(|| {
        pending.par_iter().with_max_len(1).for_each(|run| {
            if stop() {
                return;
            }
            let Some(record) = invoke::execute(&opts.exe, target, run, opts.stopping) else {
                return;
            };
            let status = record.status;
            let written = match appender.lock() {
                Ok(mut a) => a.append(&record),
                Err(_) => Err(SweepError::Nothing(
                    "the result store's lock is poisoned".into(),
                )),
            };
            if let Err(e) = written {
                broken.store(true, Ordering::SeqCst);
                if let Ok(mut slot) = store_error.lock() {
                    slot.get_or_insert(e);
                }
                return;
            }
            let counter = if status == Status::Ok { &ok } else { &failed };
            counter.fetch_add(1, Ordering::SeqCst);
            bar.inc(1);
            let f = failed.load(Ordering::SeqCst);
            if f > 0 {
                bar.set_message(format!("{f} failed"));
            }
        });
    });
    bar.finish_and_clear();
    if let Some(e) = store_error.into_inner().ok().flatten() {
        return Err(e);
    }
    let outcome = Outcome {
        ok: ok.into_inner(),
        failed: failed.into_inner(),
        interrupted: false,
        elapsed_s: start.elapsed().as_secs_f64(),
    };
    Ok(Outcome {
        interrupted: outcome.ok + outcome.failed < pending.len(),
        ..outcome
    })
}

fn progress_bar(on: bool, done: usize, total: usize) -> ProgressBar {
    let target = if on {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    };
    let bar = ProgressBar::with_draw_target(Some(total as u64), target);
    if let Ok(style) =
        ProgressStyle::with_template("sweep [{bar:30}] {pos}/{len} runs {msg} eta {eta}")
    {
        bar.set_style(style.progress_chars("#>."));
    }
    bar.set_position(done as u64);
    // Runs done before this start are not part of the rate the eta is computed from.
    bar.reset_eta();
    bar
}
