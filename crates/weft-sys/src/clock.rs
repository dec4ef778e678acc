//! The monotonic clock, in nanoseconds.

/// Nanoseconds on CLOCK_MONOTONIC (epoch: boot), the clock `ppoll` time-outs and the emulator's
/// deadlines are measured on.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_monotonic_clock_advances_with_a_sleep() {
        let a = monotonic_ns();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let b = monotonic_ns();
        assert!(b - a >= 2_000_000, "{a} -> {b}");
    }
}
