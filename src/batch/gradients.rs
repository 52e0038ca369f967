//! The derivatives of a batch step: forward-mode Jacobians per world, and
//! reverse mode (a recorded step, [`BatchTape`], and the vector–Jacobian
//! products of all worlds at once, [`BatchVjp`]: in parallel on the CPU
//! backends, the contact stages' transposed solves in one GPU dispatch on
//! the GPU backend).

use super::*;
use crate::sim::QSide;

/// The records of one [`BatchSim::step_for_vjp`], one per world (none for
/// a world that sat the step out or failed), for [`BatchSim::vjp`].
#[derive(Debug, Default)]
pub struct BatchTape {
    steps: Vec<Option<StepJacobians>>,
}

impl BatchTape {
    pub fn nworlds(&self) -> usize {
        self.steps.len()
    }
    /// World `w`'s record (`None`: it did not step).
    pub fn world(&self, w: usize) -> Option<&StepJacobians> {
        self.steps.get(w).and_then(Option::as_ref)
    }
}

/// The vector–Jacobian products of one recorded batch step
/// ([`BatchSim::vjp`]): per world, `wᵀ ∂(v⁺, q⁺)/∂x` (flat, world after
/// world, nv each; `q` in the tangent space).
#[derive(Clone, Debug, Default)]
pub struct BatchVjp {
    pub q: Vec<f64>,
    pub v: Vec<f64>,
    pub tau: Vec<f64>,
    /// Per world, with respect to the friction coefficient of each of its
    /// step's contacts.
    pub mu: Vec<Vec<f64>>,
    /// Per world, whether `q` is differentiated (see [`StepJacobians::wrt_q`]).
    pub wrt_q: Vec<bool>,
    pub q_residual: Vec<f64>,
    /// Per world, nv each: which side of a kink each component of `q` is
    /// for (see [`StepJacobians::q_sides`]; a world not differentiated in
    /// `q` has [`QSide::Kink`] throughout).
    pub q_sides: Vec<QSide>,
    /// Worlds whose contact stage the GPU flagged (a zero pivot), solved
    /// on the CPU instead.
    pub gpu_fallbacks: Vec<usize>,
}

/// The derivatives of a world's step just finished on the GPU path (from
/// its velocity `v0` before the step), when asked for.
pub(super) fn record_derivatives(world: &mut World, accuracy: f64) {
    if let Some(jac) = &mut world.jacobians {
        let reverse = world.record == Record::Tape;
        if let Err(e) = world.sim.step_jacobians(&world.v0, jac, reverse, accuracy) {
            world.jacobians = None;
            world.step = WorldStep::Failed(e);
        }
    }
}

impl BatchSim {
    /// Like [`Self::step_active`], each world also computing the Jacobians
    /// of its step ([`Simulator::step_with_jacobians`]), in parallel except
    /// on `cpu1`; read them with [`Self::jacobians`]. Under joint torques
    /// `actions` (nworlds, nv), the action gains applied (the Jacobians are
    /// with respect to the torques the worlds receive). A world that fails
    /// keeps no Jacobians. On the GPU backend the impulses are the f32
    /// kernel's and the derivatives are taken on the host in f64 at them,
    /// the contact modes read at the solve's accuracy (see
    /// [`crate::contact::ContactSensitivity::factorize_at_accuracy`]).
    pub fn step_with_jacobians(
        &mut self,
        actions: &[f64],
        active: Option<&[bool]>,
    ) -> Result<BatchStepReport, BatchError> {
        self.step_inputs(actions, false, active, Record::Jacobians, 1)
    }

    /// Like [`Self::step_active`], each world recording what its step's
    /// vector–Jacobian product needs ([`Simulator::step_for_vjp`]; on the
    /// GPU backend at the kernel's impulses, as in
    /// [`Self::step_with_jacobians`]): the tape, for [`Self::vjp`].
    pub fn step_for_vjp(
        &mut self,
        actions: &[f64],
        active: Option<&[bool]>,
    ) -> Result<(BatchStepReport, BatchTape), BatchError> {
        let report = self.step_inputs(actions, false, active, Record::Tape, 1)?;
        let steps = self
            .worlds
            .iter_mut()
            .map(|w| {
                if w.step.is_stepping() {
                    w.jacobians.take()
                } else {
                    None
                }
            })
            .collect();
        Ok((report, BatchTape { steps }))
    }

