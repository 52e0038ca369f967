//! Contact problems as JSON files, to save the problems a simulation met and
//! solve them again, with any solver, outside the simulator
//! (`moreau run SCENE --dump-problems FILE`, `moreau solve FILE`).
//!
//! # Format
//!
//! One problem is a JSON object with `nc` contacts and `nl` one-dimensional
//! rows (joint limits, equalities, dry friction), `m = 3·nc + nl` unknowns:
//!
//! | key       | shape                     | meaning                                              |
//! |-----------|---------------------------|------------------------------------------------------|
//! | `G`       | list of `m` rows of `m`   | Delassus matrix, symmetric positive semi-definite    |
//! | `g`       | list of `m`               | free contact velocity (stabilization terms included) |
//! | `mu`      | list of `nc`              | friction coefficients, finite and `≥ 0`              |
//! | `R`       | list of `m`, optional     | diagonal compliance, `≥ 0` (default: zeros, rigid)   |
//! | `lambda0` | list of `m`, optional     | warm start for `λ` (default: zeros, cold start)      |
//! | `nl`      | integer, optional         | one-dimensional rows after the contacts (default: 0) |
//! | `sets`    | list of `nl`, optional    | each row's set: `"unilateral"`, `"bilateral"` or a box bound `b ≥ 0` (default: all unilateral) |
//!
//! Vectors are stacked per contact, each contact's 3 components in its own
//! contact frame with the normal last: `[t1, t2, n]` for contact 0, then
//! contact 1, and so on, then the `nl` rows (unilateral `λ ≥ 0 ⟂ c ≥ 0`
//! unless `sets` says otherwise, see [`super::RowSet`]);
//! `G` follows the same ordering in rows and columns. The problem is: find
//! `λ ∈ K` with `c = (G + R) λ + g` and `K ∋ λ ⟂ c + Γ(c) ∈ K*` (see
//! [`ContactProblem`]). Writers write `nl` only when it is not zero, and
//! `sets` only when a row is not unilateral.
//!
//! A file holds either one such object or a JSON list of them (a batch);
//! the writers always write a list, one problem per line. One contact on a
//! plane, sliding under a tangential velocity of 1 (its solution is
//! `λ = [-0.5, 0, 1]`):
//!
//! ```json
//! { "G": [[1, 0, 0], [0, 1, 0], [0, 0, 1]], "g": [1, 0, -1], "mu": [0.5] }
//! ```
//!
//! Reading is strict, because a silently wrong problem would be solved
//! without complaint: unknown keys (a typo such as `"lamda0"` would otherwise
//! be a cold start), missing or duplicate keys, rows of unequal length, a
//! non-square `G`, sizes that disagree with `3·len(mu)`, a non-symmetric `G`,
//! negative or non-finite `μ`, negative `R`, numbers beyond the range of f64
//! and a `G` whose smallest eigenvalue is below `-1e-9·max(1, max|G_ij|)`
//! are all refused with a [`ProblemFileError`] naming the file, the problem's
//! index in the batch, the key and the reason (with serde's line and column
//! for JSON errors). JSON has no NaN or infinity, so none can slip in.
//!
//! Writing is exact: numbers are printed as the shortest decimal that reads
//! back to the same f64, so `read_problems(write_problems(p)) == p` bit for
//! bit (serde_json's `float_roundtrip` parsing is enabled for this).

use super::ContactProblem;
use crate::error::ProblemError;
pub use crate::error::{ProblemFileError, ProblemFileReason};
use nalgebra::{DMatrix, DVector, SymmetricEigen};
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use std::cell::{Cell, RefCell};
use std::fmt;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

/// The keys of a problem object, in the order they are written.
pub const KEYS: [&str; 7] = ["G", "g", "mu", "R", "lambda0", "nl", "sets"];

/// A row's set as written: a name or a box bound.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(untagged)]
enum RawSet {
    Bound(f64),
    Name(String),
}

/// The contact `i` of a set written `"cone i"` (a row of its cone).
fn cone_contact(name: &str) -> Option<usize> {
    name.strip_prefix("cone ")?.trim().parse().ok()
}

