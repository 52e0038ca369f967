//! Recording a trajectory: one [`TrajectoryRow`] per step (time, state,
//! energies, contacts, solver figures), written as CSV (one column per
//! coordinate) or JSON (with the run's settings), chosen by extension.

use super::{Simulator, State, StepReport};
use crate::error::SimError;
use std::io::Write;
use std::path::Path;

/// One recorded step.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct TrajectoryRow {
    pub t: f64,
    /// (nq) and (nv).
    pub q: Vec<f64>,
    pub v: Vec<f64>,
    pub kinetic: f64,
    pub potential: f64,
    /// Contacts of the step that led here (0 for the initial state).
    pub nc: usize,
    /// The solve's final `ε_abs` and iterations (0 without contacts).
    pub eps_abs: f64,
    pub iterations: usize,
}

/// A run's rows and what produced them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Trajectory {
    /// The scene's or file's name.
    pub scene: String,
    pub nq: usize,
    pub nv: usize,
    pub dt: f64,
    pub solver: String,
    pub rows: Vec<TrajectoryRow>,
}

/// Why a trajectory could not be written.
#[derive(Debug, thiserror::Error)]
pub enum TrajectoryError {
    #[error("{path}: unknown extension, use .csv or .json")]
    UnknownFormat { path: String },
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
}

impl Trajectory {
    /// An empty trajectory of `sim`'s model and settings.
    pub fn new(scene: &str, sim: &Simulator) -> Self {
        Trajectory {
            scene: scene.into(),
            nq: sim.model().nq,
            nv: sim.model().nv,
            dt: sim.params.dt,
            solver: sim.params.solver.name().into(),
            rows: Vec::new(),
        }
    }

    /// Appends `state`, reached by the step `report` (`None`: the initial state).
    pub fn record(
        &mut self,
        sim: &mut Simulator,
        state: &State,
        report: Option<&StepReport>,
    ) -> Result<(), SimError> {
        let (kinetic, potential) = sim.energy(state)?;
        let solver = report.and_then(|r| r.solver);
        self.rows.push(TrajectoryRow {
            t: state.t,
            q: state.q.as_slice().to_vec(),
            v: state.v.as_slice().to_vec(),
            kinetic,
            potential,
            nc: report.map_or(0, |r| r.nc),
            eps_abs: solver.map_or(0.0, |s| s.residuals.eps_abs),
            iterations: solver.map_or(0, |s| s.iterations),
        });
        Ok(())
    }

    /// Writes CSV (`.csv`) or JSON (`.json`), refusing other extensions
    /// before creating the file.
    pub fn write(&self, path: &Path) -> Result<(), TrajectoryError> {
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .unwrap_or("")
            .to_ascii_lowercase();
        let name = path.display().to_string();
        if !matches!(ext.as_str(), "csv" | "json") {
            return Err(TrajectoryError::UnknownFormat { path: name });
        }
        let io = |source| TrajectoryError::Io {
            path: name.clone(),
            source,
        };
        let file = std::fs::File::create(path).map_err(io)?;
        let mut w = std::io::BufWriter::new(file);
        if ext == "csv" {
            self.write_csv(&mut w).map_err(io)?;
        } else {
            self.write_json(&mut w).map_err(io)?;
        }
        w.flush().map_err(io)
    }

    /// One header line (`t, q0.., v0.., kinetic, potential, nc, eps_abs,
    /// iterations`), then one line per row.
    pub fn write_csv(&self, w: &mut impl Write) -> std::io::Result<()> {
        let mut header = vec!["t".to_string()];
        header.extend((0..self.nq).map(|i| format!("q{i}")));
        header.extend((0..self.nv).map(|i| format!("v{i}")));
        header.extend(["kinetic", "potential", "nc", "eps_abs", "iterations"].map(String::from));
        writeln!(w, "{}", header.join(","))?;
        for r in &self.rows {
            let mut line = vec![r.t.to_string()];
            line.extend(r.q.iter().chain(&r.v).map(|x| x.to_string()));
            line.extend([
                r.kinetic.to_string(),
                r.potential.to_string(),
                r.nc.to_string(),
                r.eps_abs.to_string(),
                r.iterations.to_string(),
            ]);
            writeln!(w, "{}", line.join(","))?;
        }
        Ok(())
    }

    /// One JSON object: the settings and the rows (`trajectory`).
    pub fn write_json(&self, w: &mut impl Write) -> std::io::Result<()> {
        let doc = serde_json::json!({
            "scene": self.scene, "nq": self.nq, "nv": self.nv, "dt": self.dt,
            "solver": self.solver, "precision": "f64", "trajectory": self.rows,
        });
        serde_json::to_writer(w, &doc).map_err(std::io::Error::other)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_has_one_column_per_coordinate_and_json_the_settings() {
        let scene = crate::scenes::scene("cube-sliding").unwrap();
        let mut sim = Simulator::new(scene.model.clone(), Default::default()).unwrap();
        let mut state = scene.state.clone();
        let mut tr = Trajectory::new("cube-sliding", &sim);
        tr.record(&mut sim, &state, None).unwrap();
        let tau = vec![0.0; scene.model.nv];
        for _ in 0..3 {
            let r = sim.step(&mut state, &tau).unwrap();
            tr.record(&mut sim, &state, Some(&r)).unwrap();
        }
        let mut csv = Vec::new();
        tr.write_csv(&mut csv).unwrap();
        let csv = String::from_utf8(csv).unwrap();
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines.len(), 5);
        let columns = 1 + tr.nq + tr.nv + 5;
        assert!(lines.iter().all(|l| l.split(',').count() == columns));
        assert!(
            tr.rows[3].nc > 0 && tr.rows[3].eps_abs < 1e-6,
            "the cube rests on the ground: {:?}",
            tr.rows[3]
        );
        let mut json = Vec::new();
        tr.write_json(&mut json).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&json).unwrap();
        assert_eq!(v["trajectory"].as_array().unwrap().len(), 4);
        assert_eq!(v["solver"], "ncp-admm");
        // An unknown extension is refused before any file is created.
        let path = std::env::temp_dir().join(format!("moreau-traj-{}.txt", std::process::id()));
        assert!(matches!(
            tr.write(&path),
            Err(TrajectoryError::UnknownFormat { .. })
        ));
        assert!(!path.exists());
    }
}
