//! Loading robot files: the model layer reads URDF (`model::urdf`); MJCF
//! is read here (`mjcf`: like MuJoCo's compiler it needs the kinematics
//! and the mass matrix at `qpos0`, for `springdamper`, `connect`/`weld`
//! anchors and spatial tendons' rest lengths); then the passes that need
//! the layers above the model run (the collision layer's
//! [`exclude_initial_overlaps`] for URDF robots).
//! One entry point, [`load_model_file`], picks URDF (`.urdf`) or MJCF
//! (`.xml`, `.mjcf`) by extension and returns a [`LoadedModel`], which the
//! command line (`moreau inspect`, `moreau run FILE`) and the scenes use.

use crate::collision::exclude_initial_overlaps;
use crate::model::Model;
use crate::model::ModelFileError;
use crate::model::urdf::{UrdfModel, UrdfOptions, read_urdf};
use mjcf::{MjcfOptions, load_mjcf};
use std::path::{Path, PathBuf};

pub mod mjcf;
mod summary;

/// Reads URDF text (`file` names it in errors) and, unless
/// `options.keep_initial_overlaps`, excludes the collisions of the bodies
/// that overlap in the neutral configuration, each reported in the warnings.
pub fn parse_urdf(
    text: &str,
    file: &str,
    options: &UrdfOptions,
) -> Result<UrdfModel, ModelFileError> {
    let mut r = read_urdf(text, file, options)?;
    if !options.keep_initial_overlaps {
        let q = r.model.neutral_configuration();
        let pairs =
            exclude_initial_overlaps(&mut r.model, q.as_slice()).map_err(|e| ModelFileError {
                file: file.into(),
                element: "<robot>".into(),
                reason: e.to_string(),
            })?;
        for (a, c) in pairs {
            r.warnings.push(format!(
                "links of bodies `{}` and `{}` intersect in the neutral configuration: their collisions are excluded",
                r.model.body_name[a], r.model.body_name[c]
            ));
        }
    }
    Ok(r)
}

/// [`parse_urdf`] on a file.
pub fn load_urdf(
    path: impl AsRef<Path>,
    options: &UrdfOptions,
) -> Result<UrdfModel, ModelFileError> {
    let path = path.as_ref();
    let text = crate::model::xml::read_file(path)?;
    parse_urdf(&text, &path.display().to_string(), options)
}

/// How to load a robot file.
#[derive(Clone, Debug, Default)]
pub struct LoadOptions {
    /// URDF only: attach the root link by a free joint. `None`: float unless
    /// the root link is `world` (a robot welded to the world by its file).
    pub floating_base: Option<bool>,
    /// Directories searched for `package://` meshes (URDF) and mesh files.
    pub package_dirs: Vec<PathBuf>,
    /// MJCF only: [`mjcf::MjcfOptions::sliding_friction_only`].
    pub sliding_friction_only: bool,
}

/// The file formats read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModelFormat {
    Urdf,
    Mjcf,
}

/// A robot loaded from a file.
#[derive(Clone, Debug)]
pub struct LoadedModel {
    pub format: ModelFormat,
    pub model: Model,
    /// (nq) where the file puts the robot: MJCF's `qpos0` (joints' `ref`
    /// included), the neutral configuration for URDF.
    pub q0: nalgebra::DVector<f64>,
    /// The file's time step: MJCF's `<option timestep>` (MuJoCo's 2 ms when
    /// unset); `None` for URDF, which has none.
    pub timestep: Option<f64>,
    /// MJCF: the file's number of bodies, the world included (MuJoCo's
    /// `nbody`), which differs from `model.nbodies` when bodies are welded
    /// together or carry several joints.
    pub mjcf_bodies: Option<usize>,
    /// Whether the file has its own ground (MJCF's planes on the world).
    pub has_ground: bool,
    /// What was read but not loaded, or changed, each naming its element.
    pub warnings: Vec<String>,
}

/// Loads a robot file, the format chosen by extension.
pub fn load_model_file(
    path: impl AsRef<Path>,
    options: &LoadOptions,
) -> Result<LoadedModel, ModelFileError> {
    let path = path.as_ref();
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .unwrap_or_default();
    match ext.as_str() {
        "urdf" => {
            let text = crate::model::xml::read_file(path)?;
            let floating_base = match options.floating_base {
                Some(f) => f,
                None => !urdf_root_is_world(&text),
            };
            let r = parse_urdf(
                &text,
                &path.display().to_string(),
                &UrdfOptions {
                    floating_base,
                    package_dirs: options.package_dirs.clone(),
                    ..Default::default()
                },
            )?;
            Ok(LoadedModel {
                format: ModelFormat::Urdf,
                mjcf_bodies: None,
                q0: r.model.neutral_configuration(),
                has_ground: false,
                timestep: None,
                warnings: r.warnings,
                model: r.model,
            })
        }
        "xml" | "mjcf" => {
            if options.floating_base.is_some() {
                return Err(ModelFileError {
                    file: path.display().to_string(),
                    element: "options".into(),
                    reason: "an MJCF file says itself which bodies float (<freejoint>): the floating-base option is for URDF".into(),
                });
            }
            let r = load_mjcf(
                path,
                &MjcfOptions {
                    package_dirs: options.package_dirs.clone(),
                    sliding_friction_only: options.sliding_friction_only,
                },
            )?;
            let has_ground = r
                .model
                .geometries
                .iter()
                .any(|g| g.body == crate::model::WORLD && g.shape.name() == "half-space");
            Ok(LoadedModel {
                format: ModelFormat::Mjcf,
                mjcf_bodies: Some(r.bodies),
                q0: r.q0,
                has_ground,
                timestep: Some(r.timestep),
                warnings: r.warnings,
                model: r.model,
            })
        }
        _ => Err(ModelFileError {
            file: path.display().to_string(),
            element: "file".into(),
            reason: format!(
                "unknown model format `.{ext}`: URDF files end in .urdf, MJCF files in .xml or .mjcf"
            ),
        }),
    }
}

/// Whether a URDF's root link is `world` (the robot is welded by its own file).
fn urdf_root_is_world(text: &str) -> bool {
    let Ok(doc) = roxmltree::Document::parse(text) else {
        // The loader reports the XML error.
        return false;
    };
    let children: std::collections::HashSet<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("child"))
        .filter_map(|n| n.attribute("link"))
        .collect();
    doc.root_element()
        .children()
        .filter(|n| n.has_tag_name("link"))
        .filter_map(|n| n.attribute("name"))
        .any(|name| name == "world" && !children.contains(name))
}
