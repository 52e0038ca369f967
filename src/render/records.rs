//! The renderer's records, each a `#[repr(C)]` struct whose WGSL struct is
//! generated from it (`gpu::contract`) and prepended to
//! `shaders/render.wgsl`. The renderer writes them as flat floats, record
//! after record, of these sizes.

use bytemuck::{Pod, Zeroable};

crate::wgsl_struct! {
    /// One shape of one world.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
    pub struct RenderInstance as "Instance" {
        /// Shape frame → world, a 4 × 4 matrix, column-major.
        pub model: [f32; 16] => "mat4x4<f32>",
        /// rgb, and w > 0.5 for a checkered plane.
        pub color: [f32; 4] => "vec4<f32>",
    }
}

crate::wgsl_struct! {
    /// One world's camera.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
    pub struct RenderCamera as "Camera" {
        pub view_proj: [f32; 16] => "mat4x4<f32>",
        pub view: [f32; 16] => "mat4x4<f32>",
        /// The light's direction towards it, world frame (w unused).
        pub light: [f32; 4] => "vec4<f32>",
    }
}

crate::wgsl_struct! {
    /// The draw's parameters (uniform).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
    pub struct RenderParams as "Params" {
        /// Instances per world: instance k belongs to world k / per_world.
        pub per_world: u32 => "u32",
        pub _pad0: u32 => "u32",
        pub _pad1: u32 => "u32",
        pub _pad2: u32 => "u32",
    }
}

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