fn raw_sets(problem: &ContactProblem) -> Option<Vec<RawSet>> {
    (!problem.all_unilateral()).then(|| {
        problem
            .row_sets
            .iter()
            .map(|s| match *s {
                super::RowSet::Box(b) => RawSet::Bound(b),
                super::RowSet::Cone(i) => RawSet::Name(format!("cone {i}")),
                s => RawSet::Name(s.name().to_string()),
            })
            .collect()
    })
}

/// Reads a problem file (one object or a list of them); every problem is
/// validated, including the positive semi-definiteness of `G`.
pub fn read_problems(path: impl AsRef<Path>) -> Result<Vec<ContactProblem>, ProblemFileError> {
    let path = path.as_ref();
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| ProblemFileError {
        source_name: name.clone(),
        problem: None,
        key: None,
        position: None,
        reason: Box::new(ProblemFileReason::Io(e)),
    })?;
    parse_problems(&text, &name)
}

/// Parses problems from JSON `text` (one object or a list of them);
/// `source_name` (usually the file name) is used in error messages.
pub fn parse_problems(
    text: &str,
    source_name: &str,
) -> Result<Vec<ContactProblem>, ProblemFileError> {
    let ctx = Ctx::default();
    let mut de = serde_json::Deserializer::from_str(text);
    let raws = FileSeed(&ctx)
        .deserialize(&mut de)
        .and_then(|raws| de.end().map(|()| raws))
        .map_err(|e| ctx.into_error(source_name, e))?;
    raws.into_iter()
        .enumerate()
        .map(|(index, raw)| {
            build(raw).map_err(|(key, reason)| ProblemFileError {
                source_name: source_name.to_string(),
                problem: Some(index),
                key: key.map(String::from),
                position: None,
                reason: Box::new(reason),
            })
        })
        .collect()
}

/// The JSON object of one problem, with all five keys (`R` and `lambda0`
/// included even when zero). Non-finite numbers become `null`, as serde_json
/// writes them; [`ProblemWriter`] refuses such problems instead.
pub fn problem_to_json(problem: &ContactProblem) -> serde_json::Value {
    let mut v = serde_json::json!({
        "G": rows(&problem.delassus),
        "g": problem.g.as_slice(),
        "mu": problem.mu,
        "R": problem.compliance.as_slice(),
        "lambda0": problem.warm_start.as_slice(),
    });
    if problem.nl() > 0 {
        v["nl"] = problem.nl().into();
    }
    if let Some(sets) = raw_sets(problem) {
        v["sets"] = serde_json::to_value(sets).unwrap_or_default();
    }
    v
}

/// Writes `problems` to `path` as a JSON list, one problem per line.
/// Each problem is validated first (so no NaN becomes `null`).
pub fn write_problems(
    path: impl AsRef<Path>,
    problems: &[ContactProblem],
) -> Result<(), ProblemFileError> {
    let mut w = ProblemWriter::create(path)?;
    for p in problems {
        w.write(p)?;
    }
    w.finish().map(drop)
}

/// Streams problems into a JSON list without keeping them in memory:
/// writes `[`, then the problems separated by `,\n`, then `]` in
/// [`finish`](Self::finish). A writer dropped without `finish` leaves an
/// unterminated list, which [`read_problems`] refuses.
pub struct ProblemWriter<W: Write> {
    out: W,
    source_name: String,
    count: usize,
}

impl ProblemWriter<BufWriter<File>> {
    /// Creates (or truncates) the file at `path`.
    pub fn create(path: impl AsRef<Path>) -> Result<Self, ProblemFileError> {
        let path = path.as_ref();
        let name = path.display().to_string();
        match File::create(path) {
            Ok(f) => ProblemWriter::new(BufWriter::new(f), name),
            Err(e) => Err(io_error(name, None, e)),
        }
    }
}

impl<W: Write> ProblemWriter<W> {
    /// Starts a list on `out`; `source_name` is used in error messages.
    pub fn new(mut out: W, source_name: impl Into<String>) -> Result<Self, ProblemFileError> {
        let source_name = source_name.into();
        if let Err(e) = out.write_all(b"[") {
            return Err(io_error(source_name, None, e));
        }
        Ok(ProblemWriter {
            out,
            source_name,
            count: 0,
        })
    }

