//! The friction cone `K_μ = {λ : ‖λ_T‖ ≤ μ λ_N}`, its dual `K_μ* = K_{1/μ}`,
//! projections onto both, and de Saxcé's correction `Γ(c) = [0, 0, μ‖c_T‖]`.
//! A contact 3-vector is stored `[t1, t2, n]` (normal last). Generic over
//! the scalar ([`Real`]: f64 and f32); the WGSL twins are in
//! `shaders/cone.wgsl`, tested function by function against these.

use nalgebra::RealField;

/// The scalars the contact math is written for: `f64`, the reference, and
/// `f32`, the precision of the GPU kernels and of their CPU twins
/// (`gpu::cpu_f32`). Every function of this module and of
/// [`super::criteria`] is generic over it, so the two precisions share one
/// implementation (as Pinocchio templates its algorithms on the scalar).
pub trait Real: RealField + Copy {
    /// What the complementarity residual `|⟨λ, y⟩| / ‖λ‖` does with an
    /// impulse `λ ≠ 0` whose squared norm underflows: in f64 (below about
    /// 1e-154, where no physical impulse lives) it counts as zero, which is
    /// how a RaiSim impulse relaxed geometrically towards 0 ends its solve;
    /// in f32 that happens below 1e-19, where the impulses of light contacts
    /// do live, so `λ` is rescaled by its largest component first, as the
    /// kernels do.
    const RESCALE_UNDERFLOW: bool;
}
impl Real for f64 {
    const RESCALE_UNDERFLOW: bool = false;
}
impl Real for f32 {
    const RESCALE_UNDERFLOW: bool = true;
}

/// `x` as a `T`.
#[inline]
pub fn real<T: Real>(x: f64) -> T {
    nalgebra::convert(x)
}

/// `√(x² + y²)`.
#[inline]
pub fn norm2<T: Real>(x: T, y: T) -> T {
    (x * x + y * y).sqrt()
}

/// Projection onto the second-order cone `{x : ‖x_T‖ ≤ a x_N}` with `a ≥ 0`;
/// `a = None` (an infinite slope) is the half-space `x_N ≥ 0`.
#[inline]
pub fn project_soc<T: Real>(a: Option<T>, x: [T; 3]) -> [T; 3] {
    let zero = T::zero();
    let one = T::one();
    let n = x[2];
    let Some(a) = a else {
        return [x[0], x[1], n.max(zero)];
    };
    let t = norm2(x[0], x[1]);
    if t <= a * n && n >= zero {
        return x;
    }
    if a * t <= -n {
        return [zero; 3];
    }
    // Closest point on the cone's boundary ray through the tangent direction of x
    // (written so that a very large `a` does not overflow `a²`).
    let np = if a > one {
        (t + n / a) / (a + one / a)
    } else {
        (a * t + n) / (one + a * a)
    };
    let s = a * np / t;
    [x[0] * s, x[1] * s, np]
}

/// Projection onto the friction cone `K_μ` (`μ = ∞`: the half-space `λ_N ≥ 0`).
#[inline]
pub fn project_cone<T: Real>(mu: T, x: [T; 3]) -> [T; 3] {
    let infinite = mu > T::zero() && !mu.is_finite();
    project_soc((!infinite).then_some(mu), x)
}

/// Projection onto the dual cone `K_μ* = {y : μ‖y_T‖ ≤ y_N}`.
#[inline]
pub fn project_dual_cone<T: Real>(mu: T, x: [T; 3]) -> [T; 3] {
    project_soc((mu > T::zero()).then(|| T::one() / mu), x)
}

/// De Saxcé's correction `Γ(c) = [0, 0, μ‖c_T‖]`, which turns the Coulomb
/// law with maximum dissipation into the cone complementarity
/// `K_μ ∋ λ ⟂ c + Γ(c) ∈ K_μ*`.
#[inline]
pub fn de_saxce<T: Real>(mu: T, c: [T; 3]) -> [T; 3] {
    [T::zero(), T::zero(), mu * norm2(c[0], c[1])]
}

/// Projection of the tangential vector `x` onto the disk of radius `r`
/// (`r ≤ 0`: the origin), keeping its direction.
#[inline]
pub fn project_disk<T: Real>(r: T, x: [T; 2]) -> [T; 2] {
    let norm = norm2(x[0], x[1]);
    if norm > r {
        let s = if norm > T::zero() {
            r / norm
        } else {
            T::zero()
        };
        [x[0] * s, x[1] * s]
    } else {
        x
    }
}

