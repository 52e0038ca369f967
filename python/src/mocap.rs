//! Mocap poses in and out of numpy, in MuJoCo's `mocap_pos` and
//! `mocap_quat` conventions (quaternions `(w, x, y, z)`), for `BatchSim`
//! and `Simulator`.

use crate::arrays::{FloatsDyn, flat};
use crate::value_error;
use moreau::math::{SE3, Vec3};
use nalgebra::{Quaternion, UnitQuaternion};
use numpy::PyUntypedArrayMethods;
use pyo3::prelude::*;

/// An array of `shape`'s values, row-major and finite, or why not.
fn values(what: &str, a: &FloatsDyn<'_>, shape: &[usize]) -> PyResult<Vec<f64>> {
    if a.shape() != shape {
        return Err(value_error(format!(
            "{what} has shape {:?}, expected {shape:?}",
            a.shape()
        )));
    }
    let v = flat(&a.as_array());
    if let Some(i) = v.iter().position(|x| !x.is_finite()) {
        let mut index = Vec::with_capacity(shape.len());
        let mut rest = i;
        for d in shape.iter().rev() {
            index.push(rest % d);
            rest /= d;
        }
        index.reverse();
        let index: Vec<String> = index.iter().map(|k| k.to_string()).collect();
        return Err(value_error(format!(
            "{what}[{}] is not finite ({})",
            index.join(", "),
            v[i]
        )));
    }
    Ok(v)
}

/// Poses as positions `(·, 3)` and quaternions `(·, 4)`, `(w, x, y, z)`
/// with `w ≥ 0`, appended.
pub(crate) fn poses_out(poses: &[SE3], pos: &mut Vec<f64>, quat: &mut Vec<f64>) {
    for p in poses {
        pos.extend_from_slice(p.translation.as_slice());
        let q = p.quaternion();
        let s = if q.w < 0.0 { -1.0 } else { 1.0 };
        quat.extend([s * q.w, s * q.i, s * q.j, s * q.k]);
    }
}

/// The poses of `pos` (`lead` × nmocap × 3) and `quat` (× 4, normalized;
/// `None`: `current`'s orientations, `lead` × nmocap of them), all checked;
/// `lead` is empty for one world's (nmocap × 3).
pub(crate) fn poses_in(
    pos: &FloatsDyn<'_>,
    quat: Option<&FloatsDyn<'_>>,
    lead: &[usize],
    current: &[SE3],
) -> PyResult<Vec<SE3>> {
    let count: usize = lead.iter().product();
    let nm = current.len() / count.max(1);
    let shape = |w: usize| [lead, &[nm, w]].concat();
    let pos = values("pos", pos, &shape(3))?;
    let quat = quat.map(|q| values("quat", q, &shape(4))).transpose()?;
    (0..count * nm)
        .map(|at| {
            let rotation = match &quat {
                Some(q) => {
                    let q = Quaternion::new(q[4 * at], q[4 * at + 1], q[4 * at + 2], q[4 * at + 3]);
                    if q.norm() < 1e-9 {
                        let (w, i) = (at / nm, at % nm);
                        let at = if lead.is_empty() {
                            format!("{i}")
                        } else {
                            format!("{w}, {i}")
                        };
                        return Err(value_error(format!(
                            "quat[{at}] is zero: not an orientation"
                        )));
                    }
                    UnitQuaternion::from_quaternion(q)
                }
                None => current[at].quaternion(),
            };
            let t = Vec3::new(pos[3 * at], pos[3 * at + 1], pos[3 * at + 2]);
            Ok(SE3::from_quaternion(&rotation, t))
        })
        .collect()
}
