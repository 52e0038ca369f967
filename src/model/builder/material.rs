//! A geometry's surface: friction (sliding, torsional, rolling),
//! restitution, collision bits, MuJoCo's `priority` and `condim`.

/// Surface properties of a geometry. A pair's contact takes them as
/// [`crate::model::Model::pair_contact`] says.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Material {
    /// Coulomb friction coefficient (≥ 0), combined by [`crate::model::Model::friction_mix`].
    pub friction: f64,
    /// Restitution coefficient in [0, 1]. Pairs combine by maximum.
    pub restitution: f64,
    /// Collision bits (MuJoCo's `contype` / `conaffinity`): two geometries
    /// collide when `contype_a & conaffinity_b` or `contype_b & conaffinity_a`
    /// is non-zero.
    pub contype: u32,
    pub conaffinity: u32,
    /// MuJoCo's geom `priority`: in a pair, the geometry of higher
    /// priority gives the contact its friction and dimension.
    pub priority: i32,
    /// MuJoCo's contact dimension `condim`: 1 frictionless, 3 Coulomb
    /// friction, 4 with torsional friction, 6 with rolling friction too.
    pub condim: u8,
    /// Torsional friction coefficient (m, ≥ 0; MuJoCo's second `friction`
    /// number): a contact of dimension 4 or 6 resists spinning about its
    /// normal with a torque of at most this times its normal force (within
    /// MuJoCo's elliptic cone, see [`crate::collision::Contact::spin`]).
    #[serde(default = "default_torsional")]
    pub torsional: f64,
    /// Rolling friction coefficient (m, ≥ 0; MuJoCo's third number): a
    /// contact of dimension 6 resists rolling about its tangents likewise.
    #[serde(default = "default_rolling")]
    pub rolling: f64,
}

/// MuJoCo's default torsional friction (m).
pub const DEFAULT_TORSIONAL: f64 = 0.005;
/// MuJoCo's default rolling friction (m).
pub const DEFAULT_ROLLING: f64 = 0.0001;

fn default_torsional() -> f64 {
    DEFAULT_TORSIONAL
}
fn default_rolling() -> f64 {
    DEFAULT_ROLLING
}

impl Default for Material {
    fn default() -> Self {
        Material {
            friction: 0.5,
            restitution: 0.0,
            contype: 1,
            conaffinity: 1,
            priority: 0,
            condim: 3,
            torsional: DEFAULT_TORSIONAL,
            rolling: DEFAULT_ROLLING,
        }
    }
}

impl Material {
    pub fn with_friction(friction: f64) -> Self {
        Material {
            friction,
            ..Default::default()
        }
    }
}
