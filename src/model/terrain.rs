//! Terrains: height fields with per-cell friction, generated rough terrain,
//! a text format to save and load them, and [`Model::with_terrain`] to put
//! one under any model in place of its flat ground.
//!
//! A height field is the surface `z = h(x, y)` over a rectangle of its
//! geometry's xy plane, centred on the geometry's origin, sampled on a
//! regular grid: `heights[(i, j)]` at `x_i = −size_x/2 + i·size_x/(nx−1)`,
//! `y_j = −size_y/2 + j·size_y/(ny−1)`. Each cell is split into two
//! triangles along its `(i+1, j)`–`(i, j+1)` diagonal, and the surface is
//! those triangles (parry's `HeightField`, whose grid is y-up: the
//! geometry maps it onto z). Outside the rectangle there is nothing.

use super::ray::{RayShape, RayTarget};
use super::{Material, Model, Shape, WORLD};
use crate::error::ModelError;
use crate::math::{SE3, Vec3};
use nalgebra::DMatrix;
use std::path::Path;

/// A height field (see the module doc). Attach it to the world
/// ([`super::ModelBuilder::add_geometry`] with body `WORLD`, or
/// [`Model::with_terrain`]).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct HeightField {
    /// (nx, ny) heights (m), nx, ny ≥ 2.
    pub heights: DMatrix<f64>,
    /// Extent along x and y (m).
    pub size: [f64; 2],
    /// (nx − 1, ny − 1) friction coefficients of the cells. Where given, a
    /// contact on cell `(i, j)` has friction `cell_friction[(i, j)]`
    /// itself, not a combination with the other geometry's material: the
    /// terrain says how slippery it is.
    pub cell_friction: Option<DMatrix<f64>>,
}

impl HeightField {
    /// A flat field of height 0 over `size`, one cell, no per-cell friction.
    pub fn flat(size: [f64; 2]) -> Self {
        HeightField {
            heights: DMatrix::zeros(2, 2),
            size,
            cell_friction: None,
        }
    }

    /// Why the field cannot be used, if it cannot.
    pub fn check(&self) -> Result<(), String> {
        let (nx, ny) = self.heights.shape();
        if nx < 2 || ny < 2 {
            return Err(format!(
                "height field needs at least 2 × 2 samples, got {nx} × {ny}"
            ));
        }
        if !self.size.iter().all(|s| s.is_finite() && *s > 0.0) {
            return Err(format!(
                "height field size must be positive, got {:?}",
                self.size
            ));
        }
        if let Some((k, h)) = self
            .heights
            .iter()
            .enumerate()
            .find(|(_, h)| !h.is_finite())
        {
            return Err(format!(
                "height field height ({}, {}) is not finite ({h})",
                k % nx,
                k / nx
            ));
        }
        if let Some(f) = &self.cell_friction {
            if f.shape() != (nx - 1, ny - 1) {
                return Err(format!(
                    "cell friction must be {} × {} (one per cell), got {} × {}",
                    nx - 1,
                    ny - 1,
                    f.nrows(),
                    f.ncols()
                ));
            }
            if let Some((k, mu)) = f
                .iter()
                .enumerate()
                .find(|(_, m)| !(m.is_finite() && **m >= 0.0))
            {
                return Err(format!(
                    "cell friction ({}, {}) must be finite and ≥ 0, got {mu}",
                    k % (nx - 1),
                    k / (nx - 1)
                ));
            }
        }
        Ok(())
    }

    /// Cells along x and y.
    pub fn cells(&self) -> (usize, usize) {
        (self.heights.nrows() - 1, self.heights.ncols() - 1)
    }

    /// Cell size along x and y (m).
    pub fn cell_size(&self) -> [f64; 2] {
        let (cx, cy) = self.cells();
        [self.size[0] / cx as f64, self.size[1] / cy as f64]
    }

