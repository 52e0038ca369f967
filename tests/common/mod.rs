#![allow(dead_code)]
//! Helpers shared by the integration tests.

use moreau::Model;
use nalgebra::DVector;

/// Deterministic uniform samples in [0, 1) (an LCG; enough for test inputs).
pub struct Lcg(pub u64);

impl Lcg {
    pub fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
    pub fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.next()
    }
    pub fn vector(&mut self, n: usize, lo: f64, hi: f64) -> DVector<f64> {
        DVector::from_fn(n, |_, _| self.range(lo, hi))
    }
}

pub fn random_q(model: &Model, rng: &mut Lcg) -> DVector<f64> {
    moreau::dynamics::random_configuration(model, || rng.next())
}

/// Relative error ‖a − b‖ / max(‖b‖, 1e-300).
pub fn rel_err(a: &DVector<f64>, b: &DVector<f64>) -> f64 {
    (a - b).norm() / b.norm().max(1e-300)
}
