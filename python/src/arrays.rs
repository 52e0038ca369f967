//! numpy arrays in and out: shapes, memory orders, and the library's checks.

use moreau::sim::check_rows;
use numpy::ndarray::{Dimension, Ix1, Ix2, IxDyn};
use numpy::{PyArray, PyReadonlyArray};
use numpy::{
    PyArray1, PyArray2, PyArray3, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2,
    PyUntypedArrayMethods,
};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::{Borrowed, FromPyObject};

use crate::value_error;

/// An array argument of f64 values: a float64 numpy array as it is, or
/// anything numpy reads as an array of integers or floats (float32 and
/// integer arrays, lists, torch CPU tensors, objects with `__array__`),
/// converted to float64. Complex, boolean, string and object values are
/// refused with a TypeError naming the dtype: a cast would drop the
/// imaginary part, or read `True` as 1.0, without a word.
pub(crate) struct Floats<'py, D: Dimension>(PyReadonlyArray<'py, f64, D>);

/// A vector argument (see [`Floats`]).
pub(crate) type Floats1<'py> = Floats<'py, Ix1>;
/// A matrix argument, one row per world or sample (see [`Floats`]).
pub(crate) type Floats2<'py> = Floats<'py, Ix2>;
/// An array argument of any number of dimensions (see [`Floats`]).
pub(crate) type FloatsDyn<'py> = Floats<'py, IxDyn>;

impl<'py, D: Dimension> std::ops::Deref for Floats<'py, D> {
    type Target = PyReadonlyArray<'py, f64, D>;

    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl<'a, 'py, D: Dimension + 'py> FromPyObject<'a, 'py> for Floats<'py, D> {
    type Error = PyErr;

    fn extract(ob: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        if let Ok(a) = ob.cast::<PyArray<f64, D>>() {
            return Ok(Self(a.readonly()));
        }
        let np = ob.py().import("numpy")?;
        let a = np.call_method1("asarray", (ob,))?;
        let dtype = a.getattr("dtype")?;
        let kind: String = dtype.getattr("kind")?.extract()?;
        if !matches!(kind.as_str(), "f" | "i" | "u") {
            return Err(PyTypeError::new_err(format!(
                "expected real numbers (a float or integer array, a list, a tensor), got dtype {}",
                dtype.str()?
            )));
        }
        let a = np.call_method1("asarray", (a, "float64"))?;
        let ndim: usize = a.getattr("ndim")?.extract()?;
        if let Some(want) = D::NDIM
            && ndim != want
        {
            let shape = a.getattr("shape")?.str()?;
            return Err(PyValueError::new_err(format!(
                "expected a {want}-D array, got {ndim}-D (shape {shape})"
            )));
        }
        Ok(Self(a.cast_into::<PyArray<f64, D>>()?.readonly()))
    }
}

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