    /// The cell `(i, j)` under `(x, y)` (geometry frame) and the point's
    /// coordinates in it, in `[0, 1]²`; points outside the rectangle are
    /// clamped onto its edge.
    fn locate(&self, x: f64, y: f64) -> (usize, usize, f64, f64) {
        let (cx, cy) = self.cells();
        let [sx, sy] = self.cell_size();
        let along = |p: f64, half: f64, cell: f64, n: usize| {
            let s = ((p + half) / cell).clamp(0.0, n as f64);
            let k = (s.floor() as usize).min(n - 1);
            (k, s - k as f64)
        };
        let (i, u) = along(x, self.size[0] / 2.0, sx, cx);
        let (j, w) = along(y, self.size[1] / 2.0, sy, cy);
        (i, j, u, w)
    }

    /// The cell `(i, j)` under `(x, y)` (geometry frame; clamped to the grid).
    pub fn cell_at(&self, x: f64, y: f64) -> (usize, usize) {
        let (i, j, _, _) = self.locate(x, y);
        (i, j)
    }

    /// The surface's height at `(x, y)` (geometry frame): on the cell's
    /// triangle, as the collision detection sees it; the edge's height
    /// outside the rectangle.
    pub fn height_at(&self, x: f64, y: f64) -> f64 {
        let (i, j, u, w) = self.locate(x, y);
        let h = &self.heights;
        if u + w <= 1.0 {
            h[(i, j)] + u * (h[(i + 1, j)] - h[(i, j)]) + w * (h[(i, j + 1)] - h[(i, j)])
        } else {
            let h11 = h[(i + 1, j + 1)];
            h11 + (1.0 - u) * (h[(i, j + 1)] - h11) + (1.0 - w) * (h[(i + 1, j)] - h11)
        }
    }

    /// The friction of cell `(i, j)`, if the field gives one.
    pub fn friction_at_cell(&self, i: usize, j: usize) -> Option<f64> {
        self.cell_friction.as_ref().map(|f| f[(i, j)])
    }

    /// The cell of parry's triangle `id` (its two triangles per cell are
    /// numbered `i + j (nx − 1)` and that plus the number of cells).
    pub(crate) fn cell_of_triangle(&self, id: u32) -> (usize, usize) {
        let (cx, cy) = self.cells();
        let cell = id as usize % (cx * cy);
        (cell % cx, cell / cx)
    }

    /// The extreme heights.
    pub fn height_range(&self) -> (f64, f64) {
        (self.heights.min(), self.heights.max())
    }
}

/// Rough terrain generated from a seed (see [`Terrain::rough`]).
#[derive(Clone, Debug, PartialEq)]
pub struct RoughTerrain {
    /// Extent along x and y (m).
    pub size: [f64; 2],
    /// Sample spacing (m).
    pub resolution: f64,
    /// Bumps' height: heights lie in `[0, bump_height]` (m).
    pub bump_height: f64,
    /// Distance between independent bump heights (m); the surface is a
    /// smooth (cosine) interpolation between them.
    pub bump_spacing: f64,
    /// Friction drawn uniformly in `[lo, hi]` per square region of side
    /// `friction_region` (m); `lo == hi` for a uniform friction.
    pub friction: (f64, f64),
    pub friction_region: f64,
    pub seed: u64,
}

impl Default for RoughTerrain {
    fn default() -> Self {
        RoughTerrain {
            size: [20.0, 20.0],
            resolution: 0.02,
            bump_height: 0.03,
            bump_spacing: 0.1,
            friction: (0.1, 1.5),
            friction_region: 0.5,
            seed: 0,
        }
    }
}

/// A terrain: a height field and where it sits (its origin in the world).
#[derive(Clone, Debug, PartialEq)]
pub struct Terrain {
    pub field: HeightField,
    pub world_from_field: SE3,
}

impl Terrain {
    /// Flat ground at height 0 over `size` (m) centred on the origin, with
    /// the uniform friction `mu`.
    pub fn flat(size: [f64; 2], mu: f64) -> Self {
        let mut field = HeightField::flat(size);
        field.cell_friction = Some(DMatrix::from_element(1, 1, mu));
        Terrain {
            field,
            world_from_field: SE3::identity(),
        }
    }

