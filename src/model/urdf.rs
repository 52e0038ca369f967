//! Loading URDF robot descriptions into a [`Model`].
//!
//! Supported: links with `<inertial>` (origin, mass, inertia tensor about the
//! centre of mass in the inertial frame), joints `revolute`, `continuous`,
//! `prismatic`, `fixed` and `floating` with origin, axis, `<limit>` and
//! `<dynamics>` (in the model: [`Model::joint_range`], enforced as joint
//! limits; `damping`, simulated; `friction` and `velocity`, recorded;
//! `effort`, which clamps the actuators' torques), one motor per moving
//! 1-dof joint ([`Model::actuators`], named after the joint: `ctrl` is the
//! joint torque or force), and `<collision>` geometry with
//! origins: `box`, `sphere`, `cylinder` (along z, as in our
//! [`Shape::Cylinder`]), `capsule` (the common extension: `radius`, and
//! `length` of the cylindrical part, along z) and `mesh` (STL or OBJ, with
//! `scale`; `package://`, `file://` and relative names resolved as in
//! [`super::mesh::resolve_mesh_path`]), each mesh replaced by its convex
//! hull, computed once per file (see [`super::mesh`] for why a hull).
//! `planar` joints are an error. `<visual>`s become [`Model::visuals`]
//! (what the renderer draws): the same shapes, with their material's
//! `<color>` (inline or the robot's material of that name; textures are not
//! read); a link whose visual mesh cannot be read (a COLLADA `.dae`, a
//! missing file) is drawn as its collision geometry, with a warning.
//!
//! Collision filtering: bodies joined by a joint never collide (the model's
//! parent–child rule, which covers adjacent links, merged fixed links
//! included); [`UrdfOptions::ignore_pairs`] adds link pairs; and, unless
//! [`UrdfOptions::keep_initial_overlaps`] is set, the loader
//! ([`crate::load::parse_urdf`]) runs the collision layer's pass
//! [`crate::collision::exclude_initial_overlaps`] after reading, which
//! excludes body pairs whose geometries already intersect in the neutral
//! configuration (what MoveIt's setup assistant marks "Default" in an
//! SRDF), each reported in [`UrdfModel::warnings`]. Without that rule,
//! convex hulls of neighbouring links that overlap by construction would
//! push the robot apart at rest. [`read_urdf`] reads the file alone.
//!
//! Fixed joints are merged: the child link's inertia and collision
//! geometry join its parent's body (at the composed placement), as in
//! Pinocchio and MuJoCo. The root link is welded to the world (its
//! inertia then plays no role) or attached by a free joint
//! ([`UrdfOptions::floating_base`]). Every error names the file, the element
//! and the reason.

use super::mesh::{MeshCache, resolve_mesh_path};
pub use super::xml::ModelFileError;
use super::xml::{child, error_for, numbers, required, scalar};
use super::{Actuator, JointSpec, JointType, Material, Model, ModelBuilder, Shape, WORLD};
use crate::math::{Inertia, Mat3, SE3, Vec3};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// How to load a URDF file.
#[derive(Clone, Debug, Default)]
pub struct UrdfOptions {
    /// Attach the root link by a free joint (a legged robot) rather than
    /// welding it to the world (an arm).
    pub floating_base: bool,
    /// Friction of every collision geometry (URDF has none; default 0.8).
    pub friction: Option<f64>,
    /// Directories searched for `package://NAME/...` meshes, before
    /// `ROS_PACKAGE_PATH` and the model file's ancestors.
    pub package_dirs: Vec<PathBuf>,
    /// Pairs of link names whose geometries never collide.
    pub ignore_pairs: Vec<(String, String)>,
    /// Keep collisions between bodies that already intersect in the neutral
    /// configuration (by default such pairs are excluded).
    /// Keep collisions between bodies that overlap in the neutral
    /// configuration (read by the loader, [`crate::load::parse_urdf`]).
    pub keep_initial_overlaps: bool,
}

