//! MJCF texts and helpers shared by the MJCF tests (tests/mjcf*.rs).

use moreau::load::mjcf::{MjcfModel, MjcfOptions, parse_mjcf};
use std::path::Path;

/// A hand-written model using every supported feature: default classes
/// (nested, `class`, `childclass`), degrees, `euler`, `axisangle`, `xyaxes`,
/// `zaxis`, `quat`, a slide and a hinge with `ref` and offset anchors in one
/// body, two hinges at different anchors in another, a ball joint, `fromto`
/// capsules and cylinder, a box, an ellipsoid, an inline mesh, `<inertial>`
/// with `diaginertia` + `quat` and with `fullinertia`, a welded body, an
/// exclusion, a motor, a plain `general` actuator and an unsupported one.
/// MuJoCo's numbers for it: tests/data/mujoco/features.json.
pub const FEATURES: &str = include_str!("../data/mujoco/features.xml");

/// Frames, `eulerseq="ZYX"`, radians, a `childclass` on a frame: two bodies
/// whose placements compose several frames. MuJoCo's numbers for it:
/// tests/data/mujoco/frames.json.
pub const FRAMES: &str = include_str!("../data/mujoco/frames.xml");

/// A small pendulum with a slider, a default class, an inline mesh, a floor
/// and a motor: the base of the bad-file and warning tests.
pub const PENDULUM: &str = r#"<mujoco model="pendulum">
  <default>
    <default class="arm"><geom size="0.05"/></default>
  </default>
  <asset><mesh name="tetra" vertex="0 0 0  0.1 0 0  0 0.1 0  0 0 0.1"/></asset>
  <worldbody>
    <geom name="floor" type="plane" size="1 1 0.1"/>
    <body name="link" pos="0 0 1">
      <joint name="hinge" type="hinge" axis="0 1 0" range="-90 90"/>
      <geom name="rod" class="arm" type="capsule" fromto="0 0 0 0 0 -0.5"/>
      <body name="tip" pos="0 0 -0.5">
        <joint name="slider" type="slide" axis="0 0 1"/>
        <geom name="ball" type="sphere" size="0.1"/>
        <geom name="spike" type="mesh" mesh="tetra"/>
      </body>
    </body>
  </worldbody>
  <actuator><motor name="m" joint="hinge" gear="10"/></actuator>
</mujoco>"#;

/// Parses MJCF text (as `test.xml`), panicking with the loader's error.
pub fn parse(text: &str) -> MjcfModel {
    parse_mjcf(text, "test.xml", Path::new("."), &MjcfOptions::default())
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Relative error `|a − b| / max(|b|, 1e-12)`.
pub fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / b.abs().max(1e-12)
}

/// The loader's error for MJCF text (as `test.xml`), panicking if it loads.
#[allow(dead_code)]
pub fn parse_err(text: &str) -> moreau::load::mjcf::ModelFileError {
    match parse_mjcf(text, "test.xml", Path::new("."), &MjcfOptions::default()) {
        Ok(_) => panic!("loaded: {text}"),
        Err(e) => e,
    }
}
