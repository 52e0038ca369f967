use super::Data;
use crate::math::{SE3, Vec3, Vec6, ang, lin, spatial};
use crate::model::Model;
use nalgebra::DMatrix;

/// Frame in which a Jacobian's rows are expressed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReferenceFrame {
    /// Spatial velocity in the world frame, at the world origin.
    World,
    /// Body twist of the frame, in the frame's own axes.
    Local,
    /// Velocity of the frame origin and angular velocity, in world axes.
    LocalWorldAligned,
}

/// Placement in the world of a frame fixed on `body` at `body_from_frame`,
/// after [`super::forward_kinematics`].
pub fn frame_placement(data: &Data, body: usize, body_from_frame: &SE3) -> SE3 {
    data.world_from_body[body].mul(body_from_frame)
}

/// Velocity of the body point currently at world position `p` produced by a
/// unit rate of the dof whose world-frame motion column is `s`: `s_v + s_ω × p`.
#[inline]
pub fn point_velocity_column(s: &Vec6, p: &Vec3) -> Vec3 {
    lin(s) + ang(s).cross(p)
}

/// Jacobian (6, nv) of a frame attached to `body`, after
/// [`super::forward_kinematics`]. Columns of dofs not supporting the body are
/// zero; `out` is resized to 6 × nv if needed. `body` must be a body index of the model.
pub fn frame_jacobian(
    model: &Model,
    data: &Data,
    body: usize,
    body_from_frame: &SE3,
    reference: ReferenceFrame,
    out: &mut DMatrix<f64>,
) {
    if out.shape() != (6, model.nv) {
        *out = DMatrix::zeros(6, model.nv);
    }
    out.fill(0.0);
    let wff = frame_placement(data, body, body_from_frame);
    for k in model.support_dofs(body) {
        let s = &data.dof_jacobian[k];
        let col = match reference {
            ReferenceFrame::World => *s,
            ReferenceFrame::Local => wff.act_inv_motion(s),
            ReferenceFrame::LocalWorldAligned => {
                spatial(&point_velocity_column(s, &wff.translation), &ang(s))
            }
        };
        out.set_column(k, &col);
    }
}
