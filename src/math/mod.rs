//! Spatial algebra in f64 (nalgebra): rigid transforms `SE3`, spatial motion and
//! force vectors, rigid-body inertias, and the exponential / logarithm maps.
//!
//! Conventions (those of Pinocchio):
//! - a spatial vector is a `Vec6` stored **linear first**: motion `[v; ω]`,
//!   force `[f; n]`;
//! - `a_from_b: SE3` maps coordinates in frame `b` to coordinates in frame `a`
//!   (`p_a = R p_b + t`);
//! - quaternions in configuration vectors are stored `(x, y, z, w)`.

mod philox;
mod rng;
pub mod small;

pub use philox::{PhiloxStream, philox_constants, philox4x32};
pub use rng::Rng;

use nalgebra::{Matrix3, Matrix6, Quaternion, UnitQuaternion, Vector3, Vector6};

pub type Vec3 = Vector3<f64>;
pub type Mat3 = Matrix3<f64>;
pub type Vec6 = Vector6<f64>;
pub type Mat6 = Matrix6<f64>;

/// Skew-symmetric matrix `[a]×` such that `[a]× b = a × b`.
#[inline]
pub fn skew(a: &Vec3) -> Mat3 {
    Mat3::new(0.0, -a.z, a.y, a.z, 0.0, -a.x, -a.y, a.x, 0.0)
}

/// A symmetric matrix's six distinct entries in MuJoCo's `cinert` order:
/// `xx, yy, zz, xy, xz, yz`.
#[inline]
pub fn symmetric_entries(m: &Mat3) -> [f64; 6] {
    [
        m[(0, 0)],
        m[(1, 1)],
        m[(2, 2)],
        m[(0, 1)],
        m[(0, 2)],
        m[(1, 2)],
    ]
}

#[inline]
pub fn lin(m: &Vec6) -> Vec3 {
    Vec3::new(m[0], m[1], m[2])
}

#[inline]
pub fn ang(m: &Vec6) -> Vec3 {
    Vec3::new(m[3], m[4], m[5])
}

#[inline]
pub fn spatial(lin: &Vec3, ang: &Vec3) -> Vec6 {
    Vec6::new(lin.x, lin.y, lin.z, ang.x, ang.y, ang.z)
}

/// Spatial motion cross product `v × m` (Featherstone's `crm(v) m`).
#[inline]
pub fn motion_cross(v: &Vec6, m: &Vec6) -> Vec6 {
    let (vl, va, ml, ma) = (lin(v), ang(v), lin(m), ang(m));
    spatial(&(va.cross(&ml) + vl.cross(&ma)), &va.cross(&ma))
}

/// Spatial force cross product `v ×* f` (Featherstone's `crf(v) f`).
#[inline]
pub fn force_cross(v: &Vec6, f: &Vec6) -> Vec6 {
    let (vl, va, fl, fa) = (lin(v), ang(v), lin(f), ang(f));
    spatial(&va.cross(&fl), &(va.cross(&fa) + vl.cross(&fl)))
}

/// A rigid transform `a_from_b`: rotation then translation.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SE3 {
    pub rotation: Mat3,
    pub translation: Vec3,
}

impl Default for SE3 {
    fn default() -> Self {
        Self::identity()
    }
}

