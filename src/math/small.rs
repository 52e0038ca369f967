//! Dense products of the small matrices of the step's derivatives (`nv`
//! and `m` up to a few dozen), without the packing buffers that a general
//! `gemm` allocates on every call. Column-major, as nalgebra's `DMatrix`.

use nalgebra::DMatrix;

/// Above this many multiply–adds, nalgebra's blocked `gemm` is used
/// instead (its packing pays off on larger operands).
const LARGE: usize = 96 * 96 * 96;

/// `c = alpha a b + beta c` (`a`: m × k, `b`: k × n, `c`: m × n), as
/// [`DMatrix::gemm`]: in register tiles where the CPU has AVX2 and FMA,
/// otherwise a column of `c` at a time. `beta = 0` overwrites `c` (NaNs in
/// `c` are not propagated), as `gemm` does.
///
/// # Panics
/// If the shapes do not agree (a programming error, as with `gemm`).
pub fn gemm(c: &mut DMatrix<f64>, alpha: f64, a: &DMatrix<f64>, b: &DMatrix<f64>, beta: f64) {
    let (m, k) = a.shape();
    let n = b.ncols();
    assert_eq!(b.nrows(), k, "gemm: inner dimensions");
    assert_eq!(c.shape(), (m, n), "gemm: output shape");
    if m * n * k > LARGE {
        c.gemm(alpha, a, b, beta);
        return;
    }
    if m == 0 {
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU has the features `avx2::gemm` is compiled for.
        unsafe {
            avx2::gemm(
                c.as_mut_slice(),
                alpha,
                a.as_slice(),
                b.as_slice(),
                beta,
                m,
                k,
            )
        };
        return;
    }
    columns(
        c.as_mut_slice(),
        alpha,
        a.as_slice(),
        b.as_slice(),
        beta,
        m,
        k,
    );
}

/// Each column of `c` accumulated from the columns of `a` (column-major
/// slices, `m ≥ 1` rows): the portable path.
fn columns(c: &mut [f64], alpha: f64, a: &[f64], b: &[f64], beta: f64, m: usize, k: usize) {
    for (j, cj) in c.chunks_exact_mut(m).enumerate() {
        if beta == 0.0 {
            cj.fill(0.0);
        } else if beta != 1.0 {
            cj.iter_mut().for_each(|x| *x *= beta);
        }
        for (p, ap) in a.chunks_exact(m).take(k).enumerate() {
            let s = alpha * b[j * k + p];
            for (x, &y) in cj.iter_mut().zip(ap) {
                *x += s * y;
            }
        }
    }
}

