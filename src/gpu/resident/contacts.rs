//! Contacts of resident worlds (issue 34): collision, the constraint
//! Jacobian, the Delassus matrix and the free constraint velocity formed
//! on the device (`shaders/resident_contacts.wgsl`, in the step kernel
//! after the free velocity), the problem solved in place by the batched
//! contact kernel (`ncp-admm`, `pgs`, …: the same pipelines as the
//! host-prepared path, reading the problems where the step wrote them),
//! then the velocity update and the integration (the kernel's `finish`
//! entry point). One command buffer per step; the host only submits.
//!
//! The device collides balls, capsules, boxes, cylinders, convex meshes
//! (of up to [`MAX_HULL_VERTICES`] vertices) and ellipsoids with
//! half-spaces fixed on the world, balls and capsules with each other,
//! boxes with balls and boxes with boxes: legged robots and the MuJoCo
//! locomotion tasks on flat ground, their links against each other, stacks
//! and pyramids of boxes, cans on a table.
//! Any other pair that can collide is refused, naming it. Each pair's
//! contacts are the ones the host path makes (`collision::CollisionDetector`:
//! against a half-space, the vertices of the shape's support feature toward
//! it within the margin (a cylinder's: parry's polygonal approximation, a
//! segment of its side or a square inscribed in a cap; a hull's: the first
//! four vertices of its face most aligned with the plane's inner normal; an
//! ellipsoid's: its one support point); between moving shapes, parry's one-point manifolds
//! and, for two boxes, `collision::boxes`: the separating axis of
//! largest separation among both boxes' face normals and their edges'
//! cross products, then the two faces most aligned with it clipped against
//! each other with a tolerance). A box–box contact's warm start is found again by its
//! features (vertex–face, face–vertex or edge–edge), as the host's
//! `ContactKey`.
//!
//! **Capacity.** A world has room for every contact its shapes can make
//! against the half-spaces (two per capsule, four per box, one per ball)
//! and for [`MOVING_CONTACT_CAPACITY`] contacts between moving shapes (or
//! four per box that can touch another box, or a quarter more than the
//! host's collision detection finds at the batch's initial states, if that
//! is more: a box resting flat on another touches it at four corners, a
//! 4-3-2-1 pyramid at rest 48 times), or as many as the moving pairs can
//! make if that is fewer: exact for every model but Gymnasium's
//! humanoid, whose 109 pairs of limbs would otherwise take 109 rows of
//! room each step (448 rows and 402 kB of `G` per world, against 169 rows
//! and 58 kB), and stacks of boxes (eight per box–box pair: the pyramid,
//! made at rest, has room for 30 box–box contacts, a quarter more than
//! the 24 it makes there). A step that
//! finds more contacts than that keeps the deepest (smallest signed
//! distance) and drops the others; the count dropped is read back per
//! world and reported (`BatchStepReport::
//! dropped_contacts`, `overflowed_worlds`), never silent.

use super::layout::ContactRecord;
pub use super::pairs::BOX_BOX_CONTACTS;
use super::pairs::{GATES, PairFloats, PairKind, PairWords};
use super::{
    ResidentError, WORLD_FLAG_CONTACT_SOLVE, WORLD_FLAG_LOOP_LIMIT, WORLD_FLAG_UNFINISHED,
};
use crate::gpu::batch::{BatchCapacity, FLAG_LOOP_LIMIT, GpuResult, ROW_BOUNDS_STORED, STATE_DONE};
use crate::gpu::contract::WgslConst;
use crate::gpu::{GpuContext, GpuError, GpuSolver};
use crate::math::{Vec3, frame_from_normal};
use crate::model::{Model, Shape, WORLD};
use crate::sim::{SimParams, WorldContact};

/// Words per pair record ([`PairWords`]).
pub const PAIR_U32: usize = std::mem::size_of::<PairWords>() / 4;
/// Floats per pair record ([`PairFloats`]).
pub const PAIR_F32: usize = std::mem::size_of::<PairFloats>() / 4;

/// Floats per contact in the scratch ([`ContactRecord`]). The host reads
/// them back as [`WorldContact`]s.
pub const CONTACT_FLOATS: usize = std::mem::size_of::<ContactRecord>() / 4;

