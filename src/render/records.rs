//! The renderer's records, each a `#[repr(C)]` struct whose WGSL struct is
//! generated from it (`gpu::contract`) and prepended to
//! `shaders/render.wgsl`. The renderer writes them as flat floats, record
//! after record, of these sizes.

use bytemuck::{Pod, Zeroable};

/// One shape of one world.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct RenderInstance {
    /// Shape frame → world, a 4 × 4 matrix, column-major.
    pub model: [f32; 16],
    /// rgb, and w > 0.5 for a checkered plane.
    pub color: [f32; 4],
}
crate::wgsl_record!(RenderInstance as "Instance" {
    model: "mat4x4<f32>",
    color: "vec4<f32>",
});

/// One world's camera.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct RenderCamera {
    pub view_proj: [f32; 16],
    pub view: [f32; 16],
    /// The light's direction towards it, world frame (w unused).
    pub light: [f32; 4],
}
crate::wgsl_record!(RenderCamera as "Camera" {
    view_proj: "mat4x4<f32>",
    view: "mat4x4<f32>",
    light: "vec4<f32>",
});

/// The draw's parameters (uniform).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct RenderParams {
    /// Instances per world: instance k belongs to world k / per_world.
    pub per_world: u32,
    pub _pad0: u32,
    pub _pad1: u32,
    pub _pad2: u32,
}
crate::wgsl_record!(RenderParams as "Params" {
    per_world: "u32",
    _pad0: "u32",
    _pad1: "u32",
    _pad2: "u32",
});

/// The renderer's WGSL: its records' structs, then `shaders/render.wgsl`.
pub fn source() -> String {
    use crate::gpu::contract::declaration;
    format!(
        "{}{}{}{}",
        declaration::<RenderInstance>(),
        declaration::<RenderCamera>(),
        declaration::<RenderParams>(),
        include_str!("../../shaders/render.wgsl")
    )
}
