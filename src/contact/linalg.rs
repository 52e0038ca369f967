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

#[cfg(test)]
mod tests {
    use super::*;
    use nalgebra::DMatrix;

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
}
