//! Convergence and physical-correctness criteria of a contact solution.
//!
//! For the NCP `K_μ ∋ λ ⟂ c + Γ(c) ∈ K_μ*`, per contact:
//! - primal residual `ε_p = ‖λ − P_K(λ)‖` (impulse units, N·s);
//! - dual residual `ε_d = ‖y − P_{K*}(y)‖` with `y = c + Γ(c)` (velocity units, m/s);
//! - complementarity `ε_c = |⟨λ, y⟩| / ‖λ‖` (0 when `λ = 0`): the component of
//!   `y` along `λ`, in velocity units (m/s). The plain product `|⟨λ, y⟩|` of
//!   the seed study scales with the impulse, so with light contacts it lets a
//!   "stuck" contact creep (`λ_T ≈ 0`, `c_T ≠ 0` costs only `μ λ_N ‖c_T‖`);
//!   normalized, it bounds that creep by `ε/μ` whatever the masses;
//! - `ε_abs = max(ε_p, ε_d, ε_c)`, the stopping criterion of every solver.
//!
//! The relaxed models have the same three residuals with their own cone and
//! correction ([`ContactModel`]): the CCP drops `Γ` (`y = c`), the LCP
//! replaces `K_μ` by a pyramid `P` and `Γ` by `[0, 0, μ h_D(−c_T)]` (`h_D`
//! the support function of the pyramid's polygon, the LCP's slack `γ`).
//! Solvers stop on their own model's `ε_abs`; the physical criteria below
//! ([`physics`]) judge every solution against the true law.

use super::RowSet;
use super::cone::{
    Pyramid, Real, de_saxce, dist3, get3, norm2, project_cone, project_dual_cone, real,
};
use super::wide::{
    ConeRows, Wide, de_saxce_wide, project_cone_wide, project_dual_cone_wide, project_problem,
};

/// Residuals of a contact solution; for a set of contacts, the maximum over
/// them. In f64, the reference; in f32 for the GPU kernels' CPU twins.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Residuals<T = f64> {
    pub primal: T,
    pub dual: T,
    pub complementarity: T,
    pub eps_abs: T,
}

/// `max` that propagates NaN (`f64::max` drops it), so a NaN impulse can never look converged.
#[inline]
pub fn nan_max<T: Real>(a: T, b: T) -> T {
    #[allow(clippy::eq_op)] // x != x: NaN
    if a != a || b != b { a + b } else { a.max(b) }
}

impl<T: Real> Residuals<T> {
    /// All zero (a problem without contacts).
    pub fn zero() -> Self {
        let z = T::zero();
        Residuals {
            primal: z,
            dual: z,
            complementarity: z,
            eps_abs: z,
        }
    }

    /// The component-wise maximum (NaN-propagating).
    pub fn max(self, o: Residuals<T>) -> Residuals<T> {
        Residuals {
            primal: nan_max(self.primal, o.primal),
            dual: nan_max(self.dual, o.dual),
            complementarity: nan_max(self.complementarity, o.complementarity),
            eps_abs: nan_max(self.eps_abs, o.eps_abs),
        }
    }
}

/// The residuals of one contact from its primal and dual residuals, its
/// impulse `lambda` and the velocity `y` of its dual cone.
fn assemble<T: Real>(primal: T, dual: T, lambda: [T; 3], y: [T; 3]) -> Residuals<T> {
    let zero = T::zero();
    let dot = |a: [T; 3], b: [T; 3]| a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
    // |⟨λ, y⟩| / ‖λ‖; see `Real::RESCALE_UNDERFLOW` for a λ whose ‖λ‖² underflows.
    let complementarity = if T::RESCALE_UNDERFLOW {
        let n = lambda[0].abs().max(lambda[1].abs()).max(lambda[2].abs());
        if n > zero {
            let u = lambda.map(|x| x / n);
            dot(u, y).abs() / dot(u, u).sqrt()
        } else {
            zero
        }
    } else {
        let norm2 = dot(lambda, lambda);
        if norm2 > zero {
            dot(lambda, y).abs() / norm2.sqrt()
        } else {
            zero
        }
    };
    Residuals {
        primal,
        dual,
        complementarity,
        eps_abs: nan_max(nan_max(primal, dual), complementarity),
    }
}