/// The product in register tiles of 8 rows × 4 columns of `c` (eight
/// 4-wide accumulators, each `a` column loaded once per tile), then
/// 4-row and single-row tails, for CPUs with AVX2 and FMA (chosen at run
/// time: the baseline x86-64 build has neither).
#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    /// # Safety
    /// The CPU must have AVX2 and FMA; the slices must hold `c`: m × n,
    /// `a`: m × k, `b`: k × n, column-major, `m ≥ 1`.
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn gemm(
        c: &mut [f64],
        alpha: f64,
        a: &[f64],
        b: &[f64],
        beta: f64,
        m: usize,
        k: usize,
    ) {
        let n = c.len() / m;
        assert!(a.len() >= m * k && b.len() >= k * n && c.len() == m * n);
        let mut j = 0;
        while j < n {
            let nr = (n - j).min(4);
            let mut i = 0;
            // (The tile's shape constant, so that its accumulators stay in
            // registers.)
            macro_rules! tile {
                ($v:literal, $masked:literal, $rows:expr) => {
                    // SAFETY: rows i..i + 4v ≤ m (i..m where masked: only
                    // those are loaded and stored), columns j..j + nr ≤ n.
                    unsafe {
                        match nr {
                            4 => tile::<$v, 4, $masked>(c, alpha, a, b, beta, m, k, i, j, $rows),
                            3 => tile::<$v, 3, $masked>(c, alpha, a, b, beta, m, k, i, j, $rows),
                            2 => tile::<$v, 2, $masked>(c, alpha, a, b, beta, m, k, i, j, $rows),
                            _ => tile::<$v, 1, $masked>(c, alpha, a, b, beta, m, k, i, j, $rows),
                        }
                    }
                };
            }
            while i + 8 <= m {
                tile!(2, false, 4);
                i += 8;
            }
            if i + 4 <= m {
                tile!(1, false, 4);
                i += 4;
            }
            if i < m {
                // The last 1–3 rows, masked.
                tile!(1, true, m - i);
            }
            j += nr;
        }
    }

    /// Rows `i..i + 4 V` (where `MASKED`, the last 4 only their first
    /// `rows`) and columns `j..j + NR` (`NR ≤ 4`) of `c`.
    ///
    /// # Safety
    /// AVX2 and FMA; the rows and columns within the slices' shapes.
    #[target_feature(enable = "avx2,fma")]
    #[allow(clippy::too_many_arguments)]
    unsafe fn tile<const V: usize, const NR: usize, const MASKED: bool>(
        c: &mut [f64],
        alpha: f64,
        a: &[f64],
        b: &[f64],
        beta: f64,
        m: usize,
        k: usize,
        i: usize,
        j: usize,
        rows: usize,
    ) {
        let lane = |l: usize| if l < rows { -1i64 } else { 0 };
        let mask = _mm256_setr_epi64x(lane(0), lane(1), lane(2), lane(3));
        let masked = |v: usize| MASKED && v + 1 == V;
        // SAFETY (both): `p` within the slice for the lanes loaded or
        // stored (all four, or the mask's).
        let load = |p: *const f64, v: usize| unsafe {
            if masked(v) {
                _mm256_maskload_pd(p, mask)
            } else {
                _mm256_loadu_pd(p)
            }
        };
        let store = |p: *mut f64, v: usize, x: __m256d| unsafe {
            if masked(v) {
                _mm256_maskstore_pd(p, mask, x)
            } else {
                _mm256_storeu_pd(p, x)
            }
        };
        let mut acc = [[_mm256_setzero_pd(); NR]; V];
        let (ap, bp, cp) = (a.as_ptr(), b.as_ptr(), c.as_mut_ptr());
        for p in 0..k {
            // SAFETY: (i + 4V − 1) + p m < m k (masked lanes aside) and
            // (j + NR − 1) k + p < k n.
            unsafe {
                let mut av = [_mm256_setzero_pd(); V];
                for (v, x) in av.iter_mut().enumerate() {
                    *x = load(ap.add(p * m + i + 4 * v), v);
                }
                for jj in 0..NR {
                    let bv = _mm256_broadcast_sd(&*bp.add((j + jj) * k + p));
                    for v in 0..V {
                        acc[v][jj] = _mm256_fmadd_pd(av[v], bv, acc[v][jj]);
                    }
                }
            }
        }
        let (al, be) = (_mm256_set1_pd(alpha), _mm256_set1_pd(beta));
        for jj in 0..NR {
            for (v, row) in acc.iter().enumerate() {
                // SAFETY: column j + jj, rows i + 4v..i + 4v + 4 of c
                // (masked lanes aside).
                unsafe {
                    let dst = cp.add((j + jj) * m + i + 4 * v);
                    let out = if beta == 0.0 {
                        _mm256_mul_pd(al, row[jj])
                    } else {
                        _mm256_fmadd_pd(be, load(dst, v), _mm256_mul_pd(al, row[jj]))
                    };
                    store(dst, v, out);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agrees_with_nalgebra_gemm() {
        let mut rng = crate::math::Rng::new(7);
        for &(m, k, n) in &[
            (0, 3, 2),
            (3, 0, 2),
            (18, 18, 18),
            (12, 18, 7),
            (5, 1, 9),
            (2, 7, 3),
            (23, 23, 23),
            (100, 100, 100),
        ] {
            let mut fill = |r: usize, c: usize| {
                DMatrix::from_fn(r, c, |_, _| {
                    let x = rng.range(-1.0, 1.0);
                    if x.abs() < 0.3 { 0.0 } else { x }
                })
            };
            let (a, b, c0) = (fill(m, k), fill(k, n), fill(m, n));
            for &(alpha, beta) in &[(1.0, 0.0), (-0.5, 1.0), (2.0, -3.0)] {
                let mut expected = c0.clone();
                expected.gemm(alpha, &a, &b, beta);
                let mut got = c0.clone();
                gemm(&mut got, alpha, &a, &b, beta);
                let err = (&got - &expected).abs().max();
                assert!(err < 1e-13, "{m}x{k}x{n} alpha {alpha} beta {beta}: {err}");
                // The portable path too (the one above may be AVX2's).
                if m > 0 {
                    let mut portable = c0.clone();
                    let (a, b) = (a.as_slice(), b.as_slice());
                    columns(portable.as_mut_slice(), alpha, a, b, beta, m, k);
                    let err = (&portable - &expected).abs().max();
                    assert!(err < 1e-13, "portable {m}x{k}x{n}: {err}");
                }
            }
        }
    }
}
