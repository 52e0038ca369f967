//! Input checks shared by the simulator, the batches and the derivatives:
//! sizes and finiteness, naming the culprit.

use super::State;
use crate::error::SimError;
use crate::model::Model;

/// Refuses `x` if it is not of length `expected` or holds a non-finite
/// value, naming it `what`.
pub fn check_vec(what: &'static str, x: &[f64], expected: usize) -> Result<(), SimError> {
    if x.len() != expected {
        return Err(SimError::DimensionMismatch {
            what,
            got: x.len(),
            expected,
        });
    }
    if let Some(index) = x.iter().position(|v| !v.is_finite()) {
        return Err(SimError::NonFinite {
            what,
            index,
            value: x[index],
        });
    }
    Ok(())
}

/// [`check_vec`] of a batch-major array: `x` holds rows of `width` values
/// (one per world); a non-finite value is refused naming its row and column
/// (`what[row, column]`). Its length is the caller's to check.
pub fn check_rows(what: &'static str, x: &[f64], width: usize) -> Result<(), SimError> {
    for (row, r) in x.chunks(width.max(1)).enumerate() {
        if let Err(SimError::NonFinite { index, value, .. }) = check_vec(what, r, r.len()) {
            return Err(SimError::NonFiniteRow {
                what,
                row,
                index,
                value,
            });
        }
    }
    Ok(())
}

/// Refuses a state of `model` of the wrong size, with a non-finite value or
/// a quaternion of norm near zero.
pub fn check_state(model: &Model, state: &State) -> Result<(), SimError> {
    check_vec("q", state.q.as_slice(), model.nq)?;
    let q = state.q.as_slice();
    for (i, off) in crate::dynamics::quaternion_offsets(model) {
        let norm = q[off..off + 4].iter().map(|x| x * x).sum::<f64>().sqrt();
        if !(norm > 1e-6) {
            return Err(SimError::BadQuaternion {
                body: model.body_name[i].clone(),
                norm,
            });
        }
    }
    check_vec("v", state.v.as_slice(), model.nv)?;
    if !state.act.is_empty() {
        check_vec("act", state.act.as_slice(), model.na())?;
    }
    Ok(())
}