/// A loaded URDF robot.
#[derive(Clone, Debug)]
pub struct UrdfModel {
    pub model: Model,
    /// Number of distinct mesh files read (each hulled once, however many
    /// geometries use it).
    pub mesh_files: usize,
    /// What was read but not loaded, each naming its element.
    pub warnings: Vec<String>,
}

/// Where a parse reads meshes from.
struct MeshSource<'a> {
    model_dir: &'a Path,
    package_dirs: &'a [PathBuf],
    cache: MeshCache,
}

struct Link {
    inertia: Option<Inertia>,
    collisions: Vec<(String, SE3, Shape)>,
    /// `<visual>`s: placement, shape and a mesh's triangles (`Err`: a
    /// mesh that could not be read, the reason) and colour.
    visuals: Vec<(SE3, Result<Drawn, String>, [f64; 4])>,
}

/// The colour of a `<visual>` without a material colour.
const URDF_GREY: [f64; 4] = [0.7, 0.7, 0.7, 1.0];

struct Joint {
    name: String,
    kind: String,
    parent: String,
    child: String,
    origin: SE3,
    axis: Vec3,
    /// Name, range (`<limit lower upper>`), effort and velocity limits
    /// (`<limit effort velocity>`), damping and friction (`<dynamics>`).
    spec: JointSpec,
}

