//! The WGSL sources the kernels are compiled from, assembled in one order:
//! a header of constants generated from Rust (so that a flag, a model
//! number or a tuning constant has one definition, here or in the CPU
//! solver it mirrors), `shaders/cone.wgsl` (pure functions: cones, pyramid,
//! residuals), `shaders/common.wgsl` (the batch layout and bindings), then
//! the kernel's own file. `tests/wgsl.rs` parses every assembled source with
//! naga, reads each generated constant back, and checks the WGSL structs'
//! sizes against their `#[repr(C)]` twins.

use super::batch::{
    FLAGS, FLAGS_KEPT_WHEN_CUT, GpuContact, GpuParams, GpuProblem, GpuResult, LANE_SEGMENTS,
    ROW_BILATERAL, ROW_BOUNDS_CONES, ROW_CONE, ROW_UNILATERAL, STATE_DONE, STATE_FRESH,
    STATE_RUNNING,
};
use super::kernel::BatchKernel;
use crate::contact::KernelModel;
use crate::gpu::contract::{WgslConst, declaration, header};

pub use crate::gpu::contract::{WgslValue, mode_code, mode_constants};

/// `shaders/cone.wgsl`.
pub const CONE: &str = include_str!("../../../shaders/cone.wgsl");
/// `shaders/common.wgsl`.
pub const COMMON: &str = include_str!("../../../shaders/common.wgsl");

/// The WGSL structs of the problem records (`Problem`, `Contact`,
/// `SolveResult`, generated from their twins in `batch.rs`), which the
/// solver kernels and the resident contact stage share.
pub fn problem_structs() -> String {
    format!(
        "{}{}{}",
        declaration::<GpuProblem>(),
        declaration::<GpuContact>(),
        declaration::<GpuResult>()
    )
}

/// The constants every kernel sees: the states of a solve, the models
/// (`contact::KernelModel`) and the problem flags (`gpu::FLAG_*`).
pub fn shared_constants() -> Vec<WgslConst> {
    let mut c = vec![
        WgslConst::u32("STATE_FRESH", STATE_FRESH),
        WgslConst::u32("STATE_RUNNING", STATE_RUNNING),
        WgslConst::u32("STATE_DONE", STATE_DONE),
        WgslConst::u32("LANE_SEGMENTS", LANE_SEGMENTS as u32),
        WgslConst::f32("ROW_UNILATERAL", ROW_UNILATERAL as f64),
        WgslConst::f32("ROW_BILATERAL", ROW_BILATERAL as f64),
        WgslConst::f32("ROW_CONE", ROW_CONE as f64),
        WgslConst::u32("ROW_BOUNDS_CONES", ROW_BOUNDS_CONES),
    ];
    c.extend(
        KernelModel::ALL
            .iter()
            .map(|&m| WgslConst::u32(m.wgsl_name(), m as u32)),
    );
    c.extend(FLAGS.iter().map(|f| WgslConst::u32(f.wgsl_name, f.bit)));
    c.push(WgslConst::u32("FLAGS_KEPT_WHEN_CUT", FLAGS_KEPT_WHEN_CUT));
    c
}

/// Every constant `kernel`'s source is given: the shared ones, then its own.
pub fn constants(kernel: &dyn BatchKernel) -> Vec<WgslConst> {
    let mut c = shared_constants();
    c.extend(kernel.constants());
    c
}

/// The complete source `kernel` is compiled from: the constants, the
/// records' structs (generated from their Rust twins), `cone.wgsl`,
/// `common.wgsl`, then the kernel's file.
pub fn kernel_source(kernel: &dyn BatchKernel) -> String {
    format!(
        "{}{}{}\n{CONE}\n{COMMON}\n{}",
        header(&constants(kernel)),
        declaration::<GpuParams>(),
        problem_structs(),
        kernel.wgsl()
    )
}

/// The pure functions of `cone.wgsl` with the shared constants, for test
/// kernels that exercise them one by one (append an entry point).
pub fn functions_source() -> String {
    format!("{}\n{CONE}", header(&shared_constants()))
}
