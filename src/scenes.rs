//! Named scenes built in code, used by the command line, the tests and the benches.
//!
//! | name | what |
//! |---|---|
//! | `cube-resting` | 1 kg cube (0.2 m) resting on the ground, μ = 0.3 |
//! | `cube-sliding` | the same cube launched at 1 m/s along y |
//! | `cube-stack` | a 1000 kg cube on a 1 kg cube (see [`cube_stack`] for other ratios) |
//! | `pyramid` | six 1 kg boxes stacked 3-2-1 |
//! | `ball-drop` | a ball dropped from 1 m, restitution 0.5 |
//! | `cube-falling` | the event-based seed's falling cube: released in the air, tilted and spinning, restitution 0.3 (see [`falling_cube`]) |
//! | `cartpole` | a cart on a rail (prismatic) with a pole (revolute), no contact |
//! | `quadruped` | 12-dof quadruped with Solo-12's proportions, held standing by a PD controller, dropped from 0.1 m above its standing height |
//! | `arm` | 7-dof arm, fixed base, PD-held at a nominal posture |

use crate::contact::{ContactProblem, SolverKind, SolverSettings};
use crate::error::ModelError;
use crate::error::SimError;
use crate::math::{Inertia, Mat3, SE3, Vec3};
use crate::model::{JointType, Material, Model, ModelBuilder, Shape, WORLD};
use crate::sim::{SimParams, Simulator, State, StepReport};
use nalgebra::{DVector, Quaternion, UnitQuaternion};
use std::sync::Arc;

/// Names accepted by [`scene`].
pub const SCENE_NAMES: [&str; 9] = [
    "cube-resting",
    "cube-sliding",
    "cube-stack",
    "pyramid",
    "ball-drop",
    "cube-falling",
    "cartpole",
    "quadruped",
    "arm",
];

/// Joint-space PD controller on 1-dof joints: `τ_j = kp_j (q_ref − q)_j − kd_j v_j`.
#[derive(Clone, Debug, PartialEq)]
pub struct PdController {
    /// (number of controlled joints) gains, in the order of `dofs`.
    pub kp: Vec<f64>,
    pub kd: Vec<f64>,
    /// (nq) reference configuration.
    pub q_ref: DVector<f64>,
    /// Controlled joints as (index in v, index in q).
    pub dofs: Vec<(usize, usize)>,
}

impl PdController {
    /// Controls every revolute and prismatic joint of `model` towards `q_ref`.
    pub fn for_model(model: &Model, q_ref: DVector<f64>, kp: f64, kd: f64) -> Self {
        let dofs: Vec<(usize, usize)> = (1..model.nbodies)
            .filter(|&i| {
                matches!(
                    model.joint_type[i],
                    JointType::Revolute(_) | JointType::Prismatic(_)
                )
            })
            .map(|i| (model.joint_idx_v[i], model.joint_idx_q[i]))
            .collect();
        PdController {
            kp: vec![kp; dofs.len()],
            kd: vec![kd; dofs.len()],
            q_ref,
            dofs,
        }
    }
    /// Gains that give each joint, alone, the natural frequency `omega` (rad/s)
    /// and damping ratio `zeta` given its diagonal mass-matrix entry at `q_ref`:
    /// `kp = ω² M_jj`, `kd = 2ζω M_jj`. With explicit damping this stays stable
    /// for `2ζω dt < 2`, whatever the link's inertia.
    pub fn with_natural_frequency(
        model: &Model,
        q_ref: DVector<f64>,
        omega: f64,
        zeta: f64,
    ) -> Self {
        Self::with_gains_from_inertia(model, q_ref, omega, zeta, |m, iv| Some(m[(iv, iv)]))
    }
    /// Like [`Self::with_natural_frequency`] with the joint's smallest
    /// effective inertia, `1 / (M⁻¹)_jj` (the other joints free), instead of
    /// `M_jj` (the others locked): on a chain whose distal links are heavy
    /// (a leg with a big foot) `M_jj` overestimates the inertia a proximal
    /// joint's torque meets, and the explicit PD it gives is unstable.
    pub fn with_effective_natural_frequency(
        model: &Model,
        q_ref: DVector<f64>,
        omega: f64,
        zeta: f64,
    ) -> Self {
        let mut m_inv = None;
        Self::with_gains_from_inertia(model, q_ref, omega, zeta, |m, iv| {
            let inv = m_inv.get_or_insert_with(|| m.clone().try_inverse());
            inv.as_ref().map(|inv| 1.0 / inv[(iv, iv)])
        })
    }
    /// `kp = ω² I_j`, `kd = 2ζω I_j` with `I_j = inertia(M(q_ref), dof)`
    /// (gains stay zero where it gives none).
    fn with_gains_from_inertia(
        model: &Model,
        q_ref: DVector<f64>,
        omega: f64,
        zeta: f64,
        mut inertia: impl FnMut(&nalgebra::DMatrix<f64>, usize) -> Option<f64>,
    ) -> Self {
        let mut c = Self::for_model(model, q_ref, 0.0, 0.0);
        let mut data = crate::dynamics::Data::new(model);
        let m = crate::dynamics::crba(model, &mut data, c.q_ref.as_slice());
        for (j, &(iv, _)) in c.dofs.iter().enumerate() {
            if let Some(i) = inertia(m, iv) {
                c.kp[j] = omega * omega * i;
                c.kd[j] = 2.0 * zeta * omega * i;
            }
        }
        c
    }
    /// Writes the torques into `tau` (nv); other entries are zeroed.
    pub fn torques(&self, state: &State, tau: &mut [f64]) {
        self.torques_toward(state, &[], tau);
    }
    /// Like [`Self::torques`] toward `q_ref` moved by `offset[j]` on
    /// controlled joint `j` (in the order of `dofs`; missing entries: 0).
    pub fn torques_toward(&self, state: &State, offset: &[f64], tau: &mut [f64]) {
        tau.fill(0.0);
        for (j, &(iv, iq)) in self.dofs.iter().enumerate() {
            let target = self.q_ref[iq] + offset.get(j).copied().unwrap_or(0.0);
            tau[iv] = self.kp[j] * (target - state.q[iq]) - self.kd[j] * state.v[iv];
        }
    }
}

