//! Small dense kernels on preallocated buffers (column-major `n × n`), used by
//! the solvers so that a solve does not allocate once its buffers are sized.

/// In-place Cholesky `A = L Lᵀ` of the lower triangle of `a` (n × n, column-major).
/// Returns the index and value of the first non-positive pivot on failure.
pub fn cholesky_in_place(a: &mut [f64], n: usize) -> Result<(), (usize, f64)> {
    for j in 0..n {
        let mut d = a[j * n + j];
        for k in 0..j {
            d -= a[k * n + j] * a[k * n + j];
        }
        if !(d > 0.0) || !d.is_finite() {
            return Err((j, d));
        }
        let d = d.sqrt();
        a[j * n + j] = d;
        for i in j + 1..n {
            let mut s = a[j * n + i];
            for k in 0..j {
                s -= a[k * n + i] * a[k * n + j];
            }
            a[j * n + i] = s / d;
        }
    }
    Ok(())
}

/// Solves `L Lᵀ x = b` in place with the factor from [`cholesky_in_place`].
pub fn cholesky_solve_in_place(l: &[f64], n: usize, x: &mut [f64]) {
    for i in 0..n {
        let mut s = x[i];
        for k in 0..i {
            s -= l[k * n + i] * x[k];
        }
        x[i] = s / l[i * n + i];
    }
    for i in (0..n).rev() {
        let mut s = x[i];
        for k in i + 1..n {
            s -= l[i * n + k] * x[k];
        }
        x[i] = s / l[i * n + i];
    }
}

/// Runs `solve` on the columns of `x` (n × k, column-major) transposed into
/// `xt` (a run of `k` values per row, so that each elimination step of a
/// solve is an axpy across the columns), then writes them back.
pub fn on_rows(x: &mut [f64], n: usize, xt: &mut Vec<f64>, solve: impl FnOnce(&mut [f64], usize)) {
    if n == 0 {
        return;
    }
    let k = x.len() / n;
    xt.clear();
    xt.resize(n * k, 0.0);
    for (j, col) in x.chunks_exact(n).enumerate() {
        for (r, &v) in col.iter().enumerate() {
            xt[r * k + j] = v;
        }
    }
    solve(xt, k);
    for (j, col) in x.chunks_exact_mut(n).enumerate() {
        for (r, v) in col.iter_mut().enumerate() {
            *v = xt[r * k + j];
        }
    }
}

/// [`cholesky_solve_in_place`] for every column of `x` (n × k,
/// column-major) at once ([`on_rows`]).
pub fn cholesky_solve_columns(l: &[f64], n: usize, x: &mut [f64], xt: &mut Vec<f64>) {
    on_rows(x, n, xt, |xt, k| {
        // L y = b: row i −= L[i][p] row p (p < i), then / L[i][i].
        for i in 0..n {
            let (head, tail) = xt.split_at_mut(i * k);
            let row = &mut tail[..k];
            for p in 0..i {
                let lip = l[p * n + i];
                if lip != 0.0 {
                    for (x, s) in row.iter_mut().zip(&head[p * k..(p + 1) * k]) {
                        *x -= lip * s;
                    }
                }
            }
            let d = 1.0 / l[i * n + i];
            row.iter_mut().for_each(|x| *x *= d);
        }
        // Lᵀ x = y: row i −= L[p][i] row p (p > i), then / L[i][i].
        for i in (0..n).rev() {
            let (head, tail) = xt.split_at_mut((i + 1) * k);
            let row = &mut head[i * k..];
            for p in i + 1..n {
                let lpi = l[i * n + p];
                if lpi != 0.0 {
                    for (x, s) in row.iter_mut().zip(&tail[(p - i - 1) * k..(p - i) * k]) {
                        *x -= lpi * s;
                    }
                }
            }
            let d = 1.0 / l[i * n + i];
            row.iter_mut().for_each(|x| *x *= d);
        }
    });
}