/// NCP residuals of one contact with impulse `lambda` and velocity `c` (both `[t1, t2, n]`).
pub fn contact_residuals<T: Real>(mu: T, lambda: [T; 3], c: [T; 3]) -> Residuals<T> {
    let primal = dist3(lambda, project_cone(mu, lambda));
    let s = de_saxce(mu, c);
    let y = [c[0] + s[0], c[1] + s[1], c[2] + s[2]];
    let dual = dist3(y, project_dual_cone(mu, y));
    assemble(primal, dual, lambda, y)
}

/// Maximum NCP residuals over all blocks. `mu`: (nc); `lambda`, `c`: (3·nc + nl).
pub fn ncp_residuals<T: Real>(mu: &[T], lambda: &[T], c: &[T]) -> Residuals<T> {
    model_residuals(ContactModel::Ncp, mu, lambda, c)
}

/// The contact law a solver imposes (what it relaxes of the NCP).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ContactModel {
    /// `K_μ ∋ λ ⟂ c + Γ(c) ∈ K_μ*`: Signorini, Coulomb and maximum dissipation.
    Ncp,
    /// `K_μ ∋ λ ⟂ c ∈ K_μ*` (Anitescu's cone complementarity): convex, but a
    /// sliding contact separates at `c_N = μ‖c_T‖`.
    Ccp,
    /// The NCP with the cone replaced by a friction pyramid (an LCP).
    Lcp(Pyramid),
}

impl ContactModel {
    /// Residuals of one contact under this model.
    pub fn contact_residuals<T: Real>(&self, mu: T, lambda: [T; 3], c: [T; 3]) -> Residuals<T> {
        match *self {
            ContactModel::Ncp => contact_residuals(mu, lambda, c),
            ContactModel::Ccp => {
                let primal = dist3(lambda, project_cone(mu, lambda));
                let dual = dist3(c, project_dual_cone(mu, c));
                assemble(primal, dual, lambda, c)
            }
            ContactModel::Lcp(pyr) => {
                // Violations rather than Euclidean distances to the polyhedral
                // cones (both are zero exactly on the cones).
                let zero = T::zero();
                let r = mu * lambda[2].max(zero);
                let lt = pyr.project_disk(r, [lambda[0], lambda[1]]);
                let primal = (-lambda[2]).max(zero) + norm2(lambda[0] - lt[0], lambda[1] - lt[1]);
                let gamma = mu * pyr.support([-c[0], -c[1]]);
                let y = [c[0], c[1], c[2] + gamma];
                // y ∈ P* ⟺ y_N ≥ μ h_D(−y_T) ⟺ c_N ≥ 0.
                let dual = (-c[2]).max(zero);
                assemble(primal, dual, lambda, y)
            }
        }
    }
}

/// Residuals of one unilateral row `λ ≥ 0 ⟂ c ≥ 0` (a joint limit): the
/// 1-D cone is its own dual and has no correction, so every contact model
/// judges it alike (the contact residuals with `λ = [0, 0, λ]`, `y = [0, 0, c]`).
pub fn unilateral_residuals<T: Real>(lambda: T, c: T) -> Residuals<T> {
    let zero = T::zero();
    assemble(
        (-lambda).max(zero),
        (-c).max(zero),
        [zero, zero, lambda],
        [zero, zero, c],
    )
}

