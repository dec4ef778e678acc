//! CPU time of the calling thread, for per-test CPU accounting on both ends.
//!
//! Each thread of a test (data streams and control) samples its own CPU time
//! (`getrusage(RUSAGE_THREAD)`, [`ThreadCpu::thread`]) at start and end; the test sums the
//! differences. Process-wide figures would mix in other tests an agent runs at the same time, or
//! the agent itself when client and agent share a process (demo).

pub use weft_sys::cpu::CpuTime as ThreadCpu;
