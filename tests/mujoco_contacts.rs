//! Stage tests of collision detection and of the Delassus matrix against
//! MuJoCo, on Gymnasium's ant and humanoid at poses where their limbs press
//! into the floor: the contacts moreau finds (geometries, signed distance,
//! point, normal), and `G = J M⁻¹ Jᵀ` at those contacts, built as the
//! solver builds it (contact Jacobian, tree factorization of `M`), in
//! MuJoCo's contact frames. MuJoCo's numbers are
//! tests/data/mujoco/contacts.json, written by
//! tests/data/mujoco/contacts_reference.py (MuJoCo 4.0.0; see its header).

mod common;

use moreau::collision::{CollisionDetector, Contact};
use moreau::contact::delassus::{ContactJacobian, contact_jacobian, delassus_dense, delassus_ltdl};
use moreau::dynamics::{Data, crba, ltdl_factorize};
use moreau::load::mjcf::MjcfModel;
use moreau::math::{Mat3, Vec3};
use nalgebra::DMatrix;
use serde::Deserialize;

#[derive(Deserialize)]
struct Versions {
    mujoco: String,
}

#[derive(Deserialize)]
struct Reference {
    versions: Versions,
    files: Vec<FileReference>,
}

#[derive(Deserialize)]
struct FileReference {
    file: String,
    poses: Vec<Pose>,
}

#[derive(Deserialize)]
struct Pose {
    qpos: Vec<f64>,
    contacts: Vec<MjContact>,
    /// (3·ncon)², row-major; rows per contact: two tangents, then the normal.
    delassus: Vec<f64>,
}

/// One of MuJoCo's `d.contact`.
#[derive(Deserialize)]
struct MjContact {
    geom1: String,
    geom2: String,
    dist: f64,
    pos: [f64; 3],
    /// Rows: the normal (from geom1 to geom2), then the two tangents.
    frame: [f64; 9],
    margin: f64,
}

impl MjContact {
    fn normal(&self) -> Vec3 {
        Vec3::new(self.frame[0], self.frame[1], self.frame[2])
    }
    /// Columns `t1, t2, n`: moreau's layout of a contact frame.
    fn frame(&self) -> Mat3 {
        let f = &self.frame;
        Mat3::new(f[3], f[6], f[0], f[4], f[7], f[1], f[5], f[8], f[2])
    }
}

fn reference() -> Reference {
    let r: Reference = serde_json::from_str(include_str!("data/mujoco/contacts.json"))
        .expect("contacts.json parses");
    assert_eq!(r.versions.mujoco, "4.0.0");
    r
}

/// Each pose of each file: the loaded model, its data after the kinematics
/// and the mass matrix at MuJoCo's `qpos`, the contacts moreau finds with
/// MuJoCo's margin, and MuJoCo's.
fn for_each_pose(mut each: impl FnMut(&str, &MjcfModel, &mut Data, &[Contact], &Pose)) {
    for file in reference().files {
        let Some(m) = common::gymnasium(&file.file) else {
            return;
        };
        let model = &m.model;
        for pose in &file.poses {
            let q = m.q_from_mujoco(&pose.qpos).unwrap();
            let mut data = Data::new(model);
            crba(model, &mut data, q.as_slice());
            let margin = pose.contacts.iter().map(|c| c.margin).fold(0.0, f64::max);
            let mut detector = CollisionDetector::new(model, margin);
            let mut contacts = Vec::new();
            detector.detect(model, &data, &mut contacts).unwrap();
            each(&file.file, &m, &mut data, &contacts, pose);
        }
    }
}

/// The index of moreau's contact for MuJoCo's `c`: the same two geometries
/// and the same point.
fn matching(m: &MjcfModel, contacts: &[Contact], c: &MjContact) -> Option<usize> {
    let name = |g: usize| m.model.geometries[g].name.as_str();
    contacts.iter().position(|k| {
        let pair = (name(k.geom_a), name(k.geom_b));
        (pair == (&c.geom1, &c.geom2) || pair == (&c.geom2, &c.geom1))
            && (k.point - Vec3::from(c.pos)).norm() < 1e-6
    })
}