/// Residuals of one row with impulse set `set` ([`RowSet`]), law
/// `−c ∈ N_S(λ)`:
/// - unilateral: [`unilateral_residuals`];
/// - bilateral: `ε_d = |c|` (it must vanish), no primal residual;
/// - box `[−b, b]`: `ε_p = max(0, |λ| − b)`, no dual residual (every `c`
///   has a supporting impulse), and the complementarity is the Fenchel
///   gap `(b|c| + λc) / b` (velocity units; zero exactly when `λ = −b·sign(c)`
///   or `c = 0`, i.e. maximal dissipation), with `λ` clamped into the box.
pub fn row_residuals<T: Real>(set: RowSet, lambda: T, c: T) -> Residuals<T> {
    let zero = T::zero();
    match set {
        RowSet::Unilateral => unilateral_residuals(lambda, c),
        RowSet::Bilateral => assemble(zero, c.abs(), [zero; 3], [zero, zero, c]),
        RowSet::Box(b) => {
            let b = real::<T>(b);
            let primal = (lambda.abs() - b).max(zero);
            let complementarity = if b > zero {
                let l = lambda.max(-b).min(b);
                ((b * c.abs() + l * c) / b).max(zero)
            } else {
                zero
            };
            Residuals {
                primal,
                dual: zero,
                complementarity,
                eps_abs: nan_max(primal, complementarity),
            }
        }
        // Judged with its contact ([`rows_residuals`]), never alone.
        RowSet::Cone(_) => Residuals::zero(),
    }
}

/// Maximum residuals over all blocks under `model`. `mu`: (nc); `lambda`,
/// `c`: (3·nc + nl), the rows after `3·nc` unilateral (see
/// [`crate::contact::ContactProblem`]; [`rows_residuals`] for problems
/// with other rows).
pub fn model_residuals<T: Real>(
    model: ContactModel,
    mu: &[T],
    lambda: &[T],
    c: &[T],
) -> Residuals<T> {
    rows_residuals(model, mu, &[], lambda, c)
}

/// [`model_residuals`] with the rows after `3·nc` in the sets `row_sets`
/// (nl, or empty: all unilateral; see [`crate::contact::ContactProblem::row_sets`]).
pub fn rows_residuals<T: Real>(
    model: ContactModel,
    mu: &[T],
    row_sets: &[RowSet],
    lambda: &[T],
    c: &[T],
) -> Residuals<T> {
    let cones = if row_sets.iter().any(|s| matches!(s, RowSet::Cone(_))) {
        // Validated by the problem; a bad index judged as no cone rows.
        ConeRows::new(mu.len(), row_sets).unwrap_or_default()
    } else {
        ConeRows::default()
    };
    rows_residuals_with(model, mu, row_sets, &cones, lambda, c)
}

/// [`rows_residuals`] with the contacts' cone rows given (`cones`, from
/// `row_sets`).
pub fn rows_residuals_with<T: Real>(
    model: ContactModel,
    mu: &[T],
    row_sets: &[RowSet],
    cones: &ConeRows,
    lambda: &[T],
    c: &[T],
) -> Residuals<T> {
    let mut r = Residuals::zero();
    for (i, &m) in mu.iter().enumerate() {
        let rows = cones.of(i);
        r = r.max(if rows.is_empty() {
            model.contact_residuals(m, get3(lambda, i), get3(c, i))
        } else {
            wide_residuals(
                model,
                m,
                Wide::gather(lambda, i, rows),
                Wide::gather(c, i, rows),
            )
        });
    }
    let first = 3 * mu.len();
    for k in first..lambda.len().min(c.len()) {
        let set = row_sets.get(k - first).copied().unwrap_or_default();
        r = r.max(row_residuals(set, lambda[k], c[k]));
    }
    r
}

