//! Error types. Every error names its culprit (a body, a geometry, an argument)
//! so that a user can find it in the model or call that produced it.

use thiserror::Error;

/// An invalid model description.
#[derive(Debug, Clone, Error, PartialEq)]
pub enum ModelError {
    #[error("body `{body}`: mass must be positive and finite, got {mass}")]
    NonPositiveMass { body: String, mass: f64 },
    #[error(
        "body `{body}`: rotational inertia is not symmetric positive definite (eigenvalues {eigenvalues:?})"
    )]
    InertiaNotPositiveDefinite { body: String, eigenvalues: [f64; 3] },
    #[error(
        "body `{body}`: principal moments of inertia {moments:?} violate the triangle inequality (each must be at most the sum of the other two)"
    )]
    InertiaTriangleInequality { body: String, moments: [f64; 3] },
    #[error("joint of body `{body}`: axis {axis:?} is zero or not finite")]
    ZeroAxis { body: String, axis: [f64; 3] },
    #[error(
        "body `{body}`: unknown parent body id {parent} (the model has {nbodies} bodies so far)"
    )]
    UnknownParent {
        body: String,
        parent: usize,
        nbodies: usize,
    },
    #[error("geometry `{geom}`: unknown body id {body} (the model has {nbodies} bodies)")]
    UnknownBody {
        geom: String,
        body: usize,
        nbodies: usize,
    },
    #[error("geometry `{geom}`: {reason}")]
    InvalidGeometry { geom: String, reason: String },
    #[error("{what}: value is not finite")]
    NonFinite { what: String },
    #[error("duplicate {kind} name `{name}`")]
    DuplicateName { kind: &'static str, name: String },
    #[error("unknown scene `{name}`; known scenes: {known}")]
    UnknownScene { name: String, known: String },
    #[error("{what}: {reason}")]
    Invalid { what: String, reason: String },
}

/// An invalid input to a simulation step or algorithm. The state is left untouched.
#[derive(Debug, Clone, Error, PartialEq)]
pub enum SimError {
    #[error("{what} has length {got}, expected {expected}")]
    DimensionMismatch {
        what: &'static str,
        got: usize,
        expected: usize,
    },
    #[error("{what}[{index}] is not finite ({value})")]
    NonFinite {
        what: &'static str,
        index: usize,
        value: f64,
    },
    #[error("{what}[{row}, {index}] is not finite ({value})")]
    NonFiniteRow {
        what: &'static str,
        row: usize,
        index: usize,
        value: f64,
    },
    #[error("q: the quaternion of joint `{body}` has norm {norm:e}; it must be close to 1")]
    BadQuaternion { body: String, norm: f64 },
    #[error("narrow phase does not support the pair `{geom_a}` / `{geom_b}`")]
    UnsupportedPair { geom_a: String, geom_b: String },
    #[error(
        "contact solver `{solver}` returned a non-finite impulse for contact {contact} (bodies `{body_a}` / `{body_b}`)"
    )]
    SolverDiverged {
        solver: &'static str,
        contact: usize,
        body_a: String,
        body_b: String,
    },
    #[error("the {solver} solver diverged on the limit of joint `{joint}` (non-finite impulse)")]
    SolverDivergedOnLimit { solver: &'static str, joint: String },
    #[error("the {solver} solver diverged on the row of the {row} (non-finite impulse)")]
    SolverDivergedOnRow { solver: &'static str, row: String },
    #[error("invalid parameter `{name}`: {reason}")]
    InvalidParameter { name: &'static str, reason: String },
    #[error("Simulator::finish called without a successful Simulator::prepare")]
    NotPrepared,
    #[error(
        "the step on the GPU would have made the state non-finite; the world keeps its last state"
    )]
    DeviceNonFinite,
    #[error("the contact solve on the GPU {0}; the world keeps its last state")]
    DeviceContact(&'static str),
    #[error("the contact problem is invalid: {0}")]
    Problem(#[from] ProblemError),
}

/// An ill-formed contact problem (wrong sizes, NaN, negative friction, non-PSD Delassus).
#[derive(Debug, Clone, Error, PartialEq)]
pub enum ProblemError {
    #[error("{what} has length {got}, expected {expected}")]
    DimensionMismatch {
        what: &'static str,
        got: usize,
        expected: usize,
    },
    #[error("{what}[{index}] is not finite")]
    NonFinite { what: &'static str, index: usize },
    #[error("friction coefficient mu[{contact}] = {mu} must be finite and non-negative")]
    BadFriction { contact: usize, mu: f64 },
    #[error("row_sets[{row}]: the box bound {bound} must be finite and non-negative")]
    BadBox { row: usize, bound: f64 },
    #[error("row_sets[{row}]: a cone row ({reason})")]
    BadConeRow { row: usize, reason: String },
    #[error(
        "row_sets[{row}] is a row of contact {contact}'s friction cone (torsional or rolling friction: MuJoCo's condim 4 or 6), which {who} do not solve (ncp-admm, ccp-admm and ncp-pgs do)"
    )]
    ConeRowUnsupported {
        row: usize,
        contact: usize,
        who: &'static str,
    },
    #[error("compliance[{index}] = {value} must be non-negative")]
    BadCompliance { index: usize, value: f64 },
    #[error("Delassus matrix is not symmetric: G[{row},{col}] - G[{col},{row}] = {diff:e}")]
    NotSymmetric { row: usize, col: usize, diff: f64 },
    #[error(
        "Delassus matrix is not positive semi-definite: diagonal entry G[{index},{index}] = {value:e}"
    )]
    NotPsd { index: usize, value: f64 },
    #[error("Delassus matrix is non-zero outside its block coupling: G[{row},{col}] = {value:e}")]
    Uncoupled { row: usize, col: usize, value: f64 },
    #[error(
        "the solver diverged (non-finite impulse after {iteration} iterations); is the Delassus matrix positive semi-definite?"
    )]
    Diverged { iteration: usize },
    #[error("invalid solver setting `{name}`: {reason}")]
    InvalidSetting { name: &'static str, reason: String },
    #[error("unknown solver `{name}`; known solvers: {known}")]
    UnknownSolver { name: String, known: String },
}

