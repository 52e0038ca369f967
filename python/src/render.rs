//! Images of worlds for `Simulator.render` and `BatchSim.render`: the
//! library's offscreen renderer, kept per object and image size.

use moreau::Model as CoreModel;
use moreau::math::Vec3;
use moreau::render::{Camera, Renderer};
use numpy::IntoPyArray;
use numpy::ndarray::{Array3, Array4, Axis};
use pyo3::prelude::*;
use std::sync::Arc;

use crate::value_error;

/// The camera options of a render call (each world's target its centre of
/// mass unless given; the distance from the bodies' spread unless given).
#[derive(Clone, Copy)]
pub(crate) struct View {
    pub azimuth: Option<f64>,
    pub elevation: Option<f64>,
    pub distance: Option<f64>,
    pub target: Option<[f64; 3]>,
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
        view: View,
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
        let mut cameras = Vec::with_capacity(qs.len());
        for q in qs {
            let fallback = renderer.default_camera(q).map_err(value_error)?;
            let target = view.target.map_or(fallback.target, Vec3::from);
            let distance = view
                .distance
                .unwrap_or((fallback.eye - fallback.target).norm());
            cameras.push(Camera::orbit(
                target,
                distance,
                view.azimuth.unwrap_or(Renderer::AZIMUTH),
                view.elevation.unwrap_or(Renderer::ELEVATION),
            ));
        }
        let images = renderer.render_many(qs, &cameras).map_err(value_error)?;
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
