//! The GPU backend's step: the worlds' contact problems packed into one
//! batch (or pipelined chunks), solved by the kernels while the host
//! prepares the next chunk, and the impulses taken back into each world.

use super::*;

/// One GPU solver with its host batch: a chunk of worlds in flight.
pub(super) struct GpuLane {
    pub(super) solver: GpuSolver,
    pub(super) batch: HostBatch,
    pub(super) out: BatchOutput,
    /// World of each problem in the batch.
    pub(super) world_of: Vec<usize>,
}

pub(super) struct GpuState {
    /// One lane, or two when the step is pipelined in chunks (one chunk on
    /// the GPU while the host prepares or finishes another).
    pub(super) lanes: Vec<GpuLane>,
    /// Chunks the worlds are split into per step.
    pub(super) chunks: usize,
    /// (chunk, lane, submission) in flight during a step, oldest first
    /// (kept to reuse its allocation).
    pub(super) in_flight: std::collections::VecDeque<(usize, usize, Option<Submission>)>,
    pub(super) grew: Option<BatchCapacity>,
    /// The contact stage's VJP kernel, built at the first [`BatchSim::vjp`].
    pub(super) vjp: Option<GpuContactVjp>,
}

/// The host-prepared GPU path's solvers and batches for `nworlds` worlds
/// of `model` on `ctx`.
pub(super) fn host_prepared_gpu(
    model: &Model,
    options: &BatchOptions,
    nworlds: usize,
    ctx: &GpuContext,
) -> Result<GpuState, BatchError> {
    // The rows after the contacts: one per side of each limited joint, the
    // equalities, dry friction and tendon limits; then each contact's cone
    // rows (torsional and rolling friction).
    let base_nl = crate::sim::rows::max_rows(model);
    let per_contact = 3 + crate::sim::rows::max_cone_rows_per_contact(model);
    let mut max_nc = options.max_contacts_per_world.max(1);
    // A decomposition that holds a bounded number of rows keeps room for
    // the limit rows: fewer contacts go to the GPU (the rest is solved on
    // the CPU and counted).
    if let Some(rows) = options.gpu_decomposition.max_rows(options.params.solver)?
        && per_contact * max_nc + base_nl > rows
        && rows >= base_nl + per_contact
    {
        max_nc = (rows - base_nl) / per_contact;
    }
    let max_nl = base_nl + (per_contact - 3) * max_nc;
    let first = options.initial_contacts_per_world.clamp(1, max_nc);
    let chunks = options.pipeline_chunks.clamp(1, nworlds);
    let per_chunk = nworlds.div_ceil(chunks);
    let capacity = BatchCapacity {
        max_contacts_per_problem: max_nc,
        max_unilateral_rows_per_problem: max_nl,
        ..BatchCapacity::uniform(per_chunk, first)
    };
    let mut lanes = Vec::new();
    for _ in 0..chunks.min(2) {
        let mut solver = GpuSolver::with_decomposition(
            ctx,
            options.params.solver,
            capacity,
            options.gpu_decomposition,
        )?;
        solver.set_layout(options.gpu_layout);
        lanes.push(GpuLane {
            solver,
            batch: HostBatch::for_capacity(&capacity),
            out: BatchOutput::default(),
            world_of: Vec::with_capacity(per_chunk),
        });
    }
    Ok(GpuState {
        lanes,
        chunks,
        in_flight: Default::default(),
        grew: None,
        vjp: None,
    })
}

/// Host stages 1 to 3 of the worlds not out of this step.
fn prepare_worlds(worlds: &mut [World]) {
    worlds.par_iter_mut().for_each(|world| {
        if world.step.is_stepping() {
            if world.jacobians.is_some() {
                world.v0.copy_from(&world.state.v);
            }
            let input = if world.controls {
                Actuation::Controls(&world.ctrl)
            } else {
                Actuation::Torques(&world.tau)
            };
            world.step = match world.sim.prepare_with(&world.state, input) {
                Ok(contacts) => WorldStep::Stepping { contacts },
                Err(e) => WorldStep::Failed(e),
            };
        }
    });
}