    /// Rough terrain centred on the origin: bump heights drawn uniformly in
    /// `[0, bump_height]` on a grid of spacing `bump_spacing`, interpolated
    /// smoothly (cosine weights) onto the samples, then shifted so that the
    /// lowest point is at height 0; friction drawn per region. The same
    /// settings give the same terrain.
    pub fn rough(settings: &RoughTerrain) -> Result<Self, ModelError> {
        let s = settings;
        let bad = |reason: String| ModelError::Invalid {
            what: "rough terrain".into(),
            reason,
        };
        let pos = |x: f64| x.is_finite() && x > 0.0;
        if !(pos(s.size[0]) && pos(s.size[1]) && pos(s.resolution) && pos(s.bump_spacing)) {
            return Err(bad(format!(
                "size, resolution and bump spacing must be positive, got {:?}, {}, {}",
                s.size, s.resolution, s.bump_spacing
            )));
        }
        if !(s.bump_height.is_finite() && s.bump_height >= 0.0) {
            return Err(bad(format!(
                "bump height must be ≥ 0, got {}",
                s.bump_height
            )));
        }
        let (lo, hi) = s.friction;
        if !(lo.is_finite() && hi.is_finite() && 0.0 <= lo && lo <= hi && pos(s.friction_region)) {
            return Err(bad(format!(
                "friction range must satisfy 0 ≤ lo ≤ hi and the region be positive, got {:?}, {}",
                s.friction, s.friction_region
            )));
        }
        let samples = |len: f64| (len / s.resolution).round() as usize + 1;
        let (nx, ny) = (samples(s.size[0]).max(2), samples(s.size[1]).max(2));
        const MAX_SAMPLES: usize = 1 << 24;
        if nx.saturating_mul(ny) > MAX_SAMPLES {
            return Err(bad(format!(
                "{nx} × {ny} samples is over the limit of {MAX_SAMPLES}: a coarser resolution or a smaller size"
            )));
        }
        let mut rng = crate::math::Rng::new(s.seed);
        // Bump heights on the coarse grid, one more knot than needed.
        let knots = |len: f64| (len / s.bump_spacing).ceil() as usize + 2;
        let (kx, ky) = (knots(s.size[0]), knots(s.size[1]));
        let bumps = DMatrix::from_fn(kx, ky, |_, _| s.bump_height * rng.uniform());
        let smooth = |t: f64| 0.5 - 0.5 * (std::f64::consts::PI * t).cos();
        let mut heights = DMatrix::from_fn(nx, ny, |i, j| {
            let x = i as f64 * s.size[0] / (nx - 1) as f64 / s.bump_spacing;
            let y = j as f64 * s.size[1] / (ny - 1) as f64 / s.bump_spacing;
            let (a, b) = (x.floor() as usize, y.floor() as usize);
            let (u, w) = (smooth(x - a as f64), smooth(y - b as f64));
            (1.0 - u) * (1.0 - w) * bumps[(a, b)]
                + u * (1.0 - w) * bumps[(a + 1, b)]
                + (1.0 - u) * w * bumps[(a, b + 1)]
                + u * w * bumps[(a + 1, b + 1)]
        });
        let low = heights.min();
        heights.add_scalar_mut(-low);
        let regions = |len: f64| (len / s.friction_region).ceil() as usize;
        let (rx, ry) = (regions(s.size[0]).max(1), regions(s.size[1]).max(1));
        let region_mu = DMatrix::from_fn(rx, ry, |_, _| rng.range(lo, hi.max(lo)));
        let (cx, cy) = (nx - 1, ny - 1);
        let cell_friction = DMatrix::from_fn(cx, cy, |i, j| {
            let x = (i as f64 + 0.5) * s.size[0] / cx as f64;
            let y = (j as f64 + 0.5) * s.size[1] / cy as f64;
            let a = ((x / s.friction_region) as usize).min(rx - 1);
            let b = ((y / s.friction_region) as usize).min(ry - 1);
            region_mu[(a, b)]
        });
        Ok(Terrain {
            field: HeightField {
                heights,
                size: s.size,
                cell_friction: Some(cell_friction),
            },
            world_from_field: SE3::identity(),
        })
    }