/// A model, an initial state, a time step and an optional controller.
#[derive(Clone, Debug)]
pub struct Scene {
    pub name: String,
    pub model: Arc<Model>,
    pub state: State,
    pub dt: f64,
    pub controller: Option<PdController>,
}

impl Scene {
    /// The scene's controller torques for `state` (zero without a controller). `tau`: (nv).
    pub fn control(&self, state: &State, tau: &mut [f64]) {
        match &self.controller {
            Some(c) => c.torques(state, tau),
            None => tau.fill(0.0),
        }
    }
}

/// Builds the named scene.
pub fn scene(name: &str) -> Result<Scene, ModelError> {
    match name {
        "cube-resting" => cube(name, 0.3, Vec3::zeros()),
        "cube-sliding" => cube(name, 0.3, Vec3::new(0.0, 1.0, 0.0)),
        "cube-stack" => cube_stack(1e3),
        "pyramid" => pyramid(),
        "ball-drop" => ball_drop(),
        "cube-falling" => falling_cube(),
        "cartpole" => cartpole(),
        "quadruped" => quadruped(),
        "arm" => arm(),
        _ => Err(ModelError::UnknownScene {
            name: name.into(),
            known: SCENE_NAMES.join(", "),
        }),
    }
}

fn ground(b: &mut ModelBuilder, material: Material) -> Result<(), ModelError> {
    b.add_ground("ground", material)?;
    Ok(())
}

/// Adds a free-floating box body with its geometry.
fn add_box(
    b: &mut ModelBuilder,
    name: &str,
    mass: f64,
    size: Vec3,
    material: Material,
) -> Result<usize, ModelError> {
    let body = b.add_body(
        name,
        WORLD,
        JointType::Free,
        SE3::identity(),
        Inertia::cuboid(mass, size),
    )?;
    b.add_geometry(
        name,
        body,
        SE3::identity(),
        Shape::Cuboid {
            half_extents: size / 2.0,
        },
        material,
    )?;
    Ok(body)
}

/// Free-joint configuration entries for a body at `p` with identity orientation.
fn free_q(q: &mut DVector<f64>, iq: usize, p: Vec3) {
    q[iq] = p.x;
    q[iq + 1] = p.y;
    q[iq + 2] = p.z;
    q[iq + 3] = 0.0;
    q[iq + 4] = 0.0;
    q[iq + 5] = 0.0;
    q[iq + 6] = 1.0;
}