/// The friction pyramid with `facets` faces (`≥ 3`): the regular polygon
/// `μ λ_N · D` circumscribing the disk of radius `μ λ_N`, with outward
/// facet normals at the angles `2πj / facets` in the `(t1, t2)` plane. With
/// 4 facets it is the box `|λ_t1|, |λ_t2| ≤ μ λ_N` of PGS-based engines (ODE,
/// Bullet): exact along the tangent axes, up to `√2 μ λ_N` along the diagonals.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pyramid {
    facets: usize,
    /// Rotation by one facet, `2π / facets`, and by half a facet.
    step: [f64; 2],
    half: [f64; 2],
}

impl Pyramid {
    /// A pyramid of `facets ≥ 3` faces (fewer are raised to 3; the solvers
    /// refuse them earlier through `SolverSettings::validate`).
    pub fn new(facets: usize) -> Self {
        let facets = facets.max(3);
        let a = std::f64::consts::TAU / facets as f64;
        Pyramid {
            facets,
            step: [a.cos(), a.sin()],
            half: [(0.5 * a).cos(), (0.5 * a).sin()],
        }
    }

    pub fn facets(&self) -> usize {
        self.facets
    }

    #[inline]
    fn is_box(&self) -> bool {
        self.facets == 4
    }

    /// Outward unit normals of the facets, by rotation (no trigonometry per
    /// call), computed in f64 whatever `T`.
    #[inline]
    fn normals<T: Real>(&self) -> impl Iterator<Item = [T; 2]> + '_ {
        let [c, s] = self.step;
        std::iter::successors(Some([1.0, 0.0]), move |n: &[f64; 2]| {
            Some([c * n[0] - s * n[1], s * n[0] + c * n[1]])
        })
        .take(self.facets)
        .map(|n| [real(n[0]), real(n[1])])
    }

    /// Vertices of the polygon of inradius `r`, vertex `k` between facets `k` and `k + 1`.
    #[inline]
    fn vertices<T: Real>(&self, r: T) -> impl Iterator<Item = [T; 2]> + '_ {
        let [c, s]: [T; 2] = self.half.map(real);
        let rad = r / c;
        self.normals::<T>()
            .map(move |n| [rad * (c * n[0] - s * n[1]), rad * (s * n[0] + c * n[1])])
    }

    /// Gauge of `x` (the smallest inradius of a polygon containing `x`).
    #[inline]
    pub fn gauge<T: Real>(&self, x: [T; 2]) -> T {
        if self.is_box() {
            return x[0].abs().max(x[1].abs());
        }
        self.normals::<T>()
            .map(|n| n[0] * x[0] + n[1] * x[1])
            .fold(T::zero(), |a, b| a.max(b))
    }

    /// Support function `h(u) = max_{d ∈ D} d·u` of the unit polygon (inradius 1).
    #[inline]
    pub fn support<T: Real>(&self, u: [T; 2]) -> T {
        if self.is_box() {
            return u[0].abs() + u[1].abs();
        }
        self.vertices(T::one())
            .map(|v| v[0] * u[0] + v[1] * u[1])
            .reduce(|a, b| a.max(b))
            .unwrap_or(T::zero())
    }

    /// Projection of the tangential vector `x` onto the polygon of inradius `r ≥ 0`.
    pub fn project_disk<T: Real>(&self, r: T, x: [T; 2]) -> [T; 2] {
        let zero = T::zero();
        if !(r > zero) {
            return [zero, zero];
        }
        if self.is_box() {
            return [x[0].clamp(-r, r), x[1].clamp(-r, r)];
        }
        if self.gauge(x) <= r {
            return x;
        }
        let mut best = [zero, zero];
        let mut best_d: Option<T> = None;
        let mut prev = self.vertices(r).last().unwrap_or([zero, zero]);
        for b in self.vertices(r) {
            let a = prev;
            prev = b;
            let e = [b[0] - a[0], b[1] - a[1]];
            let t = (((x[0] - a[0]) * e[0] + (x[1] - a[1]) * e[1]) / (e[0] * e[0] + e[1] * e[1]))
                .clamp(zero, T::one());
            let p = [a[0] + t * e[0], a[1] + t * e[1]];
            let d = (x[0] - p[0]) * (x[0] - p[0]) + (x[1] - p[1]) * (x[1] - p[1]);
            if best_d.is_none_or(|bd| d < bd) {
                best_d = Some(d);
                best = p;
            }
        }
        best
    }
}

