//! What a simulator carries from one step to the next besides the
//! [`super::State`]: the warm starts (and the mocap poses, the inputs it
//! keeps). With both, a world restored into a
//! fresh simulator continues bit for bit as the original would have
//! (MuJoCo's `mjSTATE_INTEGRATION` with its warm start).

use super::{Simulator, State, rows::RowKind};
use crate::collision::ContactKey;
use crate::error::SimError;
use crate::math::{SE3, Vec3};

/// The impulses the next step starts its solve from, and the ADMM
/// penalty it starts with.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct WarmStart {
    /// The last step's contact impulses by contact identity, in world
    /// coordinates, sorted by key.
    pub contacts: Vec<(ContactKey, [f64; 3])>,
    /// The contacts' cone-row impulses (torsional and rolling friction,
    /// scaled as their rows are) by contact identity, in world coordinates
    /// (`Σ_r λ_r a_r` over the rows' unit axes), sorted by key.
    #[serde(default)]
    pub contact_spins: Vec<(ContactKey, [f64; 3])>,
    /// The joint stops' impulses, `2·body + side` (NaN: none).
    pub limits: Vec<f64>,
    /// The other rows' impulses by [`RowKind::slot`] (NaN: none).
    pub rows: Vec<f64>,
    /// The last ADMM solve's final ρ.
    pub rho: Option<f64>,
    /// The solver's Newton finisher's scale ([`crate::contact::ContactSolver::finisher_scale`]).
    pub finisher_scale: usize,
    /// Each mocap body's pose in this world ([`Simulator::mocap_poses`]);
    /// empty: the file's (a model without mocap bodies, older snapshots).
    #[serde(default)]
    pub mocap: Vec<SE3>,
}

impl Simulator {
    /// The warm starts the next step reads. The solver's other memory (the
    /// polish's kept factors, [`crate::contact::ContactSolver::forget_kept`])
    /// is dropped here and in [`Self::set_warm_start`], so that this
    /// simulator and one restored from the snapshot continue bit for bit.
    pub fn warm_start(&mut self) -> WarmStart {
        self.solver.forget_kept();
        let sorted = |map: &rustc_hash::FxHashMap<ContactKey, Vec3>| {
            let mut v: Vec<_> = map.iter().map(|(k, l)| (*k, [l.x, l.y, l.z])).collect();
            v.sort_by_key(|(k, _)| *k);
            v
        };
        WarmStart {
            contacts: sorted(&self.warm),
            contact_spins: sorted(&self.spin_warm),
            limits: self.limit_warm.clone(),
            rows: self.row_warm.clone(),
            rho: self.last_rho,
            finisher_scale: self.solver.finisher_scale(),
            mocap: self.mocap_poses().to_vec(),
        }
    }

    /// Replaces the warm starts by `warm` (from [`Self::warm_start`] of a
    /// simulator of the same model). Refused, the simulator untouched,
    /// when its sizes are not this model's, a contact names a geometry the
    /// model lacks, an impulse is infinite, or ρ is not positive.
    pub fn set_warm_start(&mut self, warm: WarmStart) -> Result<(), SimError> {
        let bad = |reason: String| {
            Err(SimError::InvalidParameter {
                name: "warm_start",
                reason,
            })
        };
        let (nlimits, nrows) = (2 * self.model.nbodies, RowKind::slots(&self.model));
        if warm.limits.len() != nlimits || warm.rows.len() != nrows {
            return bad(format!(
                "{} joint-stop and {} row impulses, the model has {nlimits} and {nrows}",
                warm.limits.len(),
                warm.rows.len()
            ));
        }
        let ng = self.model.geometries.len() as u32;
        for (k, l) in warm.contacts.iter().chain(&warm.contact_spins) {
            if k.geom_a >= ng || k.geom_b >= ng {
                return bad(format!(
                    "a contact between geometries {} and {} (the model has {ng})",
                    k.geom_a, k.geom_b
                ));
            }
            if !l.iter().all(|x| x.is_finite()) {
                return bad(format!("contact impulse {l:?} is not finite"));
            }
        }
        if warm
            .limits
            .iter()
            .chain(&warm.rows)
            .any(|x| x.is_infinite())
        {
            return bad("an impulse is infinite".into());
        }
        if warm.rho.is_some_and(|r| !(r.is_finite() && r > 0.0)) {
            return bad(format!("ρ must be positive, got {:?}", warm.rho));
        }
        let nm = self.model.mocap.len();
        if !(warm.mocap.is_empty() || warm.mocap.len() == nm) {
            return bad(format!(
                "{} mocap poses, the model has {nm} mocap bodies",
                warm.mocap.len()
            ));
        }
        if let Some(m) = warm.mocap.iter().position(|p| !super::is_pose(p)) {
            return bad(format!(
                "mocap pose {m} is not finite with a rotation matrix"
            ));
        }
        // (The one check that sets what it checks: nothing else is set yet.)
        if !self.solver.set_finisher_scale(warm.finisher_scale) {
            return bad(format!(
                "finisher scale {} is not one of the {} solver's",
                warm.finisher_scale,
                self.solver.name()
            ));
        }
        self.warm.clear();
        for (k, l) in warm.contacts {
            self.warm.insert(k, Vec3::from(l));
        }
        self.spin_warm.clear();
        for (k, l) in warm.contact_spins {
            self.spin_warm.insert(k, Vec3::from(l));
        }
        self.limit_warm = warm.limits;
        self.row_warm = warm.rows;
        self.last_rho = warm.rho;
        self.solver.forget_kept();
        for i in 0..nm {
            let pose = warm
                .mocap
                .get(i)
                .copied()
                .unwrap_or(self.model.mocap[i].pose);
            self.set_mocap_pose(i, pose)?;
        }
        Ok(())
    }
}

/// A world's full state: its [`State`] and its [`WarmStart`].
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Snapshot {
    pub state: State,
    pub warm: WarmStart,
}

/// Version of the byte format of [`snapshots_to_bytes`].
const FORMAT: u32 = 1;

#[derive(serde::Serialize, serde::Deserialize)]
struct Stored<T> {
    format: u32,
    worlds: T,
}

/// Worlds' snapshots as bytes (CBOR, every number bit for bit), for
/// [`snapshots_from_bytes`].
pub fn snapshots_to_bytes(worlds: &[Snapshot]) -> Vec<u8> {
    let mut out = Vec::new();
    ciborium::into_writer(
        &Stored {
            format: FORMAT,
            worlds,
        },
        &mut out,
    )
    .expect("writing to a Vec cannot fail");
    out
}

/// The snapshots [`snapshots_to_bytes`] wrote; bytes that do not decode or
/// of another format version are refused. (Each snapshot is checked
/// against its model when it is restored.)
pub fn snapshots_from_bytes(bytes: &[u8]) -> Result<Vec<Snapshot>, SimError> {
    let bad = |reason: String| SimError::InvalidParameter {
        name: "snapshot",
        reason,
    };
    let stored: Stored<Vec<Snapshot>> =
        ciborium::from_reader(bytes).map_err(|e| bad(format!("not a moreau snapshot ({e})")))?;
    if stored.format != FORMAT {
        return Err(bad(format!(
            "format version {} (this moreau reads version {FORMAT})",
            stored.format
        )));
    }
    Ok(stored.worlds)
}