/// Parses URDF text; `file` names it in errors, and relative mesh names
/// are resolved against its directory.
pub fn read_urdf(
    text: &str,
    file: &str,
    options: &UrdfOptions,
) -> Result<UrdfModel, ModelFileError> {
    let err = error_for(file);
    let doc = roxmltree::Document::parse(text).map_err(|e| err("XML", e.to_string()))?;
    let robot = doc.root_element();
    if robot.tag_name().name() != "robot" {
        return Err(err(
            robot.tag_name().name(),
            "the root element must be <robot>".into(),
        ));
    }
    let robot_name = robot.attribute("name").unwrap_or("robot");
    let mut warnings = Vec::new();
    let mut meshes = MeshSource {
        model_dir: Path::new(file).parent().unwrap_or(Path::new("")),
        package_dirs: &options.package_dirs,
        cache: MeshCache::new(),
    };
    let mut links: Vec<(String, Link)> = Vec::new();
    let mut joints: Vec<Joint> = Vec::new();
    // The robot's named materials, for the visuals that refer to them.
    let mut materials: HashMap<String, [f64; 4]> = HashMap::new();
    for m in robot.children().filter(|n| n.has_tag_name("material")) {
        if let (Some(name), Some(rgba)) = (m.attribute("name"), color(&m, "<material>", &err)?) {
            materials.insert(name.to_string(), rgba);
        }
    }
    for node in robot.children().filter(|n| n.is_element()) {
        match node.tag_name().name() {
            "link" => {
                let name = required(&node, "name", "<link>", &err)?;
                let element = format!("<link name=\"{name}\">");
                let link = parse_link(&node, &element, &name, (&mut meshes, &materials), &err)?;
                if links.iter().any(|(n, _)| *n == name) {
                    return Err(err(&element, "duplicate link name".into()));
                }
                links.push((name, link));
            }
            "joint" => {
                let name = required(&node, "name", "<joint>", &err)?;
                let element = format!("<joint name=\"{name}\">");
                joints.push(parse_joint(&node, &element, name, &err)?);
            }
            "material" | "gazebo" | "transmission" => {}
            other => warnings.push(format!("<{other}> ignored (not used by the simulator)")),
        }
    }
    // The tree: every link has at most one parent joint, exactly one link has none.
    let index: HashMap<&str, usize> = links
        .iter()
        .enumerate()
        .map(|(i, (n, _))| (n.as_str(), i))
        .collect();
    let mut parent_joint: Vec<Option<usize>> = vec![None; links.len()];
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); links.len()];
    for (j, joint) in joints.iter().enumerate() {
        let element = format!("<joint name=\"{}\">", joint.name);
        let p = *index.get(joint.parent.as_str()).ok_or_else(|| {
            err(
                &element,
                format!("parent link `{}` does not exist", joint.parent),
            )
        })?;
        let c = *index.get(joint.child.as_str()).ok_or_else(|| {
            err(
                &element,
                format!("child link `{}` does not exist", joint.child),
            )
        })?;
        if let Some(other) = parent_joint[c] {
            return Err(err(
                &element,
                format!(
                    "link `{}` is already the child of joint `{}`: a kinematic loop (URDF describes trees)",
                    joint.child, joints[other].name
                ),
            ));
        }
        parent_joint[c] = Some(j);
        children[p].push(j);
    }
    let roots: Vec<usize> = (0..links.len())
        .filter(|&i| parent_joint[i].is_none())
        .collect();
    let root = match roots.as_slice() {
        [r] => *r,
        [] if links.is_empty() => return Err(err("<robot>", "no link".into())),
        [] => {
            return Err(err(
                "<robot>",
                "every link has a parent joint: a kinematic loop".into(),
            ));
        }
        many => {
            let names: Vec<_> = many.iter().map(|&i| links[i].0.as_str()).collect();
            return Err(err(
                "<robot>",
                format!(
                    "several root links ({}): the links do not form one tree",
                    names.join(", ")
                ),
            ));
        }
    };

    // Pass 1, depth-first from the root: each link's body (an index into
    // `bodies`, None = the world) and its placement in that body's frame;
    // fixed joints merge into their parent's body.
    struct Body {
        name: String,
        parent: Option<usize>,
        joint: JointType,
        placement: SE3,
        inertia: Inertia,
        spec: JointSpec,
    }
    let mut bodies: Vec<Body> = Vec::new();
    let mut link_body: Vec<Option<(Option<usize>, SE3)>> = vec![None; links.len()];
    if options.floating_base && links[root].0 == "world" {
        return Err(err(
            "<link name=\"world\">",
            "the root link is `world`, which welds the robot to the world: it cannot also float (load it without a floating base)".into(),
        ));
    }
    let root_body = if options.floating_base {
        bodies.push(Body {
            name: links[root].0.clone(),
            parent: None,
            joint: JointType::Free,
            placement: SE3::identity(),
            inertia: Inertia::zero(),
            spec: JointSpec {
                name: "root".into(),
                ..Default::default()
            },
        });
        Some(0)
    } else {
        None
    };
    link_body[root] = Some((root_body, SE3::identity()));
    // Depth-first, children in document order (Pinocchio's joint order).
    let mut stack = vec![root];
    let mut order = Vec::new();
    while let Some(l) = stack.pop() {
        order.push(l);
        if let Some(j) = parent_joint[l] {
            let joint = &joints[j];
            let p = index[joint.parent.as_str()];
            let (body, body_from_parent) = link_body[p].expect("parents are visited first");
            let element = format!("<joint name=\"{}\">", joint.name);
            let placement = body_from_parent.mul(&joint.origin);
            let kind = match joint.kind.as_str() {
                "revolute" | "continuous" => Some(JointType::Revolute(joint.axis)),
                "prismatic" => Some(JointType::Prismatic(joint.axis)),
                "floating" => Some(JointType::Free),
                "fixed" => None,
                other => {
                    return Err(err(
                        &element,
                        format!(
                            "joint type `{other}` is not supported (revolute, continuous, prismatic, fixed, floating)"
                        ),
                    ));
                }
            };
            link_body[l] = Some(match kind {
                None => (body, placement),
                Some(jt) => {
                    bodies.push(Body {
                        name: joint.child.clone(),
                        parent: body,
                        joint: jt,
                        placement,
                        inertia: Inertia::zero(),
                        spec: joint.spec.clone(),
                    });
                    (Some(bodies.len() - 1), SE3::identity())
                }
            });
        }
        for &j in children[l].iter().rev() {
            stack.push(index[joints[j].child.as_str()]);
        }
    }
    if order.len() != links.len() {
        let lost: Vec<_> = (0..links.len())
            .filter(|&i| link_body[i].is_none())
            .map(|i| links[i].0.as_str())
            .collect();
        return Err(err(
            "<robot>",
            format!(
                "links not reachable from the root `{}`: {}",
                links[root].0,
                lost.join(", ")
            ),
        ));
    }
    // Inertias of merged links.
    for (l, (name, link)) in links.iter().enumerate() {
        let (body, body_from_link) = link_body[l].expect("every link is placed");
        match (body, &link.inertia) {
            (Some(b), Some(inertia)) => {
                bodies[b].inertia = bodies[b].inertia.add(&inertia.transformed(&body_from_link));
            }
            (None, Some(_)) if l != root => warnings.push(format!(
                "<link name=\"{name}\">: inertia ignored (welded to the fixed base)"
            )),
            _ => {}
        }
    }

    // Pass 2: the builder.
    let mut b = ModelBuilder::new(robot_name);
    let model_err = |e: crate::ModelError| err("<robot>", e.to_string());
    let mut body_id = vec![0usize; bodies.len()];
    for (k, body) in bodies.iter().enumerate() {
        if !(body.inertia.mass > 0.0) {
            return Err(err(
                &format!("<link name=\"{}\">", body.name),
                "no mass: a link moved by a joint needs an <inertial> with positive mass (or its fixed children's)".into(),
            ));
        }
        let parent = body.parent.map(|p| body_id[p]).unwrap_or(WORLD);
        body_id[k] = b
            .add_body(&body.name, parent, body.joint, body.placement, body.inertia)
            .map_err(model_err)?;
        b.set_joint_spec(body_id[k], body.spec.clone())
            .map_err(|e| {
                err(
                    &format!("<joint name=\"{}\">", body.spec.name),
                    e.to_string(),
                )
            })?;
        // Every moving 1-dof joint is driven by a motor (`ctrl` = its torque
        // or force), clamped to the joint's `<limit effort>` by the
        // simulator (URDF's `<transmission>` elements are not read).
        if body.joint.nv() == 1 {
            let name = if body.spec.name.is_empty() {
                body.name.clone()
            } else {
                body.spec.name.clone()
            };
            b.add_actuator(Actuator::motor(name, body_id[k], 1.0))
                .map_err(model_err)?;
        }
    }
    let material = Material::with_friction(options.friction.unwrap_or(0.8));
    for (l, (_, link)) in links.iter().enumerate() {
        let (body, body_from_link) = link_body[l].expect("every link is placed");
        let body = body.map(|k| body_id[k]).unwrap_or(WORLD);
        for (name, origin, shape) in &link.collisions {
            b.add_geometry(
                name,
                body,
                body_from_link.mul(origin),
                shape.clone(),
                material,
            )
            .map_err(model_err)?;
        }
    }
    // Links joined by a joint do not collide: the model's parent-child rule.
    let link_body_id = |name: &str| -> Result<usize, ModelFileError> {
        let l = *index.get(name).ok_or_else(|| {
            err(
                "ignore_pairs",
                format!("link `{name}` does not exist in the model"),
            )
        })?;
        Ok(link_body[l]
            .expect("every link is placed")
            .0
            .map_or(WORLD, |k| body_id[k]))
    };
    for (a, c) in &options.ignore_pairs {
        b.exclude_collision(link_body_id(a)?, link_body_id(c)?)
            .map_err(model_err)?;
    }
    let mut model = b.build().map_err(model_err)?;
    // What the links look like: their `<visual>`s; a link whose visual
    // mesh cannot be read shows its collision geometry instead.
    let mut unread_links = Vec::new();
    if links.iter().any(|(_, link)| !link.visuals.is_empty()) {
        for (l, (name, link)) in links.iter().enumerate() {
            let (body, body_from_link) = link_body[l].expect("every link is placed");
            let body = body.map(|k| body_id[k]).unwrap_or(WORLD);
            let unread: Vec<&String> = link
                .visuals
                .iter()
                .filter_map(|v| v.1.as_ref().err())
                .collect();
            if !unread.is_empty() {
                let reasons: Vec<&str> = unread.iter().map(|s| s.as_str()).collect();
                unread_links.push(format!("`{name}` ({})", reasons.join("; ")));
                for (_, origin, shape) in &link.collisions {
                    model.visuals.push(super::Visual {
                        body,
                        body_from_geom: body_from_link.mul(origin),
                        shape: shape.clone(),
                        rgba: URDF_GREY,
                        mesh: None,
                    });
                }
                continue;
            }
            for (origin, drawn, rgba) in &link.visuals {
                let (shape, mesh) = drawn.clone().expect("read");
                model.visuals.push(super::Visual {
                    body,
                    body_from_geom: body_from_link.mul(origin),
                    shape,
                    rgba: *rgba,
                    mesh,
                });
            }
        }
    }
    if !unread_links.is_empty() {
        warnings.push(format!(
            "the visual meshes of {} link(s) could not be read: drawn as their collision geometry: {}",
            unread_links.len(),
            unread_links.join(", ")
        ));
    }
    Ok(UrdfModel {
        model,
        mesh_files: meshes.cache.hull_count(),
        warnings,
    })
}