/// Why a contact-problem file (see [`crate::contact::io`]) was refused.
#[derive(Debug, Error)]
pub enum ProblemFileReason {
    #[error("{0}")]
    Io(std::io::Error),
    /// Not JSON (with serde's message), or a number beyond the range of f64.
    #[error("invalid JSON: {0}")]
    Syntax(String),
    /// JSON of the wrong shape or type (e.g. a string where a number belongs).
    #[error("{0}")]
    Data(String),
    #[error(
        "unknown key `{0}` (known keys: \"G\", \"g\", \"mu\", \"R\", \"lambda0\", \"nl\", \"sets\")"
    )]
    UnknownKey(String),
    #[error("missing key `{0}`")]
    MissingKey(&'static str),
    #[error("duplicate key `{0}`")]
    DuplicateKey(&'static str),
    /// Rows of unequal length, a non-square `G`, or sizes that disagree with `3·nc`.
    #[error("{0}")]
    Shape(String),
    #[error(
        "G is not positive semi-definite: smallest eigenvalue {eigenvalue:e} < {threshold:e} (-1e-9·max(1, max|G_ij|))"
    )]
    NotPsd { eigenvalue: f64, threshold: f64 },
    /// What [`crate::contact::ContactProblem::validate`] refused.
    #[error("{0}")]
    Invalid(#[from] ProblemError),
}

/// An unreadable or invalid contact-problem file, or one that could not be
/// written. The message names the file, the problem's index in the batch,
/// the key and, for JSON errors, serde's line and column:
/// `problems.json: problem 2, key "G": G has 6 rows, expected 3·nc + nl = 9 ...`.
#[derive(Debug)]
pub struct ProblemFileError {
    /// The file name (or whatever name the text was given).
    pub source_name: String,
    /// Index of the problem in the batch (0 for a file holding one object);
    /// `None` when the error is not inside one problem.
    pub problem: Option<usize>,
    /// The JSON key at fault, if any.
    pub key: Option<String>,
    /// Line and column (1-based), for errors found while parsing the JSON.
    pub position: Option<(usize, usize)>,
    /// Boxed to keep `Result<_, ProblemFileError>` small.
    pub reason: Box<ProblemFileReason>,
}

impl std::fmt::Display for ProblemFileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.source_name)?;
        let mut sep = ": ";
        if let Some(i) = self.problem {
            write!(f, "{sep}problem {i}")?;
            sep = ", ";
        }
        if let Some(k) = &self.key {
            write!(f, "{sep}key \"{k}\"")?;
            sep = ", ";
        }
        if let Some((line, column)) = self.position {
            write!(f, "{sep}line {line} column {column}")?;
        }
        write!(f, ": {}", self.reason)
    }
}

/// The message already includes the reason, so `source` is left empty (no
/// repetition when a caller prints the chain); the reason is in `reason`.
impl std::error::Error for ProblemFileError {}
