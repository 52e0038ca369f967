//! `solve`: a contact problem or a batch of them.

use moreau::batch::Backend;
use moreau::batch::solve::{SolveError, SolvedProblem, solve_problems};
use moreau::contact::{ContactProblem, DEFAULT_MAX_ITERATIONS, DEFAULT_TOLERANCE, SolverKind};
use moreau::gpu::GpuError;
use nalgebra::DVector;
use numpy::PyArray1;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::arrays::{FloatsDyn, array2};
use crate::value_error;

/// One problem of `solve`'s arguments (problem `k` of a batch, or the only one).
pub(crate) fn problem_at(
    k: Option<usize>,
    g_matrix: &numpy::ndarray::ArrayViewD<'_, f64>,
    g: &numpy::ndarray::ArrayViewD<'_, f64>,
    mu: &numpy::ndarray::ArrayViewD<'_, f64>,
) -> PyResult<ContactProblem> {
    use numpy::ndarray::{Axis, Ix1, Ix2};
    let (gm, gv, mv) = match k {
        Some(k) => (
            g_matrix.index_axis(Axis(0), k),
            g.index_axis(Axis(0), k),
            mu.index_axis(Axis(0), k),
        ),
        None => (g_matrix.view(), g.view(), mu.view()),
    };
    let culprit = k.map_or(String::new(), |k| format!("problem {k}: "));
    let gm = gm.into_dimensionality::<Ix2>().map_err(value_error)?;
    let gv = gv.into_dimensionality::<Ix1>().map_err(value_error)?;
    let mv = mv.into_dimensionality::<Ix1>().map_err(value_error)?;
    let m = gv.len();
    if gm.shape() != [m, m] {
        return Err(value_error(format!(
            "{culprit}G has shape ({}, {}), expected ({m}, {m}) (g has length {m})",
            gm.shape()[0],
            gm.shape()[1]
        )));
    }
    let delassus = nalgebra::DMatrix::from_fn(m, m, |r, c| gm[[r, c]]);
    let g = DVector::from_iterator(m, gv.iter().copied());
    ContactProblem::new(delassus, g, mv.to_vec()).map_err(|e| value_error(format!("{culprit}{e}")))
}

