//! `BatchSim`'s mocap bodies: each world's poses in and out, in MuJoCo's
//! `mocap_pos` and `mocap_quat` conventions (quaternions `(w, x, y, z)`).

use super::*;
use crate::arrays::{FloatsDyn, flat};
use nalgebra::{Quaternion, UnitQuaternion};
use numpy::PyUntypedArrayMethods;

/// A `(k, nmocap, width)` array's values, row-major, or why not.
fn values(what: &str, a: &FloatsDyn<'_>, k: usize, nm: usize, width: usize) -> PyResult<Vec<f64>> {
    let shape = a.shape().to_vec();
    if shape != [k, nm, width] {
        return Err(value_error(format!(
            "{what} has shape {shape:?}, expected [{k}, {nm}, {width}]"
        )));
    }
    let v = flat(&a.as_array());
    if let Some(i) = v.iter().position(|x| !x.is_finite()) {
        return Err(value_error(format!(
            "{what}[{}, {}, {}] is not finite ({})",
            i / (nm * width),
            i / width % nm,
            i % width,
            v[i]
        )));
    }
    Ok(v)
}

impl BatchSim {
    /// Every world's mocap poses: positions (nworlds × nmocap × 3) and
    /// quaternions (nworlds × nmocap × 4, `(w, x, y, z)`, `w ≥ 0`).
    pub(super) fn mocap_arrays(&self) -> PyResult<(Vec<f64>, Vec<f64>)> {
        let n = self.batch.nworlds();
        let nm = self.batch.model().mocap.len();
        let (mut pos, mut quat) = (
            Vec::with_capacity(3 * n * nm),
            Vec::with_capacity(4 * n * nm),
        );
        for w in 0..n {
            for p in self.batch.mocap_poses(w).map_err(value_error)? {
                pos.extend_from_slice(p.translation.as_slice());
                let q = p.quaternion();
                let s = if q.w < 0.0 { -1.0 } else { 1.0 };
                quat.extend([s * q.w, s * q.i, s * q.j, s * q.k]);
            }
        }
        Ok((pos, quat))
    }

    /// `set_mocap`: every value checked before any world changes.
    pub(super) fn set_mocap_checked(
        &mut self,
        pos: FloatsDyn<'_>,
        quat: Option<FloatsDyn<'_>>,
        worlds: Option<Vec<usize>>,
    ) -> PyResult<()> {
        let n = self.batch.nworlds();
        let nm = self.batch.model().mocap.len();
        if nm == 0 {
            return Err(value_error(format!(
                "model `{}` has no mocap bodies",
                self.batch.model().name
            )));
        }
        let worlds = match worlds {
            None => (0..n).collect(),
            Some(list) => {
                if let Some(&w) = list.iter().find(|&&w| w >= n) {
                    return Err(value_error(format!("world {w} of a batch of {n}")));
                }
                list
            }
        };
        let k = worlds.len();
        let pos = values("pos", &pos, k, nm, 3)?;
        let quat = quat.map(|q| values("quat", &q, k, nm, 4)).transpose()?;
        let mut poses = Vec::with_capacity(k * nm);
        for (j, &w) in worlds.iter().enumerate() {
            let current = self.batch.mocap_poses(w).map_err(value_error)?;
            for (i, now) in current.iter().enumerate() {
                let at = j * nm + i;
                let rotation = match &quat {
                    Some(q) => {
                        let q =
                            Quaternion::new(q[4 * at], q[4 * at + 1], q[4 * at + 2], q[4 * at + 3]);
                        if q.norm() < 1e-9 {
                            return Err(value_error(format!(
                                "quat[{j}, {i}] is zero: not an orientation"
                            )));
                        }
                        UnitQuaternion::from_quaternion(q)
                    }
                    None => now.quaternion(),
                };
                let t = Vec3::new(pos[3 * at], pos[3 * at + 1], pos[3 * at + 2]);
                poses.push((w, i, SE3::from_quaternion(&rotation, t)));
            }
        }
        for (w, i, pose) in poses {
            self.batch.set_mocap_pose(w, i, pose).map_err(value_error)?;
        }
        Ok(())
    }
}
