//! A loaded model in words: sizes, the kinematic tree with its joints and
//! geometries, joint ranges, actuators, collision exclusions and the
//! loader's warnings (`moreau inspect` prints it).

use super::LoadedModel;
use crate::model::{JointType, Shape};
use std::fmt::{self, Write};

impl Shape {
    /// The shape in a few words, with its sizes.
    pub fn describe(&self) -> String {
        match self {
            Shape::Ball { radius } => format!("sphere r={radius}"),
            Shape::Cuboid { half_extents: h } => {
                format!("box half-extents {} {} {}", h.x, h.y, h.z)
            }
            Shape::Capsule {
                half_length,
                radius,
            } => format!("capsule r={radius} half-length={half_length}"),
            Shape::Cylinder {
                half_length,
                radius,
            } => format!("cylinder r={radius} half-length={half_length}"),
            Shape::Ellipsoid { radii: r } => format!("ellipsoid radii {} {} {}", r.x, r.y, r.z),
            Shape::ConvexMesh { points } => format!("convex hull of {} vertices", points.len()),
            Shape::HalfSpace { normal: n } => format!("plane, normal {} {} {}", n.x, n.y, n.z),
            Shape::HeightField(f) => {
                let (lo, hi) = f.height_range();
                format!(
                    "height field {} × {} samples over {} × {} m, heights {lo} to {hi}{}",
                    f.heights.nrows(),
                    f.heights.ncols(),
                    f.size[0],
                    f.size[1],
                    if f.cell_friction.is_some() {
                        ", friction per cell"
                    } else {
                        ""
                    }
                )
            }
        }
    }
}