/// Estimate of the largest eigenvalue of the symmetric PSD operator `apply`
/// (`out = A x`, n × n) by `steps` Lanczos steps from a fixed start vector
/// (not symmetric, so unlikely to be orthogonal to the top eigenvector): the
/// largest Ritz value, a lower bound that converges much faster than a
/// power iteration with as many products. No reorthogonalization (lost
/// orthogonality only repeats converged Ritz values). `work` holds 3·n.
pub fn lanczos_largest(
    n: usize,
    steps: usize,
    work: &mut Vec<f64>,
    mut apply: impl FnMut(&[f64], &mut [f64]),
) -> f64 {
    if n == 0 {
        return 0.0;
    }
    work.clear();
    work.resize(3 * n, 0.0);
    let (q, rest) = work.split_at_mut(n);
    let (q_prev, w) = rest.split_at_mut(n);
    for (i, x) in q.iter_mut().enumerate() {
        *x = 1.0 + 0.5 * ((i * 7919) % 13) as f64 / 13.0;
    }
    let n0 = q.iter().map(|v| v * v).sum::<f64>().sqrt();
    q.iter_mut().for_each(|v| *v /= n0);
    let steps = steps.min(n).min(LANCZOS_MAX);
    let (mut alpha, mut beta) = ([0.0; LANCZOS_MAX], [0.0; LANCZOS_MAX]);
    let mut k = 0;
    let mut b_prev = 0.0;
    while k < steps {
        apply(q, w);
        let a: f64 = w.iter().zip(q.iter()).map(|(x, y)| x * y).sum();
        for i in 0..n {
            w[i] -= a * q[i] + b_prev * q_prev[i];
        }
        let b = w.iter().map(|v| v * v).sum::<f64>().sqrt();
        alpha[k] = a;
        beta[k] = b;
        k += 1;
        if !(b > 1e-12 * a.abs()) || !b.is_finite() {
            break;
        }
        for i in 0..n {
            q_prev[i] = q[i];
            q[i] = w[i] / b;
        }
        b_prev = b;
    }
    tridiagonal_largest(&alpha[..k], &beta[..k.saturating_sub(1)])
}

/// Most Lanczos steps [`lanczos_largest`] takes.
const LANCZOS_MAX: usize = 32;