    /// Appends one problem, after [`ContactProblem::validate`].
    pub fn write(&mut self, problem: &ContactProblem) -> Result<(), ProblemFileError> {
        let index = Some(self.count);
        if let Err(e) = problem.validate() {
            return Err(ProblemFileError {
                source_name: self.source_name.clone(),
                problem: index,
                key: key_of(&e).map(String::from),
                position: None,
                reason: Box::new(ProblemFileReason::Invalid(e)),
            });
        }
        let sep: &[u8] = if self.count == 0 { b"\n" } else { b",\n" };
        let json = ProblemJson {
            delassus: rows(&problem.delassus),
            g: problem.g.as_slice(),
            mu: &problem.mu,
            compliance: problem.compliance.as_slice(),
            lambda0: problem.warm_start.as_slice(),
            nl: (problem.nl() > 0).then_some(problem.nl()),
            sets: raw_sets(problem),
        };
        self.out
            .write_all(sep)
            .and_then(|()| serde_json::to_writer(&mut self.out, &json).map_err(Into::into))
            .map_err(|e| io_error(self.source_name.clone(), index, e))?;
        self.count += 1;
        Ok(())
    }

    /// Number of problems written so far.
    pub fn count(&self) -> usize {
        self.count
    }

    /// Closes the list and flushes; returns the underlying writer.
    pub fn finish(mut self) -> Result<W, ProblemFileError> {
        self.out
            .write_all(b"\n]\n")
            .and_then(|()| self.out.flush())
            .map_err(|e| io_error(self.source_name.clone(), None, e))?;
        Ok(self.out)
    }
}

/// Field order of the written object (serde_json's `Value` would sort the keys).
#[derive(serde::Serialize)]
struct ProblemJson<'a> {
    #[serde(rename = "G")]
    delassus: Vec<Vec<f64>>,
    g: &'a [f64],
    mu: &'a [f64],
    #[serde(rename = "R")]
    compliance: &'a [f64],
    lambda0: &'a [f64],
    #[serde(skip_serializing_if = "Option::is_none")]
    nl: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sets: Option<Vec<RawSet>>,
}

fn rows(m: &DMatrix<f64>) -> Vec<Vec<f64>> {
    m.row_iter().map(|r| r.iter().copied().collect()).collect()
}

fn io_error(source_name: String, problem: Option<usize>, e: std::io::Error) -> ProblemFileError {
    ProblemFileError {
        source_name,
        problem,
        key: None,
        position: None,
        reason: Box::new(ProblemFileReason::Io(e)),
    }
}

/// The file key that a [`ProblemError`] from `validate` is about.
fn key_of(e: &ProblemError) -> Option<&'static str> {
    match e {
        ProblemError::DimensionMismatch { what, .. } | ProblemError::NonFinite { what, .. } => {
            match *what {
                "g" => Some("g"),
                "compliance" => Some("R"),
                "warm_start" => Some("lambda0"),
                w if w.starts_with("delassus") => Some("G"),
                _ => None,
            }
        }
        ProblemError::BadFriction { .. } => Some("mu"),
        ProblemError::BadCompliance { .. } => Some("R"),
        ProblemError::BadBox { .. } => Some("sets"),
        ProblemError::NotSymmetric { .. } | ProblemError::NotPsd { .. } => Some("G"),
        _ => None,
    }
}

/// One problem object as read, before any check beyond the JSON types.
#[derive(Default)]
struct RawProblem {
    delassus: Option<Vec<Vec<f64>>>,
    g: Option<Vec<f64>>,
    mu: Option<Vec<f64>>,
    compliance: Option<Vec<f64>>,
    lambda0: Option<Vec<f64>>,
    nl: Option<usize>,
    sets: Option<Vec<RawSet>>,
}

