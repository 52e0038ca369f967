//! Pickling a `BatchSim`: what `__reduce__` returns and the function
//! that makes the batch again.

use super::*;

/// What `BatchSim.__reduce__` pickles: the model, the number of worlds,
/// the constructor's arguments, then each world's parameters (the
/// library's `SimParams`, CBOR), the worlds with their own model, and the
/// snapshot of every world.
pub(super) type Pickled<'py> = (
    Model,
    usize,
    (String, Option<f64>, String, f64, String, String, usize),
    Bound<'py, PyBytes>,
    Vec<(usize, Model)>,
    Bound<'py, PyBytes>,
);

/// A batch from what `BatchSim.__reduce__` pickled (see [`Pickled`]).
#[pyfunction]
pub(crate) fn _batch_from_pickle(
    model: &Model,
    nworlds: usize,
    args: (String, Option<f64>, String, f64, String, String, usize),
    params: &[u8],
    world_models: Vec<(usize, PyRef<'_, Model>)>,
    snapshot: &[u8],
) -> PyResult<BatchSim> {
    let (backend, dt, solver, tolerance, decomposition, layout, pipeline) = args;
    let mut batch = BatchSim::new(
        model,
        nworlds,
        &backend,
        dt,
        &solver,
        tolerance,
        &decomposition,
        &layout,
        pipeline,
    )?;
    for (w, m) in &world_models {
        batch.set_world_model(*w, m)?;
    }
    let params: Vec<moreau::sim::SimParams> = ciborium::from_reader(params)
        .map_err(|e| value_error(format!("pickled batch: world parameters ({e})")))?;
    if params.len() != nworlds {
        return Err(value_error(format!(
            "pickled batch: {} worlds' parameters for {nworlds} worlds",
            params.len()
        )));
    }
    for (w, p) in params.into_iter().enumerate() {
        p.validate()
            .map_err(|e| value_error(format!("pickled batch, world {w}: {e}")))?;
        *batch.batch.params_mut(w).map_err(value_error)? = p;
    }
    batch.restore(snapshot)?;
    Ok(batch)
}