/// Residuals of one wide contact under `model` (the NCP or the CCP; the
/// pyramid of the LCP has no wide form, and is judged as the NCP: its
/// solvers refuse wide contacts).
pub fn wide_residuals<T: Real>(
    model: ContactModel,
    mu: T,
    lambda: Wide<T>,
    c: Wide<T>,
) -> Residuals<T> {
    let primal = lambda.dist(&project_cone_wide(mu, lambda));
    let mut y = c;
    if model != ContactModel::Ccp {
        y.x[c.d - 1] += de_saxce_wide(mu, &c);
    }
    let dual = y.dist(&project_dual_cone_wide(mu, y));
    // |⟨λ, y⟩| / ‖λ‖, λ rescaled by its largest entry first (f32's underflow).
    let scale = lambda.x[..lambda.d]
        .iter()
        .fold(T::zero(), |m, &v| m.max(v.abs()));
    let complementarity = if scale > T::zero() {
        let mut u = lambda;
        for v in &mut u.x[..u.d] {
            *v /= scale;
        }
        u.dot(&y).abs() / u.dot(&u).sqrt()
    } else {
        T::zero()
    };
    Residuals {
        primal,
        dual,
        complementarity,
        eps_abs: nan_max(nan_max(primal, dual), complementarity),
    }
}

/// Physical criteria of one contact, judged against the true law (Signorini,
/// Coulomb's cone, maximum dissipation) whatever model the solver used.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ContactPhysics {
    /// Signorini violation (m/s): penetration velocity `max(0, −c_N)` plus the
    /// separation velocity of a pushing contact, `|λ_N c_N| / ‖λ‖`.
    pub signorini: f64,
    /// Coulomb violation, relative: `max(0, ‖λ_T‖ − μ λ_N, −λ_N) / ‖λ‖`.
    pub coulomb: f64,
    /// Maximum-dissipation violation (rad) of a sliding contact: the angle
    /// between `λ_T` and `−c_T` (`π/2` for a loaded sliding contact without
    /// friction); 0 for a contact that sticks or carries no load.
    pub mdp: f64,
    /// Whether the contact slides (`‖c_T‖` above the threshold given).
    pub sliding: bool,
}

/// The criteria of one contact with impulse `lambda` and rigid velocity `c`;
/// it slides when `‖c_T‖ > slide_threshold` (m/s).
pub fn contact_physics(
    mu: f64,
    lambda: [f64; 3],
    c: [f64; 3],
    slide_threshold: f64,
) -> ContactPhysics {
    contact_physics_wide(
        mu,
        Wide::gather(&lambda, 0, &[]),
        Wide::gather(&c, 0, &[]),
        slide_threshold,
    )
}

/// [`contact_physics`] of a contact with cone rows ([`super::wide`]):
/// Coulomb's cone and maximum dissipation over all its tangential rows.
pub fn contact_physics_wide(
    mu: f64,
    lambda: Wide<f64>,
    c: Wide<f64>,
    slide_threshold: f64,
) -> ContactPhysics {
    let d = lambda.d;
    let (ln, cn) = (lambda.normal(), c.normal());
    let lt = lambda.tangent_norm();
    let norm = lt.hypot(ln);
    let ct = c.tangent_norm();
    let signorini = (-cn).max(0.0)
        + if norm > 0.0 {
            (ln * cn).abs() / norm
        } else {
            0.0
        };
    let coulomb = if norm > 0.0 {
        (lt - mu * ln).max(-ln).max(0.0) / norm
    } else {
        0.0
    };
    let sliding = ct > slide_threshold;
    let loaded = ln > 1e-12 * norm.max(f64::MIN_POSITIVE) && mu > 0.0;
    let mdp = if !(sliding && loaded) {
        0.0
    } else if lt > 0.0 {
        let dot: f64 = (0..d - 1).map(|k| lambda.x[k] * c.x[k]).sum();
        (-dot / (lt * ct)).clamp(-1.0, 1.0).acos()
    } else {
        std::f64::consts::FRAC_PI_2
    };
    ContactPhysics {
        signorini,
        coulomb,
        mdp,
        sliding,
    }
}