    /// The vector–Jacobian products of the step recorded in `tape`
    /// ([`Self::step_for_vjp`]) with the adjoints `w_v` of `v⁺` and `w_q` of
    /// `q⁺` (nworlds × nv each, flat; `q⁺` in the tangent space): reverse
    /// mode, batched. The contact stage's transposed solves `ḡ = Λᵀ λ̄`
    /// run in one dispatch of the GPU kernel on the GPU backend
    /// ([`crate::gpu::vjp::GpuContactVjp`], f32; a world it flags is solved on
    /// the CPU and listed), in parallel on `cpu`, one after the other on
    /// `cpu1`. A world without a record (it sat the step out) passes its
    /// adjoints through (`q̄ = w_q`, `v̄ = w_v`, `τ̄ = 0`).
    pub fn vjp(
        &mut self,
        tape: &mut BatchTape,
        w_v: &[f64],
        w_q: &[f64],
    ) -> Result<BatchVjp, BatchError> {
        let (n, nv) = (self.worlds.len(), self.model.nv);
        if tape.steps.len() != n {
            return Err(BatchError::TapeSize {
                got: tape.steps.len(),
                nworlds: n,
            });
        }
        for (what, x) in [("w_v", w_v), ("w_q", w_q)] {
            if x.len() != n * nv {
                return Err(BatchError::DimensionMismatch {
                    what,
                    got: x.len(),
                    expected: n * nv,
                    nworlds: n,
                    per_world: nv,
                });
            }
        }
        // First halves: w̄ and λ̄ per world.
        let start = |(w, step): (usize, &Option<StepJacobians>)| {
            let (wv, wq) = (&w_v[w * nv..(w + 1) * nv], &w_q[w * nv..(w + 1) * nv]);
            step.as_ref().map(|s| s.vjp_start(wv, wq)).transpose()
        };
        let halves: Vec<_> = match self.backend {
            Backend::CpuSingle => tape.steps.iter().enumerate().map(start).collect(),
            _ => tape.steps.par_iter().enumerate().map(start).collect(),
        };
        let halves = halves
            .into_iter()
            .enumerate()
            .map(|(w, h)| h.map_err(|error| BatchError::Sim { world: w, error }))
            .collect::<Result<Vec<_>, _>>()?;
        // ḡ per world with contacts: the GPU kernel's, or None (the CPU's).
        let mut g_bars: Vec<Option<Vec<f64>>> = vec![None; n];
        let mut gpu_fallbacks = Vec::new();
        if let Some(gpu) = self.gpu.as_mut() {
            if gpu.vjp.is_none() {
                gpu.vjp = Some(GpuContactVjp::new(gpu.lanes[0].solver.context())?);
            }
            let mut of = Vec::new();
            let stages: Vec<_> = tape
                .steps
                .iter()
                .zip(&halves)
                .enumerate()
                .filter_map(|(w, (step, half))| {
                    let (step, (_, lambda_bar)) = (step.as_ref()?, half.as_ref()?);
                    let stage = step.contact_stage(lambda_bar.as_slice())?;
                    of.push(w);
                    Some(stage)
                })
                .collect();
            if !stages.is_empty() {
                let out = gpu.vjp.as_ref().expect("built above").run(&stages)?;
                for (k, &w) in of.iter().enumerate() {
                    if out.flags[k] == 0 {
                        g_bars[w] = Some(out.g_bar[k].iter().map(|&x| x as f64).collect());
                    } else {
                        gpu_fallbacks.push(w);
                    }
                }
            }
        }
        // Second halves.
        let finish = |w: usize,
                      step: &mut Option<StepJacobians>,
                      half: &Option<(DVector<f64>, DVector<f64>)>,
                      g_bar: &Option<Vec<f64>>| {
            let (wv, wq) = (&w_v[w * nv..(w + 1) * nv], &w_q[w * nv..(w + 1) * nv]);
            let mut out = StepVjp::default();
            match (step.as_mut(), half) {
                (Some(step), Some((w_bar, lambda_bar))) => {
                    let g_bar = g_bar
                        .clone()
                        .unwrap_or_else(|| step.contact_adjoint(lambda_bar));
                    step.vjp_finish(wq, w_bar, lambda_bar, &g_bar, &mut out);
                }
                _ => {
                    out.q = DVector::from_column_slice(wq);
                    out.v = DVector::from_column_slice(wv);
                    out.tau = DVector::zeros(nv);
                    out.wrt_q = true;
                    out.q_sides = vec![QSide::Both; nv];
                }
            }
            out
        };
        let outs: Vec<StepVjp> = match self.backend {
            Backend::CpuSingle => (tape.steps.iter_mut().zip(&halves).zip(&g_bars).enumerate())
                .map(|(w, ((s, h), g))| finish(w, s, h, g))
                .collect(),
            _ => (tape.steps.par_iter_mut())
                .zip(halves.par_iter())
                .zip(g_bars.par_iter())
                .enumerate()
                .map(|(w, ((s, h), g))| finish(w, s, h, g))
                .collect(),
        };
        let mut result = BatchVjp {
            gpu_fallbacks,
            ..Default::default()
        };
        for o in outs {
            result.q.extend_from_slice(o.q.as_slice());
            result.v.extend_from_slice(o.v.as_slice());
            result.tau.extend_from_slice(o.tau.as_slice());
            result.mu.push(o.mu.as_slice().to_vec());
            result.wrt_q.push(o.wrt_q);
            result.q_residual.push(o.q_residual);
            if o.q_sides.len() == nv {
                result.q_sides.extend_from_slice(&o.q_sides);
            } else {
                result.q_sides.extend(std::iter::repeat_n(QSide::Kink, nv));
            }
        }
        Ok(result)
    }

    /// The Jacobians of world `w`'s last [`Self::step_with_jacobians`]
    /// (`None` if it was not stepped so, or failed).
    pub fn jacobians(&self, w: usize) -> Result<Option<&StepJacobians>, BatchError> {
        Ok(self.world(w)?.jacobians.as_ref())
    }
}
