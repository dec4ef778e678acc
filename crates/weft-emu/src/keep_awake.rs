//! Keep-awake threads: one busy-polling thread per CPU in the SCHED_IDLE class, for the length of
//! an emulation. On a hypervisor a virtual CPU that halts for want of work takes 0.1-1 ms to come
//! back when a host's process is woken by a frame, which adds to every emulated round trip; a CPU
//! that is busy with an idle-class thread switches to the woken task at once. The threads yield
//! to every other task, so they take no time from the hosts or the switch (the effect of booting
//! with `idle=poll`, for the emulation's lifetime only).

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::thread::Scope;

/// Runs `f` with keep-awake threads on every CPU, and stops them however `f` ends, a panic
/// too: a scope waits for its threads before it lets a panic go on, and these spin until told
/// to stop, so a panic left them running would hang the caller for ever.
pub fn around<R>(f: impl FnOnce() -> R) -> R {
    let awake = KeepAwake::new();
    std::thread::scope(|scope| {
        awake.start(scope);
        let _stop = StopOnDrop(&awake);
        f()
    })
}

/// Stops the keep-awake threads when dropped, on unwinding too.
struct StopOnDrop<'a>(&'a KeepAwake);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.stop();
    }
}

/// The keep-awake threads of one emulation.
#[derive(Debug, Default)]
struct KeepAwake {
    stop: AtomicBool,
    /// Thread ids of the threads (0: not started yet).
    tids: Vec<AtomicI32>,
}

impl KeepAwake {
    /// Room for one thread per CPU this process may run on.
    fn new() -> Self {
        KeepAwake {
            stop: AtomicBool::new(false),
            tids: weft_sys::sched::allowed_cpus()
                .iter()
                .map(|_| AtomicI32::new(0))
                .collect(),
        }
    }

    /// Starts the threads in `scope`, each pinned to its CPU; they run until [`KeepAwake::stop`].
    fn start<'scope>(&'scope self, scope: &'scope Scope<'scope, '_>) {
        for (cpu, tid) in weft_sys::sched::allowed_cpus().into_iter().zip(&self.tids) {
            let _ = std::thread::Builder::new()
                .name(format!("weft-awake-{cpu}"))
                .spawn_scoped(scope, move || {
                    let _ = weft_sys::sched::pin_current_thread(cpu as u32);
                    // Known before the switch to the idle class, so that `stop` can undo it.
                    tid.store(weft_sys::sched::thread_id(), Ordering::SeqCst);
                    if self.stop.load(Ordering::SeqCst) || !weft_sys::sched::set_idle_class() {
                        return; // spinning at normal priority would take time from the hosts
                    }
                    while !self.stop.load(Ordering::Relaxed) {
                        std::hint::spin_loop();
                    }
                });
        }
    }

    /// Tells the threads to end, and moves them back to normal scheduling so that they get a CPU
    /// to see it promptly: an idle-class thread on a busy CPU may wait seconds for a time slice.
    fn stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
        for t in &self.tids {
            let tid = t.load(Ordering::SeqCst);
            if tid != 0 {
                weft_sys::sched::set_normal_class(tid);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::time::Duration;

    #[test]
    fn the_threads_stop_when_the_work_panics() {
        let (tx, rx) = mpsc::channel();
        // On a thread of its own: without the stop, the scope never returns.
        std::thread::spawn(move || {
            let r = std::panic::catch_unwind(|| super::around(|| panic!("the switch failed")));
            let _ = tx.send(r.is_err());
        });
        let got = rx.recv_timeout(Duration::from_secs(30));
        assert_eq!(got, Ok(true), "the keep-awake threads outlived a panic");
        assert_eq!(super::around(|| 7), 7);
    }
}