/// Physical criteria of a whole solution: the worst contact, and the internal forces.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PhysicsCriteria {
    /// (nc) per contact.
    pub contacts: Vec<ContactPhysics>,
    /// Maxima over contacts.
    pub signorini: f64,
    pub coulomb: f64,
    pub mdp: f64,
    pub sliding: usize,
    /// Internal forces (N·s): `‖λ − λ*‖` with `λ*` the minimum-norm impulse
    /// that produces the same motion, `Jᵀλ* = Jᵀλ` (i.e. `λ* ∈ λ + null(G)`,
    /// as `null(G) = null(Jᵀ)`), among admissible impulses (`λ* ∈ K_μ`; without
    /// that constraint the minimum-norm impulse can violate Coulomb's cone at
    /// the onset of sliding). `λ*` is computed by Dykstra's alternating
    /// projections onto the affine set and the cones.
    pub internal: f64,
    /// `internal / ‖λ‖` (0 when `λ = 0`).
    pub internal_relative: f64,
}

/// Evaluates the physical criteria of `lambda` (`3·nc + nl`) on problem `p`, with
/// the rigid contact velocity `c = Gλ + g` (the compliance `R` is a
/// relaxation being judged, so it is left out). Allocates (an eigen
/// decomposition of `G` for the internal forces): for analysis, not stepping.
pub fn physics(
    p: &super::ContactProblem,
    lambda: &[f64],
    slide_threshold: f64,
) -> Result<PhysicsCriteria, crate::error::ProblemError> {
    check_impulse(p, lambda)?;
    let m = p.g.len();
    let l = nalgebra::DVector::from_column_slice(lambda);
    let c = &p.delassus * &l + &p.g;
    let mut out = PhysicsCriteria::default();
    let cones = ConeRows::new(p.nc(), &p.row_sets)?;
    for (i, &mu) in p.mu.iter().enumerate() {
        let rows = cones.of(i);
        let (l, c) = (
            Wide::gather(lambda, i, rows),
            Wide::gather(c.as_slice(), i, rows),
        );
        let k = contact_physics_wide(mu, l, c, slide_threshold);
        out.signorini = nan_max(out.signorini, k.signorini);
        out.coulomb = nan_max(out.coulomb, k.coulomb);
        out.mdp = nan_max(out.mdp, k.mdp);
        out.sliding += k.sliding as usize;
        out.contacts.push(k);
    }
    // One-dimensional rows: Signorini's law in one dimension for the
    // unilateral ones; the others' law violation (velocity units) counts
    // there too (a cone row's is its contact's).
    for k in 3 * p.nc()..m {
        let s = match p.row_set(k - 3 * p.nc()) {
            RowSet::Unilateral => {
                (-c[k]).max(0.0) + if lambda[k] != 0.0 { c[k].abs() } else { 0.0 }
            }
            set => row_residuals(set, lambda[k], c[k]).eps_abs,
        };
        out.signorini = nan_max(out.signorini, s);
    }
    if m > 0 {
        let star = min_norm_admissible(p, &l);
        out.internal = (&l - star).norm();
        let n = l.norm();
        out.internal_relative = if n > 0.0 { out.internal / n } else { 0.0 };
    }
    Ok(out)
}

/// A valid problem and an impulse of its size.
fn check_impulse(
    p: &super::ContactProblem,
    lambda: &[f64],
) -> Result<(), crate::error::ProblemError> {
    p.validate()?;
    if lambda.len() != p.g.len() {
        return Err(crate::error::ProblemError::DimensionMismatch {
            what: "lambda",
            got: lambda.len(),
            expected: p.g.len(),
        });
    }
    Ok(())
}

