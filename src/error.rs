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
    #[error("invalid parameter `{name}`: {reason}")]
    InvalidParameter { name: &'static str, reason: String },
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
    #[error("compliance[{index}] = {value} must be non-negative")]
    BadCompliance { index: usize, value: f64 },
    #[error("Delassus matrix is not symmetric: G[{row},{col}] - G[{col},{row}] = {diff:e}")]
    NotSymmetric { row: usize, col: usize, diff: f64 },
    #[error(
        "Delassus matrix is not positive semi-definite: diagonal entry G[{index},{index}] = {value:e}"
    )]
    NotPsd { index: usize, value: f64 },
    #[error(
        "the solver diverged (non-finite impulse after {iteration} iterations); is the Delassus matrix positive semi-definite?"
    )]
    Diverged { iteration: usize },
    #[error("invalid solver setting `{name}`: {reason}")]
    InvalidSetting { name: &'static str, reason: String },
    #[error("unknown solver `{name}`; known solvers: {known}")]
    UnknownSolver { name: String, known: String },
}
