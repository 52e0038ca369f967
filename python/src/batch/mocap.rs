//! `BatchSim`'s mocap bodies: each world's poses in and out (see
//! `crate::mocap`).

use super::*;
use crate::arrays::FloatsDyn;
use crate::mocap::{poses_in, poses_out};

impl BatchSim {
    /// Every world's mocap poses: positions (nworlds × nmocap × 3) and
    /// quaternions (nworlds × nmocap × 4, `(w, x, y, z)`, `w ≥ 0`).
    pub(super) fn mocap_arrays(&self) -> PyResult<(Vec<f64>, Vec<f64>)> {
        let (mut pos, mut quat) = (Vec::new(), Vec::new());
        for w in 0..self.batch.nworlds() {
            poses_out(
                self.batch.mocap_poses(w).map_err(value_error)?,
                &mut pos,
                &mut quat,
            );
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
        let mut current = Vec::with_capacity(worlds.len() * nm);
        for &w in &worlds {
            current.extend_from_slice(self.batch.mocap_poses(w).map_err(value_error)?);
        }
        let poses = poses_in(&pos, quat.as_ref(), &[worlds.len()], &current)?;
        for (j, &w) in worlds.iter().enumerate() {
            for i in 0..nm {
                let pose = poses[j * nm + i];
                self.batch.set_mocap_pose(w, i, pose).map_err(value_error)?;
            }
        }
        Ok(())
    }
}