/// The minimum-norm impulse of `(λ + null(G)) ∩ K_μ`: Dykstra's projection
/// of the origin onto the intersection (the affine set needs no correction
/// term). Stops when an iteration moves less than `1e-13·‖λ‖`, or after
/// 20 000 iterations.
fn min_norm_admissible(
    p: &super::ContactProblem,
    lambda: &nalgebra::DVector<f64>,
) -> nalgebra::DVector<f64> {
    let m = lambda.len();
    let eig = p.delassus.clone().symmetric_eigen();
    let lmax = eig.eigenvalues.amax();
    let null: Vec<usize> = (0..m)
        .filter(|&j| eig.eigenvalues[j] <= 1e-10 * lmax)
        .collect();
    if null.is_empty() {
        return lambda.clone();
    }
    let basis = eig.eigenvectors.select_columns(&null);
    // P_A(x) = λ + N Nᵀ (x − λ).
    let project_affine = |x: &nalgebra::DVector<f64>| {
        let d = x - lambda;
        lambda + &basis * (basis.transpose() * d)
    };
    let scale = lambda.norm().max(f64::MIN_POSITIVE);
    // Validated by `physics`.
    let cones = ConeRows::new(p.nc(), &p.row_sets).unwrap_or_default();
    let project = |w: &nalgebra::DVector<f64>, out: &mut nalgebra::DVector<f64>| {
        project_problem(&p.mu, &p.row_sets, &cones, w.as_slice(), out.as_mut_slice());
    };
    let mut x = nalgebra::DVector::zeros(m);
    let mut q = nalgebra::DVector::zeros(m);
    let mut next = nalgebra::DVector::zeros(m);
    for _ in 0..20_000 {
        let y = project_affine(&x);
        let w = &y + &q;
        project(&w, &mut next);
        q = &w - &next;
        let moved = (&next - &x).norm();
        x.copy_from(&next);
        if moved < 1e-13 * scale {
            break;
        }
    }
    // The cone projection was last, so x is admissible; its affine projection
    // has exactly the same motion. Return the latter when it is admissible to
    // rounding (Dykstra converged), else x.
    let y = project_affine(&x);
    project(&y, &mut next);
    let violation = (&y - &next).amax();
    if violation <= 1e-9 * scale { y } else { x }
}

/// Power of the contact impulses over a step (W): `λ·c / dt` with the rigid
/// velocity `c = Gλ + g`; negative when the contacts dissipate.
pub fn contact_power(
    p: &super::ContactProblem,
    lambda: &[f64],
    dt: f64,
) -> Result<f64, crate::error::ProblemError> {
    check_impulse(p, lambda)?;
    let mut power = 0.0;
    for i in 0..p.g.len() {
        let mut ci = p.g[i];
        for (j, &lj) in lambda.iter().enumerate() {
            ci += p.delassus[(i, j)] * lj;
        }
        power += lambda[i] * ci;
    }
    Ok(power / dt)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contact::ContactProblem;
    use nalgebra::{DMatrix, DVector};

    #[test]
    fn a_three_row_wide_contact_has_the_three_row_residuals() {
        let mut rng = crate::math::Rng::new(7);
        let three = |v: [f64; 3]| Wide::gather(&v, 0, &[]);
        for _ in 0..200 {
            let v = [0; 3].map(|_| rng.range(-2.0, 2.0));
            let c = [0; 3].map(|_| rng.range(-2.0, 2.0));
            let mu = rng.range(0.0, 1.5);
            for model in [ContactModel::Ncp, ContactModel::Ccp] {
                let r = model.contact_residuals(mu, v, c);
                let w = wide_residuals(model, mu, three(v), three(c));
                assert_eq!((r.primal, r.dual), (w.primal, w.dual));
                let tol = 1e-12 * (1.0 + r.complementarity);
                assert!((r.complementarity - w.complementarity).abs() <= tol);
            }
        }
    }

    #[test]
    fn physical_criteria_on_hand_made_contacts() {
        let deg = |x: f64| x.to_degrees();
        // Sliding along +t1 under maximal friction: nothing violated.
        let k = contact_physics(0.5, [-0.5, 0.0, 1.0], [1.0, 0.0, 0.0], 1e-3);
        assert!(k.sliding && k.mdp == 0.0 && k.coulomb == 0.0 && k.signorini == 0.0);
        // Friction at right angles to the slip, and outside the cone.
        let k = contact_physics(0.5, [0.0, -0.8, 1.0], [1.0, 0.0, 0.0], 1e-3);
        assert!((deg(k.mdp) - 90.0).abs() < 1e-12);
        assert!((k.coulomb - 0.3 / (0.64f64 + 1.0).sqrt()).abs() < 1e-12);
        // Pushing while separating (the CCP's sliding contact): c_N = μ‖c_T‖.
        let k = contact_physics(0.5, [-0.5, 0.0, 1.0], [1.0, 0.0, 0.5], 1e-3);
        assert!((k.signorini - 0.5 / 1.25f64.sqrt()).abs() < 1e-12);
        // Two identical contacts on one point: an opposite pair of tangential
        // impulses is internal (G is singular along it); the even split is not.
        let j = DMatrix::from_row_slice(
            6,
            3,
            &[
                1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, //
                1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0,
            ],
        );
        let g = &j * j.transpose();
        let p = ContactProblem::new(g, DVector::from_element(6, 0.0), vec![1.0, 1.0]).unwrap();
        let even = physics(&p, &[0.1, 0.0, 1.0, 0.1, 0.0, 1.0], 1e-3).unwrap();
        let squeeze = physics(&p, &[0.5, 0.0, 1.0, -0.3, 0.0, 1.0], 1e-3).unwrap();
        println!(
            "internal forces: even split {:.1e}, squeeze {:.3}",
            even.internal, squeeze.internal
        );
        assert!(even.internal < 1e-9);
        // λ* = the even split [0.1, 0, 1] twice: distance √(0.4² + 0.4²).
        assert!((squeeze.internal - 0.32f64.sqrt()).abs() < 1e-6);
        assert!(physics(&p, &[0.0; 3], 1e-3).is_err());
    }
}

