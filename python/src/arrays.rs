//! numpy arrays in and out: shapes, memory orders, and the library's checks.

use moreau::sim::check_rows;
use numpy::{
    PyArray1, PyArray2, PyArray3, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2,
    PyUntypedArrayMethods,
};
use pyo3::prelude::*;

use crate::value_error;

/// A row-major `rows × cols` buffer as a numpy array.
pub(crate) fn array2(
    py: Python<'_>,
    flat: Vec<f64>,
    rows: usize,
    cols: usize,
) -> Bound<'_, PyArray2<f64>> {
    debug_assert_eq!(flat.len(), rows * cols);
    PyArray1::from_vec(py, flat)
        .reshape([rows, cols])
        .expect("the length is rows × cols")
}

/// A row-major `n × rows × cols` buffer as a numpy array.
pub(crate) fn array3(
    py: Python<'_>,
    flat: Vec<f64>,
    n: usize,
    rows: usize,
    cols: usize,
) -> Bound<'_, PyArray3<f64>> {
    debug_assert_eq!(flat.len(), n * rows * cols);
    PyArray1::from_vec(py, flat)
        .reshape([n, rows, cols])
        .expect("the length is n × rows × cols")
}

/// A matrix as a (rows, cols) numpy array.
pub(crate) fn matrix<'py>(
    py: Python<'py>,
    m: &nalgebra::DMatrix<f64>,
) -> Bound<'py, PyArray2<f64>> {
    let rows: Vec<f64> = m.transpose().as_slice().to_vec();
    array2(py, rows, m.nrows(), m.ncols())
}

/// A (n, width) array, in any memory order or strides, read row-major and
/// refused (by the library's check, naming its row and column) if a value
/// is not finite.
pub(crate) fn rows(
    what: &'static str,
    a: &PyReadonlyArray2<'_, f64>,
    n: usize,
    width: usize,
) -> PyResult<Vec<f64>> {
    let shape = a.shape();
    if shape != [n, width] {
        return Err(value_error(format!(
            "{what} has shape ({}), expected ({n}, {width})",
            shape
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    let flat = flat(&a.as_array());
    check_rows(what, &flat, width).map_err(value_error)?;
    Ok(flat)
}

/// The values of an array in row-major (C) order, whatever its memory
/// order or strides (a Fortran-ordered or sliced array is read as numpy
/// indexes it, not as its memory lies).
pub(crate) fn flat<D: numpy::ndarray::Dimension>(
    a: &numpy::ndarray::ArrayView<'_, f64, D>,
) -> Vec<f64> {
    match a.as_slice() {
        Some(s) => s.to_vec(),
        None => a.iter().copied().collect(),
    }
}

/// A vector argument as a `Vec`, in index order whatever its strides; its
/// length and values are checked where it enters the library.
pub(crate) fn vector(x: &PyReadonlyArray1<'_, f64>) -> Vec<f64> {
    flat(&x.as_array())
}