/// Packs the problems of `worlds[range]` into the lane (growing its buffers
/// if they do not fit) and submits them; `None` when no world has contacts.
fn submit_chunk(
    lane: &mut GpuLane,
    worlds: &[World],
    range: std::ops::Range<usize>,
    grew: &mut Option<BatchCapacity>,
    times: &mut BatchTimes,
) -> Result<Option<Submission>, BatchError> {
    let t = Instant::now();
    lane.batch.clear();
    lane.world_of.clear();
    // Contacts or joint-limit rows to solve.
    lane.world_of.extend(range.filter(|&w| {
        let world = &worlds[w];
        world.step.contacts().is_some() && world.sim.problem().m() > 0
    }));
    let problems: Vec<_> = lane
        .world_of
        .iter()
        .map(|&w| {
            let world = &worlds[w];
            let s = &world.sim.params.solver_settings;
            (world.sim.problem(), s.max_iterations, s.tolerance)
        })
        .collect();
    // Validated and converted to f32 on all cores.
    lane.batch.push_all(&problems);
    for (k, &w) in lane.world_of.iter().enumerate() {
        if let Some(rho) = worlds[w].sim.warm_rho() {
            lane.batch.set_initial_rho(k, rho);
        }
    }
    times.gpu.add(Stage::Pack, t.elapsed());
    if lane.batch.is_empty() {
        return Ok(None);
    }
    if let Err(GpuError::CapacityExceeded { .. }) =
        lane.batch.check_capacity(&lane.solver.capacity())
    {
        let old = lane.solver.capacity();
        let need = BatchCapacity {
            problems: lane.batch.len(),
            contacts: lane.batch.contacts(),
            unilateral_rows: lane.batch.unilateral_rows(),
            delassus_floats: lane.batch.delassus_floats(),
            ..old
        };
        let ctx = lane.solver.context().clone();
        let (kind, decomposition) = (lane.solver.kind(), lane.solver.decomposition());
        let capacity = grown_capacity(&old, &need, |c| {
            crate::gpu::check_capacity(&ctx.limits, &ctx.adapter.name, kind, c, decomposition)
                .is_ok()
        });
        let layout = lane.solver.layout();
        lane.solver = GpuSolver::with_decomposition(
            &ctx,
            lane.solver.kind(),
            capacity,
            lane.solver.decomposition(),
        )?;
        lane.solver.set_layout(layout);
        *grew = Some(capacity);
    }
    let settings = worlds[lane.world_of[0]].sim.params.solver_settings;
    Ok(Some(lane.solver.submit(&lane.batch, &settings)?))
}

/// The capacity a GPU lane grows to for a batch that needs `need`: half
/// again what it needs in each count it outgrew (so that the next steps
/// rarely grow it again), or exactly what it needs where half again would
/// not fit the device (`fits`: its binding and buffer limits).
pub(super) fn grown_capacity(
    old: &BatchCapacity,
    need: &BatchCapacity,
    fits: impl Fn(&BatchCapacity) -> bool,
) -> BatchCapacity {
    let sized = |extra: bool| {
        let grow = |need: usize, have: usize| match (need > have, extra) {
            (true, true) => need + need / 2,
            (true, false) => need,
            (false, _) => have,
        };
        BatchCapacity {
            problems: grow(need.problems, old.problems),
            contacts: grow(need.contacts, old.contacts),
            unilateral_rows: grow(need.unilateral_rows, old.unilateral_rows),
            delassus_floats: grow(need.delassus_floats, old.delassus_floats),
            ..*old
        }
    };
    let roomy = sized(true);
    if fits(&roomy) { roomy } else { sized(false) }
}

/// Waits for a lane's submission, hands each world its impulses (flagged
/// problems go back to the CPU) and finishes the worlds of `range`.
fn complete_chunk(
    lane: &mut GpuLane,
    submission: Option<Submission>,
    worlds: &mut [World],
    range: std::ops::Range<usize>,
    times: &mut BatchTimes,
) -> Result<(), BatchError> {
    if let Some(sub) = submission {
        lane.solver.wait(sub, &mut lane.out)?;
        times.gpu.accumulate(&lane.solver.last_timings());
        times.device.accumulate(&lane.solver.last_device_times());
    }
    let t = Instant::now();
    // Each world takes its impulses (flagged problems go back to the CPU)
    // and finishes, on all cores; `world_of` is increasing.
    let (out, world_of) = (&lane.out, &lane.world_of);
    let first = range.start;
    worlds[range]
        .par_iter_mut()
        .enumerate()
        .for_each(|(i, world)| {
            if let Ok(k) = world_of.binary_search(&(first + i)) {
                take_impulses(world, out.problem(k));
            }
            if world.fallback.is_some() {
                finish_on_cpu(world);
            } else {
                finish_with_lambda(world);
            }
        });
    times.finish += t.elapsed();
    Ok(())
}

