//! Images of worlds for `Simulator.render` and `BatchSim.render`: the
//! library's offscreen renderer, kept per object and image size.

use moreau::Model as CoreModel;
use moreau::math::Vec3;
use moreau::render::{Overlay, Renderer, Target, View};
use numpy::IntoPyArray;
use numpy::ndarray::{Array3, Array4, Axis};
use pyo3::prelude::*;
use std::sync::Arc;

use crate::value_error;

/// The camera options of a render call, as Python passes them.
#[derive(Clone, Default)]
pub(crate) struct ViewArgs {
    /// A model camera: its name, or its index (-1: the free camera).
    pub camera: Option<CameraId>,
    /// A body or frame the free camera follows.
    pub track: Option<String>,
    pub azimuth: Option<f64>,
    pub elevation: Option<f64>,
    pub distance: Option<f64>,
    pub target: Option<[f64; 3]>,
}

/// A camera by name or index.
#[derive(Clone, FromPyObject)]
pub(crate) enum CameraId {
    Index(i64),
    Name(String),
}

impl ViewArgs {
    /// The library's view: a model camera, or the free camera looking at
    /// `target`, the tracked body or frame, or the centre of mass.
    fn resolve(&self, model: &CoreModel) -> PyResult<View> {
        let free = self.track.is_some()
            || self.target.is_some()
            || self.azimuth.is_some()
            || self.elevation.is_some()
            || self.distance.is_some();
        let names = || {
            let names: Vec<&str> = model.cameras.iter().map(|c| c.name.as_str()).collect();
            format!("the model's cameras: {names:?}")
        };
        let k =
            match &self.camera {
                None | Some(CameraId::Index(-1)) => None,
                Some(CameraId::Index(k)) => match usize::try_from(*k) {
                    Ok(k) if k < model.cameras.len() => Some(k),
                    _ => {
                        return Err(value_error(format!(
                            "camera {k}: not -1 (the free camera) or one of {}",
                            names()
                        )));
                    }
                },
                Some(CameraId::Name(name)) => Some(model.camera_index(name).ok_or_else(|| {
                    value_error(format!("camera `{name}`: not one of {}", names()))
                })?),
            };
        if let Some(k) = k {
            if free {
                return Err(value_error(
                    "camera: a model camera takes none of track, target, azimuth, elevation, distance",
                ));
            }
            return Ok(View::Model(k));
        }
        let target = match (&self.track, self.target) {
            (Some(_), Some(_)) => {
                return Err(value_error("track and target: give one"));
            }
            (Some(name), None) => Target::named(model, name).ok_or_else(|| {
                value_error(format!(
                    "track `{name}`: not a body or frame of the model (Model.body_names, frame_names)"
                ))
            })?,
            (None, Some(p)) => Target::Point(Vec3::from(p)),
            (None, None) => Target::CenterOfMass,
        };
        Ok(View::Orbit {
            target,
            azimuth: self.azimuth.unwrap_or(Renderer::AZIMUTH),
            elevation: self.elevation.unwrap_or(Renderer::ELEVATION),
            distance: self.distance,
        })
    }
}

/// A renderer made on first use and remade for another size.
#[derive(Default)]
pub(crate) struct CachedRenderer {
    renderer: Option<Renderer>,
}

/// RGB images (n, height, width, 3) and depth images (n, height, width).
pub(crate) type Frames = (Array4<u8>, Array3<f32>);

impl CachedRenderer {
    /// Images of `model` at the configurations `qs`, seen as `view` says.
    pub(crate) fn render(
        &mut self,
        model: &Arc<CoreModel>,
        qs: &[&[f64]],
        (width, height): (u32, u32),
        view: &ViewArgs,
        overlays: &[Overlay],
    ) -> PyResult<Frames> {
        if self
            .renderer
            .as_ref()
            .is_none_or(|r| r.size() != (width, height))
        {
            self.renderer = None;
            self.renderer = Some(Renderer::new(model.clone(), width, height).map_err(value_error)?);
        }
        let renderer = self.renderer.as_mut().expect("made above");
        let view = view.resolve(model)?;
        let cameras = (qs.iter())
            .map(|q| renderer.camera(q, &view))
            .collect::<Result<Vec<_>, _>>()
            .map_err(value_error)?;
        let scale = Overlay::default_scale(model);
        // In chunks the adapter holds, and at most 64 images at a time (the
        // targets take 20 bytes per pixel per image on the device).
        let marks = overlays.iter().map(|o| o.forces.len()).max().unwrap_or(0);
        let chunk = renderer.max_images(marks).clamp(1, 64);
        let mut images = Vec::with_capacity(qs.len());
        for (k, (q, c)) in qs.chunks(chunk).zip(cameras.chunks(chunk)).enumerate() {
            let o = overlays.get(k * chunk..k * chunk + q.len()).unwrap_or(&[]);
            images.extend(
                renderer
                    .render_overlaid(q, c, o, scale)
                    .map_err(value_error)?,
            );
        }
        let (w, h, n) = (width as usize, height as usize, images.len());
        let mut rgb = Vec::with_capacity(n * w * h * 3);
        let mut depth = Vec::with_capacity(n * w * h);
        for image in images {
            rgb.extend(image.rgb);
            depth.extend(image.depth);
        }
        Ok((
            Array4::from_shape_vec((n, h, w, 3), rgb).expect("n images of h × w × 3"),
            Array3::from_shape_vec((n, h, w), depth).expect("n images of h × w"),
        ))
    }
}

/// The frames as numpy arrays: (n, h, w, 3) uint8, and (n, h, w) float32
/// depths when asked; `single`: the one image without its leading axis.
pub(crate) fn to_python<'py>(
    py: Python<'py>,
    (rgb, depth): Frames,
    with_depth: bool,
    single: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let (rgb, depth) = if single {
        (
            rgb.index_axis_move(Axis(0), 0).into_pyarray(py).into_any(),
            depth
                .index_axis_move(Axis(0), 0)
                .into_pyarray(py)
                .into_any(),
        )
    } else {
        (
            rgb.into_pyarray(py).into_any(),
            depth.into_pyarray(py).into_any(),
        )
    };
    if with_depth {
        Ok((rgb, depth).into_pyobject(py)?.into_any())
    } else {
        Ok(rgb)
    }
}