/// Contact `i`'s 3-vector of a stacked (3·nc) vector.
#[inline]
pub fn get3<T: Copy>(x: &[T], i: usize) -> [T; 3] {
    [x[3 * i], x[3 * i + 1], x[3 * i + 2]]
}

#[inline]
pub fn set3<T: Copy>(x: &mut [T], i: usize, v: [T; 3]) {
    x[3 * i..3 * i + 3].copy_from_slice(&v);
}

#[inline]
pub fn dist3<T: Real>(a: [T; 3], b: [T; 3]) -> T {
    let d = [a[0] - b[0], a[1] - b[1], a[2] - b[2]];
    (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn in_cone(mu: f64, x: [f64; 3]) -> bool {
        (x[0] * x[0] + x[1] * x[1]).sqrt() <= mu * x[2] + 1e-12
    }

    #[test]
    fn pyramid_projection_is_the_closest_polygon_point() {
        for facets in [3, 4, 6, 8] {
            let p = Pyramid::new(facets);
            for x in [
                [2.0f64, 0.3],
                [0.1, 0.2],
                [-3.0, -3.0],
                [0.0, -5.0],
                [1.0, 1.0],
            ] {
                let y = p.project_disk(1.0, x);
                assert!(p.gauge(y) <= 1.0 + 1e-12, "{facets}: {y:?} outside");
                // No polygon point sampled on a fine grid is closer.
                let d = (x[0] - y[0]).hypot(x[1] - y[1]);
                for i in -60..=60 {
                    for j in -60..=60 {
                        let z = [i as f64 / 40.0, j as f64 / 40.0];
                        if p.gauge(z) <= 1.0 {
                            assert!((x[0] - z[0]).hypot(x[1] - z[1]) >= d - 1e-12);
                        }
                    }
                }
            }
            // Support and gauge are dual: max over the polygon of u·d.
            let u = [0.3, -0.7];
            let v = p.vertices(1.0).next().unwrap();
            assert!(p.support(u) >= v[0] * u[0] + v[1] * u[1]);
        }
        // Four facets: the box.
        let b = Pyramid::new(4);

        let y = b.project_disk(1.0f64, [2.0, 3.0]);
        assert!((y[0] - 1.0).abs() < 1e-12 && (y[1] - 1.0).abs() < 1e-12);
    }

    #[test]
    fn projection_is_idempotent_and_orthogonal() {
        let pts = [
            [1.0, 2.0, 0.5],
            [-0.3, 0.1, -2.0],
            [0.2, -0.1, 1.0],
            [3.0, 0.0, -0.1],
            [0.0, 0.0, -1.0],
        ];
        for mu in [0.0, 0.3, 1.0, 4.0] {
            for x in pts {
                let p = project_cone(mu, x);
                assert!(in_cone(mu, p), "mu={mu} x={x:?} p={p:?}");
                assert!(dist3(project_cone(mu, p), p) < 1e-12);
                // Moreau decomposition: x = P_K(x) + P_{K°}(x), with K° = −K*.
                let r = [x[0] - p[0], x[1] - p[1], x[2] - p[2]];
                let q = project_dual_cone(mu, [-r[0], -r[1], -r[2]]);
                assert!(
                    dist3(q, [-r[0], -r[1], -r[2]]) < 1e-12,
                    "residual not in the polar cone"
                );
                let dot = p[0] * r[0] + p[1] * r[1] + p[2] * r[2];
                assert!(dot.abs() < 1e-12, "not orthogonal: {dot}");
            }
        }
        // Extreme friction coefficients do not overflow.
        assert!(dist3(project_cone(1e200, [1.0, 0.0, -1.0]), [1.0, 0.0, 1e-200]) < 1e-12);
        assert!(
            dist3(
                project_dual_cone(1e-200, [1.0, 0.0, -1.0]),
                [1.0, 0.0, 1e-200]
            ) < 1e-12
        );
    }
}