/// `<origin xyz rpy>` of `node` (identity when absent). URDF's rpy is
/// fixed-axis roll (x), pitch (y), yaw (z): `R = Rz(yaw) Ry(pitch) Rx(roll)`.
fn origin(
    node: &roxmltree::Node,
    element: &str,
    err: &impl Fn(&str, String) -> ModelFileError,
) -> Result<SE3, ModelFileError> {
    let Some(o) = child(node, "origin") else {
        return Ok(SE3::identity());
    };
    let xyz = match o.attribute("xyz") {
        Some(s) => numbers::<3>(s, "origin xyz", element, err)?,
        None => [0.0; 3],
    };
    let rpy = match o.attribute("rpy") {
        Some(s) => numbers::<3>(s, "origin rpy", element, err)?,
        None => [0.0; 3],
    };
    let r = nalgebra::Rotation3::from_euler_angles(rpy[0], rpy[1], rpy[2]);
    Ok(SE3::new(*r.matrix(), Vec3::new(xyz[0], xyz[1], xyz[2])))
}

fn parse_link(
    node: &roxmltree::Node,
    element: &str,
    name: &str,
    (meshes, materials): (&mut MeshSource, &HashMap<String, [f64; 4]>),
    err: &impl Fn(&str, String) -> ModelFileError,
) -> Result<Link, ModelFileError> {
    let inertia = match child(node, "inertial") {
        None => None,
        Some(inertial) => {
            let at = origin(&inertial, element, err)?;
            let mass_node = child(&inertial, "mass")
                .ok_or_else(|| err(element, "<inertial> without <mass>".into()))?;
            let mass = scalar(&mass_node, "value", element, err)?;
            if mass < 0.0 {
                return Err(err(element, format!("mass must be positive, got {mass}")));
            }
            let i = child(&inertial, "inertia")
                .ok_or_else(|| err(element, "<inertial> without <inertia>".into()))?;
            let mut v = [0.0; 6];
            for (k, a) in ["ixx", "ixy", "ixz", "iyy", "iyz", "izz"]
                .iter()
                .enumerate()
            {
                v[k] = scalar(&i, a, element, err)?;
            }
            let local = Mat3::new(v[0], v[1], v[2], v[1], v[3], v[4], v[2], v[4], v[5]);
            // About the centre of mass, in the inertial frame → in the link frame.
            let rot = at.rotation * local * at.rotation.transpose();
            if mass == 0.0 {
                // A frame (sensor, end-effector marker): massless links are
                // common on fixed joints. A moving body left without mass
                // is refused when the bodies are built.
                if local.abs().max() > 0.0 {
                    return Err(err(
                        element,
                        "zero mass with a non-zero inertia tensor".into(),
                    ));
                }
                None
            } else {
                // Checked once merged into its body (a point mass on a fixed
                // joint is fine if the body has inertia), by the builder.
                Some(Inertia::new(mass, at.translation, rot))
            }
        }
    };
    let mut collisions = Vec::new();
    for (k, c) in node
        .children()
        .filter(|n| n.has_tag_name("collision"))
        .enumerate()
    {
        let at = origin(&c, element, err)?;
        let gname = c
            .attribute("name")
            .map(|c| format!("{name}/{c}"))
            .unwrap_or_else(|| format!("{name}/collision{k}"));
        let (shape, _) = geometry(
            &c,
            (&format!("<collision> {k}"), false),
            element,
            meshes,
            err,
        )?
        .map_err(|e| err(element, e))?;
        collisions.push((gname, at, shape));
    }
    let mut visuals = Vec::new();
    for (k, v) in node
        .children()
        .filter(|n| n.has_tag_name("visual"))
        .enumerate()
    {
        let at = origin(&v, element, err)?;
        let shape = geometry(&v, (&format!("<visual> {k}"), true), element, meshes, err)?;
        // The material's own colour, else the robot's material of its name.
        let rgba = match child(&v, "material") {
            Some(m) => match color(&m, element, err)? {
                Some(rgba) => rgba,
                None => m
                    .attribute("name")
                    .and_then(|n| materials.get(n))
                    .copied()
                    .unwrap_or(URDF_GREY),
            },
            None => URDF_GREY,
        };
        visuals.push((at, shape, rgba));
    }
    Ok(Link {
        inertia,
        collisions,
        visuals,
    })
}

