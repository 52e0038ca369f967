//! `BatchSim`'s helpers: keeping the state views in step, reading the
//! arguments that several methods take, and the per-world arrays their
//! getters return.

use super::*;

impl BatchSim {
    /// Brings the state views up to date (after any change of a state).
    pub(super) fn sync_views(&mut self) {
        self.views.sync(self.batch.states());
    }

    /// `restore` but the views.
    pub(super) fn restore_unsynced(&mut self, snapshot: &[u8]) -> PyResult<()> {
        let worlds = snapshots_from_bytes(snapshot).map_err(value_error)?;
        let n = self.batch.nworlds();
        if worlds.len() != n {
            return Err(value_error(format!(
                "snapshot of {} worlds for a batch of {n}",
                worlds.len()
            )));
        }
        let mut before = Vec::with_capacity(n);
        for w in 0..n {
            let state = self.batch.state(w).map_err(value_error)?.clone();
            before.push((state, self.batch.warm_start(w).map_err(value_error)?));
        }
        for (w, s) in worlds.into_iter().enumerate() {
            if let Err(e) = self.batch.restore(w, s.state, s.warm) {
                // Back to where every world was (their own, valid, states).
                for (k, (state, warm)) in before.into_iter().enumerate().take(w) {
                    self.batch.restore(k, state, warm).map_err(value_error)?;
                }
                return Err(value_error(e));
            }
        }
        Ok(())
    }

    /// `set_states` but the views.
    pub(super) fn set_states_unsynced(
        &mut self,
        q: Floats2<'_>,
        v: Floats2<'_>,
        act: Option<Floats2<'_>>,
        worlds: Option<Vec<usize>>,
    ) -> PyResult<()> {
        let n = self.batch.nworlds();
        let worlds = match worlds {
            None => (0..n).collect(),
            Some(list) => {
                let mut seen = vec![false; n];
                for &w in &list {
                    if w >= n {
                        return Err(value_error(format!("world {w} of a batch of {n}")));
                    }
                    if std::mem::replace(&mut seen[w], true) {
                        return Err(value_error(format!("world {w} is listed twice")));
                    }
                }
                list
            }
        };
        let k = worlds.len();
        let q = rows("q", &q, k, self.nq)?;
        let v = rows("v", &v, k, self.nv)?;
        let na = self.batch.model().na();
        let act = act.as_ref().map(|a| rows("act", a, k, na)).transpose()?;
        let (nq, nv) = (self.nq, self.nv);
        let states: Vec<State> = (0..k)
            .map(|w| {
                let mut s = State::new(
                    DVector::from_column_slice(&q[w * nq..(w + 1) * nq]),
                    DVector::from_column_slice(&v[w * nv..(w + 1) * nv]),
                );
                if let Some(a) = &act {
                    s.act = DVector::from_column_slice(&a[w * na..(w + 1) * na]);
                }
                s
            })
            .collect();
        // (Each world's state is checked before any is set.)
        for (&w, s) in worlds.iter().zip(&states) {
            self.batch
                .simulator(w)
                .map_err(value_error)?
                .check_state(s)
                .map_err(|e| value_error(format!("world {w}: {e}")))?;
        }
        for (&w, s) in worlds.iter().zip(states) {
            self.batch.set_state(w, s).map_err(value_error)?;
        }
        Ok(())
    }

    /// Keeps the worlds that failed in `report`'s step, with why, for `failures`.
    pub(super) fn record_failures(&mut self, report: &BatchStepReport) {
        self.failures = report
            .failed
            .iter()
            .map(|(w, e)| (*w, e.to_string()))
            .collect();
    }

    /// A (nworlds, width) C-contiguous array, finite, as a flat slice.
    pub(super) fn actions(
        &self,
        what: &'static str,
        a: &Floats2<'_>,
        width: usize,
    ) -> PyResult<Vec<f64>> {
        rows(what, a, self.batch.nworlds(), width)
    }

    /// [`Self::actions`] of an optional argument.
    pub(super) fn optional(
        &self,
        what: &'static str,
        a: &Option<Floats2<'_>>,
        width: usize,
    ) -> PyResult<Option<Vec<f64>>> {
        a.as_ref().map(|a| self.actions(what, a, width)).transpose()
    }

    /// World positions (nworlds, 3) of the point `body_from_point` of
    /// `body`, at each world's configuration or at `q` (nworlds × nq, flat).
    pub(super) fn positions<'py>(
        &mut self,
        py: Python<'py>,
        body: usize,
        body_from_point: &SE3,
        q: Option<&[f64]>,
    ) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let model = self.batch.model().clone();
        let n = self.batch.nworlds();
        let mut flat = Vec::with_capacity(3 * n);
        for (w, s) in self.batch.states().enumerate() {
            let qw = row(q, &s.q, w);
            forward_kinematics(&model, &mut self.data, qw);
            let p = self.data.world_from_body[body].act_point(&body_from_point.translation);
            flat.extend_from_slice(p.as_slice());
        }
        Ok(array2(py, flat, n, 3))
    }

    /// `each(world, model, data, subtree coms, out)` of every world, its
    /// `out`s concatenated, after the kinematics (and the velocities when
    /// `velocities`) at each world's state or at the given `q`, `v`.
    pub(super) fn per_world<'py>(
        &mut self,
        q: Option<Floats2<'py>>,
        v: Option<Floats2<'py>>,
        velocities: bool,
        each: impl Fn(usize, &CoreModel, &Data, &[Vec3], &mut Vec<f64>) -> PyResult<()>,
    ) -> PyResult<Vec<f64>> {
        let q = self.optional("q", &q, self.nq)?;
        let v = self.optional("v", &v, self.nv)?;
        let model = self.batch.model().clone();
        let mut flat = Vec::new();
        let (mut coms, mut out) = (Vec::new(), Vec::new());
        for (w, s) in self.batch.states().enumerate() {
            let qw = row(q.as_deref(), &s.q, w);
            forward_kinematics(&model, &mut self.data, qw);
            if velocities {
                let vw = row(v.as_deref(), &s.v, w);
                forward_velocity(&model, &mut self.data, vw);
            }
            subtree_coms(&model, &self.data, &mut coms);
            each(w, &model, &self.data, &coms, &mut out)?;
            flat.extend_from_slice(&out);
        }
        Ok(flat)
    }

    /// [`Self::per_world`] as a (nworlds, body frames, width) array.
    pub(super) fn per_body_frame<'py>(
        &mut self,
        py: Python<'py>,
        width: usize,
        q: Option<Floats2<'py>>,
        v: Option<Floats2<'py>>,
        velocities: bool,
        each: impl Fn(usize, &CoreModel, &Data, &[Vec3], &mut Vec<f64>) -> PyResult<()>,
    ) -> PyResult<Bound<'py, PyArray3<f64>>> {
        let (n, k) = (
            self.batch.nworlds(),
            self.batch.model().body_frames().count(),
        );
        let flat = self.per_world(q, v, velocities, each)?;
        Ok(array3(py, flat, n, k, width))
    }

    pub(super) fn stacked<'py>(
        &self,
        py: Python<'py>,
        width: usize,
        q: bool,
    ) -> Bound<'py, PyArray2<f64>> {
        let mut flat = Vec::with_capacity(self.batch.nworlds() * width);
        for s in self.batch.states() {
            flat.extend_from_slice(if q { s.q.as_slice() } else { s.v.as_slice() });
        }
        array2(py, flat, self.batch.nworlds(), width)
    }
}