/// A 1 kg, 0.2 m cube resting on the ground with friction `mu` (ground and
/// cube both `mu`), with initial linear velocity `v0` (world = body axes).
pub fn cube(name: &str, mu: f64, v0: Vec3) -> Result<Scene, ModelError> {
    let mut b = ModelBuilder::new(name);
    ground(&mut b, Material::with_friction(mu))?;
    add_box(
        &mut b,
        "cube",
        1.0,
        Vec3::repeat(0.2),
        Material::with_friction(mu),
    )?;
    let model = Arc::new(b.build()?);
    let mut q = model.neutral_configuration();
    free_q(&mut q, 0, Vec3::new(0.0, 0.0, 0.1));
    let mut v = DVector::zeros(model.nv);
    v.fixed_rows_mut::<3>(0).copy_from(&v0);
    Ok(Scene {
        name: name.into(),
        model,
        state: State::new(q, v),
        dt: 1e-3,
        controller: None,
    })
}

/// A cube of `mass_ratio` kg resting on a 1 kg cube on the ground (0.2 m cubes, μ = 0.5).
pub fn cube_stack(mass_ratio: f64) -> Result<Scene, ModelError> {
    cube_stack_masses(1.0, mass_ratio)
}

/// A `top` kg cube on a `bottom` kg cube on the ground (0.2 m cubes, μ = 0.5).
pub fn cube_stack_masses(bottom: f64, top: f64) -> Result<Scene, ModelError> {
    let mut b = ModelBuilder::new("cube-stack");
    ground(&mut b, Material::with_friction(0.5))?;
    add_box(
        &mut b,
        "bottom",
        bottom,
        Vec3::repeat(0.2),
        Material::with_friction(0.5),
    )?;
    add_box(
        &mut b,
        "top",
        top,
        Vec3::repeat(0.2),
        Material::with_friction(0.5),
    )?;
    let model = Arc::new(b.build()?);
    let mut q = model.neutral_configuration();
    free_q(&mut q, 0, Vec3::new(0.0, 0.0, 0.1));
    free_q(&mut q, 7, Vec3::new(0.0, 0.0, 0.3));
    let v = DVector::zeros(model.nv);
    Ok(Scene {
        name: "cube-stack".into(),
        model,
        state: State::new(q, v),
        dt: 1e-3,
        controller: None,
    })
}

/// `side × side` 1 kg boxes (0.2 m, μ = 0.6) resting on the ground 5 cm
/// apart: `4·side²` contacts with the ground (64 for `side = 4`).
pub fn box_grid(side: usize) -> Result<Scene, ModelError> {
    let mut b = ModelBuilder::new("box-grid");
    ground(&mut b, Material::with_friction(0.6))?;
    let pitch = 0.25;
    let mut places = Vec::new();
    for i in 0..side {
        for j in 0..side {
            places.push(Vec3::new(i as f64 * pitch, j as f64 * pitch, 0.1));
            add_box(
                &mut b,
                &format!("box{i}_{j}"),
                1.0,
                Vec3::repeat(0.2),
                Material::with_friction(0.6),
            )?;
        }
    }
    let model = Arc::new(b.build()?);
    let mut q = model.neutral_configuration();
    for (k, p) in places.iter().enumerate() {
        free_q(&mut q, 7 * k, *p);
    }
    let v = DVector::zeros(model.nv);
    Ok(Scene {
        name: "box-grid".into(),
        model,
        state: State::new(q, v),
        dt: 1e-3,
        controller: None,
    })
}

/// Six 1 kg boxes (0.2 m) stacked 3-2-1 in the x-z plane, 1 cm apart in a row.
pub fn pyramid() -> Result<Scene, ModelError> {
    pyramid_of(3)
}

/// [`pyramid`] with `rows` rows (`rows`, `rows − 1`, …, 1 boxes; named
/// `pyramid` for 3 rows, else `pyramid-ROWS`).
pub fn pyramid_of(rows: usize) -> Result<Scene, ModelError> {
    let name = if rows == 3 {
        "pyramid".to_string()
    } else {
        format!("pyramid-{rows}")
    };
    let mut b = ModelBuilder::new(&name);
    ground(&mut b, Material::with_friction(0.6))?;
    let (s, gap) = (0.2, 0.01);
    let mut places = Vec::new();
    for row in 0..rows {
        let n = rows - row;
        for k in 0..n {
            let x = (k as f64 - (n - 1) as f64 / 2.0) * (s + gap);
            places.push(Vec3::new(x, 0.0, s / 2.0 + row as f64 * s));
            add_box(
                &mut b,
                &format!("box{row}{k}"),
                1.0,
                Vec3::repeat(s),
                Material::with_friction(0.6),
            )?;
        }
    }
    let model = Arc::new(b.build()?);
    let mut q = model.neutral_configuration();
    for (i, p) in places.iter().enumerate() {
        free_q(&mut q, 7 * i, *p);
    }
    let v = DVector::zeros(model.nv);
    Ok(Scene {
        name,
        model,
        state: State::new(q, v),
        dt: 1e-3,
        controller: None,
    })
}

