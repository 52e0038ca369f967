//! Bad MJCF files are refused naming the file, the element and the reason;
//! mutated files never make the loader or the simulator panic.

mod common;

use common::mjcf::{FEATURES, FRAMES, PENDULUM};
use moreau::load::mjcf::{MjcfOptions, load_mjcf, parse_mjcf};
use moreau::sim::{SimParams, Simulator, State};
use nalgebra::DVector;
use std::path::Path;
use std::sync::Arc;

#[test]
fn bad_files_are_refused_naming_file_element_and_reason() {
    let swap = |from: &str, to: &str| {
        assert!(PENDULUM.contains(from), "{from}");
        PENDULUM.replacen(from, to, 1)
    };
    let mut cases: Vec<(&str, String, &str, &str)> = vec![
        (
            "malformed XML",
            PENDULUM.replace("</mujoco>", ""),
            "XML",
            "",
        ),
        (
            "not MJCF",
            "<robot name='r'/>".into(),
            "<robot>",
            "root element",
        ),
        (
            "missing mesh file",
            swap(
                r#"vertex="0 0 0  0.1 0 0  0 0.1 0  0 0 0.1""#,
                r#"file="no/such.stl""#,
            ),
            r#"<mesh name="tetra">"#,
            "not found",
        ),
        (
            "unknown joint type",
            swap(r#"type="slide""#, r#"type="screw""#),
            r#"<joint name="slider">"#,
            "unknown joint type `screw`",
        ),
        (
            "motor on a missing joint",
            swap(r#"joint="hinge""#, r#"joint="elbow""#),
            r#"<motor name="m">"#,
            "unknown joint `elbow`",
        ),
        (
            "exclusion naming a missing body",
            PENDULUM.replace(
                "</mujoco>",
                r#"<contact><exclude body1="link" body2="hand"/></contact></mujoco>"#,
            ),
            "<exclude>",
            "no body named `hand`",
        ),
        (
            "zero mass on a moving body",
            swap(
                r#"type="sphere" size="0.1""#,
                r#"type="sphere" size="0.1" mass="0""#,
            )
            .replace(r#"mesh="tetra""#, r#"mesh="tetra" mass="0""#),
            r#"<body name="tip">"#,
            "positive mass",
        ),
        (
            "negative mass",
            swap(
                r#"<geom name="ball""#,
                r#"<inertial pos="0 0 0" mass="-1" diaginertia="1 1 1"/><geom name="ball""#,
            ),
            r#"<body name="tip"> <inertial>"#,
            "mass must not be negative",
        ),
        (
            "negative inertia",
            swap(
                r#"<geom name="ball""#,
                r#"<inertial pos="0 0 0" mass="1" diaginertia="1 1 -1"/><geom name="ball""#,
            ),
            r#"<body name="tip"> <inertial>"#,
            "diaginertia must not be negative",
        ),
        (
            "inertia not positive definite",
            swap(
                r#"<geom name="ball""#,
                r#"<inertial pos="0 0 0" mass="1" fullinertia="1 1 1 2 0 0"/><geom name="ball""#,
            ),
            r#"<body name="tip">"#,
            "positive definite",
        ),
        (
            "negative geom density",
            swap(r#"size="0.1""#, r#"size="0.1" density="-5""#),
            r#"<geom name="ball" type="sphere">"#,
            "must not be negative",
        ),
        (
            "too many sizes",
            swap(r#"size="0.1""#, r#"size="0.1 1 2 3""#),
            r#"<geom name="ball" type="sphere">"#,
            "at most 3",
        ),
        (
            "capsule without its half-length",
            swap(r#"fromto="0 0 0 0 0 -0.5""#, ""),
            r#"<geom name="rod" type="capsule">"#,
            "needs size[1]",
        ),
        (
            "negative radius",
            swap(r#"size="0.1""#, r#"size="-0.1""#),
            r#"<geom name="ball" type="sphere">"#,
            "must be positive",
        ),
        (
            "unknown geom type",
            swap(r#"type="sphere""#, r#"type="torus""#),
            r#"<geom name="ball" type="torus">"#,
            "unknown geom type `torus`",
        ),
        (
            "unknown default class",
            swap(r#"name="rod" class="arm""#, r#"name="rod" class="leg""#),
            r#"<geom name="rod">"#,
            "unknown default class `leg`",
        ),
        (
            "joint in the world body",
            swap(
                r#"<geom name="floor""#,
                r#"<joint name="j"/><geom name="floor""#,
            ),
            r#"<joint name="j">"#,
            "world body cannot have joints",
        ),
        (
            "free joint below the top level",
            swap(
                r#"<joint name="slider" type="slide" axis="0 0 1"/>"#,
                r#"<freejoint name="loose"/>"#,
            ),
            r#"<freejoint name="loose">"#,
            "top-level body",
        ),
        (
            "two orientations",
            swap(
                r#"pos="0 0 1""#,
                r#"pos="0 0 1" quat="1 0 0 0" euler="0 0 1""#,
            ),
            r#"<body name="link">"#,
            "several orientations",
        ),
        (
            "global coordinates",
            swap("<default>", r#"<compiler coordinate="global"/><default>"#),
            "<compiler>",
            "coordinate=\"global\"",
        ),
        (
            "a plane on a moving body",
            swap(r#"type="sphere""#, r#"type="plane""#),
            r#"<geom name="ball" type="plane">"#,
            "static bodies",
        ),
        (
            "a non-finite number",
            swap(r#"pos="0 0 1""#, r#"pos="0 nan 1""#),
            r#"<body name="link">"#,
            "`nan` is not a finite number",
        ),
        (
            "zero joint axis",
            swap(r#"axis="0 1 0""#, r#"axis="0 0 0""#),
            r#"<joint name="hinge">"#,
            "zero",
        ),
        (
            "inverted joint range",
            swap(r#"range="-90 90""#, r#"range="90 -90""#),
            r#"<joint name="hinge">"#,
            "lower < upper",
        ),
        (
            "duplicate body name",
            swap(r#"<body name="tip""#, r#"<body name="link""#),
            r#"<body name="link">"#,
            "duplicate body name",
        ),
        (
            "mocap body with a joint",
            swap(r#"<body name="link" pos="0 0 1">"#, r#"<body name="link" pos="0 0 1" mocap="true">"#),
            r#"<joint name="hinge">"#,
            "a mocap body has no joints",
        ),
        (
            "mocap body inside another body",
            swap(r#"<body name="tip" pos="0 0 -0.5">"#, r#"<body name="tip" pos="0 0 -0.5" mocap="true">"#),
            r#"<body name="tip">"#,
            "child of the world",
        ),
        (
            "mocap body carrying a body",
            swap(
                r#"<geom name="floor" type="plane" size="1 1 0.1"/>"#,
                r#"<body name="m" mocap="true"><body name="held"/></body>"#,
            ),
            r#"<body name="held">"#,
            "a body on mocap body",
        ),
        (
            "mocap body with a colliding geom",
            swap(
                r#"<geom name="floor" type="plane" size="1 1 0.1"/>"#,
                r#"<body name="m" mocap="true"><geom name="paddle" size="0.1"/></body>"#,
            ),
            r#"<geom name="paddle""#,
            "colliding geom on mocap body",
        ),
        (
            "mocap body welded to the world",
            PENDULUM.replace(
                "</worldbody>",
                r#"<body name="m" mocap="true"/></worldbody><equality><weld name="w" body1="m"/></equality>"#,
            ),
            r#"<weld name="w">"#,
            "ties a mocap body to the world",
        ),
        (
            "sensor on a mocap body's site",
            PENDULUM.replace(
                "</worldbody>",
                r#"<body name="m" mocap="true"><site name="s"/></body></worldbody><sensor><framepos name="p" objtype="site" objname="s"/></sensor>"#,
            ),
            r#"<framepos name="p">"#,
            "reads a frame of mocap body",
        ),
        (
            "spatial tendon through a mocap body's site",
            PENDULUM.replace(
                "</worldbody>",
                r#"<body name="m" mocap="true"><site name="s"/></body><site name="w" pos="0 0 2"/></worldbody><tendon><spatial name="t"><site site="s"/><site site="w"/></spatial></tendon>"#,
            ),
            r#"site="s""#,
            "is on a mocap body",
        ),
        (
            "camera on a mocap body",
            PENDULUM.replace(
                "</worldbody>",
                r#"<body name="m" mocap="true"><camera name="eye"/></body></worldbody>"#,
            ),
            r#"<camera name="eye">"#,
            "a camera on mocap body",
        ),
        (
            "mocap not a boolean",
            swap(r#"<body name="link" pos="0 0 1">"#, r#"<body name="link" pos="0 0 1" mocap="yes">"#),
            r#"<body name="link">"#,
            "expected true or false",
        ),
    ];
    let deep = format!(
        "<mujoco><worldbody>{}{}</worldbody></mujoco>",
        "<body><joint/><geom size='0.1'/>".repeat(100_000),
        "</body>".repeat(100_000)
    );
    cases.push((
        "bodies nested 100 000 deep",
        deep,
        "<body>",
        "nested deeper than",
    ));
    for (what, text, element, reason) in &cases {
        let e = match parse_mjcf(text, "bad.xml", Path::new("."), &MjcfOptions::default()) {
            Ok(_) => panic!("{what}: accepted"),
            Err(e) => e,
        };
        println!("{what}: {e}");
        assert_eq!(e.file, "bad.xml", "{what}");
        assert!(e.to_string().starts_with("bad.xml: "), "{what}");
        assert!(
            e.element.contains(element),
            "{what}: element `{}`",
            e.element
        );
        assert!(e.reason.contains(reason), "{what}: reason `{}`", e.reason);
    }
    let e = load_mjcf("/no/such/model.xml", &MjcfOptions::default()).unwrap_err();
    println!("missing file: {e}");
    assert!(e.file.contains("/no/such/model.xml") && e.element == "file");
}

/// One random edit of an XML text: delete an attribute, replace a number by
/// something odd, truncate, duplicate or delete a line (usually one
/// element), rename a tag, or set a `type` to another known or unknown one.
fn mutate(text: &str, rng: &mut common::Lcg) -> String {
    let pick = |rng: &mut common::Lcg, n: usize| {
        ((rng.next() * n as f64) as usize).min(n.saturating_sub(1))
    };
    let b = text.as_bytes();
    match pick(rng, 7) {
        0 => {
            // Delete an attribute `name="value"`.
            let quotes: Vec<usize> = (0..b.len())
                .filter(|&i| text[i..].starts_with("=\""))
                .collect();
            if quotes.is_empty() {
                return text.into();
            }
            let q = quotes[pick(rng, quotes.len())];
            let start = text[..q].rfind(char::is_whitespace).map_or(q, |s| s + 1);
            let end = text[q + 2..].find('"').map_or(b.len(), |e| q + 2 + e + 1);
            format!("{}{}", &text[..start], &text[end..])
        }
        1 => {
            // Replace a number.
            let starts: Vec<usize> = (0..b.len())
                .filter(|&i| {
                    (b[i].is_ascii_digit() || b[i] == b'-' || b[i] == b'.')
                        && (i == 0 || matches!(b[i - 1], b' ' | b'"'))
                })
                .collect();
            if starts.is_empty() {
                return text.into();
            }
            let s = starts[pick(rng, starts.len())];
            let e = (s..b.len())
                .find(|&i| !(b[i].is_ascii_alphanumeric() || b[i] == b'-' || b[i] == b'.'))
                .unwrap_or(b.len());
            let odd = [
                "nan", "-1", "1e308", "-1e308", "0", "inf", "x1", "", "1e-300", "3 4", "-0",
                "100000",
            ];
            format!("{}{}{}", &text[..s], odd[pick(rng, odd.len())], &text[e..])
        }
        2 => {
            // Truncate at a character boundary.
            let mut cut = pick(rng, b.len());
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text[..cut].into()
        }
        3 | 4 => {
            let lines: Vec<&str> = text.lines().collect();
            if lines.is_empty() {
                return text.into();
            }
            let k = pick(rng, lines.len());
            let mut out: Vec<&str> = lines.clone();
            if pick(rng, 2) == 0 {
                out.insert(k, lines[k]);
            } else {
                out.remove(k);
            }
            out.join("\n")
        }
        5 => {
            // Rename the tag of an element (start or end tag).
            let tags: Vec<usize> = (0..b.len())
                .filter(|&i| b[i] == b'<' && i + 1 < b.len() && b[i + 1].is_ascii_alphabetic())
                .collect();
            if tags.is_empty() {
                return text.into();
            }
            let s = tags[pick(rng, tags.len())] + 1;
            let e = (s..b.len())
                .find(|&i| !b[i].is_ascii_alphanumeric())
                .unwrap_or(b.len());
            let names = [
                "body",
                "joint",
                "geom",
                "inertial",
                "freejoint",
                "frame",
                "site",
                "motor",
                "general",
                "default",
                "worldbody",
                "exclude",
                "mesh",
                "tendon",
                "bogus",
            ];
            format!(
                "{}{}{}",
                &text[..s],
                names[pick(rng, names.len())],
                &text[e..]
            )
        }
        _ => {
            // Change a `type`.
            let at: Vec<usize> = (0..b.len())
                .filter(|&i| text[i..].starts_with("type=\""))
                .collect();
            if at.is_empty() {
                return text.into();
            }
            let s = at[pick(rng, at.len())] + 6;
            let e = text[s..].find('"').map_or(b.len(), |k| s + k);
            let types = [
                "hinge",
                "slide",
                "ball",
                "free",
                "plane",
                "sphere",
                "capsule",
                "cylinder",
                "box",
                "ellipsoid",
                "mesh",
                "hfield",
                "weld",
                "",
            ];
            format!(
                "{}{}{}",
                &text[..s],
                types[pick(rng, types.len())],
                &text[e..]
            )
        }
    }
}

#[test]
fn mutated_files_never_panic_the_loader_or_the_simulator() {
    let mut sources: Vec<(String, String)> = vec![
        ("pendulum".into(), PENDULUM.into()),
        ("features".into(), FEATURES.into()),
        ("frames".into(), FRAMES.into()),
    ];
    if let Some(files) = common::robot_files() {
        for f in ["half_cheetah", "hopper", "ant", "humanoid", "walker2d"] {
            let path = files.gymnasium_assets.join(format!("{f}.xml"));
            sources.push((f.into(), std::fs::read_to_string(path).unwrap()));
        }
    }
    let mut rng = common::Lcg(20261121);
    let (mut loaded, mut refused, mut stepped, mut step_errors) = (0, 0, 0, 0);
    let mut panics = Vec::new();
    let cases = 3000;
    for case in 0..cases {
        let (name, text) = &sources[case % sources.len()];
        let mut t = text.clone();
        let edits = 1 + (rng.next() * 3.0) as usize;
        for _ in 0..edits {
            t = mutate(&t, &mut rng);
        }
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let m = match parse_mjcf(&t, "mutated.xml", Path::new("."), &MjcfOptions::default()) {
                Ok(m) => m,
                Err(e) => {
                    assert!(!e.reason.is_empty() && !e.element.is_empty());
                    return (false, None);
                }
            };
            let params = SimParams {
                dt: m.timestep,
                ..Default::default()
            };
            let model = Arc::new(m.model.clone());
            let Ok(mut sim) = Simulator::new(model.clone(), params) else {
                return (true, Some(false));
            };
            let mut state = State::new(m.q0.clone(), DVector::zeros(model.nv));
            let tau = DVector::zeros(model.nv);
            (true, Some(sim.step(&mut state, tau.as_slice()).is_ok()))
        }));
        match outcome {
            Ok((true, step)) => {
                loaded += 1;
                match step {
                    Some(true) => stepped += 1,
                    _ => step_errors += 1,
                }
            }
            Ok((false, _)) => refused += 1,
            Err(_) => {
                panics.push(format!("case {case} ({name}, {edits} edits)"));
                std::fs::write(
                    std::env::temp_dir().join(format!("moreau-mjcf-panic-{case}.xml")),
                    &t,
                )
                .ok();
            }
        }
    }
    println!(
        "{cases} mutated files from {} sources: {loaded} loaded ({stepped} stepped, {step_errors} step errors), {refused} refused, {} panics {:?}",
        sources.len(),
        panics.len(),
        panics
    );
    assert!(
        panics.is_empty(),
        "panics (inputs saved in the temp dir): {panics:?}"
    );
    // The mutations do exercise both outcomes.
    assert!(loaded > cases / 10 && refused > cases / 10);
}