#[test]
fn collision_stage_matches_mujoco_on_gymnasium_files() {
    let mut poses = 0;
    for_each_pose(|file, m, _data, contacts, pose| {
        poses += 1;
        assert!(!pose.contacts.is_empty(), "{file}: a pose without contacts");
        assert_eq!(
            contacts.len(),
            pose.contacts.len(),
            "{file}: {} contacts, MuJoCo {}: {:?}",
            contacts.len(),
            pose.contacts.len(),
            contacts
                .iter()
                .map(|k| (
                    &m.model.geometries[k.geom_a].name,
                    &m.model.geometries[k.geom_b].name,
                    k.distance
                ))
                .collect::<Vec<_>>()
        );
        for c in &pose.contacts {
            let k = matching(m, contacts, c).unwrap_or_else(|| {
                panic!(
                    "{file}: MuJoCo's contact {} / {} at {:?} not found",
                    c.geom1, c.geom2, c.pos
                )
            });
            let k = &contacts[k];
            let what = format!("{file}: {} / {}", c.geom1, c.geom2);
            assert!(
                (k.distance - c.dist).abs() < 1e-9,
                "{what}: distance {} vs {}",
                k.distance,
                c.dist
            );
            assert!((k.point - Vec3::from(c.pos)).norm() < 1e-9, "{what}: point");
            // moreau's normal points from b to a, MuJoCo's from geom1 to geom2.
            let alignment = k.normal().dot(&c.normal());
            assert!(
                (alignment.abs() - 1.0).abs() < 1e-12,
                "{what}: normal {alignment}"
            );
            let b_is_geom1 = m.model.geometries[k.geom_b].name == c.geom1;
            assert_eq!(alignment > 0.0, b_is_geom1, "{what}: normal's direction");
        }
    });
    assert!(poses == 0 || poses == 8, "{poses} poses");
}

#[test]
fn delassus_stage_matches_mujoco_on_gymnasium_files() {
    for_each_pose(|file, m, data, contacts, pose| {
        let model = &m.model;
        // moreau's contacts in MuJoCo's order.
        let order: Vec<usize> = pose
            .contacts
            .iter()
            .map(|c| matching(m, contacts, c).expect("the collision stage test passes"))
            .collect();
        let ours: Vec<Contact> = order.iter().map(|&k| contacts[k]).collect();
        ltdl_factorize(model, data);
        let mut cj = ContactJacobian::default();
        contact_jacobian(model, data, &ours, &mut cj);
        let mut g = DMatrix::zeros(0, 0);
        delassus_ltdl(model, data, &mut cj, &mut g);
        let dense = delassus_dense(data, &cj.jacobian);
        // MuJoCo's G in moreau's frames: contact c's rows are
        // `s Fᵀ F_mj` times MuJoCo's (F: moreau's frame, F_mj: MuJoCo's,
        // s = -1 where moreau's a is MuJoCo's geom1).
        let n = 3 * ours.len();
        let mut r = DMatrix::zeros(n, n);
        for (i, (k, c)) in ours.iter().zip(&pose.contacts).enumerate() {
            let s = k.normal().dot(&c.normal()).signum();
            let block = k.frame.transpose() * c.frame() * s;
            r.view_mut((3 * i, 3 * i), (3, 3)).copy_from(&block);
        }
        let mujoco = DMatrix::from_row_slice(n, n, &pose.delassus);
        let want = &r * mujoco * r.transpose();
        let scale = want.abs().max();
        for (name, got) in [("tree (LTDL)", &g), ("dense Cholesky", &dense)] {
            let err = (got - &want).abs().max();
            println!(
                "{file}: {} contacts, {name}: |G - G_mujoco| = {err:.1e} of {scale:.1e}",
                ours.len()
            );
            assert!(
                err < 1e-9 * scale,
                "{file}, {name}: {err:e} of {scale:e}\n{got}\n{want}"
            );
        }
    });
}