impl SE3 {
    pub fn identity() -> Self {
        SE3 {
            rotation: Mat3::identity(),
            translation: Vec3::zeros(),
        }
    }
    pub fn new(rotation: Mat3, translation: Vec3) -> Self {
        SE3 {
            rotation,
            translation,
        }
    }
    pub fn from_translation(t: Vec3) -> Self {
        SE3 {
            rotation: Mat3::identity(),
            translation: t,
        }
    }
    pub fn from_rotation(r: Mat3) -> Self {
        SE3 {
            rotation: r,
            translation: Vec3::zeros(),
        }
    }
    /// Rotation of `angle` radians about the unit `axis`, no translation.
    pub fn from_axis_angle(axis: &Vec3, angle: f64) -> Self {
        Self::from_rotation(exp3(&(axis.normalize() * angle)))
    }
    pub fn from_quaternion(q: &UnitQuaternion<f64>, t: Vec3) -> Self {
        SE3 {
            rotation: q.to_rotation_matrix().into_inner(),
            translation: t,
        }
    }
    pub fn quaternion(&self) -> UnitQuaternion<f64> {
        UnitQuaternion::from_rotation_matrix(&nalgebra::Rotation3::from_matrix_unchecked(
            self.rotation,
        ))
    }
    /// `self * other`: `a_from_b * b_from_c = a_from_c`.
    #[inline]
    pub fn mul(&self, other: &SE3) -> SE3 {
        SE3 {
            rotation: self.rotation * other.rotation,
            translation: self.rotation * other.translation + self.translation,
        }
    }
    #[inline]
    pub fn inverse(&self) -> SE3 {
        let rt = self.rotation.transpose();
        SE3 {
            rotation: rt,
            translation: -(rt * self.translation),
        }
    }
    /// `self⁻¹ * other` without forming the inverse.
    #[inline]
    pub fn inv_mul(&self, other: &SE3) -> SE3 {
        let rt = self.rotation.transpose();
        SE3 {
            rotation: rt * other.rotation,
            translation: rt * (other.translation - self.translation),
        }
    }
    #[inline]
    pub fn act_point(&self, p: &Vec3) -> Vec3 {
        self.rotation * p + self.translation
    }
    #[inline]
    pub fn act_inv_point(&self, p: &Vec3) -> Vec3 {
        self.rotation.transpose() * (p - self.translation)
    }
    /// Motion vector expressed in `b` → expressed in `a`.
    #[inline]
    pub fn act_motion(&self, m: &Vec6) -> Vec6 {
        let w = self.rotation * ang(m);
        let v = self.rotation * lin(m) + self.translation.cross(&w);
        spatial(&v, &w)
    }
    /// Motion vector expressed in `a` → expressed in `b`.
    #[inline]
    pub fn act_inv_motion(&self, m: &Vec6) -> Vec6 {
        let rt = self.rotation.transpose();
        let (v, w) = (lin(m), ang(m));
        spatial(&(rt * (v - self.translation.cross(&w))), &(rt * w))
    }
    /// Force vector expressed in `b` → expressed in `a`.
    #[inline]
    pub fn act_force(&self, f: &Vec6) -> Vec6 {
        let fl = self.rotation * lin(f);
        let n = self.rotation * ang(f) + self.translation.cross(&fl);
        spatial(&fl, &n)
    }
    /// The 6×6 matrix of `act_motion` (Featherstone's `X`).
    pub fn action_matrix(&self) -> Mat6 {
        let mut x = Mat6::zeros();
        x.fixed_view_mut::<3, 3>(0, 0).copy_from(&self.rotation);
        x.fixed_view_mut::<3, 3>(3, 3).copy_from(&self.rotation);
        x.fixed_view_mut::<3, 3>(0, 3)
            .copy_from(&(skew(&self.translation) * self.rotation));
        x
    }
    pub fn is_finite(&self) -> bool {
        self.rotation.iter().all(|x| x.is_finite())
            && self.translation.iter().all(|x| x.is_finite())
    }
}

/// Rigid-body inertia: mass, centre of mass (in the body frame) and rotational
/// inertia about the centre of mass (in the body frame's orientation).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Inertia {
    pub mass: f64,
    pub com: Vec3,
    pub rotational: Mat3,
}

