//! A small, fast, seedable pseudo-random generator for contention and traffic sources.
//!
//! xoshiro256++ (Blackman and Vigna, 2019) seeded through SplitMix64, written out here rather than
//! taken from a crate so that a seed gives the same stream on every build and platform forever.
//! It is not cryptographic; it is for simulation only.

/// SplitMix64: turns one `u64` seed into a well-mixed sequence; used to seed [`Rng`] and to derive
/// independent per-source seeds from one experiment seed.
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator starting from `seed`.
    pub const fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// xoshiro256++: 256 bits of state, period 2^256 - 1.
#[derive(Clone, Debug)]
pub struct Rng {
    s: [u64; 4],
}

impl Rng {
    /// A generator for `seed`; equal seeds give equal streams.
    pub fn new(seed: u64) -> Self {
        let mut sm = SplitMix64::new(seed);
        let s = [sm.next_u64(), sm.next_u64(), sm.next_u64(), sm.next_u64()];
        Rng { s }
    }

    /// The generator of stream `stream` under experiment seed `seed`: one per source, port or
    /// arbiter, so adding a source does not shift the random numbers every other source sees.
    pub fn for_stream(seed: u64, stream: u64) -> Self {
        let mut sm = SplitMix64::new(seed ^ stream.wrapping_mul(0xd1b5_4a32_d192_ed03));
        Rng::new(sm.next_u64())
    }

    /// The next 64 random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let result = s[0].wrapping_add(s[3]).rotate_left(23).wrapping_add(s[0]);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// A uniform integer in `0..n` (`n` > 0) by Lemire's multiply-shift; the bias is below
    /// `n / 2^64`, far under anything a simulation can see.
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// A uniform float in `[0, 1)` with 53 random bits.
    #[inline]
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// True with probability `p`.
    #[inline]
    pub fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    /// A geometric count on `1..` with mean `mean` (>= 1): the number of trials up to and
    /// including the first success when each succeeds with probability `1 / mean`.
    pub fn geometric(&mut self, mean: f64) -> u64 {
        if mean <= 1.0 {
            return 1;
        }
        let q = 1.0 - 1.0 / mean;
        let u = 1.0 - self.unit(); // (0, 1]
        1 + (u.ln() / q.ln()).floor() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix_matches_reference_vector() {
        // First outputs of SplitMix64 seeded with 0 (Vigna's reference implementation).
        let mut sm = SplitMix64::new(0);
        assert_eq!(sm.next_u64(), 0xe220_a839_7b1d_cdaf);
        assert_eq!(sm.next_u64(), 0x6e78_9e6a_a1b9_65f4);
    }

    #[test]
    fn streams_are_deterministic_and_distinct() {
        let a: Vec<u64> = (0..4).map(|_| Rng::new(7).next_u64()).collect();
        assert!(a.windows(2).all(|w| w[0] == w[1]));
        let mut x = Rng::for_stream(7, 0);
        let mut y = Rng::for_stream(7, 1);
        assert_ne!(x.next_u64(), y.next_u64());
    }

    #[test]
    fn below_and_geometric_have_the_right_means() {
        let mut r = Rng::new(1);
        let n = 200_000;
        let m: f64 = (0..n).map(|_| r.below(10) as f64).sum::<f64>() / n as f64;
        assert!((m - 4.5).abs() < 0.03, "{m}");
        let g: f64 = (0..n).map(|_| r.geometric(8.0) as f64).sum::<f64>() / n as f64;
        assert!((g - 8.0).abs() < 0.1, "{g}");
    }
}