/// A solution judged independently of the solver that produced it: the
/// contact velocity recomputed from the problem, `c = (G + R)λ + g`, and the
/// residuals under the solver's model and under the NCP (the physical law).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Evaluation {
    /// (`3·nc + nl`) `c = (G + R)λ + g`.
    pub c: Vec<f64>,
    /// Residuals under the model evaluated (`None` when none was given:
    /// RaiSim's fixed points solve no cone problem).
    pub model: Option<Residuals>,
    /// Residuals under the NCP.
    pub ncp: Residuals,
}

/// Evaluates `lambda` (`3·nc + nl`) on `problem` under `model` and the NCP
/// (each row after the contacts in its own set: a box, a line, a cone's),
/// without taking a solver's own bookkeeping on trust.
pub fn evaluate(
    problem: &super::ContactProblem,
    model: Option<ContactModel>,
    lambda: &[f64],
) -> Evaluation {
    let mut c = vec![0.0; problem.g.len()];
    problem.contact_velocity(lambda, &mut c);
    Evaluation {
        model: model.map(|m| rows_residuals(m, &problem.mu, &problem.row_sets, lambda, &c)),
        ncp: rows_residuals(
            ContactModel::Ncp,
            &problem.mu,
            &problem.row_sets,
            lambda,
            &c,
        ),
        c,
    }
}

// --- f32's floor (the GPU's ADMM, `shaders/admm.wgsl` take_floor) ---

/// Whether a solve that ended at `eps_abs`, with f32's floor `eps_floor`
/// there, stopped within [`FLOOR_STALL_FACTOR`] floors.
pub fn at_floor(eps_abs: f64, eps_floor: f64) -> bool {
    eps_floor > 0.0 && eps_abs <= FLOOR_STALL_FACTOR * eps_floor
}

/// f32's unit roundoff, `2⁻²⁴`.
pub const F32_ROUNDOFF: f64 = f32::EPSILON as f64 / 2.0;
/// How many of f32's floors (`GpuResult::eps_floor`) above it an ADMM
/// solve may stall and still end, with its best point, before its cap.
/// Measured on `tests/data/quadruped_random_torques_f32.json` (lavapipe,
/// 2026-11-28): the device's `ncp-admm` stalled at 7 to 13 floors until
/// its cap on the three problems whose floor was below the tolerance,
/// 1e-6, where the CPU's f64 converges (since then two of the three
/// converge, their Newton candidates judged settled; the third ends at
/// 4 floors, 181 iterations).
pub const FLOOR_STALL_FACTOR: f64 = 16.0;