/// A visual's shape and, for a mesh, the triangles it is drawn as.
type Drawn = (Shape, Option<std::sync::Arc<super::mesh::VisualMesh>>);

/// The `<geometry>` of a `<collision>` or `<visual>` (`what`, for errors;
/// `draw`: a visual, whose mesh keeps its triangles): `Ok(Err(reason))`
/// when it is a mesh that cannot be read (not found, an unsupported
/// format), so that a visual can fall back.
fn geometry(
    node: &roxmltree::Node,
    (what, draw): (&str, bool),
    element: &str,
    meshes: &mut MeshSource,
    err: &impl Fn(&str, String) -> ModelFileError,
) -> Result<Result<Drawn, String>, ModelFileError> {
    let geometry = child(node, "geometry")
        .and_then(|g| g.children().find(|n| n.is_element()))
        .ok_or_else(|| err(element, format!("{what} without <geometry>")))?;
    let shape = match geometry.tag_name().name() {
        "box" => {
            let s = numbers::<3>(
                &required(&geometry, "size", element, err)?,
                "box size",
                element,
                err,
            )?;
            Shape::Cuboid {
                half_extents: Vec3::new(s[0], s[1], s[2]) / 2.0,
            }
        }
        "sphere" => Shape::Ball {
            radius: scalar(&geometry, "radius", element, err)?,
        },
        "cylinder" => Shape::Cylinder {
            radius: scalar(&geometry, "radius", element, err)?,
            half_length: scalar(&geometry, "length", element, err)? / 2.0,
        },
        "capsule" => Shape::Capsule {
            radius: scalar(&geometry, "radius", element, err)?,
            half_length: scalar(&geometry, "length", element, err)? / 2.0,
        },
        "mesh" => {
            let uri = required(&geometry, "filename", element, err)?;
            let scale = match geometry.attribute("scale") {
                Some(s) => {
                    let v = numbers::<3>(s, "mesh scale", element, err)?;
                    Vec3::new(v[0], v[1], v[2])
                }
                None => Vec3::repeat(1.0),
            };
            let drawn =
                resolve_mesh_path(&uri, meshes.model_dir, meshes.package_dirs).and_then(|path| {
                    let hull = meshes.cache.convex_hull(&path, scale)?;
                    let triangles = if draw {
                        let m = meshes.cache.mesh(&path)?;
                        super::mesh::VisualMesh::new(&m.vertices, &m.triangles, scale)
                            .map(std::sync::Arc::new)
                    } else {
                        None
                    };
                    Ok((hull, triangles))
                });
            return Ok(drawn);
        }
        other => {
            return Err(err(element, format!("{what}: unknown geometry <{other}>")));
        }
    };
    Ok(Ok((shape, None)))
}