/// Solves contact problems `K ∋ λ ⟂ Gλ + g + Γ ∈ K*` (`nc` friction cones
/// with coefficients `mu`, then unilateral rows): one, with `G` (m, m), `g`
/// (m,), `mu` (nc,), `m = 3 nc + nl`; or a batch of `B` problems of one
/// size, with `G` (B, m, m), `g` (B, m), `mu` (B, nc). `device="cpu"`:
/// f64, the problems in parallel; `device="gpu"`: f32, all the problems in
/// one batched kernel (wgpu; `solver` one with a GPU kernel; each call
/// compiles it, so give it a batch). Returns a dict: `lambda`, `c = Gλ + g`
/// ((m,) or (B, m)), and the solver's `iterations`, `converged`, `eps_abs`
/// (scalars, or (B,) arrays). A bad problem (shapes, a negative μ, a
/// non-finite entry, `G` not symmetric or, on the GPU, not PSD) raises
/// `ValueError` naming it; no GPU adapter raises `RuntimeError`. The GIL
/// is released while it solves.
#[pyfunction]
#[pyo3(signature = (g_matrix, g, mu, solver=SolverKind::DEFAULT.name(), tolerance=DEFAULT_TOLERANCE, max_iterations=DEFAULT_MAX_ITERATIONS, device="cpu"))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn solve<'py>(
    py: Python<'py>,
    g_matrix: FloatsDyn<'py>,
    g: FloatsDyn<'py>,
    mu: FloatsDyn<'py>,
    solver: &str,
    tolerance: f64,
    max_iterations: usize,
    device: &str,
) -> PyResult<Bound<'py, PyDict>> {
    let (gm, gv, mv) = (g_matrix.as_array(), g.as_array(), mu.as_array());
    let batched = match (gm.ndim(), gv.ndim(), mv.ndim()) {
        (2, 1, 1) => None,
        (3, 2, 2) if gm.shape()[0] == gv.shape()[0] && gv.shape()[0] == mv.shape()[0] => {
            Some(gm.shape()[0])
        }
        _ => {
            return Err(value_error(format!(
                "G, g, mu have shapes {:?}, {:?}, {:?}: expected (m, m), (m,), (nc,) for one problem or (B, m, m), (B, m), (B, nc) for a batch",
                gm.shape(),
                gv.shape(),
                mv.shape()
            )));
        }
    };
    let problems: Vec<ContactProblem> = match batched {
        None => vec![problem_at(None, &gm, &gv, &mv)?],
        Some(b) => (0..b)
            .map(|k| problem_at(Some(k), &gm, &gv, &mv))
            .collect::<PyResult<_>>()?,
    };
    let kind = solver.parse::<SolverKind>().map_err(value_error)?;
    let settings = moreau::contact::SolverSettings {
        tolerance,
        max_iterations,
        ..Default::default()
    };
    let backend = match device {
        "cpu" => Backend::CpuParallel,
        "gpu" => Backend::Gpu,
        other => {
            return Err(value_error(format!(
                "unknown device {other:?}: \"cpu\" or \"gpu\""
            )));
        }
    };
    let prefix = |k: usize| batched.map_or(String::new(), |_| format!("problem {k}: "));
    let solved = py
        .detach(|| solve_problems(&problems, kind, &settings, backend))
        .map_err(|e| match e {
            SolveError::Problem { index, error } => {
                value_error(format!("{}{error}", prefix(index)))
            }
            SolveError::Gpu(e @ (GpuError::NoAdapter | GpuError::NoMatchingAdapter { .. })) => {
                PyRuntimeError::new_err(format!("device=\"gpu\": {e}"))
            }
            SolveError::Gpu(e) => value_error(format!("device=\"gpu\": {e}")),
            SolveError::Flagged(flagged) => {
                let (k, names) = &flagged[0];
                value_error(format!(
                    "{}flagged by the GPU solver: {}",
                    prefix(*k),
                    names.join(", ")
                ))
            }
        })?;
    let d = PyDict::new(py);
    if batched.is_none() {
        let s = &solved[0];
        d.set_item("lambda", PyArray1::from_slice(py, &s.lambda))?;
        d.set_item("c", PyArray1::from_slice(py, &s.c))?;
        d.set_item("iterations", s.iterations)?;
        d.set_item("newton_steps", s.newton_steps)?;
        d.set_item("fallback_sweeps", s.fallback_sweeps)?;
        d.set_item("converged", s.converged)?;
        d.set_item("eps_abs", s.residuals.eps_abs)?;
    } else {
        let (b, m) = (solved.len(), gv.shape()[1]);
        let flat = |pick: fn(&SolvedProblem) -> &Vec<f64>| {
            solved
                .iter()
                .flat_map(|s| pick(s).iter().copied())
                .collect()
        };
        d.set_item("lambda", array2(py, flat(|s| &s.lambda), b, m))?;
        d.set_item("c", array2(py, flat(|s| &s.c), b, m))?;
        let iterations: Vec<usize> = solved.iter().map(|s| s.iterations).collect();
        let newton_steps: Vec<usize> = solved.iter().map(|s| s.newton_steps).collect();
        let fallback_sweeps: Vec<usize> = solved.iter().map(|s| s.fallback_sweeps).collect();
        let converged: Vec<bool> = solved.iter().map(|s| s.converged).collect();
        let eps: Vec<f64> = solved.iter().map(|s| s.residuals.eps_abs).collect();
        d.set_item("iterations", PyArray1::from_vec(py, iterations))?;
        d.set_item("newton_steps", PyArray1::from_vec(py, newton_steps))?;
        d.set_item("fallback_sweeps", PyArray1::from_vec(py, fallback_sweeps))?;
        d.set_item("converged", PyArray1::from_vec(py, converged))?;
        d.set_item("eps_abs", PyArray1::from_vec(py, eps))?;
    }
    Ok(d)
}
