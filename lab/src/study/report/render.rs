//! The report's tables (Table II decided from measurements, with its legend) and its JSON.

use super::*;
use std::path::{Path, PathBuf};

/// The header line of Table II, as [`CompareReport::table_ii`] prints it.
pub const TABLE_II_TITLE: &str =
    "Table II (measured): contact models and solvers against the physical criteria";

fn cell(c: Check, text: String) -> String {
    format!("{} {text}", if c.pass { '✓' } else { '✗' })
}

impl CompareReport {
    /// Table II with its legend.
    pub fn table_ii(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "{TABLE_II_TITLE}");
        let _ = writeln!(
            s,
            "{:<10} {:<6} | {:<11} | {:<11} | {:<10} | {:<18} | {:<17} | {:<9}",
            "solver",
            "model",
            "Signorini",
            "Coulomb",
            "MDP",
            "no internal forces",
            "robust",
            "converged"
        );
        let _ = writeln!(s, "{}", "-".repeat(114));
        for r in &self.table {
            let _ = writeln!(
                s,
                "{:<10} {:<6} | {:<11} | {:<11} | {:<10} | {:<18} | {:<17} | {:<9}",
                r.solver,
                r.model,
                cell(r.signorini, format!("{:.1e}", r.signorini.value)),
                cell(r.coulomb, format!("{:.1e}", r.coulomb.value)),
                cell(r.mdp_deg, format!("{:.2}°", r.mdp_deg.value)),
                cell(r.internal, format!("{:.1e}", r.internal.value)),
                cell(
                    r.robust,
                    format!("{:.1e} {:>4} it", r.robust.value, r.robust_iterations)
                ),
                cell(r.converged, format!("{:.1} %", 100.0 * r.converged.value)),
            );
        }
        let _ = writeln!(
            s,
            "✓/✗ decided from measurements (sliding cube: {SLIDE_STEPS} steps; dragged cube: {DRAG_STEPS} steps, warm-started; dt 1 ms, tol 1e-8, 1000 iterations):"
        );
        let legend = [
            (
                "Signorini",
                format!(
                    "max over the sliding cube of max(0, -c_N) + |λ_N c_N|/‖λ‖ (m/s) < {SIGNORINI_MAX:.0e}"
                ),
            ),
            (
                "Coulomb",
                format!(
                    "max over the sliding cube of max(0, ‖λ_T‖ - μ λ_N, -λ_N)/‖λ‖ < {COULOMB_MAX:.0e} (the 4-facet pyramid exceeds the cone along its diagonals)"
                ),
            ),
            (
                "MDP",
                format!(
                    "max over the sliding cube of the angle between λ_T and -c_T at loaded sliding contacts (‖c_T‖ > {} m/s) < {MDP_MAX_DEG}°",
                    super::super::SLIDE_THRESHOLD
                ),
            ),
            (
                "no internal forces",
                format!(
                    "max over the dragged cube of the lateral squeeze (largest world-y impulse of one contact / ‖λ‖) < {INTERNAL_MAX:.0e}"
                ),
            ),
            (
                "robust",
                format!(
                    "reaches its own tolerance {ROBUST_TOLERANCE:.0e} within {ROBUST_MAX_ITERATIONS} iterations, cold, on the 1e3 kg on 1e-3 kg stacked cubes (ratio {ROBUST_RATIO:.0e}); own-model eps_abs and iterations"
                ),
            ),
            (
                "converged",
                format!(
                    "fraction of the sliding- and dragged-cube solves that reached tol 1e-8 within 1000 iterations ≥ {:.0} %",
                    100.0 * CONVERGED_MIN
                ),
            ),
        ];
        for (name, text) in legend {
            let _ = writeln!(s, "  {name:<19} {text}");
        }
        s
    }

    /// The mass-ratio table.
    pub fn mass_ratio_table(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "Mass ratio (stacked cubes, top/bottom, 1e-3 kg bottom; cold, tol {ROBUST_TOLERANCE:.0e}, {ROBUST_MAX_ITERATIONS} iterations): own-model eps_abs, iterations, * = converged"
        );
        header_row(
            &mut s,
            "solver",
            MASS_RATIOS.iter().map(|r| format!("ratio {r:.0e}")),
            19,
        );
        for name in &self.solvers {
            let _ = write!(s, "{name:<10}");
            for r in self.mass_ratio.iter().filter(|r| &r.solver == name) {
                let _ = write!(
                    s,
                    " | {:>9.1e} {:>5} it{}",
                    r.eps_abs,
                    r.iterations,
                    if r.converged { '*' } else { ' ' }
                );
            }
            let _ = writeln!(s);
        }
        s
    }

    fn consistency_table(&self, title: &str, head: &str, rows: &[ConsistencyRow]) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "{title}");
        let mut values: Vec<f64> = Vec::new();
        for r in rows {
            if !values.contains(&r.value) {
                values.push(r.value);
            }
        }
        header_row(
            &mut s,
            "solver",
            values.iter().map(|v| format!("{head} {v:.0e}")),
            12,
        );
        for name in &self.solvers {
            let _ = write!(s, "{name:<10}");
            for v in &values {
                let d = rows
                    .iter()
                    .find(|r| &r.solver == name && r.value == *v)
                    .map_or(f64::NAN, |r| r.distance);
                let _ = write!(s, " | {d:>12.2e}");
            }
            let _ = writeln!(s);
        }
        s
    }

    /// Self-consistency against the time step.
    pub fn dt_table(&self) -> String {
        self.consistency_table(
            &format!(
                "Self-consistency against the time step: dragged cube for {CONSISTENCY_DURATION} s, mean distance (m) to the same solver at dt {:.0e} s (tol 1e-8, 1000 iterations)",
                self.reference_dt
            ),
            "dt",
            &self.dt_consistency,
        )
    }

    /// Self-consistency against the stopping tolerance.
    pub fn tolerance_table(&self) -> String {
        self.consistency_table(
            &format!(
                "Self-consistency against the stopping tolerance: dragged cube for {CONSISTENCY_DURATION} s at dt 1 ms, mean distance (m) to the same solver at tol {REFERENCE_TOLERANCE:.0e} ({CONSISTENCY_MAX_ITERATIONS} iterations for all)"
            ),
            "tol",
            &self.tolerance_consistency,
        )
    }

    /// Time-to-accuracy, one block per scene.
    pub fn time_to_accuracy_table(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "Time-to-accuracy: mean time per solve (µs) and fraction converged, cap {TTA_MAX_ITERATIONS} iterations, one solve at a time"
        );
        for h in &self.harvests {
            let _ = writeln!(
                s,
                "{}: {} problems (every {}th of {} steps{}, harvested with {}), {:.1} contacts on average, at most {}",
                h.plan.scene,
                h.problems,
                h.plan.every,
                h.plan.steps,
                if h.plan.push {
                    format!(", {QUADRUPED_PUSH} N push along x from {PUSH_START} s")
                } else {
                    String::new()
                },
                h.harvested_with,
                h.mean_contacts,
                h.max_contacts
            );
            header_row(
                &mut s,
                &format!("{:<10} {:<4}", "solver", ""),
                TTA_TOLERANCES.iter().map(|t| format!("tol {t:.0e}")),
                18,
            );
            for r in self
                .time_to_accuracy
                .iter()
                .filter(|r| r.scene == h.plan.scene)
            {
                let _ = write!(
                    s,
                    "{:<10} {:<4}",
                    r.solver,
                    if r.warm { "warm" } else { "cold" }
                );
                for p in &r.points {
                    let _ = write!(s, " | {:>9.1} µs {:>5.1}%", p.mean_us, 100.0 * p.converged);
                }
                let _ = writeln!(s);
            }
        }
        s
    }

    /// Compliance: penetration against `α`.
    pub fn compliance_table(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "Compliance R = α·diag(G): penetration (m) of the resting cube after 0.5 s, and per unit α"
        );
        header_row(
            &mut s,
            "solver",
            ALPHAS.iter().map(|a| format!("α = {a:.0e}")),
            21,
        );
        for k in COMPLIANCE_SOLVERS {
            let _ = write!(s, "{:<10}", k.name());
            for r in self.compliance.iter().filter(|r| r.solver == k.name()) {
                let per = if r.per_alpha.is_nan() {
                    "-".to_string()
                } else {
                    format!("{:.3e}", r.per_alpha)
                };
                let _ = write!(s, " | {:>10.3e} {per:>10}", r.penetration);
            }
            let _ = writeln!(s);
        }
        s
    }

    /// Every table, in the order of `moreau compare`.
    pub fn render(&self) -> String {
        [
            self.table_ii(),
            self.mass_ratio_table(),
            self.dt_table(),
            self.tolerance_table(),
            self.time_to_accuracy_table(),
            self.compliance_table(),
        ]
        .join("\n")
    }
}

/// Writes `compare.json` into `dir` (created if missing); returns its path.
pub fn write_json(report: &CompareReport, dir: &Path) -> Result<PathBuf, ReportError> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let path = dir.join("compare.json");
    let text = serde_json::to_string_pretty(report)?;
    std::fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(path)
}

/// A table's header line: `first` in a 10-wide column, then each label
/// right-aligned in `width` after a ` | ` separator.
fn header_row(s: &mut String, first: &str, labels: impl IntoIterator<Item = String>, width: usize) {
    let _ = write!(s, "{first:<10}");
    for label in labels {
        let _ = write!(s, " | {label:>width$}");
    }
    let _ = writeln!(s);
}
