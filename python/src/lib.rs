//! `moreau._moreau`: the Python bindings (pyo3, numpy). The Python package
//! `moreau` (python/moreau/__init__.py) re-exports them; the type stubs are
//! python/moreau/_moreau.pyi.
//!
//! Files: `model` (`Model`, `load`, `scene`), `simulator` (`Simulator`),
//! `batch` (`BatchSim`, `Tape`), `views` (its state lent to numpy), `render` (images), `task` (`Task`: the library's RL tasks
//! with their derivatives), `problems` (`solve`), `arrays` (numpy in and
//! out).
//!
//! Conventions: arrays in and out are float64 numpy arrays, read in any
//! memory order and copied at the boundary (a world's state is a few hundred bytes); any bad input (a
//! wrong shape, a non-finite value, an unknown name, a malformed file)
//! raises `ValueError` (or `FileNotFoundError`) naming the culprit and
//! leaves the object as it was; long calls (a batch step) release the GIL.

mod arrays;
mod batch;
mod mocap;
mod model;
mod problems;
mod render;
mod simulator;
mod task;
mod views;

use moreau::batch::GPU_MIN_TOLERANCE;
use moreau::contact::{DEFAULT_MAX_ITERATIONS, DEFAULT_TOLERANCE, SolverKind};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

use batch::{_batch_from_pickle, BatchSim, Gym, Tape};
use model::{_model_from_pickle, Model, load, scene, scene_names};
use problems::solve;
use simulator::Simulator;
use task::Task;

pub(crate) fn value_error(e: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// Sets the number of threads batches step their worlds on, for the rest
/// of the process (rayon's pool: one per core unless set, by this or by
/// `RAYON_NUM_THREADS`). Call it before the first batch steps: the pool
/// starts once per process.
#[pyfunction]
fn set_num_threads(threads: i64) -> PyResult<()> {
    let n = usize::try_from(threads).map_err(|_| {
        value_error(format!(
            "the number of threads must be at least 1, got {threads}"
        ))
    })?;
    moreau::batch::set_threads(n).map_err(|e| match e {
        moreau::batch::ThreadsError::Zero => value_error(e),
        moreau::batch::ThreadsError::Started { .. } => PyRuntimeError::new_err(e.to_string()),
    })
}

/// The number of threads batches step their worlds on.
#[pyfunction]
fn num_threads() -> usize {
    moreau::batch::threads()
}

#[pymodule]
fn _moreau(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Model>()?;
    m.add_class::<Simulator>()?;
    m.add_class::<BatchSim>()?;
    m.add_class::<Tape>()?;
    m.add_class::<Gym>()?;
    m.add_class::<Task>()?;
    m.add_function(wrap_pyfunction!(load, m)?)?;
    m.add_function(wrap_pyfunction!(scene, m)?)?;
    m.add_function(wrap_pyfunction!(scene_names, m)?)?;
    m.add_function(wrap_pyfunction!(solve, m)?)?;
    m.add_function(wrap_pyfunction!(set_num_threads, m)?)?;
    m.add_function(wrap_pyfunction!(num_threads, m)?)?;
    m.add_function(wrap_pyfunction!(_model_from_pickle, m)?)?;
    m.add_function(wrap_pyfunction!(_batch_from_pickle, m)?)?;
    // The defaults, from the library's catalog (the stubs say `...`).
    m.add("DEFAULT_SOLVER", SolverKind::DEFAULT.name())?;
    m.add("DEFAULT_TOLERANCE", DEFAULT_TOLERANCE)?;
    m.add("BATCH_DEFAULT_TOLERANCE", GPU_MIN_TOLERANCE)?;
    m.add("DEFAULT_MAX_ITERATIONS", DEFAULT_MAX_ITERATIONS)?;
    Ok(())
}