impl LoadedModel {
    /// Writes the summary, one fact per line.
    pub fn write_summary(&self, s: &mut impl Write) -> fmt::Result {
        let m = &self.model;
        writeln!(
            s,
            "nq {}  nv {}  bodies {} (world excluded)  total mass {:.6} kg  geometries {}  gravity {:?}{}",
            m.nq,
            m.nv,
            m.nbodies - 1,
            m.total_mass(),
            m.geometries.len(),
            m.gravity.as_slice(),
            self.timestep
                .map(|dt| format!("  timestep {dt} s"))
                .unwrap_or_default()
        )?;
        if let Some(n) = self.mjcf_bodies {
            writeln!(
                s,
                "MJCF bodies {n} (MuJoCo's nbody, world included); the model chains several joints of one body through massless bodies and merges welded ones"
            )?;
        }
        writeln!(
            s,
            "contacts: friction {}; condim 1 frictionless, 4 with torsional friction, 6 with rolling friction too ({} pair(s) of geoms may collide with torsional or rolling friction)",
            match m.friction_mix {
                crate::model::FrictionMix::GeometricMean => "√(μa μb) of the pair",
                crate::model::FrictionMix::Maximum =>
                    "of the higher-priority geometry, the larger at equal priority (MuJoCo)",
            },
            m.spin_pairs().len()
        )?;
        writeln!(s, "tree:")?;
        // Depth-first from the world, children in model order.
        let mut stack = vec![(0usize, 0usize)];
        while let Some((i, depth)) = stack.pop() {
            let indent = "  ".repeat(depth + 1);
            if i == 0 {
                writeln!(s, "{indent}world")?;
            } else {
                let joint = m.joint_type[i];
                let axis = match joint {
                    JointType::Revolute(a) | JointType::Prismatic(a) => {
                        format!(" axis {:.3} {:.3} {:.3}", a.x, a.y, a.z)
                    }
                    _ => String::new(),
                };
                writeln!(
                    s,
                    "{indent}{}  [{} joint{axis}, q[{}..{}]]  mass {:.6} kg",
                    m.body_name[i],
                    joint.name(),
                    m.joint_idx_q[i],
                    m.joint_idx_q[i] + joint.nq(),
                    m.body_inertia[i].mass
                )?;
            }
            for g in m.geometries.iter().filter(|g| g.body == i) {
                let mat = &g.material;
                let mut extra = String::new();
                if mat.condim != 3 {
                    extra += &format!(", condim {}", mat.condim);
                }
                if mat.condim > 3 {
                    extra += &format!(", torsional {}", mat.torsional);
                }
                if mat.condim > 4 {
                    extra += &format!(", rolling {}", mat.rolling);
                }
                if mat.priority != 0 {
                    extra += &format!(", priority {}", mat.priority);
                }
                writeln!(
                    s,
                    "{indent}  - geometry {}: {} (friction {}{extra})",
                    g.name,
                    g.shape.describe(),
                    mat.friction
                )?;
            }
            for c in (i + 1..m.nbodies).rev().filter(|&c| m.body_parent[c] == i) {
                stack.push((c, depth + 1));
            }
        }
        if m.limited_joints().next().is_some() {
            writeln!(s, "joint limits:")?;
            for (_, name, (lo, hi)) in m.limited_joints() {
                writeln!(s, "  {name:24} [{lo}, {hi}]")?;
            }
        }
        if !m.actuators.is_empty() {
            writeln!(s, "motors (torque = gear * control):")?;
            for a in &m.actuators {
                let range = a
                    .ctrl_range
                    .map(|(lo, hi)| format!(", control in [{lo}, {hi}]"))
                    .unwrap_or_default();
                let on = match a.tendon {
                    Some(t) => format!("tendon {}", m.tendons[t].name),
                    None => format!("v[{}]", a.dof),
                };
                writeln!(s, "  {:24} {on}, gear {}{range}", a.name, a.gear)?;
            }
        }
        if !m.sensors.is_empty() {
            writeln!(
                s,
                "sensors (name, MuJoCo type, first value in the sensor data):"
            )?;
            for (sensor, k) in m.sensors.iter().zip(m.sensor_address()) {
                let kind = &sensor.kind;
                writeln!(s, "  {:24} {} at {k}", sensor.name, kind.mujoco_type())?;
            }
        }
        if !m.tendons.is_empty() {
            writeln!(
                s,
                "tendons (fixed: length = sum of coef * q; spatial: the path through its sites):"
            )?;
            for t in &m.tendons {
                let path = if t.is_spatial() {
                    let path: Vec<String> = t
                        .path
                        .iter()
                        .map(|w| match w {
                            crate::model::Wrap::Site(b, p) => {
                                format!("{} {:?}", m.body_name[*b], p.as_slice())
                            }
                            crate::model::Wrap::Geom(g) => format!(
                                "around {} `{}` (radius {}{})",
                                if g.cylinder { "cylinder" } else { "sphere" },
                                g.name,
                                g.radius,
                                if g.side.is_some() { ", side site" } else { "" }
                            ),
                            crate::model::Wrap::Pulley(d) => format!("| pulley 1/{d} |"),
                        })
                        .collect();
                    format!("spatial through {}", path.join(" -> "))
                } else {
                    let joints: Vec<String> = t
                        .joints
                        .iter()
                        .map(|&(j, c)| format!("{c} {}", m.joint_name[j]))
                        .collect();
                    joints.join(" + ")
                };
                let range = t
                    .range
                    .map(|(lo, hi)| format!(", range [{lo}, {hi}]"))
                    .unwrap_or_default();
                writeln!(s, "  {:24} {path}{range}", t.name)?;
            }
        }
        if !m.equalities.is_empty() || !m.body_equalities.is_empty() {
            writeln!(s, "equality constraints (bilateral rows):")?;
            for e in &m.equalities {
                writeln!(
                    s,
                    "  {:24} {:?} = P({:?}), P = {:?}",
                    e.name, e.first, e.second, e.polycoef
                )?;
            }
            // A side naming a mocap body is named by it.
            let side = |body: usize, mocap: Option<usize>| match mocap {
                Some(i) => format!("mocap body {}", m.mocap[i].name),
                None => m.body_name[body].clone(),
            };
            for e in &m.body_equalities {
                writeln!(
                    s,
                    "  {:24} {} of {} at {:?} to {} at {:?} ({} rows)",
                    e.name,
                    e.kind(),
                    side(e.body1, e.mocap[0]),
                    e.point1.as_slice(),
                    side(e.body2, e.mocap[1]),
                    e.point2.as_slice(),
                    e.rows()
                )?;
            }
        }
        if !m.mocap.is_empty() {
            writeln!(
                s,
                "mocap bodies (poses set per world): {}",
                m.mocap
                    .iter()
                    .map(|b| b.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )?;
        }
        let friction: Vec<String> = (0..m.nv)
            .filter(|&k| m.dof_frictionloss[k] > 0.0)
            .map(|k| format!("v[{k}] {}", m.dof_frictionloss[k]))
            .collect();
        if !friction.is_empty() {
            writeln!(
                s,
                "dry friction (frictionloss, box rows): {}",
                friction.join(", ")
            )?;
        }
        writeln!(
            s,
            "collision exclusions: {} body pairs (besides parent-child), {} pairs of the file's bodies",
            m.collision_exclusions.len(),
            m.frame_exclusions.len()
        )?;
        writeln!(s, "warnings: {}", self.warnings.len())?;
        for w in &self.warnings {
            writeln!(s, "  {w}")?;
        }
        Ok(())
    }
}
