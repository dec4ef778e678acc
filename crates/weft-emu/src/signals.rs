//! SIGINT/SIGTERM/SIGHUP handling for the CLI: the handler (signal-hook's) only sets a flag; the
//! emulation's loops look at it and tear down in the ordinary way (Drop), so an interrupted run
//! leaves nothing behind.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock, Once};

static INTERRUPTED: LazyLock<Arc<AtomicBool>> = LazyLock::new(|| Arc::new(AtomicBool::new(false)));

/// Installs the handler for SIGINT, SIGTERM and SIGHUP (once per process; later calls are
/// harmless).
pub fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        for sig in [
            signal_hook::consts::SIGINT,
            signal_hook::consts::SIGTERM,
            signal_hook::consts::SIGHUP,
        ] {
            // Fails only for a forbidden signal (SIGKILL, SIGSTOP), which these are not.
            let _ = signal_hook::flag::register(sig, Arc::clone(&INTERRUPTED));
        }
    });
}

/// True once SIGINT, SIGTERM or SIGHUP has arrived (after [`install`]).
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}
