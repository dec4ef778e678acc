//! The one quantile rule of the applications' metrics: nearest rank.
//!
//! Request/response round trips, flow completion times and every percentile an application
//! reports take the `q` quantile of `n` sorted values as the value of rank `ceil(q n)` (at least
//! 1): the smallest value at or below which a fraction `q` of them lie, always one of the values
//! (never above the maximum nor below the minimum), as HdrHistogram's `value_at_quantile` gives
//! within its precision (the histograms of `weft-sock`, `weft-sim`'s metrics and the emulator's
//! lag). Hyndman and Fan's definition 1; the median of an even count is the lower middle value.

/// The `q` quantile (0..=1, clamped) of `sorted` (ascending) by nearest rank; `None` if empty.
pub fn nearest_rank<T: Copy>(sorted: &[T], q: f64) -> Option<T> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    let rank = (q.clamp(0.0, 1.0) * n as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, n) - 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_one_to_a_hundred_are_their_ranks() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(nearest_rank(&v, 0.5), Some(50));
        assert_eq!(nearest_rank(&v, 0.99), Some(99));
        assert_eq!(nearest_rank(&v, 0.991), Some(100));
        assert_eq!(nearest_rank(&v, 1.0), Some(100));
        assert_eq!(nearest_rank(&v, 0.0), Some(1));
    }

    #[test]
    fn a_quantile_is_one_of_the_values_and_never_past_the_ends() {
        let v = [3.0, 7.5, 9.0];
        for q in [-1.0, 0.0, 0.2, 0.34, 0.5, 0.67, 0.99, 1.0, 2.0] {
            let x = nearest_rank(&v, q).expect("not empty");
            assert!(v.contains(&x) && (3.0..=9.0).contains(&x), "q {q}: {x}");
        }
        // The median of an even count is its lower middle value; p99 of four is the largest.
        assert_eq!(nearest_rank(&[1, 2, 3, 4], 0.5), Some(2));
        assert_eq!(nearest_rank(&[1, 2, 3, 4], 0.99), Some(4));
        assert_eq!(nearest_rank::<u64>(&[], 0.5), None);
    }
}