/// Shapes, `validate`, then positive semi-definiteness.
fn build(raw: RawProblem) -> Result<ContactProblem, (Option<&'static str>, ProblemFileReason)> {
    let shape = |key, msg: String| (Some(key), ProblemFileReason::Shape(msg));
    let missing = |key| Err((Some(key), ProblemFileReason::MissingKey(key)));
    let Some(rows) = raw.delassus else {
        return missing("G");
    };
    let Some(g) = raw.g else { return missing("g") };
    let Some(mu) = raw.mu else {
        return missing("mu");
    };
    let nc = mu.len();
    let nl = raw.nl.unwrap_or(0);
    let m = 3 * nc + nl;
    let n = rows.len();
    if let Some(first) = rows.first() {
        if let Some((i, r)) = rows
            .iter()
            .enumerate()
            .find(|(_, r)| r.len() != first.len())
        {
            return Err(shape(
                "G",
                format!(
                    "G has rows of unequal length: row 0 has {} entries but row {i} has {}",
                    first.len(),
                    r.len()
                ),
            ));
        }
        if first.len() != n {
            return Err(shape(
                "G",
                format!("G is not square: {n} rows of {} entries each", first.len()),
            ));
        }
    }
    let g_len = g.len();
    let expect = |key: &'static str, got: usize| {
        if got == m {
            return Ok(());
        }
        let (what, others) = match key {
            "G" => (format!("{got} rows"), format!("g has {g_len} entries")),
            "g" => (format!("{got} entries"), format!("G has {n} rows")),
            _ => (
                format!("{got} entries"),
                format!("G has {n} rows, g has {g_len} entries"),
            ),
        };
        Err(shape(
            key,
            format!(
                "{key} has {what}, expected 3·nc + nl = {m} with nc = len(mu) = {nc}, nl = {nl} ({others})"
            ),
        ))
    };
    expect("G", n)?;
    expect("g", g_len)?;
    if let Some(r) = &raw.compliance {
        expect("R", r.len())?;
    }
    if let Some(l) = &raw.lambda0 {
        expect("lambda0", l.len())?;
    }
    let mut row_sets = Vec::new();
    if let Some(sets) = &raw.sets {
        if sets.len() != nl {
            return Err(shape(
                "sets",
                format!("sets has {} entries, expected nl = {nl}", sets.len()),
            ));
        }
        for (l, s) in sets.iter().enumerate() {
            row_sets.push(match s {
                RawSet::Bound(b) => super::RowSet::Box(*b),
                RawSet::Name(n) if n == "unilateral" => super::RowSet::Unilateral,
                RawSet::Name(n) if n == "bilateral" => super::RowSet::Bilateral,
                RawSet::Name(n) => match cone_contact(n) {
                    Some(i) => super::RowSet::Cone(i),
                    None => {
                        return Err((
                            Some("sets"),
                            ProblemFileReason::Data(format!(
                                "sets[{l}] = \"{n}\": a row's set is \"unilateral\", \"bilateral\", \"cone i\" (a row of contact i's cone) or a box bound b ≥ 0"
                            )),
                        ));
                    }
                },
            });
        }
    }
    let problem = ContactProblem {
        delassus: DMatrix::from_fn(m, m, |i, j| rows[i][j]),
        g: DVector::from_vec(g),
        mu,
        compliance: raw
            .compliance
            .map_or_else(|| DVector::zeros(m), DVector::from_vec),
        warm_start: raw
            .lambda0
            .map_or_else(|| DVector::zeros(m), DVector::from_vec),
        row_sets,
        coupling: Default::default(),
    };
    problem
        .validate()
        .map_err(|e| (key_of(&e), ProblemFileReason::Invalid(e)))?;
    if m > 0 {
        let threshold = -1e-9 * problem.delassus.amax().max(1.0);
        let eigenvalue = SymmetricEigen::new(problem.delassus.clone())
            .eigenvalues
            .iter()
            .copied()
            .fold(f64::INFINITY, |a, b| if b.is_nan() { b } else { a.min(b) });
        if eigenvalue.is_nan() || eigenvalue < threshold {
            return Err((
                Some("G"),
                ProblemFileReason::NotPsd {
                    eigenvalue,
                    threshold,
                },
            ));
        }
    }
    Ok(problem)
}