/// A 4 kg box on `legs` telescopic legs (each a prismatic joint along z
/// under the box, on a circle of radius 0.15 m, ending in a 2 cm ball),
/// all feet 0.1 mm into the ground: a floating base with one actuated dof
/// and one contact per leg, for measuring inverse dynamics against the
/// number of contacts (`benches/inverse.rs`).
pub fn legged(legs: usize) -> Result<Scene, ModelError> {
    let mut b = ModelBuilder::new(&format!("legged-{legs}"));
    ground(&mut b, Material::default())?;
    let base = add_box(
        &mut b,
        "base",
        4.0,
        Vec3::new(0.4, 0.4, 0.1),
        Material::default(),
    )?;
    for k in 0..legs {
        let t = std::f64::consts::TAU * k as f64 / legs.max(1) as f64;
        let leg = b.add_body(
            &format!("leg{k}"),
            base,
            JointType::Prismatic(Vec3::z()),
            SE3::from_translation(Vec3::new(0.15 * t.cos(), 0.15 * t.sin(), -0.05)),
            Inertia::sphere(0.1, 0.02),
        )?;
        b.add_geometry(
            &format!("foot{k}"),
            leg,
            SE3::from_translation(Vec3::new(0.0, 0.0, -0.2)),
            Shape::Ball { radius: 0.02 },
            Material::default(),
        )?;
    }
    let model = Arc::new(b.build()?);
    let mut q = DVector::zeros(model.nq);
    free_q(&mut q, 0, Vec3::new(0.0, 0.0, 0.27 - 1e-4));
    Ok(Scene {
        name: format!("legged-{legs}"),
        state: State::new(q, DVector::zeros(model.nv)),
        model,
        dt: 1e-3,
        controller: None,
    })
}

/// The falling cube of the event-based seed's comparison: a 1 kg, 0.2 m
/// cube (μ = 0.4, restitution 0.3) released with its centre 0.5 m above the
/// ground, tilted by 0.6 rad about (1, 2, 0.5), moving at 1 m/s along x
/// and spinning at (0, 3, 5) rad/s (world axes): a ballistic flight, a few
/// impacts that reorient it, then sliding to rest on a face.
pub fn falling_cube() -> Result<Scene, ModelError> {
    let mut b = ModelBuilder::new("cube-falling");
    let material = Material {
        friction: 0.4,
        restitution: 0.3,
        ..Default::default()
    };
    ground(&mut b, material)?;
    add_box(&mut b, "cube", 1.0, Vec3::repeat(0.2), material)?;
    let model = Arc::new(b.build()?);
    let axis = nalgebra::Unit::new_normalize(Vec3::new(1.0, 2.0, 0.5));
    let rotation = nalgebra::UnitQuaternion::from_axis_angle(&axis, 0.6);
    let mut q = model.neutral_configuration();
    free_q(&mut q, 0, Vec3::new(0.0, 0.0, 0.5));
    crate::math::quat_to_slice(&rotation, &mut q.as_mut_slice()[3..7]);
    // The free joint's velocity is in the body frame.
    let r = rotation.to_rotation_matrix();
    let mut v = DVector::zeros(model.nv);
    v.fixed_rows_mut::<3>(0)
        .copy_from(&(r.transpose() * Vec3::new(1.0, 0.0, 0.0)));
    v.fixed_rows_mut::<3>(3)
        .copy_from(&(r.transpose() * Vec3::new(0.0, 3.0, 5.0)));
    Ok(Scene {
        name: "cube-falling".into(),
        model,
        state: State::new(q, v),
        dt: 1e-2,
        controller: None,
    })
}

