//! Keep-awake threads: one busy-polling thread per CPU in the SCHED_IDLE class, for the length of
//! an emulation. On a hypervisor a virtual CPU that halts for want of work takes 0.1-1 ms to come
//! back when a host's process is woken by a frame, which adds to every emulated round trip; a CPU
//! that is busy with an idle-class thread switches to the woken task at once. The threads yield
//! to every other task, so they take no time from the hosts or the switch (the effect of booting
//! with `idle=poll`, for the emulation's lifetime only).

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::thread::Scope;

/// The keep-awake threads of one emulation.
#[derive(Debug, Default)]
pub struct KeepAwake {
    stop: AtomicBool,
    /// Thread ids of the threads (0: not started yet).
    tids: Vec<AtomicI32>,
}

impl KeepAwake {
    /// Room for one thread per CPU this process may run on.
    pub fn new() -> Self {
        KeepAwake {
            stop: AtomicBool::new(false),
            tids: weft_sys::sched::allowed_cpus()
                .iter()
                .map(|_| AtomicI32::new(0))
                .collect(),
        }
    }

    /// Starts the threads in `scope`, each pinned to its CPU; they run until [`KeepAwake::stop`].
    pub fn start<'scope>(&'scope self, scope: &'scope Scope<'scope, '_>) {
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
    pub fn stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
        for t in &self.tids {
            let tid = t.load(Ordering::SeqCst);
            if tid != 0 {
                weft_sys::sched::set_normal_class(tid);
            }
        }
    }
}