/// Largest eigenvalue of the symmetric tridiagonal matrix with diagonal `a`
/// and off-diagonal `b` (`b.len() = a.len() − 1`), by bisection on Sturm
/// counts between Gershgorin's bounds.
fn tridiagonal_largest(a: &[f64], b: &[f64]) -> f64 {
    let n = a.len();
    if n == 0 {
        return 0.0;
    }
    let off = |i: usize| if i < b.len() { b[i].abs() } else { 0.0 };
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for i in 0..n {
        let r = off(i) + if i > 0 { off(i - 1) } else { 0.0 };
        lo = lo.min(a[i] - r);
        hi = hi.max(a[i] + r);
    }
    if !(lo.is_finite() && hi.is_finite()) {
        return f64::NAN;
    }
    // Eigenvalues below x: sign changes of the LDLᵀ pivots of T − xI.
    let below = |x: f64| {
        let mut count = 0;
        let mut d = 1.0;
        for i in 0..n {
            let bb = if i > 0 { b[i - 1] * b[i - 1] } else { 0.0 };
            d = a[i] - x - if i > 0 { bb / d } else { 0.0 };
            if d == 0.0 {
                d = -f64::EPSILON * (x.abs() + 1.0);
            }
            if d < 0.0 {
                count += 1;
            }
        }
        count
    };
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        if !(mid > lo && mid < hi) {
            break;
        }
        if below(mid) >= n {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}

/// Resizes `m` to `r × c` and zeroes it, reusing its allocation when large
/// enough (nalgebra's `resize_mut` always reallocates).
pub fn reshape_zeroed(m: &mut nalgebra::DMatrix<f64>, r: usize, c: usize) {
    let old = std::mem::replace(m, nalgebra::DMatrix::zeros(0, 0));
    let mut buf: Vec<f64> = old.data.into();
    buf.clear();
    buf.resize(r * c, 0.0);
    *m = nalgebra::DMatrix::from_vec(r, c, buf);
}

/// Resizes `v` to `n` and zeroes it, reusing its allocation when large enough.
pub fn reshape_vector_zeroed(v: &mut nalgebra::DVector<f64>, n: usize) {
    let old = std::mem::replace(v, nalgebra::DVector::zeros(0));
    let mut buf: Vec<f64> = old.data.into();
    buf.clear();
    buf.resize(n, 0.0);
    *v = nalgebra::DVector::from_vec(buf);
}

/// LU factorization with partial pivoting of `h` (column-major, `n × n`)
/// in place; false if a pivot vanishes.
pub fn lu_factor(h: &mut [f64], n: usize, pivot: &mut [usize]) -> bool {
    for k in 0..n {
        let (mut p, mut best) = (k, h[k * n + k].abs());
        for i in k + 1..n {
            let v = h[k * n + i].abs();
            if v > best {
                (p, best) = (i, v);
            }
        }
        if !(best > 0.0) {
            return false;
        }
        pivot[k] = p;
        if p != k {
            for j in 0..n {
                h.swap(j * n + k, j * n + p);
            }
        }
        let inv = 1.0 / h[k * n + k];
        for f in &mut h[k * n + k + 1..(k + 1) * n] {
            *f *= inv;
        }
        // The trailing update column by column (contiguous in column-major
        // storage; each entry gets the same single update as row by row).
        let (head, tail) = h.split_at_mut((k + 1) * n);
        let l = &head[k * n + k + 1..];
        for col in tail.chunks_exact_mut(n) {
            let u = col[k];
            if u != 0.0 {
                for (x, &f) in col[k + 1..].iter_mut().zip(l) {
                    *x -= f * u;
                }
            }
        }
    }
    true
}

/// Solves `h y = r` in place with the factors of [`lu_factor`].
pub fn lu_apply(h: &[f64], n: usize, pivot: &[usize], r: &mut [f64]) {
    // The row swaps were applied to whole rows, L's columns included: P H
    // = L U with every swap, so apply them all first.
    for k in 0..n {
        r.swap(k, pivot[k]);
    }
    for k in 0..n {
        for i in k + 1..n {
            r[i] -= h[k * n + i] * r[k];
        }
    }
    for k in (0..n).rev() {
        let mut s = r[k];
        for j in k + 1..n {
            s -= h[j * n + k] * r[j];
        }
        r[k] = s / h[k * n + k];
    }
}

/// Solves `Hᵀ y = r` in place with the factors of [`lu_factor`] (`P H = L U`,
/// so `Hᵀ = Uᵀ Lᵀ P`).
pub fn lu_apply_transpose(h: &[f64], n: usize, pivot: &[usize], r: &mut [f64]) {
    // Uᵀ z = r (forward), then Lᵀ w = z (backward), then y = Pᵀ w.
    for k in 0..n {
        let mut s = r[k];
        for j in 0..k {
            s -= h[k * n + j] * r[j];
        }
        r[k] = s / h[k * n + k];
    }
    for k in (0..n).rev() {
        let mut s = r[k];
        for i in k + 1..n {
            s -= h[k * n + i] * r[i];
        }
        r[k] = s;
    }
    for k in (0..n).rev() {
        r.swap(k, pivot[k]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nalgebra::DMatrix;

    #[test]
    fn cholesky_solves_columns_as_one_at_a_time() {
        let n = 5;
        let b = nalgebra::DMatrix::<f64>::from_fn(n, n, |i, j| ((i * 3 + j * 7) % 5) as f64 - 2.0);
        let a = &b * b.transpose() + nalgebra::DMatrix::<f64>::identity(n, n);
        let mut l = a.as_slice().to_vec();
        cholesky_in_place(&mut l, n).unwrap();
        let rhs = nalgebra::DMatrix::<f64>::from_fn(n, 3, |i, j| (i + 2 * j) as f64 - 1.5);
        let mut x = rhs.clone();
        let mut xt = Vec::new();
        cholesky_solve_columns(&l, n, x.as_mut_slice(), &mut xt);
        for j in 0..3 {
            let mut one = rhs.column(j).iter().copied().collect::<Vec<_>>();
            cholesky_solve_in_place(&l, n, &mut one);
            for i in 0..n {
                assert!((x[(i, j)] - one[i]).abs() < 1e-12);
            }
        }
        assert!((&a * &x - &rhs).abs().max() < 1e-10);
    }

    #[test]
    fn cholesky_solves_spd_system() {
        let n = 7;
        let b = DMatrix::from_fn(n, n, |i, j| ((i * 7 + j * 3) % 11) as f64 - 5.0);
        let a = &b * b.transpose() + DMatrix::identity(n, n);
        let mut f = a.as_slice().to_vec();
        cholesky_in_place(&mut f, n).unwrap();
        let rhs: Vec<f64> = (0..n).map(|i| i as f64 - 2.0).collect();
        let mut x = rhs.clone();
        cholesky_solve_in_place(&f, n, &mut x);
        let ax = &a * nalgebra::DVector::from_vec(x);
        for i in 0..n {
            assert!((ax[i] - rhs[i]).abs() < 1e-9);
        }
        let mut neg = (-a).as_slice().to_vec();
        assert!(matches!(cholesky_in_place(&mut neg, n), Err((0, d)) if d < 0.0));
    }

    #[test]
    fn lanczos_finds_the_largest_eigenvalue() {
        // A PSD matrix with a known spectrum: Q diag(λ) Qᵀ, Q from a QR.
        let n = 40;
        let b = DMatrix::from_fn(n, n, |i, j| (((i * 31 + j * 17) % 23) as f64 - 11.0) / 7.0);
        let q = b.qr().q();
        let spectrum: Vec<f64> = (0..n).map(|i| 1e-4 + (i as f64 / 10.0).powi(3)).collect();
        let a = &q
            * DMatrix::from_diagonal(&nalgebra::DVector::from_vec(spectrum.clone()))
            * q.transpose();
        let mut work = Vec::new();
        let l = lanczos_largest(n, 12, &mut work, |x, out| {
            let y = &a * nalgebra::DVector::from_column_slice(x);
            out.copy_from_slice(y.as_slice());
        });
        let top = spectrum[n - 1];
        assert!(l <= top * (1.0 + 1e-12) && l > 0.99 * top, "{l} vs {top}");
        // A tridiagonal with known eigenvalues 2 − 2cos(kπ/(n+1)).
        let (a, b) = (vec![2.0; 9], vec![-1.0; 8]);
        let want = 2.0 - 2.0 * (9.0 * std::f64::consts::PI / 10.0).cos();
        assert!((tridiagonal_largest(&a, &b) - want).abs() < 1e-12);
    }

    #[test]
    fn lu_solves_a_pivoting_system() {
        // Column-major [[0, 2, 1], [1, 1, 0], [3, 0, 1]] (rows).
        let mut h = vec![0.0, 1.0, 3.0, 2.0, 1.0, 0.0, 1.0, 0.0, 1.0];
        let want = [1.0, -2.0, 0.5];
        let mut r = vec![
            2.0 * want[1] + want[2],
            want[0] + want[1],
            3.0 * want[0] + want[2],
        ];
        let mut piv = vec![0; 3];
        assert!(lu_factor(&mut h, 3, &mut piv));
        lu_apply(&h, 3, &piv, &mut r);
        for k in 0..3 {
            assert!((r[k] - want[k]).abs() < 1e-14, "{r:?}");
        }
    }
}