impl Inertia {
    pub fn new(mass: f64, com: Vec3, rotational: Mat3) -> Self {
        Inertia {
            mass,
            com,
            rotational,
        }
    }
    pub fn zero() -> Self {
        Inertia {
            mass: 0.0,
            com: Vec3::zeros(),
            rotational: Mat3::zeros(),
        }
    }
    /// Solid box of full side lengths `size`, centred at the origin.
    pub fn cuboid(mass: f64, size: Vec3) -> Self {
        let (x2, y2, z2) = (size.x * size.x, size.y * size.y, size.z * size.z);
        let d = Vec3::new(y2 + z2, x2 + z2, x2 + y2) * (mass / 12.0);
        Inertia::new(mass, Vec3::zeros(), Mat3::from_diagonal(&d))
    }
    /// Solid sphere centred at the origin.
    pub fn sphere(mass: f64, radius: f64) -> Self {
        let i = 0.4 * mass * radius * radius;
        Inertia::new(mass, Vec3::zeros(), Mat3::from_diagonal_element(i))
    }
    /// Solid cylinder along z, centred at the origin.
    pub fn cylinder(mass: f64, radius: f64, length: f64) -> Self {
        let ixy = mass * (3.0 * radius * radius + length * length) / 12.0;
        let iz = 0.5 * mass * radius * radius;
        Inertia::new(
            mass,
            Vec3::zeros(),
            Mat3::from_diagonal(&Vec3::new(ixy, ixy, iz)),
        )
    }
    /// Solid capsule along z (cylinder of `length` plus two hemispheres), centred.
    pub fn capsule(mass: f64, radius: f64, length: f64) -> Self {
        let (r, h) = (radius, length);
        let vc = std::f64::consts::PI * r * r * h;
        let vs = 4.0 / 3.0 * std::f64::consts::PI * r * r * r;
        let (mc, ms) = (mass * vc / (vc + vs), mass * vs / (vc + vs));
        let iz = mc * r * r / 2.0 + ms * 2.0 * r * r / 5.0;
        let ixy = mc * (h * h / 12.0 + r * r / 4.0)
            + ms * (2.0 * r * r / 5.0 + h * h / 4.0 + 3.0 * h * r / 8.0);
        Inertia::new(
            mass,
            Vec3::zeros(),
            Mat3::from_diagonal(&Vec3::new(ixy, ixy, iz)),
        )
    }
    /// The same inertia moved by `a_from_b` (self expressed in `b`).
    pub fn transformed(&self, a_from_b: &SE3) -> Inertia {
        let r = &a_from_b.rotation;
        Inertia {
            mass: self.mass,
            com: a_from_b.act_point(&self.com),
            rotational: r * self.rotational * r.transpose(),
        }
    }
    /// Sum of two inertias expressed in the same frame.
    pub fn add(&self, other: &Inertia) -> Inertia {
        let m = self.mass + other.mass;
        if m <= 0.0 {
            return Inertia::zero();
        }
        let c = (self.com * self.mass + other.com * other.mass) / m;
        let shift = |i: &Inertia| {
            let d = i.com - c;
            i.rotational - skew(&d) * skew(&d) * i.mass
        };
        Inertia {
            mass: m,
            com: c,
            rotational: shift(self) + shift(other),
        }
    }
    /// 6×6 spatial inertia about the frame origin, linear-first:
    /// `[[m I, -m [c]×], [m [c]×, I_c - m [c]×²]]`.
    pub fn matrix(&self) -> Mat6 {
        let mut out = Mat6::zeros();
        self.write_matrix(&mut out);
        out
    }
    #[inline]
    pub fn write_matrix(&self, out: &mut Mat6) {
        let mc = skew(&self.com) * self.mass;
        out.fixed_view_mut::<3, 3>(0, 0)
            .copy_from(&Mat3::from_diagonal_element(self.mass));
        out.fixed_view_mut::<3, 3>(0, 3).copy_from(&(-mc));
        out.fixed_view_mut::<3, 3>(3, 0).copy_from(&mc);
        out.fixed_view_mut::<3, 3>(3, 3)
            .copy_from(&(self.rotational - skew(&self.com) * mc));
    }
    /// The inertia of a 6×6 spatial inertia about the frame origin (the
    /// inverse of [`Self::matrix`]; zero for a massless matrix).
    pub fn from_matrix(m: &Mat6) -> Inertia {
        let mass = m[(0, 0)];
        if mass <= 0.0 {
            return Inertia::new(mass, Vec3::zeros(), Mat3::zeros());
        }
        // The lower-left block is m [c]×.
        let mc = m.fixed_view::<3, 3>(3, 0);
        let com = Vec3::new(mc[(2, 1)], mc[(0, 2)], mc[(1, 0)]) / mass;
        let about_origin = m.fixed_view::<3, 3>(3, 3).into_owned();
        let rotational = about_origin + skew(&com) * skew(&com) * mass;
        Inertia::new(mass, com, (rotational + rotational.transpose()) / 2.0)
    }
    /// Momentum `I v` of a body moving with spatial velocity `v` (same frame).
    #[inline]
    pub fn apply(&self, v: &Vec6) -> Vec6 {
        let (vl, w) = (lin(v), ang(v));
        let h = (vl - self.com.cross(&w)) * self.mass;
        spatial(&h, &(self.rotational * w + self.com.cross(&h)))
    }
}