/// The most vertices a convex hull collided on the device may have (each
/// has a warm-start slot).
pub const MAX_HULL_VERTICES: usize = 64;

/// The most contacts between moving shapes a world has room for (see the
/// module's comment).
pub const MOVING_CONTACT_CAPACITY: usize = 16;

/// One collidable pair of the model as the device sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct DevicePair {
    pub geom_a: usize,
    pub geom_b: usize,
    /// What collides with what.
    pub kind: PairKind,
    /// The vertices of `a`'s convex hull (0: not a hull).
    pub hull_vertices: usize,
}

impl DevicePair {
    /// The most contacts the pair makes in one step.
    pub fn max_contacts(&self) -> usize {
        self.kind.max_contacts()
    }
    /// Whether both shapes may move (else one is a half-space on the world).
    pub fn moving(&self) -> bool {
        self.kind.moving()
    }
    /// Warm-start slots: one per vertex the pair can touch with, or for
    /// two boxes one per contact (found again by its features).
    pub fn slots(&self) -> usize {
        self.kind.slots(self.hull_vertices)
    }
    /// Whether both geometries are boxes.
    pub fn boxes(&self) -> bool {
        self.kind == PairKind::BoxBox
    }
}

/// The model's collidable pairs in the host's order (`a` the moving
/// geometry, `b` the world's half-space, sorted by `(a, b)`), or why one
/// cannot be collided on the device.
pub fn device_pairs(model: &Model) -> Result<Vec<DevicePair>, String> {
    let ng = model.geometries.len();
    let mut pairs = Vec::new();
    for i in 0..ng {
        for j in i + 1..ng {
            if !model.can_collide(i, j) {
                continue;
            }
            let (gi, gj) = (&model.geometries[i], &model.geometries[j]);
            // The host's order: the world-attached geometry is `b`.
            let (a, b) = if gi.body == WORLD || (gj.body != WORLD && j < i) {
                (j, i)
            } else {
                (i, j)
            };
            let (ga, gb) = (&model.geometries[a], &model.geometries[b]);
            let Some(kind) = PairKind::of(&ga.shape, &gb.shape, gb.body == WORLD) else {
                return Err(format!(
                    "geometries `{}` ({}) and `{}` ({}) can collide: on the device, only balls, \
                     capsules, boxes, cylinders, convex meshes and ellipsoids against a half-space \
                     fixed on the world, balls and capsules against each other, boxes against balls and \
                     boxes against boxes collide yet",
                    ga.name,
                    ga.shape.name(),
                    gb.name,
                    gb.shape.name()
                ));
            };
            let hull_vertices = match ga.collider.as_convex_polyhedron() {
                Some(hull) if kind == PairKind::HullPlane => hull.points().len(),
                _ => 0,
            };
            if hull_vertices > MAX_HULL_VERTICES {
                return Err(format!(
                    "geometry `{}`'s convex hull has {hull_vertices} vertices: the device collides \
                     hulls of up to {MAX_HULL_VERTICES}",
                    ga.name
                ));
            }
            pairs.push(DevicePair {
                geom_a: a,
                geom_b: b,
                kind,
                hull_vertices,
            });
        }
    }
    pairs.sort_by_key(|p| (p.geom_a, p.geom_b));
    Ok(pairs)
}

/// Room for contacts between moving shapes: [`MOVING_CONTACT_CAPACITY`],
/// four per box that can touch another box (a box resting flat on another
/// touches it at four corners: a stack or a pyramid of boxes at rest
/// fits), or a quarter more than `initial` (the most the host's collision
/// detection finds between moving shapes at the batch's initial states,
/// [`initial_moving_contacts`]), whichever is most.
fn moving_room(pairs: &[DevicePair], initial: usize) -> usize {
    let mut boxes: Vec<usize> = pairs
        .iter()
        .filter(|p| p.boxes())
        .flat_map(|p| [p.geom_a, p.geom_b])
        .collect();
    boxes.sort_unstable();
    boxes.dedup();
    MOVING_CONTACT_CAPACITY
        .max(4 * boxes.len())
        .max(initial + initial.div_ceil(4))
}

/// The most initial states [`initial_moving_contacts`] collides (each a
/// collision pass over the model on the host, when a batch is made).
pub const ROOM_SAMPLES: usize = 4096;