/// The `<color rgba>` of a `<material>`, if it has one.
fn color(
    material: &roxmltree::Node,
    element: &str,
    err: &impl Fn(&str, String) -> ModelFileError,
) -> Result<Option<[f64; 4]>, ModelFileError> {
    match child(material, "color").and_then(|c| c.attribute("rgba")) {
        Some(text) => {
            let rgba = numbers::<4>(text, "material color rgba", element, err)?;
            Ok(Some(rgba.map(|c| c.clamp(0.0, 1.0))))
        }
        None => Ok(None),
    }
}

fn parse_joint(
    node: &roxmltree::Node,
    element: &str,
    name: String,
    err: &impl Fn(&str, String) -> ModelFileError,
) -> Result<Joint, ModelFileError> {
    let kind = required(node, "type", element, err)?;
    let link = |tag: &str| -> Result<String, ModelFileError> {
        let n = child(node, tag).ok_or_else(|| err(element, format!("missing <{tag}>")))?;
        required(&n, "link", element, err)
    };
    let axis = match child(node, "axis").and_then(|a| a.attribute("xyz")) {
        Some(s) => {
            let a = numbers::<3>(s, "axis xyz", element, err)?;
            Vec3::new(a[0], a[1], a[2])
        }
        None => Vec3::x(),
    };
    if matches!(kind.as_str(), "revolute" | "continuous" | "prismatic") && axis.norm() < 1e-12 {
        return Err(err(element, "zero joint axis".into()));
    }
    let number = |n: &roxmltree::Node, attr: &str| -> Result<Option<f64>, ModelFileError> {
        n.attribute(attr)
            .map(|s| numbers::<1>(s, attr, element, err).map(|v| v[0]))
            .transpose()
    };
    let mut spec = JointSpec {
        name: name.clone(),
        ..Default::default()
    };
    match child(node, "limit") {
        Some(l) => {
            let (lo, hi) = (
                number(&l, "lower")?.unwrap_or(0.0),
                number(&l, "upper")?.unwrap_or(0.0),
            );
            if lo > hi {
                return Err(err(element, format!("limit lower {lo} > upper {hi}")));
            }
            // A continuous joint's <limit> carries only effort and velocity.
            if kind != "continuous" {
                spec.range = Some((lo, hi));
            }
            // URDF writes 0 for "no limit" in effort and velocity.
            let positive = |x: Option<f64>| x.filter(|&v| v > 0.0).unwrap_or(f64::INFINITY);
            spec.effort_limit = positive(number(&l, "effort")?);
            spec.velocity_limit = positive(number(&l, "velocity")?);
        }
        None if matches!(kind.as_str(), "revolute" | "prismatic") => {
            return Err(err(element, format!("a {kind} joint needs a <limit>")));
        }
        None => {}
    }
    if let Some(d) = child(node, "dynamics") {
        spec.damping = number(&d, "damping")?.unwrap_or(0.0);
        spec.urdf_friction = number(&d, "friction")?.unwrap_or(0.0);
    }
    Ok(Joint {
        name,
        origin: origin(node, element, err)?,
        parent: link("parent")?,
        child: link("child")?,
        kind,
        axis,
        spec,
    })
}