    /// The terrain's height under the world point `(x, y)` (for a terrain
    /// whose field is not tilted).
    pub fn height_at(&self, x: f64, y: f64) -> f64 {
        let local = self.world_from_field.act_inv_point(&Vec3::new(x, y, 0.0));
        let h = self.field.height_at(local.x, local.y);
        self.world_from_field
            .act_point(&Vec3::new(local.x, local.y, h))
            .z
    }

    /// The friction coefficient under the world point `(x, y)`, if the field
    /// gives one per cell.
    pub fn friction_at(&self, x: f64, y: f64) -> Option<f64> {
        let local = self.world_from_field.act_inv_point(&Vec3::new(x, y, 0.0));
        let (i, j) = self.field.cell_at(local.x, local.y);
        self.field.friction_at_cell(i, j)
    }

    /// The terrain as text: a header line `moreau-terrain nx ny size_x
    /// size_y`, then `nx` lines of `ny` heights (m), then, if the field has
    /// per-cell friction, a line `friction` and `nx − 1` lines of `ny − 1`
    /// coefficients. (The placement is not saved: a loaded terrain sits at
    /// the origin.)
    pub fn to_text(&self) -> String {
        let f = &self.field;
        let (nx, ny) = f.heights.shape();
        let mut out = format!("moreau-terrain {nx} {ny} {} {}\n", f.size[0], f.size[1]);
        let rows = |m: &DMatrix<f64>, out: &mut String| {
            for i in 0..m.nrows() {
                let row: Vec<String> = (0..m.ncols()).map(|j| format!("{}", m[(i, j)])).collect();
                out.push_str(&row.join(" "));
                out.push('\n');
            }
        };
        rows(&f.heights, &mut out);
        if let Some(mu) = &f.cell_friction {
            out.push_str("friction\n");
            rows(mu, &mut out);
        }
        out
    }

    /// Parses [`Self::to_text`]'s format; a malformed file is an error that
    /// says where.
    pub fn from_text(text: &str) -> Result<Self, ModelError> {
        let bad = |line: usize, reason: String| ModelError::Invalid {
            what: format!("terrain file, line {line}"),
            reason,
        };
        let mut lines = text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty());
        let (n0, header) = lines.next().ok_or_else(|| bad(1, "empty file".into()))?;
        let words: Vec<&str> = header.split_whitespace().collect();
        if words.len() != 5 || words[0] != "moreau-terrain" {
            return Err(bad(
                n0 + 1,
                "expected `moreau-terrain nx ny size_x size_y`".into(),
            ));
        }
        let int = |w: &str| {
            w.parse::<usize>()
                .map_err(|_| bad(n0 + 1, format!("`{w}` is not a sample count")))
        };
        let real = |line: usize, w: &str| {
            w.parse::<f64>()
                .map_err(|_| bad(line, format!("`{w}` is not a number")))
        };
        let (nx, ny) = (int(words[1])?, int(words[2])?);
        let size = [real(n0 + 1, words[3])?, real(n0 + 1, words[4])?];
        if nx < 2 || ny < 2 || nx.saturating_mul(ny) > 1 << 24 {
            return Err(bad(
                n0 + 1,
                format!("{nx} × {ny} samples: need 2 to 2^24 in all, at least 2 × 2"),
            ));
        }
        let matrix = |lines: &mut dyn Iterator<Item = (usize, &str)>,
                      rows: usize,
                      cols: usize|
         -> Result<DMatrix<f64>, ModelError> {
            let mut m = DMatrix::zeros(rows, cols);
            for i in 0..rows {
                let (n, line) = lines.next().ok_or_else(|| {
                    bad(n0 + 1, format!("the file ends before row {i} of {rows}"))
                })?;
                let values: Vec<&str> = line.split_whitespace().collect();
                if values.len() != cols {
                    return Err(bad(
                        n + 1,
                        format!("expected {cols} values, got {}", values.len()),
                    ));
                }
                for (j, w) in values.iter().enumerate() {
                    m[(i, j)] = real(n + 1, w)?;
                }
            }
            Ok(m)
        };
        let heights = matrix(&mut lines, nx, ny)?;
        let cell_friction = match lines.next() {
            None => None,
            Some((_, l)) if l.trim() == "friction" => Some(matrix(&mut lines, nx - 1, ny - 1)?),
            Some((n, l)) => {
                return Err(bad(
                    n + 1,
                    format!("expected `friction` or the end, got `{}`", l.trim()),
                ));
            }
        };
        let field = HeightField {
            heights,
            size,
            cell_friction,
        };
        field.check().map_err(|reason| bad(n0 + 1, reason))?;
        Ok(Terrain {
            field,
            world_from_field: SE3::identity(),
        })
    }

    /// Saves [`Self::to_text`] to `path`.
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        std::fs::write(path, self.to_text())
    }

    /// Loads a terrain file ([`Self::to_text`]'s format).
    pub fn load(path: &Path) -> Result<Self, ModelError> {
        let text = std::fs::read_to_string(path).map_err(|e| ModelError::Invalid {
            what: format!("terrain file {}", path.display()),
            reason: e.to_string(),
        })?;
        Self::from_text(&text)
    }
}