/// The most contacts of the moving pairs among `pairs` (the model's
/// [`device_pairs`]; [`DevicePair::moving`]: two round shapes, a box and a
/// ball, two boxes) that the host's collision
/// detection (margin `margin`) finds at any of `initial` (consecutive equal
/// configurations counted once; of more than [`ROOM_SAMPLES`] states, that
/// many evenly spaced): what a batch that starts there needs room for at
/// its first step. 0 for a model without moving pairs.
pub fn initial_moving_contacts(
    model: &Model,
    pairs: &[DevicePair],
    margin: f64,
    initial: &[crate::sim::State],
) -> usize {
    let mut moving: Vec<(usize, usize)> = pairs
        .iter()
        .filter(|p| p.moving())
        .map(|p| (p.geom_a.min(p.geom_b), p.geom_a.max(p.geom_b)))
        .collect();
    if moving.is_empty() {
        return 0;
    }
    moving.sort_unstable();
    let mut data = crate::dynamics::Data::new(model);
    let mut detector = crate::collision::CollisionDetector::new(model, margin);
    let mut contacts = Vec::new();
    let mut most = 0;
    let mut last: Option<&[f64]> = None;
    let stride = initial.len().div_ceil(ROOM_SAMPLES).max(1);
    for state in initial.iter().step_by(stride) {
        let q = state.q.as_slice();
        if last == Some(q) {
            continue;
        }
        last = Some(q);
        crate::dynamics::forward_kinematics(model, &mut data, q);
        contacts.clear();
        // (A pair the host cannot collide is refused by `device_pairs`.)
        if detector.detect(model, &data, &mut contacts).is_ok() {
            let count = contacts
                .iter()
                .filter(|c| {
                    let pair = (c.geom_a.min(c.geom_b), c.geom_a.max(c.geom_b));
                    moving.binary_search(&pair).is_ok()
                })
                .count();
            most = most.max(count);
        }
    }
    most
}

/// The sizes the contact stage is compiled for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ContactSizes {
    pub pairs: usize,
    /// Contacts per world: every pair's most against the half-spaces, and
    /// at most [`MOVING_CONTACT_CAPACITY`] between moving shapes (four per
    /// box that can touch a box, if that is more).
    pub max_contacts: usize,
    /// Every pair's most: what a world could make in one step.
    pub exact_contacts: usize,
    pub slots: usize,
    /// Rows after the contacts per world, joint limits and dry friction
    /// (the kernel's `LROWS`).
    pub limit_rows: usize,
    /// Which of the kernel's switches ([`GATES`]: two round shapes or a
    /// box and a ball, two boxes, a cylinder on the ground, a hull on the
    /// ground) the model's pairs need.
    pub kinds: [bool; 4],
}

impl ContactSizes {
    /// The sizes for `pairs` and `limit_rows` rows of joint limits, with
    /// the room between moving shapes of `moving_room` (no initial
    /// contacts).
    pub fn of(pairs: &[DevicePair], limit_rows: usize) -> Self {
        Self::starting_with(pairs, limit_rows, 0)
    }

    /// [`Self::of`] for a batch whose initial states have up to
    /// `initial_moving` contacts between moving shapes.
    pub fn starting_with(pairs: &[DevicePair], limit_rows: usize, initial_moving: usize) -> Self {
        let on_world: usize = pairs
            .iter()
            .filter(|p| !p.moving())
            .map(DevicePair::max_contacts)
            .sum();
        let moving: usize = pairs
            .iter()
            .filter(|p| p.moving())
            .map(DevicePair::max_contacts)
            .sum();
        ContactSizes {
            pairs: pairs.len(),
            max_contacts: on_world + moving.min(moving_room(pairs, initial_moving)),
            exact_contacts: on_world + moving,
            slots: pairs.iter().map(DevicePair::slots).sum(),
            limit_rows,
            kinds: GATES.map(|g| pairs.iter().any(|p| p.kind.gate() == Some(g))),
        }
    }

    /// Rows of a world's problem at most: `3·max_contacts + limit_rows`.
    pub fn max_rows(&self) -> usize {
        3 * self.max_contacts + self.limit_rows
    }

