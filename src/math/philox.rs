//! Philox4x32-10 (Salmon, Moraes, Dror and Shaw, "Parallel random numbers:
//! as easy as 1, 2, 3", SC 2011): a counter-based generator. Its output is
//! a function of a 128-bit counter and a 64-bit key, so any draw of any
//! stream is computed on its own, in any order, on any device with 32-bit
//! integers: the streams of the RL environments' resets, keyed by (seed,
//! environment, episode), are the same on every backend.

/// Philox4x32's round multipliers and Weyl key increments.
const M: [u32; 2] = [0xD251_1F53, 0xCD9E_8D57];
const W: [u32; 2] = [0x9E37_79B9, 0xBB67_AE85];

/// The multipliers and key increments as the kernels' constants
/// (`shaders/philox.wgsl`).
pub fn philox_constants() -> [(&'static str, u32); 4] {
    [
        ("PHILOX_M0", M[0]),
        ("PHILOX_M1", M[1]),
        ("PHILOX_W0", W[0]),
        ("PHILOX_W1", W[1]),
    ]
}

/// The 4 words of Philox4x32-10 at counter `ctr` and key `key`.
pub fn philox4x32(mut ctr: [u32; 4], mut key: [u32; 2]) -> [u32; 4] {
    for _ in 0..10 {
        let p0 = u64::from(M[0]) * u64::from(ctr[0]);
        let p1 = u64::from(M[1]) * u64::from(ctr[2]);
        let (hi0, lo0) = ((p0 >> 32) as u32, p0 as u32);
        let (hi1, lo1) = ((p1 >> 32) as u32, p1 as u32);
        ctr = [hi1 ^ ctr[1] ^ key[0], lo1, hi0 ^ ctr[3] ^ key[1], lo0];
        key = [key[0].wrapping_add(W[0]), key[1].wrapping_add(W[1])];
    }
    ctr
}

/// One stream of Philox4x32-10: key `seed`, the counter's words 2 and 3
/// the stream's two indices (an environment and its episode), words 0 and
/// 1 the block of four draws. Uniforms take 53 bits of two words.
#[derive(Clone, Debug)]
pub struct PhiloxStream {
    key: [u32; 2],
    ids: [u32; 2],
    block: u64,
    words: [u32; 4],
    used: usize,
}

impl PhiloxStream {
    pub fn new(seed: u64, a: u32, b: u32) -> Self {
        PhiloxStream {
            key: [seed as u32, (seed >> 32) as u32],
            ids: [a, b],
            block: 0,
            words: [0; 4],
            used: 4,
        }
    }
    pub fn next_u32(&mut self) -> u32 {
        if self.used == 4 {
            let c = [
                self.block as u32,
                (self.block >> 32) as u32,
                self.ids[0],
                self.ids[1],
            ];
            self.words = philox4x32(c, self.key);
            self.block += 1;
            self.used = 0;
        }
        self.used += 1;
        self.words[self.used - 1]
    }
    /// Uniform in `[0, 1)` (53 bits).
    pub fn uniform(&mut self) -> f64 {
        let (a, b) = (
            u64::from(self.next_u32() >> 5),
            u64::from(self.next_u32() >> 6),
        );
        ((a << 26) | b) as f64 / (1u64 << 53) as f64
    }
    /// Uniform in `[lo, hi)`.
    pub fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.uniform()
    }
    /// Standard normal (Box–Muller, one of the pair).
    pub fn normal(&mut self) -> f64 {
        super::rng::box_muller(self.uniform(), self.uniform())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Random123's known-answer vectors for Philox4x32-10, and one block of
    /// randomgen 2.5.1's `Philox(key=12345, counter=7, number=4, width=32)`
    /// (it increments the counter before a block: counter 8 here).
    #[test]
    fn known_answers() {
        assert_eq!(
            philox4x32([0; 4], [0; 2]),
            [0x6627_e8d5, 0xe169_c58d, 0xbc57_ac4c, 0x9b00_dbd8]
        );
        assert_eq!(
            philox4x32([u32::MAX; 4], [u32::MAX; 2]),
            [0x408f_276d, 0x41c8_3b0e, 0xa20b_c7c6, 0x6d54_51fd]
        );
        assert_eq!(
            philox4x32(
                [0x243f_6a88, 0x85a3_08d3, 0x1319_8a2e, 0x0370_7344],
                [0xa409_3822, 0x299f_31d0]
            ),
            [0xd16c_fe09, 0x94fd_cceb, 0x5001_e420, 0x2412_6ea1]
        );
        assert_eq!(
            philox4x32([8, 0, 0, 0], [12345, 0]),
            [0x621e_7bc7, 0x7a64_eb6c, 0x771a_345c, 0x18f1_79d4]
        );
    }

    #[test]
    fn streams_are_their_keys_and_indices_and_uniform() {
        let draws = |seed, a, b| {
            let mut s = PhiloxStream::new(seed, a, b);
            (0..1000).map(|_| s.uniform()).collect::<Vec<_>>()
        };
        let x = draws(7, 3, 0);
        assert_eq!(x, draws(7, 3, 0));
        for other in [draws(8, 3, 0), draws(7, 4, 0), draws(7, 3, 1)] {
            assert!(x.iter().zip(&other).all(|(a, b)| a != b));
        }
        assert!(x.iter().all(|u| (0.0..1.0).contains(u)));
        let mean = x.iter().sum::<f64>() / 1000.0;
        assert!((mean - 0.5).abs() < 0.03, "{mean}");
        let mut s = PhiloxStream::new(1, 0, 0);
        let n: Vec<f64> = (0..4000).map(|_| s.normal()).collect();
        let (m, v) = (
            n.iter().sum::<f64>() / 4000.0,
            n.iter().map(|x| x * x).sum::<f64>() / 4000.0,
        );
        assert!(m.abs() < 0.05 && (v - 1.0).abs() < 0.08, "{m} {v}");
    }
}