/// Rodrigues: rotation matrix `exp([w]×)`.
pub fn exp3(w: &Vec3) -> Mat3 {
    let t2 = w.norm_squared();
    let t = t2.sqrt();
    let (a, b) = if t < 1e-4 {
        (
            1.0 - t2 / 6.0 + t2 * t2 / 120.0,
            0.5 - t2 / 24.0 + t2 * t2 / 720.0,
        )
    } else {
        (t.sin() / t, (1.0 - t.cos()) / t2)
    };
    let k = skew(w);
    Mat3::identity() + k * a + k * k * b
}

/// Inverse of `exp3` for a rotation matrix, angle in `[0, π]`.
pub fn log3(r: &Mat3) -> Vec3 {
    let q = UnitQuaternion::from_rotation_matrix(&nalgebra::Rotation3::from_matrix_unchecked(*r));
    quat_log(&q)
}

/// Unit quaternion `exp(w/2)`: the rotation of vector `w` (axis × angle).
pub fn quat_exp(w: &Vec3) -> UnitQuaternion<f64> {
    let t2 = w.norm_squared();
    let t = t2.sqrt();
    let (c, s) = if t < 1e-4 {
        // sin(t/2)/t and cos(t/2) by their Taylor series.
        (
            1.0 - t2 / 8.0 + t2 * t2 / 384.0,
            0.5 - t2 / 48.0 + t2 * t2 / 3840.0,
        )
    } else {
        ((0.5 * t).cos(), (0.5 * t).sin() / t)
    };
    UnitQuaternion::new_unchecked(Quaternion::new(c, w.x * s, w.y * s, w.z * s))
}

/// Rotation vector of a unit quaternion (shortest rotation, angle ≤ π).
pub fn quat_log(q: &UnitQuaternion<f64>) -> Vec3 {
    let (mut w, mut v) = (q.w, q.imag());
    if w < 0.0 {
        w = -w;
        v = -v;
    }
    let n = v.norm();
    if n < 1e-8 {
        // 2 atan2(n, w)/n ≈ 2/w (1 - n²/(3w²))
        v * (2.0 / w) * (1.0 - n * n / (3.0 * w * w))
    } else {
        v * (2.0 * n.atan2(w) / n)
    }
}

/// Left Jacobian factor `V(w)` of SO(3) used by the SE(3) exponential:
/// `V = I + (1 - cos t)/t² [w]× + (t - sin t)/t³ [w]×²`.
pub fn so3_left_jacobian(w: &Vec3) -> Mat3 {
    let t2 = w.norm_squared();
    let t = t2.sqrt();
    let (a, b) = if t < 1e-4 {
        (
            0.5 - t2 / 24.0 + t2 * t2 / 720.0,
            1.0 / 6.0 - t2 / 120.0 + t2 * t2 / 5040.0,
        )
    } else {
        ((1.0 - t.cos()) / t2, (t - t.sin()) / (t2 * t))
    };
    let k = skew(w);
    Mat3::identity() + k * a + k * k * b
}

/// SE(3) exponential of a twist `[v; w]` (body-frame): the transform reached
/// after unit time at constant twist.
pub fn exp6(xi: &Vec6) -> SE3 {
    let (v, w) = (lin(xi), ang(xi));
    SE3 {
        rotation: exp3(&w),
        translation: so3_left_jacobian(&w) * v,
    }
}

/// SE(3) logarithm, inverse of `exp6`.
pub fn log6(m: &SE3) -> Vec6 {
    let w = log3(&m.rotation);
    let vinv = so3_left_jacobian(&w)
        .try_inverse()
        .unwrap_or_else(Mat3::identity);
    spatial(&(vinv * m.translation), &w)
}

/// Quaternion stored `(x, y, z, w)` in `q[0..4]` as a unit quaternion (normalized).
#[inline]
pub fn quat_from_slice(q: &[f64]) -> UnitQuaternion<f64> {
    UnitQuaternion::from_quaternion(Quaternion::new(q[3], q[0], q[1], q[2]))
}

#[inline]
pub fn quat_to_slice(q: &UnitQuaternion<f64>, out: &mut [f64]) {
    out[0] = q.i;
    out[1] = q.j;
    out[2] = q.k;
    out[3] = q.w;
}