    /// The offsets of the sections of a world's contact scratch (`cwork`,
    /// world-minor) and its length: the counts (nc, nl) and the solve's
    /// statistics (iterations, ε_abs, contacts dropped, floor) first, read back with the state;
    /// `v_f` (nv); the columns of `X = M̃⁻¹Jᵀ` (rows × nv); the rows of `J`
    /// (rows × nv); per contact its slot, normal, point and pair
    /// ([`CONTACT_FLOATS`]); per row after the contacts its key (`2·body +
    /// side` for a joint limit, `2·nbodies + dof` for a dof's dry
    /// friction); the warm starts (world frame, 3 per slot, `f32::MAX`:
    /// none) and the keys of the contacts that left them (1 per slot), the
    /// other rows' (by key); the last ρ; the reset flag.
    pub fn scratch(&self, nv: usize, nbodies: usize) -> [(&'static str, usize); 12] {
        let m = self.max_rows();
        let sizes = [
            ("CW_COUNT", 2),
            ("CW_STATS", 6),
            ("CW_VFREE", nv),
            ("CW_X", m * nv),
            ("CW_J", m * nv),
            ("CW_CONTACT", CONTACT_FLOATS * self.max_contacts),
            ("CW_LKEY", self.limit_rows),
            ("CW_WARM", 3 * self.slots),
            ("CW_WKEY", self.slots),
            ("CW_LWARM", 2 * nbodies + nv),
            ("CW_RHO", 1),
            ("CW_RESET", 1),
        ];
        let mut at = 0;
        sizes.map(|(name, len)| {
            let here = at;
            at += len;
            (name, here)
        })
    }

    /// The offset of section `name` of [`Self::scratch`].
    pub fn section(&self, nv: usize, nbodies: usize, name: &str) -> usize {
        let s = self.scratch(nv, nbodies);
        s.iter().find(|(n, _)| *n == name).map_or(0, |(_, at)| *at)
    }

    /// Floats of one world's contact scratch.
    pub fn scratch_floats(&self, nv: usize, nbodies: usize) -> usize {
        self.section(nv, nbodies, "CW_RESET") + 1
    }

    /// Floats per world read back with the state: nc, nl, iterations,
    /// ε_abs, contacts dropped, f32's floor under ε_abs, Newton steps,
    /// whether a finisher ended the solve (`CW_COUNT` and `CW_STATS`).
    pub const READBACK: usize = 8;
    /// Where the contacts dropped sit among those floats.
    pub const DROPPED: usize = 4;
    /// Where f32's floor under ε_abs sits among those floats.
    pub const FLOOR: usize = 5;
    /// Where the solve's Newton steps sit among those floats.
    pub const NEWTON: usize = 6;
    /// Where whether a finisher ended the solve sits among those floats.
    pub const FINISHED: usize = 7;

    /// The WGSL constants of the contact stage: its sizes, the records'
    /// sizes and flags it shares with the host and the solver, the pair
    /// kinds and which of their code to compile ([`GATES`]), and the
    /// sections of its scratch.
    pub fn constants(&self, nv: usize, nbodies: usize) -> Vec<WgslConst> {
        let u = |name, x: usize| WgslConst::u32(name, x as u32);
        let mut c = vec![
            u("NPAIRS", self.pairs.max(1)),
            u("CMAX", self.max_contacts.max(1)),
            u("SLOTS", self.slots.max(1)),
            u("MROWS", self.max_rows().max(1)),
            u("PAIR_U32", PAIR_U32),
            u("PAIR_F32", PAIR_F32),
            WgslConst::u32("STATE_DONE", STATE_DONE),
            WgslConst::u32("FLAG_LOOP_LIMIT", FLAG_LOOP_LIMIT),
            WgslConst::u32("WORLD_SOLVE_FAILED", WORLD_FLAG_CONTACT_SOLVE),
            WgslConst::u32("WORLD_SOLVE_UNFINISHED", WORLD_FLAG_UNFINISHED),
            WgslConst::u32("WORLD_LOOP_LIMIT", WORLD_FLAG_LOOP_LIMIT),
            WgslConst::u32("ROW_BOUNDS_STORED", ROW_BOUNDS_STORED),
            u("CONTACT_FLOATS", CONTACT_FLOATS),
            u("BOX_BOX_CONTACTS", BOX_BOX_CONTACTS),
            WgslConst::f32(
                "PENETRATION_COMPLIANCE_DEPTH",
                crate::sim::PENETRATION_COMPLIANCE_DEPTH,
            ),
            WgslConst::f32(
                "PENETRATION_COMPLIANCE_ONSET",
                crate::sim::PENETRATION_COMPLIANCE_ONSET,
            ),
        ];
        c.extend(
            GATES
                .iter()
                .zip(self.kinds)
                .map(|(&g, on)| WgslConst::bool(g, on)),
        );
        c.extend(super::pairs::constants());
        c.extend(
            self.scratch(nv, nbodies)
                .map(|(name, at)| WgslConst::u32(name, at as u32)),
        );
        c
    }
}

/// The pair records: a [`PairWords`] and a [`PairFloats`] per pair (as
/// words and floats), then each hull's faces and points after the floats.
pub fn pair_records(model: &Model, pairs: &[DevicePair]) -> (Vec<u32>, Vec<f32>) {
    let mut words = Vec::with_capacity(pairs.len().max(1));
    let mut records = Vec::with_capacity(pairs.len().max(1));
    let mut slot = 0;
    for p in pairs {
        let (ga, gb) = (&model.geometries[p.geom_a], &model.geometries[p.geom_b]);
        words.push(PairWords {
            body_a: ga.body as u32,
            kind: p.kind as u32,
            slot: slot as u32,
            body_b: gb.body as u32,
            // A hull's faces and points go after the pair records (below).
            hull: u32::from(p.kind == PairKind::HullPlane),
        });
        slot += p.slots();
        let mut f = PairFloats::default();
        // Each geometry's collider pose and shape.
        for (g, r) in [(ga, &mut f.a), (gb, &mut f.b)] {
            let pose = &g.body_from_collider;
            for col in 0..3 {
                for row in 0..3 {
                    r.rotation[3 * col + row] = pose.rotation[(row, col)] as f32;
                }
                r.translation[col] = pose.translation[col] as f32;
            }
            match g.shape {
                Shape::Ball { radius } => r.radius = radius as f32,
                Shape::Capsule {
                    half_length,
                    radius,
                } => {
                    r.radius = radius as f32;
                    r.half[2] = half_length as f32;
                }
                Shape::Cuboid { half_extents } => {
                    for k in 0..3 {
                        r.half[k] = half_extents[k] as f32;
                    }
                }
                Shape::Ellipsoid { radii } => {
                    for k in 0..3 {
                        r.half[k] = radii[k] as f32;
                    }
                }
                // (parry's cylinder, along its collider's y.)
                Shape::Cylinder {
                    half_length,
                    radius,
                } => {
                    r.half[0] = radius as f32;
                    r.half[1] = half_length as f32;
                }
                _ => {}
            }
        }
        if let Shape::HalfSpace { normal } = gb.shape {
            // The collider's pose is fixed (b is on the world).
            let pose_b = &gb.body_from_collider;
            let n = pose_b.rotation * (normal / normal.norm());
            for k in 0..3 {
                f.normal[k] = n[k] as f32;
            }
            f.offset = n.dot(&pose_b.translation) as f32;
        }
        let (mu, restitution, _) = model.geometry_contact(p.geom_a, p.geom_b);
        f.friction = mu as f32;
        f.restitution = restitution as f32;
        records.push(f);
    }
    let mut floats: Vec<f32> = bytemuck::cast_slice(&records).to_vec();
    // Each hull: its face count, then per face its normal (3), its vertex
    // count (at most 4, as parry takes) and those vertices' indices (4),
    // then its points (3 each); word 4 of the pair says where it starts.
    for (k, p) in pairs.iter().enumerate() {
        let geom = &model.geometries[p.geom_a];
        let Some(hull) = geom
            .collider
            .as_convex_polyhedron()
            .filter(|_| p.kind == PairKind::HullPlane)
        else {
            continue;
        };
        words[k].hull = floats.len() as u32;
        let adjacent = hull.vertices_adj_to_face();
        floats.push(hull.faces().len() as f32);
        for face in hull.faces() {
            floats.extend([face.normal.x, face.normal.y, face.normal.z].map(|x| x as f32));
            let (first, count) = (
                face.first_vertex_or_edge as usize,
                (face.num_vertices_or_edges as usize).min(4),
            );
            floats.push(count as f32);
            for i in 0..4 {
                floats.push(if i < count {
                    adjacent[first + i] as f32
                } else {
                    0.0
                });
            }
        }
        for pt in hull.points() {
            floats.extend([pt.x, pt.y, pt.z].map(|x| x as f32));
        }
    }
    if words.is_empty() {
        words.push(PairWords::default());
        floats.resize(PAIR_F32, 0.0);
    }
    (bytemuck::cast_slice(&words).to_vec(), floats)
}

/// The contact parameters of the step kernel's uniform: margin, friction
/// scale, bounce velocity, warm start (1 or 0).
pub fn contact_uniform(params: &SimParams) -> [f32; 4] {
    [
        params.contact_margin as f32,
        params.friction_scale as f32,
        params.bounce_velocity as f32,
        f32::from(u8::from(params.warm_start)),
    ]
}

/// A resident world's contact problem of its last step, read back: `nc`
/// contacts' rows (3 each, in their frames `[t1, t2, n]`) then `nl`
/// joint-limit rows.
#[derive(Clone, Debug)]
pub struct DeviceProblem {
    pub nc: usize,
    pub nl: usize,
    /// `G = J M̃⁻¹ Jᵀ`.
    pub delassus: nalgebra::DMatrix<f64>,
    /// The free constraint velocity with the stabilization terms.
    pub g: nalgebra::DVector<f64>,
    /// Each contact's friction coefficient.
    pub mu: Vec<f64>,
}

/// The device side of the contact stage: the solver whose pipeline solves
/// the problems in place, the pair records and the scratch, the kernel's
/// second bind group.
pub(super) struct ContactStage {
    pub(super) sizes: ContactSizes,
    pairs: Vec<DevicePair>,
    pub(super) solver: GpuSolver,
    /// Dispatches of the solver per step (see [`ContactStage::new`]).
    pub(super) dispatches: u32,
    pub(super) pair_u32: wgpu::Buffer,
    pub(super) pair_f32: wgpu::Buffer,
    pub(super) cwork: wgpu::Buffer,
    /// The host's copy of the scratch's reset flags (1: the world's next
    /// step starts without warm starts; the step that consumes it clears
    /// it on the device, [`ContactStage::stepped`] here).
    resets: Vec<f32>,
}

impl ContactStage {
    /// Makes the solver and the buffers for `nworlds` worlds of `model`
    /// (capacity checked before anything is allocated).
    pub(super) fn new(
        ctx: &GpuContext,
        model: &Model,
        params: &SimParams,
        pairs: &[DevicePair],
        sizes: ContactSizes,
        nworlds: usize,
    ) -> Result<Self, ResidentError> {
        let capacity =
            BatchCapacity::uniform_with_rows(nworlds, sizes.max_contacts, sizes.limit_rows);
        // Too many worlds for one binding: `ResidentChunks` splits the
        // batch (its `check_capacity` checks the scratch before any kernel
        // is built); the solver's own limits are told the same way.
        let mut solver = GpuSolver::new(ctx, params.solver, capacity).map_err(|e| match e {
            GpuError::CapacityTooLarge {
                what, bytes, limit, ..
            } => ResidentError::Capacity {
                nworlds,
                what,
                needed: bytes,
                limit,
            },
            GpuError::DispatchCapacity { problems, max, .. } => ResidentError::Capacity {
                nworlds,
                what: "contact problems in one dispatch",
                needed: problems,
                limit: max,
            },
            e @ GpuError::OutOfMemory { .. } => ResidentError::Unsupported {
                model: model.name.clone(),
                reason: format!(
                    "{nworlds} worlds' contact problems at the model's capacity ({} contacts, {} rows each) do not fit the device: {e}",
                    sizes.max_contacts,
                    sizes.max_rows()
                ),
            },
            e => e.into(),
        })?;
        let dispatches = solver.prepare_resident(
            nworlds,
            &params.solver_settings,
            sizes.max_contacts,
            sizes.max_rows(),
        )?;
        let (words, pf) = pair_records(model, pairs);
        let device = &ctx.device;
        let storage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST;
        let init = |label: &str, bytes: &[u8]| {
            let buffer = device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: bytes.len() as u64,
                // (The scratch's head is read back with the state.)
                usage: storage | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            });
            ctx.queue.write_buffer(&buffer, 0, bytes);
            buffer
        };
        let pair_u32 = init("resident pairs (u32)", bytemuck::cast_slice(&words));
        let pair_f32 = init("resident pairs (f32)", bytemuck::cast_slice(&pf));
        // No warm start anywhere (f32::MAX, the shader's NO_WARM), ρ 0, no
        // reset pending.
        let floats = sizes.scratch_floats(model.nv, model.nbodies);
        let mut scratch = vec![0f32; floats * nworlds];
        let at = |name| sizes.section(model.nv, model.nbodies, name);
        let (warm, rho) = (at("CW_WARM"), at("CW_RHO"));
        scratch[warm * nworlds..rho * nworlds].fill(f32::MAX);
        let cwork = init("resident contact scratch", bytemuck::cast_slice(&scratch));
        // Every problem done: a world that does not step leaves its
        // problem alone, and the solver skips it.
        let done = vec![
            GpuResult {
                state: STATE_DONE,
                ..Default::default()
            };
            nworlds
        ];
        ctx.queue
            .write_buffer(solver.resident_buffers()[4], 0, bytemuck::cast_slice(&done));
        Ok(ContactStage {
            sizes,
            pairs: pairs.to_vec(),
            solver,
            dispatches,
            pair_u32,
            pair_f32,
            cwork,
            resets: vec![0.0; nworlds],
        })
    }

    /// The second bind group's buffers, by binding.
    pub(super) fn buffers(&self) -> [&wgpu::Buffer; 8] {
        let [problems, delassus, blocks, lambda, results] = self.solver.resident_buffers();
        [
            &self.pair_u32,
            &self.pair_f32,
            problems,
            delassus,
            blocks,
            lambda,
            results,
            &self.cwork,
        ]
    }

    /// Copies `parts` (buffer, first float, floats) one after the other
    /// and reads them back (waits for the submitted steps).
    fn read_parts(
        ctx: &GpuContext,
        parts: &[(&wgpu::Buffer, usize, usize)],
        what: &str,
    ) -> Result<Vec<f32>, ResidentError> {
        let total: usize = parts.iter().map(|p| p.2).sum();
        let device = &ctx.device;
        let readback = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(what),
            size: (total * 4) as u64,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut encoder =
            device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some(what) });
        let mut to = 0;
        for &(buffer, from, len) in parts {
            encoder.copy_buffer_to_buffer(
                buffer,
                (from * 4) as u64,
                &readback,
                to,
                (len * 4) as u64,
            );
            to += (len * 4) as u64;
        }
        let index = ctx.queue.submit(Some(encoder.finish()));
        let out = crate::gpu::with_mapped(device, &readback, index, what, |bytes| {
            bytemuck::cast_slice::<u8, f32>(bytes).to_vec()
        })?;
        ctx.take_error(what)?;
        Ok(out)
    }

    /// Every world's contacts of its last step, read back (waits for the
    /// submitted steps).
    pub(super) fn read_contacts(
        &self,
        ctx: &GpuContext,
        nworlds: usize,
        model: &Model,
    ) -> Result<Vec<Vec<WorldContact>>, ResidentError> {
        let n = nworlds;
        let cmax = self.sizes.max_contacts;
        let at = self.sizes.section(model.nv, model.nbodies, "CW_CONTACT");
        let lambda = self.solver.resident_buffers()[3];
        // Counts, contact records, the contacts' rows of λ.
        let x = Self::read_parts(
            ctx,
            &[
                (&self.cwork, 0, 2 * n),
                (&self.cwork, at * n, CONTACT_FLOATS * cmax * n),
                (lambda, 0, 3 * cmax * n),
            ],
            "reading contacts",
        )?;
        let (counts, rest) = x.split_at(2 * n);
        let (records, lambda) = rest.split_at(CONTACT_FLOATS * cmax * n);
        Ok((0..n)
            .map(|w| {
                let nc = (counts[w].to_bits() as usize).min(cmax);
                (0..nc)
                    .map(|i| {
                        let r = |k: usize| records[(CONTACT_FLOATS * i + k) * n + w];
                        let v = |k: usize| Vec3::new(r(k) as f64, r(k + 1) as f64, r(k + 2) as f64);
                        let normal = v(crate::word_of!(ContactRecord, normal));
                        let l = |k: usize| lambda[(3 * i + k) * n + w] as f64;
                        let frame = frame_from_normal(&normal);
                        let pair_index = r(crate::word_of!(ContactRecord, pair)).to_bits() as usize;
                        let pair = &self.pairs[pair_index.min(self.pairs.len() - 1)];
                        WorldContact {
                            geom_a: pair.geom_a,
                            geom_b: pair.geom_b,
                            point: v(crate::word_of!(ContactRecord, point)),
                            normal,
                            distance: r(crate::word_of!(ContactRecord, phi)) as f64,
                            impulse: frame * Vec3::new(l(0), l(1), l(2)),
                        }
                    })
                    .collect()
            })
            .collect())
    }

    /// Every world's contact problem of its last step as the solver read
    /// it (waits for the submitted steps).
    pub(super) fn read_problems(
        &self,
        ctx: &GpuContext,
        nworlds: usize,
    ) -> Result<Vec<DeviceProblem>, ResidentError> {
        let n = nworlds;
        let m = self.sizes.max_rows();
        let [_, delassus, blocks, _, _] = self.solver.resident_buffers();
        let blocks_len = 8 * m.div_ceil(3);
        let x = Self::read_parts(
            ctx,
            &[
                (&self.cwork, 0, 2 * n),
                (delassus, 0, m * (m + 1) / 2 * n),
                (blocks, 0, blocks_len * n),
            ],
            "reading contact problems",
        )?;
        let (counts, rest) = x.split_at(2 * n);
        let (tri, blocks) = rest.split_at(m * (m + 1) / 2 * n);
        Ok((0..n)
            .map(|w| {
                let nc = (counts[w].to_bits() as usize).min(self.sizes.max_contacts);
                let nl = (counts[n + w].to_bits() as usize).min(self.sizes.limit_rows);
                let rows = 3 * nc + nl;
                let g_at = |a: usize, b: usize| {
                    let (a, b) = (a.max(b), a.min(b));
                    tri[(a * (a + 1) / 2 + b) * n + w] as f64
                };
                // A block is (g 3, μ; R 3, 0), 8 floats, world-minor.
                let block = |b: usize, k: usize| blocks[(b * n + w) * 8 + k] as f64;
                let g = (0..rows).map(|r| {
                    if r < 3 * nc {
                        block(r / 3, r % 3)
                    } else {
                        let l = r - 3 * nc;
                        block(nc + l / 3, l % 3)
                    }
                });
                DeviceProblem {
                    nc,
                    nl,
                    delassus: nalgebra::DMatrix::from_fn(rows, rows, g_at),
                    g: nalgebra::DVector::from_iterator(rows, g),
                    mu: (0..nc).map(|i| block(i, 3)).collect(),
                }
            })
            .collect())
    }

    /// The next step of the worlds in `fresh` starts without warm starts
    /// (one upload of every world's flag).
    pub(super) fn reset_warm_starts(
        &mut self,
        queue: &wgpu::Queue,
        fresh: &[usize],
        model: &Model,
    ) {
        if fresh.is_empty() {
            return;
        }
        for &w in fresh {
            self.resets[w] = 1.0;
        }
        let n = self.resets.len();
        let reset = self.sizes.section(model.nv, model.nbodies, "CW_RESET");
        queue.write_buffer(
            &self.cwork,
            ((reset * n) * 4) as u64,
            bytemuck::cast_slice(&self.resets),
        );
    }

    /// A step was submitted for the worlds `active` says (all: `None`):
    /// it consumes their reset flags.
    pub(super) fn stepped(&mut self, active: Option<&[bool]>) {
        match active {
            None => self.resets.fill(0.0),
            Some(a) => {
                for (r, &go) in self.resets.iter_mut().zip(a) {
                    if go {
                        *r = 0.0;
                    }
                }
            }
        }
    }

    /// Bytes on the device.
    pub(super) fn device_bytes(&self) -> u64 {
        self.pair_u32.size() + self.pair_f32.size() + self.cwork.size() + self.solver.device_bytes()
    }
}