/// A 1 kg ball of radius 0.1 m dropped from 1 m, restitution 0.5, μ = 0.5.
pub fn ball_drop() -> Result<Scene, ModelError> {
    let mut b = ModelBuilder::new("ball-drop");
    ground(&mut b, Material::with_friction(0.5))?;
    let ball = b.add_body(
        "ball",
        WORLD,
        JointType::Free,
        SE3::identity(),
        Inertia::sphere(1.0, 0.1),
    )?;
    b.add_geometry(
        "ball",
        ball,
        SE3::identity(),
        Shape::Ball { radius: 0.1 },
        Material {
            friction: 0.5,
            restitution: 0.5,
            ..Default::default()
        },
    )?;
    let model = Arc::new(b.build()?);
    let mut q = model.neutral_configuration();
    free_q(&mut q, 0, Vec3::new(0.0, 0.0, 1.0));
    let v = DVector::zeros(model.nv);
    Ok(Scene {
        name: "ball-drop".into(),
        model,
        state: State::new(q, v),
        dt: 1e-3,
        controller: None,
    })
}

/// Cart (1 kg) on a rail along x, pole (0.1 kg, 1 m) hinged about y, starting 0.1 rad from upright.
pub fn cartpole() -> Result<Scene, ModelError> {
    let mut b = ModelBuilder::new("cartpole");
    let cart = b.add_body(
        "cart",
        WORLD,
        JointType::Prismatic(Vec3::x()),
        SE3::identity(),
        Inertia::cuboid(1.0, Vec3::new(0.3, 0.2, 0.1)),
    )?;
    let mut pole = Inertia::cylinder(0.1, 0.02, 1.0);
    pole.com = Vec3::new(0.0, 0.0, 0.5);
    b.add_body(
        "pole",
        cart,
        JointType::Revolute(Vec3::y()),
        SE3::identity(),
        pole,
    )?;
    let model = Arc::new(b.build()?);
    let mut q = model.neutral_configuration();
    q[1] = 0.1;
    let v = DVector::zeros(model.nv);
    Ok(Scene {
        name: "cartpole".into(),
        model,
        state: State::new(q, v),
        dt: 1e-3,
        controller: None,
    })
}

/// Leg geometry of [`quadruped`] (Solo-12's proportions).
pub mod solo {
    /// Hip (HAA) positions in the base frame: (±x, ±y).
    pub const HIP_X: f64 = 0.1946;
    pub const HIP_Y: f64 = 0.0875;
    /// Lateral offset of the upper leg from the HAA axis.
    pub const SHOULDER_Y: f64 = 0.014;
    pub const UPPER_LEG: f64 = 0.16;
    pub const LOWER_LEG: f64 = 0.16;
    pub const FOOT_RADIUS: f64 = 0.0175;
    pub const BASE_MASS: f64 = 1.25;
    pub const SHOULDER_MASS: f64 = 0.14;
    pub const UPPER_MASS: f64 = 0.148;
    pub const LOWER_MASS: f64 = 0.0376;
    /// Standing posture: hip flexion and knee angles.
    pub const HFE_STAND: f64 = 0.8;
    pub const KFE_STAND: f64 = -1.6;
    pub const LEGS: [&str; 4] = ["FL", "FR", "HL", "HR"];
}

/// The 12-dof quadruped model (floating base, 4 legs × HAA/HFE/KFE, spherical
/// feet) with its standing configuration, base `drop` metres above standing height.
pub fn quadruped_model() -> Result<Model, ModelError> {
    use solo::*;
    let mut b = ModelBuilder::new("quadruped");
    ground(&mut b, Material::with_friction(0.8))?;
    let base_size = Vec3::new(0.42, 0.2, 0.05);
    let base = b.add_body(
        "base",
        WORLD,
        JointType::Free,
        SE3::identity(),
        Inertia::cuboid(BASE_MASS, base_size),
    )?;
    b.add_geometry(
        "base",
        base,
        SE3::identity(),
        Shape::Cuboid {
            half_extents: base_size / 2.0,
        },
        Material::with_friction(0.8),
    )?;
    for (li, leg) in LEGS.iter().enumerate() {
        let sx = if li < 2 { 1.0 } else { -1.0 };
        let sy = if li % 2 == 0 { 1.0 } else { -1.0 };
        let mut shoulder = Inertia::cylinder(SHOULDER_MASS, 0.02, 0.04);
        shoulder.rotational = Mat3::from_diagonal(&Vec3::new(2e-5, 2e-5, 2e-5));
        let haa = b.add_body(
            &format!("{leg}_shoulder"),
            base,
            JointType::Revolute(Vec3::x()),
            SE3::from_translation(Vec3::new(sx * HIP_X, sy * HIP_Y, 0.0)),
            shoulder,
        )?;
        let mut upper = Inertia::capsule(UPPER_MASS, 0.015, UPPER_LEG);
        upper.com = Vec3::new(0.0, 0.0, -UPPER_LEG / 2.0);
        let hfe = b.add_body(
            &format!("{leg}_upper_leg"),
            haa,
            JointType::Revolute(Vec3::y()),
            SE3::from_translation(Vec3::new(0.0, sy * SHOULDER_Y, 0.0)),
            upper,
        )?;
        let mut lower = Inertia::capsule(LOWER_MASS, 0.01, LOWER_LEG);
        lower.com = Vec3::new(0.0, 0.0, -LOWER_LEG / 2.0);
        let kfe = b.add_body(
            &format!("{leg}_lower_leg"),
            hfe,
            JointType::Revolute(Vec3::y()),
            SE3::from_translation(Vec3::new(0.0, 0.0, -UPPER_LEG)),
            lower,
        )?;
        b.add_geometry(
            &format!("{leg}_foot"),
            kfe,
            SE3::from_translation(Vec3::new(0.0, 0.0, -LOWER_LEG)),
            Shape::Ball {
                radius: FOOT_RADIUS,
            },
            Material::with_friction(0.8),
        )?;
    }
    b.build()
}

