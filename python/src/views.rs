//! Every world's state, batch-major, lent to numpy without a copy:
//! `BatchSim.q_view`, `v_view`, `act_view` and `t_view`.
//!
//! The worlds step in their own memory (each world's `State`); the batch
//! copies their states into these arrays, in place, at the end of every
//! call that changes a state (a step, `set_state(s)`, `restore`), with the
//! GIL held. A numpy array lent from them reads the present state at any
//! time, without an allocation per access; it is read-only, since a write
//! there would not reach the worlds.

use moreau::sim::State;
use numpy::ndarray::{Array1, Array2};
use numpy::{PyArray1, PyArray2};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// The arrays the views lend.
pub(crate) struct StateViews {
    q: Array2<f64>,
    v: Array2<f64>,
    act: Array2<f64>,
    t: Array1<f64>,
}

impl StateViews {
    pub(crate) fn new(nworlds: usize, nq: usize, nv: usize, na: usize) -> Self {
        StateViews {
            q: Array2::zeros((nworlds, nq)),
            v: Array2::zeros((nworlds, nv)),
            act: Array2::zeros((nworlds, na)),
            t: Array1::zeros(nworlds),
        }
    }

    /// Copies `states` (one per world, in order) in place: the arrays are
    /// never reallocated, so the numpy arrays lent from them stay valid.
    pub(crate) fn sync<'a>(&mut self, states: impl Iterator<Item = &'a State>) {
        for (w, s) in states.enumerate() {
            let row = |a: &mut Array2<f64>, from: &[f64]| {
                let mut r = a.row_mut(w);
                if from.is_empty() {
                    r.fill(0.0);
                } else {
                    for (x, y) in r.iter_mut().zip(from) {
                        *x = *y;
                    }
                }
            };
            row(&mut self.q, s.q.as_slice());
            row(&mut self.v, s.v.as_slice());
            // (Empty activations: all zero, as MuJoCo starts them.)
            row(&mut self.act, s.act.as_slice());
            self.t[w] = s.t;
        }
    }
}

/// Which array a view lends.
pub(crate) enum Which {
    Q,
    V,
    Act,
}

/// A read-only numpy view of `views`' array `which`, kept alive by `owner`
/// (the `BatchSim` that holds `views`).
pub(crate) fn lend2<'py>(
    owner: Bound<'py, PyAny>,
    views: &StateViews,
    which: Which,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let array = match which {
        Which::Q => &views.q,
        Which::V => &views.v,
        Which::Act => &views.act,
    };
    let py = owner.py();
    // SAFETY: `array` lives in `owner`, which the numpy array keeps alive
    // as its base, and is never reallocated: `StateViews::sync` writes it
    // in place, with the GIL held.
    let view = unsafe { PyArray2::borrow_from_array(array, owner) };
    read_only(py, view.as_any())?;
    Ok(view)
}

/// [`lend2`] of the times (nworlds,).
pub(crate) fn lend_times<'py>(
    owner: Bound<'py, PyAny>,
    views: &StateViews,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    let py = owner.py();
    // SAFETY: as in `lend2`.
    let view = unsafe { PyArray1::borrow_from_array(&views.t, owner) };
    read_only(py, view.as_any())?;
    Ok(view)
}

fn read_only(py: Python<'_>, array: &Bound<'_, PyAny>) -> PyResult<()> {
    let kwargs = PyDict::new(py);
    kwargs.set_item("write", false)?;
    array.call_method("setflags", (), Some(&kwargs))?;
    Ok(())
}