impl Model {
    /// This model on `terrain`: the world's upward half-spaces (the flat
    /// ground of the built-in scenes and of model files' planes) are
    /// replaced by the terrain's height field, which takes the first one's
    /// place and material (or is appended, with `material`'s friction of
    /// 1, if the model has no ground). The rest of the model is unchanged.
    pub fn with_terrain(&self, terrain: &Terrain) -> Result<Model, ModelError> {
        let shape = Shape::HeightField(terrain.field.clone());
        let (collider, field_from_collider) = super::builder::make_collider("terrain", &shape)?;
        let is_ground = |g: &super::Geometry| {
            g.body == WORLD
                && matches!(g.shape, Shape::HalfSpace { normal } if {
                    let n = g.body_from_geom.rotation * normal;
                    n.z > 0.999 * n.norm()
                })
        };
        let mut model = self.clone();
        let first = model.geometries.iter().position(is_ground);
        let mut geometry = super::Geometry {
            name: "terrain".into(),
            body: WORLD,
            body_from_geom: terrain.world_from_field,
            shape,
            material: Material::with_friction(1.0),
            frame: None,
            collider,
            body_from_collider: terrain.world_from_field.mul(&field_from_collider),
        };
        match first {
            Some(k) => {
                let old = &model.geometries[k];
                geometry.name = old.name.clone();
                geometry.material = old.material;
                geometry.frame = old.frame;
                model.geometries[k] = geometry;
                // Later grounds are removed; nothing refers to geometries by
                // index but the collision pairs, made at each step.
                let mut index = 0;
                model.geometries.retain(|g| {
                    index += 1;
                    index - 1 <= k || !is_ground(g)
                });
            }
            None => model.geometries.push(geometry),
        }
        // Drawn as it collides, in place of the upward planes' squares.
        if !model.visuals.is_empty() {
            model.visuals.retain(|v| {
                !(v.body == WORLD
                    && matches!(v.shape, Shape::HalfSpace { normal } if {
                        let n = v.body_from_geom.rotation * normal;
                        n.z > 0.999 * n.norm()
                    }))
            });
            model.visuals.push(super::Visual {
                body: WORLD,
                body_from_geom: terrain.world_from_field,
                shape: Shape::HeightField(terrain.field.clone()),
                rgba: super::Visual::GROUND_RGBA,
                mesh: None,
            });
        }
        // Rangefinders see the terrain in place of the upward planes.
        let rangefinders =
            (model.sensors.iter()).any(|s| matches!(s.kind, super::SensorKind::Rangefinder { .. }));
        if rangefinders {
            model.ray_targets.retain(|t| {
                !(t.body == WORLD
                    && matches!(t.shape, RayShape::Plane { .. })
                    && (t.body_from_geom.rotation * Vec3::z()).z > 0.999)
            });
            model.ray_targets.push(RayTarget::new(
                WORLD,
                None,
                terrain.world_from_field,
                RayShape::Solid(Shape::HeightField(terrain.field.clone())),
            ));
        }
        Ok(model)
    }
}