/// Standing configuration of [`quadruped_model`], base `height` above the ground.
pub fn quadruped_standing(model: &Model, height: f64) -> DVector<f64> {
    let mut q = model.neutral_configuration();
    free_q(&mut q, 0, Vec3::new(0.0, 0.0, height));
    for leg in 0..4 {
        q[7 + 3 * leg + 1] = solo::HFE_STAND;
        q[7 + 3 * leg + 2] = solo::KFE_STAND;
    }
    q
}

/// Base height at which the standing quadruped's feet touch the ground.
pub fn quadruped_standing_height() -> f64 {
    solo::UPPER_LEG * solo::HFE_STAND.cos()
        + solo::LOWER_LEG * (solo::HFE_STAND + solo::KFE_STAND).cos()
        + solo::FOOT_RADIUS
}

pub fn quadruped() -> Result<Scene, ModelError> {
    let model = Arc::new(quadruped_model()?);
    let q = quadruped_standing(&model, quadruped_standing_height() + 0.1);
    let controller = PdController::for_model(&model, q.clone(), 8.0, 0.3);
    let v = DVector::zeros(model.nv);
    Ok(Scene {
        name: "quadruped".into(),
        model,
        state: State::new(q, v),
        dt: 1e-3,
        controller: Some(controller),
    })
}

/// A 7-dof arm (axes z, y, z, y, z, y, z) on a fixed base, capsule links that
/// collide with the ground but not with each other, PD-held at a bent posture.
pub fn arm() -> Result<Scene, ModelError> {
    let mut b = ModelBuilder::new("arm");
    b.add_geometry(
        "ground",
        WORLD,
        SE3::identity(),
        Shape::HalfSpace { normal: Vec3::z() },
        Material {
            contype: 1,
            conaffinity: 2,
            ..Default::default()
        },
    )?;
    let lengths: [f64; 7] = [0.33, 0.0, 0.32, 0.0, 0.38, 0.0, 0.1];
    let masses = [4.0, 4.0, 3.0, 3.0, 2.0, 1.5, 0.5];
    let mut parent = WORLD;
    let mut offset = 0.1;
    for j in 0..7 {
        let axis = if j % 2 == 0 { Vec3::z() } else { Vec3::y() };
        let len = lengths[j].max(0.1);
        let mut inertia = Inertia::capsule(masses[j], 0.05, len);
        inertia.com = Vec3::new(0.0, 0.0, len / 2.0);
        let body = b.add_body(
            &format!("link{}", j + 1),
            parent,
            JointType::Revolute(axis),
            SE3::from_translation(Vec3::new(0.0, 0.0, offset)),
            inertia,
        )?;
        b.add_geometry(
            &format!("link{}", j + 1),
            body,
            SE3::from_translation(Vec3::new(0.0, 0.0, len / 2.0)),
            Shape::Capsule {
                half_length: len / 2.0,
                radius: 0.05,
            },
            Material {
                contype: 2,
                conaffinity: 1,
                ..Default::default()
            },
        )?;
        parent = body;
        offset = lengths[j];
    }
    let model = Arc::new(b.build()?);
    let mut q = model.neutral_configuration();
    for (k, a) in [0.0, 0.4, 0.0, -1.2, 0.0, 0.8, 0.0].iter().enumerate() {
        q[k] = *a;
    }
    let controller = PdController::with_natural_frequency(&model, q.clone(), 30.0, 1.0);
    let v = DVector::zeros(model.nv);
    Ok(Scene {
        name: "arm".into(),
        model,
        state: State::new(q, v),
        dt: 1e-3,
        controller: Some(controller),
    })
}

