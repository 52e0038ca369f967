//! A small seedable random number generator, for initial-state
//! distributions, rough terrains and random search: the layers below the
//! RL tasks need it too, so it lives with the math.

/// SplitMix64 (Steele, Lea, Flood 2014): a small, fast, seedable generator,
/// good enough for initial-state distributions and random search.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rng {
    state: u64,
}

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng { state: seed }
    }
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `[0, 1)` (53 bits).
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Uniform in `[lo, hi)`.
    pub fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.uniform()
    }
    /// Standard normal (Box–Muller, one of the pair).
    pub fn normal(&mut self) -> f64 {
        box_muller(self.uniform(), self.uniform())
    }
}

/// A standard normal from two uniforms in `[0, 1)` (Box–Muller, one of
/// the pair).
pub(crate) fn box_muller(a: f64, b: f64) -> f64 {
    let u1 = 1.0 - a; // (0, 1]
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * b).cos()
}
