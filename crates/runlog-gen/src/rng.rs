//! Deterministic randomness: SplitMix64 streams seeded by (seed, agent, stream), so that
//! every agent is drawn independently of the others and the same options give the same bytes.

use std::fmt::Write as _;

pub(crate) fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// SplitMix64: small, fast, and good enough for test data.
#[derive(Debug, Clone)]
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64, index: u64, stream: u64) -> Rng {
        Rng(mix64(seed ^ 0x5851_f42d_4c95_7f2d)
            ^ mix64(index.wrapping_add(0x2545_f491_4f6c_dd1d))
            ^ mix64(stream.wrapping_mul(0x9e37_79b9_7f4a_7c15).wrapping_add(1)))
    }

    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        mix64(self.0)
    }

    /// Uniform in `0..n` (0 when n is 0).
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        ((self.next() as u128 * n as u128) >> 64) as u64
    }

    /// Uniform in `lo..=hi`.
    pub(crate) fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }

    pub(crate) fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    pub(crate) fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    pub(crate) fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len() as u64) as usize]
    }

    pub(crate) fn weighted<T: Copy>(&mut self, xs: &[(T, u32)]) -> T {
        let total: u64 = xs.iter().map(|x| x.1 as u64).sum();
        let mut r = self.below(total);
        for &(v, w) in xs {
            if r < w as u64 {
                return v;
            }
            r -= w as u64;
        }
        xs[xs.len() - 1].0
    }

    /// Number of successes before the first failure, each with probability `p`, at most `max`.
    pub(crate) fn geometric(&mut self, p: f64, max: u32) -> u32 {
        let mut n = 0;
        while n < max && self.chance(p) {
            n += 1;
        }
        n
    }

    /// Appends up to 16 random hex digits.
    pub(crate) fn hex(&mut self, digits: usize, out: &mut String) {
        let v = self.next();
        let _ = write!(out, "{:016x}", v);
        out.truncate(out.len() - 16 + digits.min(16));
    }
}