/// A random kinematic tree of `nbodies` bodies (world excluded) with every
/// joint type, random placements and inertias; deterministic in `seed`. The
/// first joint is free. For tests and benches (no geometry).
pub fn random_tree(nbodies: usize, seed: u64) -> Result<Model, ModelError> {
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let mut uniform = move || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut b = ModelBuilder::new("random-tree");
    for i in 0..nbodies {
        let parent = if i == 0 {
            WORLD
        } else {
            1 + (uniform() * i as f64) as usize
        };
        let mut axis = Vec3::new(uniform() - 0.5, uniform() - 0.5, uniform() - 0.5);
        axis /= axis.norm().max(1e-3);
        let joint = if i == 0 {
            JointType::Free
        } else {
            match (uniform() * 10.0) as usize {
                0 => JointType::Spherical,
                1 => JointType::Prismatic(axis),
                2 => JointType::Fixed,
                _ => JointType::Revolute(axis),
            }
        };
        let rot = crate::math::exp3(&Vec3::new(
            uniform() - 0.5,
            uniform() - 0.5,
            uniform() - 0.5,
        ));
        let placement = SE3::new(
            rot,
            Vec3::new(uniform() - 0.5, uniform() - 0.5, uniform() - 0.5) * 0.6,
        );
        let d = Vec3::new(0.5 + uniform(), 0.5 + uniform(), 0.5 + uniform());
        let principal = Vec3::new(d.y + d.z, d.x + d.z, d.x + d.y) * (0.02 + 0.05 * uniform());
        let r = crate::math::exp3(&Vec3::new(uniform(), uniform(), uniform()));
        let inertia = Inertia::new(
            0.2 + 2.0 * uniform(),
            Vec3::new(uniform() - 0.5, uniform() - 0.5, uniform() - 0.5) * 0.2,
            r * Mat3::from_diagonal(&principal) * r.transpose(),
        );
        b.add_body(&format!("body{i}"), parent, joint, placement, inertia)?;
    }
    b.build()
}

/// A scene from a robot file (see [`crate::load::load_model_file`]):
///
/// - a ground (the half-space `z ≤ 0`, friction 0.8) under a floating
///   robot, unless the file has one;
/// - the configuration where the file puts the robot ([`LoadedModel::q0`](crate::load::LoadedModel)),
///   a floating robot on a ground we added lifted so that its lowest point
///   is 5 mm above it;
/// - a joint PD holding that configuration (natural frequency 20 rad/s,
///   critically damped, on each joint's effective inertia), so a robot stands as loaded
///   rather than folding; `passive` leaves the joints free;
/// - the file's time step, or 1 ms.
pub fn from_loaded(loaded: &crate::load::LoadedModel, passive: bool) -> Result<Scene, ModelError> {
    let mut model = loaded.model.clone();
    let floating: Vec<usize> = (1..model.nbodies)
        .filter(|&i| model.joint_type[i] == JointType::Free && model.body_parent[i] == WORLD)
        .collect();
    // A robot welded to the world stands where its file mounts it (an arm on
    // its table): no ground of ours.
    let add_ground = !loaded.has_ground && !floating.is_empty();
    if add_ground {
        model.add_ground(0.0, Material::with_friction(0.8))?;
    }
    let mut q = loaded.q0.clone();
    if add_ground {
        let mut data = crate::dynamics::Data::new(&model);
        crate::dynamics::forward_kinematics(&model, &mut data, q.as_slice());
        let lowest = (0..model.geometries.len())
            .filter(|&g| model.body_last_dof[model.geometries[g].body] != crate::model::NO_DOF)
            .map(|g| crate::collision::geometry_aabb(&model, &data, g).0.z)
            .fold(f64::INFINITY, f64::min);
        if lowest.is_finite() {
            for &i in &floating {
                q[model.joint_idx_q[i] + 2] += 0.005 - lowest;
            }
        }
    }
    let controller = (!passive)
        .then(|| PdController::with_effective_natural_frequency(&model, q.clone(), 20.0, 1.0))
        .filter(|c| !c.dofs.is_empty());
    let nv = model.nv;
    Ok(Scene {
        name: model.name.clone(),
        model: Arc::new(model),
        state: State::new(q, DVector::zeros(nv)),
        dt: loaded.timestep.unwrap_or(1e-3),
        controller,
    })
}

