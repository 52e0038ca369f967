//! `<hfield>` assets, read as MuJoCo's compiler reads them.

use super::*;

impl<'a, 'i, 'e> Parser<'a, 'i, 'e> {
    /// An `<hfield>` asset as MuJoCo compiles it: `size="rx ry z base"`
    /// spans `[−rx, rx] × [−ry, ry]`; the elevations (`elevation`, rows
    /// from +y down as in an image, or a `.bin` file of MuJoCo's format —
    /// `int32 nrow, int32 ncol`, then `nrow·ncol` float32 rows from −y
    /// up — or none: flat) are normalized to [0, 1] and scaled by `z`.
    /// PNG files are refused. The base below the surface (`base`) is not
    /// a collider.
    pub(super) fn hfield(&mut self, h: Node<'a, 'i>) -> Result<(), ModelFileError> {
        let el = element_name(&h, "");
        let Some(name) = h.attribute("name").or(h.attribute("file")) else {
            return Err(self.error(&el, "an hfield needs a `name` or a `file`".into()));
        };
        let name = match h.attribute("name") {
            Some(n) => n.to_string(),
            None => Path::new(name)
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default(),
        };
        let Some(size) = h.attribute("size") else {
            return Err(self.error(
                &el,
                "an hfield needs `size` (radius x, radius y, elevation z, base)".into(),
            ));
        };
        let size = self.fixed::<4>(size, "size", &el)?;
        if !size.iter().all(|s| *s > 0.0) {
            return Err(self.error(&el, format!("`size` must be positive, got {size:?}")));
        }
        let count = |attr: &str| -> Result<usize, ModelFileError> {
            match h.attribute(attr) {
                None => Ok(0),
                Some(s) => s.trim().parse::<usize>().map_err(|_| {
                    self.error(
                        &el,
                        format!("`{attr}` must be a non-negative integer, got `{s}`"),
                    )
                }),
            }
        };
        let (mut nrow, mut ncol) = (count("nrow")?, count("ncol")?);
        // Elevations in rows from −y up.
        let data: Vec<f64> = match (h.attribute("file"), h.attribute("elevation")) {
            (Some(_), Some(_)) => {
                return Err(self.error(&el, "give `file` or `elevation`, not both".into()));
            }
            (Some(f), None) => {
                if !f.to_ascii_lowercase().ends_with(".bin") {
                    return Err(self.error(
                        &el,
                        format!("height field file `{f}`: only MuJoCo's binary `.bin` format is read (not PNG); give `elevation` or a .bin file"),
                    ));
                }
                let path = resolve_mesh_path(f, &self.mesh_dir, &self.package_dirs)
                    .map_err(|e| self.error(&el, e))?;
                let bytes = std::fs::read(&path)
                    .map_err(|e| self.error(&el, format!("{}: {e}", path.display())))?;
                let int = |k: usize| {
                    bytes
                        .get(4 * k..4 * k + 4)
                        .map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                };
                let (Some(r), Some(c)) = (int(0), int(1)) else {
                    return Err(
                        self.error(&el, format!("{}: shorter than its header", path.display()))
                    );
                };
                let n = usize::try_from(r).ok().zip(usize::try_from(c).ok());
                match n {
                    Some((r, c)) if r >= 2 && c >= 2 && bytes.len() == 8 + 4 * r * c => {
                        nrow = r;
                        ncol = c;
                    }
                    _ => {
                        return Err(self.error(
                            &el,
                            format!(
                                "{}: header says {r} × {c} samples, the file holds {} bytes (need ≥ 2 × 2 and 8 + 4·nrow·ncol bytes)",
                                path.display(),
                                bytes.len()
                            ),
                        ));
                    }
                }
                bytes[8..]
                    .chunks_exact(4)
                    .map(|b| f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]])))
                    .collect()
            }
            (None, Some(e)) => {
                let e = self.list(e, "elevation", &el)?;
                if nrow < 2 || ncol < 2 || e.len() != nrow * ncol {
                    return Err(self.error(
                        &el,
                        format!(
                            "`elevation` needs nrow × ncol values with nrow, ncol ≥ 2: nrow {nrow}, ncol {ncol}, got {}",
                            e.len()
                        ),
                    ));
                }
                // Its first row is the +y edge.
                e.chunks_exact(ncol).rev().flatten().copied().collect()
            }
            (None, None) => {
                if nrow < 2 || ncol < 2 {
                    return Err(self.error(
                        &el,
                        format!("an hfield without data needs nrow, ncol ≥ 2, got {nrow} × {ncol}"),
                    ));
                }
                vec![0.0; nrow * ncol]
            }
        };
        if let Some(x) = data.iter().find(|x| !x.is_finite()) {
            return Err(self.error(&el, format!("elevations must be finite, got {x}")));
        }
        let (lo, hi) = data
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &x| {
                (l.min(x), h.max(x))
            });
        let scale = if hi > lo { size[2] / (hi - lo) } else { 0.0 };
        // moreau's heights are (x, y): column c is x, row r is y.
        let heights =
            nalgebra::DMatrix::from_fn(ncol, nrow, |c, r| (data[r * ncol + c] - lo) * scale);
        let field = crate::model::HeightField {
            heights,
            size: [2.0 * size[0], 2.0 * size[1]],
            cell_friction: None,
        };
        field.check().map_err(|e| self.error(&el, e))?;
        if self.hfields.insert(name.clone(), field).is_some() {
            return Err(self.error(&el, format!("duplicate hfield name `{name}`")));
        }
        Ok(())
    }
}
