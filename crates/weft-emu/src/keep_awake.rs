//! Keep-awake threads: one busy-polling thread per CPU in the SCHED_IDLE class, for the length of
//! an emulation. On a hypervisor a virtual CPU that halts for want of work takes 0.1-1 ms to come
//! back when a host's process is woken by a frame, which adds to every emulated round trip; a CPU
//! that is busy with an idle-class thread switches to the woken task at once. The threads yield
//! to every other task, so they take no time from the hosts or the switch (the effect of booting
//! with `idle=poll`, for the emulation's lifetime only).

use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::{Scope, ScopedJoinHandle};

use crate::sys;

/// Starts one keep-awake thread per CPU this process may run on, each pinned to its CPU, until
/// `stop` is set. Returns how many started.
pub fn spawn<'scope>(
    scope: &'scope Scope<'scope, '_>,
    stop: &'scope AtomicBool,
) -> Vec<ScopedJoinHandle<'scope, ()>> {
    sys::allowed_cpus()
        .into_iter()
        .filter_map(|cpu| {
            std::thread::Builder::new()
                .name(format!("weft-awake-{cpu}"))
                .spawn_scoped(scope, move || {
                    sys::pin_to_cpu(cpu);
                    if !sys::set_idle_class() {
                        return; // spinning at normal priority would take time from the hosts
                    }
                    while !stop.load(Ordering::Relaxed) {
                        std::hint::spin_loop();
                    }
                })
                .ok()
        })
        .collect()
}
