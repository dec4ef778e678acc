//! The reduction kernel timed on its own: how long this rank takes to add `size` bytes of
//! doubles into its buffer ([`reduce_sum`], the all-reduce's `Local::Reduce`). This is the
//! `gamma` of the alpha-beta-gamma model of collectives (Thakur, Rabenseifner and Gropp,
//! "Optimization of collective communication operations in MPICH", IJHPCA 19(1), 2005),
//! measured the way a ping-pong measures alpha and beta: by a rank on its host, with no other
//! rank involved, never from the collectives it then predicts (`weft_model::calc::shared_host`).
//!
//! Each timed call adds a region that a copy from another buffer has just written, as a receive
//! leaves the scratch region an all-reduce adds from, into the region before it (the rank's
//! working buffer is `[data | scratch]`). Only the addition is timed; the time is the median
//! of the calls.

use std::time::Instant;

use weft_model::mp::Region;
use weft_model::mp::plan::reduce_sum;

/// Bytes reduced over all the timed calls at one size, at most (the calls at large sizes stop
/// at [`MIN_CALLS`]): a few milliseconds per size.
const BUDGET: usize = 16 << 20;

/// Fewest timed calls at a size.
const MIN_CALLS: usize = 9;

/// Most timed calls at a size.
const MAX_CALLS: usize = 201;

/// The median time of one reduction of `size` bytes on this thread, ns (0 for 0 bytes).
pub fn reduction_ns(size: usize) -> u64 {
    if size == 0 {
        return 0;
    }
    let calls = (BUDGET / size).clamp(MIN_CALLS, MAX_CALLS) | 1;
    let mut buf = vec![0u8; 2 * size];
    let fresh = vec![0u8; size];
    let (data, scratch) = (Region::new(0, size), Region::new(size, size));
    // One untimed call first: the pages of both buffers are then mapped.
    reduce_sum(&mut buf, data, scratch);
    let mut times: Vec<u64> = (0..calls)
        .map(|_| {
            buf[size..].copy_from_slice(&fresh);
            let t = Instant::now();
            reduce_sum(&mut buf, data, scratch);
            t.elapsed().as_nanos() as u64
        })
        .collect();
    times.sort_unstable();
    times[times.len() / 2]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_larger_reduction_takes_longer() {
        assert_eq!(reduction_ns(0), 0);
        // 4 MiB against 4 KiB: a thousand times the bytes. Whatever the machine's speed and
        // load, the median of the larger is longer (a timer's resolution is tens of ns).
        let small = reduction_ns(4096);
        let large = reduction_ns(4 << 20);
        assert!(large > 10 * small.max(1), "{small} ns vs {large} ns");
    }
}