/// The world axis [`frame_from_normal`] projects to get its first tangent.
fn reference_axis(n: &Vec3) -> Vec3 {
    if n.x.abs() < 0.6 {
        Vec3::x()
    } else if n.y.abs() < 0.6 {
        Vec3::y()
    } else {
        Vec3::z()
    }
}

/// Orthonormal contact frame whose third column is the unit normal `n`.
/// The tangent `t1` is the projection of the world axis least aligned with `n`,
/// so the frame is the identity for `n = +z` and varies smoothly with `n`
/// away from the switch between axes.
pub fn frame_from_normal(n: &Vec3) -> Mat3 {
    let a = reference_axis(n);
    let t1 = (a - n * a.dot(n)).normalize();
    let t2 = n.cross(&t1);
    Mat3::from_columns(&[t1, t2, *n])
}

/// The change of [`frame_from_normal`]`(n)` when the unit normal `n`
/// changes by `dn` (`dn ⟂ n`), to first order (within the same choice of
/// reference axis: the frame jumps where `|n_x|` or `|n_y|` crosses 0.6).
pub fn frame_from_normal_variation(n: &Vec3, dn: &Vec3) -> Mat3 {
    let a = reference_axis(n);
    let u = a - n * a.dot(n);
    let (norm, t1) = (u.norm(), u.normalize());
    let du = -(dn * a.dot(n) + n * a.dot(dn));
    let dt1 = (du - t1 * t1.dot(&du)) / norm;
    let dt2 = dn.cross(&t1) + n.cross(&dt1);
    Mat3::from_columns(&[dt1, dt2, *dn])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp_log_roundtrip() {
        for xi in [
            Vec6::new(0.1, -0.2, 0.3, 0.4, -0.5, 0.6),
            Vec6::new(1.0, 2.0, 3.0, 1e-7, 0.0, -2e-7),
            Vec6::new(0.0, 0.0, 0.0, 3.0, 0.1, 0.0),
        ] {
            let back = log6(&exp6(&xi));
            assert!((back - xi).norm() < 1e-9, "{xi:?} -> {back:?}");
        }
        let w = Vec3::new(0.3, -1.1, 0.7);
        assert!((quat_log(&quat_exp(&w)) - w).norm() < 1e-12);
        let r = quat_exp(&w).to_rotation_matrix().into_inner();
        assert!((exp3(&w) - r).norm() < 1e-12);
    }

    #[test]
    fn action_matrix_matches_act_motion() {
        let m = SE3::new(exp3(&Vec3::new(0.2, 0.3, -0.4)), Vec3::new(1.0, -2.0, 0.5));
        let v = Vec6::new(0.1, 0.2, 0.3, -0.4, 0.5, 0.6);
        assert!((m.action_matrix() * v - m.act_motion(&v)).norm() < 1e-12);
        assert!((m.act_inv_motion(&m.act_motion(&v)) - v).norm() < 1e-12);
        // Power is frame-invariant: f·v in a equals f·v in b.
        let f = Vec6::new(-1.0, 0.5, 2.0, 0.3, 0.1, -0.7);
        assert!((m.act_force(&f).dot(&m.act_motion(&v)) - f.dot(&v)).abs() < 1e-12);
        let i = Inertia::new(
            2.0,
            Vec3::new(0.1, 0.0, -0.2),
            Mat3::from_diagonal(&Vec3::new(0.1, 0.2, 0.25)),
        );
        assert!((i.matrix() * v - i.apply(&v)).norm() < 1e-12);
        // Moving the inertia then the velocity gives the moved momentum.
        let it = i.transformed(&m);
        assert!((it.apply(&m.act_motion(&v)) - m.act_force(&i.apply(&v))).norm() < 1e-12);
    }

    #[test]
    fn contact_frame_is_right_handed() {
        for n in [
            Vec3::z(),
            Vec3::new(0.8, 0.0, 0.6),
            Vec3::new(0.0, -1.0, 0.0),
        ] {
            let f = frame_from_normal(&n);
            assert!((f.transpose() * f - Mat3::identity()).norm() < 1e-12);
            assert!((f.determinant() - 1.0).abs() < 1e-12);
            assert!((f.column(2) - n).norm() < 1e-12);
        }
        assert_eq!(frame_from_normal(&Vec3::z()), Mat3::identity());
    }
}