// Contact problems met along a scene's trajectory: realistic problems for
// the solver tests, the benches and the seed study.

/// An external force on the first body (a free-floating root): world-frame
/// force through its frame origin, as a function of time.
pub type Push<'a> = &'a dyn Fn(f64) -> Vec3;

/// Adds the generalized force of a world-frame force `f` through the origin of
/// free body 1 (its joint velocity is the body-frame twist, linear first).
fn push_first_body(state: &State, f: Vec3, tau: &mut [f64]) {
    let q = &state.q;
    let rot = UnitQuaternion::from_quaternion(Quaternion::new(q[6], q[3], q[4], q[5]));
    let fb = rot.inverse() * f;
    for k in 0..3 {
        tau[k] += fb[k];
    }
}

/// Contact problems met along a trajectory (for solver-level comparisons),
/// with the simulator's warm starts in them.
pub fn harvest(
    scene: &Scene,
    params: SimParams,
    steps: usize,
    every: usize,
    push: Option<Push>,
) -> Result<Vec<ContactProblem>, SimError> {
    let mut out = Vec::new();
    drive(scene, params, steps, push, |sim, _, report, k| {
        if report.nc > 0 && (k + 1) % every.max(1) == 0 {
            out.push(sim.problem_with_delassus().clone());
        }
        Ok(())
    })?;
    Ok(out)
}

/// Steps `scene` `steps` times under its controller and the optional push
/// (refused unless body 1 is a free-floating root), calling `each` after
/// every step with the simulator, the new state, the step's report and the
/// step index.
pub fn drive(
    scene: &Scene,
    params: SimParams,
    steps: usize,
    push: Option<Push>,
    mut each: impl FnMut(&mut Simulator, &State, StepReport, usize) -> Result<(), SimError>,
) -> Result<(), SimError> {
    if push.is_some() && !matches!(scene.model.joint_type.get(1), Some(JointType::Free)) {
        return Err(SimError::InvalidParameter {
            name: "push",
            reason: format!("scene `{}`: body 1 is not a free-floating root", scene.name),
        });
    }
    let mut sim = Simulator::new(scene.model.clone(), params)?;
    let mut state = scene.state.clone();
    let mut tau = DVector::zeros(scene.model.nv);
    for k in 0..steps {
        scene.control(&state, tau.as_mut_slice());
        if let Some(f) = push {
            push_first_body(&state, f(state.t), tau.as_mut_slice());
        }
        let report = sim.step(&mut state, tau.as_slice())?;
        each(&mut sim, &state, report, k)?;
    }
    Ok(())
}

/// The stacked cubes' contact problem for `top / bottom = ratio` (a 1e-3 kg
/// bottom cube, as in the study's 1e3 kg on 1e-3 kg at ratio 1e6), taken
/// after 20 steps of NCP-ADMM so that both contact sets are loaded; cold.
pub fn stacked_cubes_problem(ratio: f64) -> Result<ContactProblem, SimError> {
    let bottom = 1e-3;
    let scene =
        cube_stack_masses(bottom, bottom * ratio).map_err(|e| SimError::InvalidParameter {
            name: "ratio",
            reason: e.to_string(),
        })?;
    // The plain ADMM of the catalog (as the GPU kernels run it) builds the
    // fixture, whatever the CPU solver's polish does to the last digits.
    let p = SimParams {
        dt: scene.dt,
        solver: SolverKind::NcpAdmm,
        solver_settings: SolverSettings {
            tolerance: 1e-8,
            max_iterations: 10_000,
            polish: false,
            stall_guard: false,
            ..Default::default()
        },
        ..Default::default()
    };
    let mut problems = harvest(&scene, p, 20, 20, None)?;
    let mut problem = problems.pop().ok_or(SimError::InvalidParameter {
        name: "ratio",
        reason: "the stacked cubes made no contact".into(),
    })?;
    problem.warm_start.fill(0.0);
    Ok(problem)
}