/// A world's share of a GPU batch's results: its impulses and stats, or,
/// where the GPU flagged its problem, why it falls back to the CPU.
fn take_impulses(world: &mut World, p: crate::gpu::ProblemOutput<'_>) {
    if p.flags() != 0 {
        world.fallback = Some(format!(
            "GPU flagged its problem of {} contacts and {} limit rows: {}",
            p.nc,
            p.nl,
            crate::gpu::flag_names(p.flags()).join(", ")
        ));
        return;
    }
    world.lambda.clear();
    world.lambda.extend(p.lambda.iter().map(|&x| x as f64));
    let r = p.result;
    world.stats = SolverStats {
        iterations: r.iterations as usize,
        converged: p.converged(),
        residuals: crate::contact::Residuals {
            primal: r.primal as f64,
            dual: r.dual as f64,
            complementarity: r.complementarity as f64,
            eps_abs: r.eps_abs as f64,
        },
        rho: r.rho as f64,
        factorizations: r.factorizations as usize,
        polishes: r.polishes as usize,
        newton_steps: r.newton_steps as usize,
        eps_floor: r.eps_floor as f64,
        ..Default::default()
    };
}

impl BatchSim {
    /// The GPU step, in `chunks` chunks of worlds over one or two lanes:
    /// prepare chunk k (host, all cores), pack and submit it, then wait for
    /// chunk k − 1 and finish it while chunk k is on the GPU.
    pub(super) fn step_on_gpu(&mut self, times: &mut BatchTimes) -> Result<(), BatchError> {
        let gpu = self.gpu.as_mut().expect("the GPU backend has a solver");
        let n = self.worlds.len();
        let chunks = gpu.chunks;
        let range = |k: usize| (k * n / chunks)..((k + 1) * n / chunks);
        gpu.grew = None;
        let in_flight = &mut gpu.in_flight;
        in_flight.clear();
        for k in 0..chunks {
            let lane = k % gpu.lanes.len();
            let t = Instant::now();
            prepare_worlds(&mut self.worlds[range(k)]);
            times.prepare += t.elapsed();
            // The lane must be free: finish what it still holds.
            while let Some(&(_, l, _)) = in_flight.front() {
                if l != lane && in_flight.len() < gpu.lanes.len() {
                    break;
                }
                let (c, l, sub) = in_flight.pop_front().expect("non-empty");
                complete_chunk(&mut gpu.lanes[l], sub, &mut self.worlds, range(c), times)?;
            }
            let sub = submit_chunk(
                &mut gpu.lanes[lane],
                &self.worlds,
                range(k),
                &mut gpu.grew,
                times,
            )?;
            in_flight.push_back((k, lane, sub));
        }
        while let Some((c, l, sub)) = in_flight.pop_front() {
            complete_chunk(&mut gpu.lanes[l], sub, &mut self.worlds, range(c), times)?;
        }
        Ok(())
    }
}

impl BatchSim {
    /// Gives the device the parameters changed through `params_mut` since
    /// the last step. An invalid one is refused, naming the world, before
    /// anything moves; a change the device cannot take moves the batch to
    /// the host-prepared path (with a notice), which then steps it.
    pub(super) fn sync_resident_params(&mut self) -> Result<(), BatchError> {
        use crate::gpu::resident::ResidentError;
        for w in 0..self.worlds.len() {
            if !self.resident_dirty[w] {
                continue;
            }
            let Some(r) = self.resident.as_mut() else {
                break;
            };
            let sim = &self.worlds[w].sim;
            match r.set_world(w, sim.model(), &sim.params) {
                Ok(()) => {}
                Err(ResidentError::Sim(error)) => return Err(BatchError::Sim { world: w, error }),
                Err(ResidentError::Gpu(e)) => return Err(e.into()),
                Err(e) => self.leave_resident(&e.to_string())?,
            }
            self.resident_dirty[w] = false;
        }
        if self.resident.is_none() {
            self.resident_dirty.fill(false);
        }
        Ok(())
    }

    /// Gives the device what changed on the host since the last step: the
    /// parameters changed through `params_mut` and the states set.
    pub(super) fn flush_resident_inputs(&mut self) -> Result<(), BatchError> {
        if self.resident_dirty.iter().any(|&d| d) {
            self.sync_resident_params()?;
        }
        if !self.resident_pending.is_empty() {
            if let Some(r) = self.resident.as_mut() {
                let worlds = &self.worlds;
                r.set_states_by(|w| &worlds[w].state, &self.resident_pending)
                    .map_err(|e| BatchError::Resident(e.to_string()))?;
            }
            self.resident_pending.clear();
        }
        Ok(())
    }