/// Where the parser is (problem index, key), for error messages, and the
/// structured reason of an error raised by the visitors themselves.
#[derive(Default)]
struct Ctx {
    problem: Cell<Option<usize>>,
    key: RefCell<Option<String>>,
    reason: RefCell<Option<ProblemFileReason>>,
}

impl Ctx {
    fn fail<E: de::Error>(&self, key: &str, reason: ProblemFileReason) -> E {
        *self.key.borrow_mut() = Some(key.to_string());
        let e = E::custom(&reason);
        *self.reason.borrow_mut() = Some(reason);
        e
    }

    fn into_error(self, source_name: &str, e: serde_json::Error) -> ProblemFileError {
        let (line, column) = (e.line(), e.column());
        let reason = self.reason.take().unwrap_or_else(|| {
            let text = e.to_string();
            let suffix = format!(" at line {line} column {column}");
            let msg = text.strip_suffix(&suffix).unwrap_or(&text).to_string();
            match e.classify() {
                serde_json::error::Category::Data => ProblemFileReason::Data(msg),
                _ => ProblemFileReason::Syntax(msg),
            }
        });
        ProblemFileError {
            source_name: source_name.to_string(),
            problem: self.problem.get(),
            key: self.key.take(),
            position: (line > 0).then_some((line, column)),
            reason: Box::new(reason),
        }
    }
}

/// The whole file: one problem object or a list of them.
struct FileSeed<'c>(&'c Ctx);

impl<'de> DeserializeSeed<'de> for FileSeed<'_> {
    type Value = Vec<RawProblem>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for FileSeed<'_> {
    type Value = Vec<RawProblem>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a contact problem (a JSON object) or a list of them")
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        self.0.problem.set(Some(0));
        let p = ProblemSeed(self.0).visit_map(map)?;
        self.0.problem.set(None);
        Ok(vec![p])
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::new();
        loop {
            // Set before the element, cleared after it, so that a syntax
            // error between two problems is not blamed on either.
            self.0.problem.set(Some(out.len()));
            let next = seq.next_element_seed(ProblemSeed(self.0))?;
            self.0.problem.set(None);
            match next {
                Some(p) => out.push(p),
                None => return Ok(out),
            }
        }
    }
}

/// One problem object.
struct ProblemSeed<'c>(&'c Ctx);

impl<'de> DeserializeSeed<'de> for ProblemSeed<'_> {
    type Value = RawProblem;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for ProblemSeed<'_> {
    type Value = RawProblem;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a contact problem object with keys \"G\", \"g\", \"mu\" (and optionally \"R\", \"lambda0\", \"nl\", \"sets\")")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let ctx = self.0;
        let mut raw = RawProblem::default();
        while let Some(key) = map.next_key::<String>()? {
            let Some(&name) = KEYS.iter().find(|k| **k == key) else {
                return Err(ctx.fail(&key, ProblemFileReason::UnknownKey(key.clone())));
            };
            *ctx.key.borrow_mut() = Some(name.to_string());
            let duplicate = match name {
                "G" => raw.delassus.replace(map.next_value()?).is_some(),
                "g" => raw.g.replace(map.next_value()?).is_some(),
                "mu" => raw.mu.replace(map.next_value()?).is_some(),
                "R" => raw.compliance.replace(map.next_value()?).is_some(),
                "lambda0" => raw.lambda0.replace(map.next_value()?).is_some(),
                "sets" => raw.sets.replace(map.next_value()?).is_some(),
                _ => raw.nl.replace(map.next_value()?).is_some(),
            };
            if duplicate {
                return Err(ctx.fail(name, ProblemFileReason::DuplicateKey(name)));
            }
            *ctx.key.borrow_mut() = None;
        }
        for (name, present) in [
            ("G", raw.delassus.is_some()),
            ("g", raw.g.is_some()),
            ("mu", raw.mu.is_some()),
        ] {
            if !present {
                return Err(ctx.fail(name, ProblemFileReason::MissingKey(name)));
            }
        }
        Ok(raw)
    }
}