    /// `repeats` steps of the resident worlds: the inputs of the worlds in
    /// the step uploaded (a world whose input is not finite is refused by
    /// its own check and sits the step out), one dispatch per step, `q` and
    /// `v` read back once into the host states of the worlds that stepped.
    pub(super) fn step_resident(
        &mut self,
        times: &mut BatchTimes,
        repeats: usize,
    ) -> Result<(), BatchError> {
        let start = Instant::now();
        let Some(r) = self.resident.as_mut() else {
            return Ok(());
        };
        let waited_before = r.waited();
        let n = self.worlds.len();
        let controls = self.worlds.first().is_some_and(|w| w.controls);
        let (what, width) = if controls {
            ("ctrl", self.model.nu())
        } else {
            ("tau", self.model.nv)
        };
        let inputs = &mut self.resident_inputs;
        inputs.clear();
        // (A word per world at least: zipped with the worlds, chunks of
        // width 0 would step none of them.)
        inputs.resize(n * width.max(1), 0.0);
        let active = &mut self.resident_active;
        active.clear();
        active.resize(n, false);
        self.worlds
            .par_iter_mut()
            .zip(inputs.par_chunks_mut(width.max(1)))
            .zip(active.par_iter_mut())
            .for_each(|((world, input), go)| {
                *go = world.step.is_stepping();
                if *go {
                    let x = if controls { &world.ctrl } else { &world.tau };
                    match crate::sim::check_vec(what, x, width) {
                        Ok(()) => input[..width].copy_from_slice(x),
                        Err(e) => {
                            world.step = WorldStep::Failed(e);
                            *go = false;
                        }
                    }
                }
            });
        inputs.truncate(n * width);
        let input = if controls {
            Actuation::Controls(inputs)
        } else {
            Actuation::Torques(inputs)
        };
        let mask = (!active.iter().all(|&a| a)).then_some(active.as_slice());
        let resident = |e: crate::gpu::resident::ResidentError| BatchError::Resident(e.to_string());
        // A world that failed in an earlier call steps again (as on the
        // CPU); within this call one that fails sits out the rest.
        r.clear_flags();
        // (Each active world's input was checked above: read once more
        // only to be uploaded.)
        r.step_checked(input, mask, repeats).map_err(resident)?;
        let worlds = &mut self.worlds;
        let (nq, nv) = (self.model.nq, self.model.nv);
        let tolerance = r.params().solver_settings.tolerance;
        // Each chunk's columns (one batch's, unless the device's limits
        // split it) indexed within the chunk.
        r.read_columns(|first, c| {
            let chunk = &mut worlds[first..first + c.nworlds()];
            chunk.par_iter_mut().enumerate().for_each(|(w, world)| {
                if !active[first + w] {
                    world.dropped_contacts = 0;
                    return;
                }
                use crate::gpu::resident as res;
                world.device_rows = 0;
                // (Counted whether or not the step was then refused.)
                world.dropped_contacts = c.dropped_contacts(w);
                let why = match c.flag(w) {
                    0 => None,
                    res::WORLD_FLAG_NON_FINITE => Some(SimError::DeviceNonFinite),
                    res::WORLD_FLAG_CONTACT_SOLVE => Some(SimError::DeviceContact(
                        "failed (the solver flagged the problem, or λ was not finite)",
                    )),
                    res::WORLD_FLAG_UNFINISHED => {
                        Some(SimError::DeviceContact("did not finish within the step"))
                    }
                    _ => Some(SimError::DeviceContact(
                        "was cut short by the driver's loop limit",
                    )),
                };
                if let Some(why) = why {
                    world.step = WorldStep::Failed(why);
                    world.constraint_force = None;
                    return;
                }
                if let Some(s) = c.solve(w) {
                    // The last of the `repeats` steps' problem.
                    world.step = WorldStep::Stepping { contacts: s.nc };
                    world.device_rows = 3 * s.nc + s.nl;
                    world.stats.iterations = s.iterations;
                    world.stats.residuals.eps_abs = s.eps_abs;
                    world.stats.converged = s.eps_abs <= tolerance;
                    world.stats.eps_floor = s.eps_floor;
                    world.stats.newton_steps = s.newton_steps;
                    world.stats.polishes = usize::from(s.finished);
                }
                if c.start_q(w, 0).is_some() {
                    let (q, v) = world
                        .start
                        .get_or_insert_with(|| (DVector::zeros(nq), DVector::zeros(nv)));
                    for t in 0..nq {
                        q[t] = c.start_q(w, t).unwrap_or(f64::NAN);
                    }
                    for t in 0..nv {
                        v[t] = c.start_v(w, t).unwrap_or(f64::NAN);
                    }
                }
                for t in 0..nq {
                    world.state.q[t] = c.q(w, t);
                }
                for t in 0..nv {
                    world.state.v[t] = c.v(w, t);
                }
                world.state.t += world.sim.params.dt * repeats as f64;
                let f = world
                    .constraint_force
                    .get_or_insert_with(|| DVector::zeros(nv));
                for t in 0..nv {
                    f[t] = c.qfrc(w, t);
                }
            })
        })
        .map_err(resident)?;
        let waited = r.waited() - waited_before;
        times.resident_wait += waited;
        times.resident_host += start.elapsed().saturating_sub(waited);
        Ok(())
    }
}
