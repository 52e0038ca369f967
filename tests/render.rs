//! The renderer against the pinhole model: silhouettes and depths of
//! shapes of known size at known distances, colours from the file, one
//! image per world in one call equal to single calls, bad input refused.
//! On lavapipe in CI (`MOREAU_REQUIRE_GPU=1`: no adapter fails).

use moreau::gpu::GpuContext;
use moreau::load::mjcf::{MjcfOptions, parse_mjcf};
use moreau::math::{Inertia, SE3, Vec3};
use moreau::model::{JointType, Material, Model, ModelBuilder, Shape, WORLD};
use moreau::render::{Camera, Image, RenderError, Renderer};
use std::path::Path;
use std::sync::Arc;

const SIZE: u32 = 256;

fn gpu() -> bool {
    GpuContext::for_tests().is_some()
}

/// One free body with `shape` at the origin (q = identity placement).
fn one_shape(shape: Shape) -> (Arc<Model>, Vec<f64>) {
    let mut b = ModelBuilder::new("shape");
    let body = b
        .add_body(
            "body",
            WORLD,
            JointType::Free,
            SE3::identity(),
            Inertia::sphere(1.0, 0.1),
        )
        .unwrap();
    b.add_geometry("g", body, SE3::identity(), shape, Material::default())
        .unwrap();
    let model = b.build().unwrap();
    let q = vec![0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0];
    (Arc::new(model), q)
}

/// Pixels where something is drawn.
fn covered(image: &Image) -> usize {
    image.depth.iter().filter(|&&d| d > 0.0).count()
}

/// The focal length in pixels of a 45° camera on a `SIZE`-high image.
fn focal() -> f64 {
    SIZE as f64 / 2.0 / 22.5f64.to_radians().tan()
}

#[test]
fn a_sphere_covers_the_disc_the_pinhole_model_predicts() {
    if !gpu() {
        return;
    }
    let (r, d) = (0.5, 4.0);
    let (model, q) = one_shape(Shape::Ball { radius: r });
    let mut renderer = Renderer::new(model, SIZE, SIZE).unwrap();
    let camera = Camera::look_at(Vec3::new(0.0, -d, 0.0), Vec3::zeros());
    let image = renderer.render(&q, &camera).unwrap();
    // The silhouette is a circle of angular radius asin(r/d).
    let predicted = focal() * r / (d * d - r * r).sqrt();
    let measured = (covered(&image) as f64 / std::f64::consts::PI).sqrt();
    println!("sphere: radius {measured:.2} px, predicted {predicted:.2} px");
    assert!((measured - predicted).abs() < 2.0);
    // The centre projects to the image's centre, and its pixel sees the
    // sphere's near side at d − r.
    let (u, v, depth) = camera.project(&Vec3::zeros(), SIZE, SIZE);
    assert!((u - 128.0).abs() < 1e-9 && (v - 128.0).abs() < 1e-9 && (depth - d).abs() < 1e-12);
    let centre = image.depth[(128 * SIZE + 128) as usize] as f64;
    assert!((centre - (d - r)).abs() < 0.01, "{centre}");
    // Nothing at the corners (sky, no depth).
    assert_eq!(image.depth[0], 0.0);
    assert!(image.rgb[..3].iter().all(|&c| c > 200));
}

#[test]
fn a_box_seen_face_on_covers_the_square_the_pinhole_model_predicts() {
    if !gpu() {
        return;
    }
    let (a, d) = (0.5, 4.0);
    let (model, q) = one_shape(Shape::Cuboid {
        half_extents: Vec3::repeat(a),
    });
    let mut renderer = Renderer::new(model, SIZE, SIZE).unwrap();
    let camera = Camera::look_at(Vec3::new(0.0, -d, 0.0), Vec3::zeros());
    let image = renderer.render(&q, &camera).unwrap();
    // Only the front face shows, at d − a: a square of side 2 f a/(d − a).
    let side = 2.0 * focal() * a / (d - a);
    let row = 128usize;
    let columns = (0..SIZE as usize)
        .filter(|&c| image.depth[row * SIZE as usize + c] > 0.0)
        .count() as f64;
    let area = covered(&image) as f64;
    println!("box: {columns} columns, area {area}, predicted side {side:.2}");
    assert!((columns - side).abs() < 2.0);
    assert!((area.sqrt() - side).abs() < 2.0);
    let centre = image.depth[row * SIZE as usize + 128] as f64;
    assert!((centre - (d - a)).abs() < 1e-4, "{centre}");
    // Turned by 45° about z: the edge comes forward to d − a√2.
    let mut turned = q.clone();
    let half = std::f64::consts::FRAC_PI_8;
    turned[5] = half.sin();
    turned[6] = half.cos();
    let image = renderer.render(&turned, &camera).unwrap();
    let centre = image.depth[row * SIZE as usize + 128] as f64;
    assert!((centre - (d - a * 2f64.sqrt())).abs() < 0.01, "{centre}");
}

#[test]
fn colours_come_from_the_file_and_worlds_render_alike_in_one_call() {
    if !gpu() {
        return;
    }
    let text = r#"<mujoco>
  <asset><material name="blue" rgba="0 0 1 1"/></asset>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1" rgba="0.9 0.9 0.9 1"/>
    <body name="red" pos="0 0 0.5"><freejoint/><geom type="sphere" size="0.3" rgba="1 0 0 1"/></body>
    <body name="blue" pos="1 0 0.5"><freejoint/><geom type="box" size="0.2 0.2 0.2" material="blue"/></body>
    <body name="ghost" pos="-1 0 0.5"><freejoint/>
      <geom type="sphere" size="0.2" contype="0" conaffinity="0" rgba="0 1 0 1"/>
      <geom type="sphere" size="0.25" group="3" rgba="1 1 0 1"/>
    </body>
  </worldbody>
</mujoco>"#;
    let m = parse_mjcf(text, "colours.xml", Path::new("."), &MjcfOptions::default()).unwrap();
    // The visual-only sphere is drawn, the group-3 one is not.
    assert_eq!(m.model.visuals.len(), 4);
    let model = Arc::new(m.model);
    let q0: Vec<f64> = m.q0.iter().copied().collect();
    let mut renderer = Renderer::new(model.clone(), SIZE, SIZE).unwrap();
    let camera = Camera::look_at(Vec3::new(0.0, -5.0, 1.5), Vec3::new(0.0, 0.0, 0.5));
    let image = renderer.render(&q0, &camera).unwrap();
    let pixel = |p: Vec3| {
        let (u, v, _) = camera.project(&p, SIZE, SIZE);
        let k = 3 * (v as usize * SIZE as usize + u as usize);
        [image.rgb[k], image.rgb[k + 1], image.rgb[k + 2]]
    };
    let [r, g, b] = pixel(Vec3::new(0.0, 0.0, 0.5));
    assert!(r > 40 && g == 0 && b == 0, "red sphere: {r} {g} {b}");
    let [r, g, b] = pixel(Vec3::new(1.0, 0.0, 0.5));
    assert!(b > 40 && r == 0 && g == 0, "blue box: {r} {g} {b}");
    let [r, g, b] = pixel(Vec3::new(-1.0, 0.0, 0.5));
    assert!(
        g > 40 && r == 0 && b == 0,
        "green visual sphere: {r} {g} {b}"
    );
    // The same state and camera: the same image, bit for bit; several
    // worlds in one call: each as it renders alone.
    assert_eq!(renderer.render(&q0, &camera).unwrap(), image);
    let mut moved = q0.clone();
    moved[0] += 0.3;
    let cameras = [
        camera,
        Camera::orbit(Vec3::new(0.0, 0.0, 0.5), 4.0, 30.0, 25.0),
        camera,
    ];
    let qs: Vec<&[f64]> = vec![&q0, &q0, &moved];
    let many = renderer.render_many(&qs, &cameras).unwrap();
    for (k, image) in many.iter().enumerate() {
        assert_eq!(
            *image,
            renderer.render(qs[k], &cameras[k]).unwrap(),
            "world {k}"
        );
    }
    assert_ne!(many[0], many[2]);
}

#[test]
fn bad_input_is_refused_naming_it() {
    if !gpu() {
        return;
    }
    let (model, q) = one_shape(Shape::Ball { radius: 0.5 });
    assert!(matches!(
        Renderer::new(model.clone(), 0, 10),
        Err(RenderError::Size { .. })
    ));
    let mut renderer = Renderer::new(model, 32, 32).unwrap();
    let camera = Camera::look_at(Vec3::new(0.0, -3.0, 0.0), Vec3::zeros());
    let mut bad = q.clone();
    bad[1] = f64::NAN;
    let e = renderer.render(&bad, &camera).unwrap_err().to_string();
    assert!(e.contains("configuration 0"), "{e}");
    let e = renderer.render(&q[..3], &camera).unwrap_err().to_string();
    assert!(e.contains("configuration 0"), "{e}");
    let blind = Camera::look_at(Vec3::zeros(), Vec3::zeros());
    let e = renderer.render(&q, &blind).unwrap_err().to_string();
    assert!(e.contains("camera 0"), "{e}");
    let e = renderer
        .render_many(&[&q, &q], &[camera])
        .unwrap_err()
        .to_string();
    assert!(e.contains("1 cameras for 2"), "{e}");
    // More images than the adapter holds: refused before anything is made.
    let qs = vec![q.as_slice(); 100_000];
    let cameras = vec![camera; qs.len()];
    let e = renderer.render_many(&qs, &cameras).unwrap_err().to_string();
    assert!(e.contains("100000 images in one call; at most"), "{e}");
}

/// The centre of what is drawn, in pixels (column, row), and how many.
fn centroid(image: &Image) -> (f64, f64, usize) {
    let (mut u, mut v, mut n) = (0.0, 0.0, 0);
    for (k, &d) in image.depth.iter().enumerate() {
        if d > 0.0 {
            u += (k % image.width as usize) as f64 + 0.5;
            v += (k / image.width as usize) as f64 + 0.5;
            n += 1;
        }
    }
    (u / n as f64, v / n as f64, n)
}

#[test]
fn the_files_cameras_and_the_tracking_camera_follow_the_body() {
    if !gpu() {
        return;
    }
    let text = r#"<mujoco>
  <worldbody>
    <camera name="still" mode="targetbody" target="ball" pos="0 -4 0"/>
    <body name="ball" pos="0 0 0">
      <freejoint/><geom type="sphere" size="0.25"/>
      <camera name="chase" mode="track" pos="0 -3 0" xyaxes="1 0 0 0 0 1" fovy="30"/>
    </body>
  </worldbody>
</mujoco>"#;
    use moreau::render::{Target, View};
    let m = parse_mjcf(text, "cameras.xml", Path::new("."), &MjcfOptions::default()).unwrap();
    let model = Arc::new(m.model);
    assert_eq!(model.cameras.len(), 2);
    let mut renderer = Renderer::new(model.clone(), SIZE, SIZE).unwrap();
    let mut q: Vec<f64> = m.q0.iter().copied().collect();
    // Moved and turned: the tracking camera keeps its world orientation.
    q[..3].copy_from_slice(&[1.0, 2.0, 0.5]);
    q[3..7].copy_from_slice(&[0.0, 0.0, 0.6f64.sin(), 0.6f64.cos()]);
    let chase = View::named(&model, "chase").unwrap();
    let camera = renderer.camera(&q, &chase).unwrap();
    assert!((camera.eye - Vec3::new(1.0, -1.0, 0.5)).norm() < 1e-12);
    let image = renderer.render(&q, &camera).unwrap();
    let (u, v, n) = centroid(&image);
    let half = SIZE as f64 / 2.0;
    assert!((u - half).abs() < 0.5 && (v - half).abs() < 0.5, "{u} {v}");
    // A disc of angular radius asin(r/d) through a 30° lens.
    let f = half / 15f64.to_radians().tan();
    let radius = f * 0.25 / (9.0f64 - 0.0625).sqrt();
    let area = std::f64::consts::PI * radius * radius;
    assert!(
        (n as f64 - area).abs() < 2.0 * std::f64::consts::PI * radius * 2.0,
        "{n} {area}"
    );
    // The world's camera turns to the ball; the free camera follows it.
    let still = renderer.camera(&q, &View::Model(0)).unwrap();
    assert_eq!(still.eye, Vec3::new(0.0, -4.0, 0.0));
    for camera in [
        still,
        renderer
            .camera(
                &q,
                &View::Orbit {
                    target: Target::Body(1),
                    azimuth: 10.0,
                    elevation: 30.0,
                    distance: Some(3.0),
                },
            )
            .unwrap(),
    ] {
        let (u, v, _) = centroid(&renderer.render(&q, &camera).unwrap());
        assert!((u - half).abs() < 1.0 && (v - half).abs() < 1.0, "{u} {v}");
    }
    let e = renderer
        .camera(&q, &View::Model(2))
        .unwrap_err()
        .to_string();
    assert!(e.contains("camera 2 of a model with 2"), "{e}");
}

#[test]
fn contact_points_and_forces_are_drawn_over_the_scene() {
    if !gpu() {
        return;
    }
    use moreau::render::Overlay;
    use moreau::sim::{SimParams, Simulator};
    let scene = moreau::scenes::scene("cube-resting").unwrap();
    let params = SimParams {
        dt: scene.dt,
        ..Default::default()
    };
    let mut sim = Simulator::new(scene.model.clone(), params).unwrap();
    let mut state = scene.state.clone();
    let tau = vec![0.0; scene.model.nv];
    sim.step(&mut state, &tau).unwrap();
    let overlay = Overlay::from_contacts(&scene.model, sim.solved_contacts(), scene.dt);
    assert_eq!(overlay.forces.len(), 4);
    // The forces hold the cube up: they sum to its weight, upwards.
    let total: Vec3 = overlay.forces.iter().map(|(_, f)| f).sum();
    let weight = scene.model.total_mass() * 9.81;
    assert!(
        (total - Vec3::new(0.0, 0.0, weight)).norm() < 1e-3 * weight,
        "{total:?}"
    );
    let scale = Overlay::default_scale(&scene.model);
    let mut renderer = Renderer::new(scene.model.clone(), SIZE, SIZE).unwrap();
    let q = state.q.as_slice();
    let camera = Camera::orbit(Vec3::new(0.0, 0.0, 0.2), 3.0, -60.0, 25.0);
    let plain = renderer.render(q, &camera).unwrap();
    let marked = renderer
        .render_overlaid(&[q], &[camera], std::slice::from_ref(&overlay), scale)
        .unwrap()
        .remove(0);
    let none = renderer
        .render_overlaid(&[q], &[camera], &[Overlay::default()], scale)
        .unwrap()
        .remove(0);
    assert_eq!(none, plain, "no marks: the scene's image");
    assert_eq!(marked.depth, plain.depth, "the depth image is the scene's");
    let rgb = |image: &Image, p: &Vec3| {
        let (u, v, _) = camera.project(p, SIZE, SIZE);
        let k = 3 * (v as usize * SIZE as usize + u as usize);
        [image.rgb[k], image.rgb[k + 1], image.rgb[k + 2]]
    };
    for (p, f) in &overlay.forces {
        // The point a red ball, the arrow's middle yellow (each over the
        // cube or the ground), beyond its tip the scene.
        let [r, g, b] = rgb(&marked, p);
        assert!(r > 120 && g < 60 && b < 60, "point {p:?}: {r} {g} {b}");
        let middle = p + f * (0.4 * scale);
        let [r, g, b] = rgb(&marked, &middle);
        assert!(
            r > 150 && g > 110 && b < 60,
            "arrow {middle:?}: {r} {g} {b}"
        );
        let beyond = p + f * (1.3 * scale);
        assert_eq!(rgb(&marked, &beyond), rgb(&plain, &beyond));
    }
    let bad = Overlay {
        forces: vec![(Vec3::zeros(), Vec3::new(f64::NAN, 0.0, 0.0))],
    };
    let e = renderer
        .render_overlaid(&[q], &[camera], &[bad], scale)
        .unwrap_err()
        .to_string();
    assert!(e.contains("overlay 0: a mark is not finite"), "{e}");
}

#[test]
fn a_mesh_file_is_drawn_as_its_triangles_not_its_hull() {
    if !gpu() {
        return;
    }
    // One mesh of two cubes 0.6 m apart: its hull would fill the gap.
    let cube = |x0: f64| -> (Vec<[f64; 3]>, Vec<[usize; 3]>) {
        let v = (0..8)
            .map(|i| {
                [
                    x0 + if i & 1 == 0 { 0.0 } else { 0.2 },
                    if i & 2 == 0 { -0.1 } else { 0.1 },
                    if i & 4 == 0 { -0.1 } else { 0.1 },
                ]
            })
            .collect();
        let f = vec![
            [0, 2, 3],
            [0, 3, 1],
            [4, 5, 7],
            [4, 7, 6],
            [0, 1, 5],
            [0, 5, 4],
            [2, 6, 7],
            [2, 7, 3],
            [0, 4, 6],
            [0, 6, 2],
            [1, 3, 7],
            [1, 7, 5],
        ];
        (v, f)
    };
    let (mut vertices, mut faces) = cube(-0.5);
    let (v2, f2) = cube(0.3);
    faces.extend(f2.iter().map(|t| t.map(|k| k + 8)));
    vertices.extend(v2);
    let text = format!(
        r#"<mujoco>
  <asset><mesh name="pair" vertex="{}" face="{}"/></asset>
  <worldbody><body name="b"><freejoint/><geom type="mesh" mesh="pair" rgba="0.2 0.4 0.9 1"/></body></worldbody>
</mujoco>"#,
        vertices
            .iter()
            .flatten()
            .map(|x| x.to_string())
            .collect::<Vec<_>>()
            .join(" "),
        faces
            .iter()
            .flatten()
            .map(|k| k.to_string())
            .collect::<Vec<_>>()
            .join(" "),
    );
    let m = parse_mjcf(&text, "pair.xml", Path::new("."), &MjcfOptions::default()).unwrap();
    assert!(m.model.visuals[0].mesh.is_some());
    let model = Arc::new(m.model);
    let q: Vec<f64> = m.q0.iter().copied().collect();
    let camera = Camera::look_at(Vec3::new(0.0, -3.0, 0.0), Vec3::zeros());
    let mut renderer = Renderer::new(model.clone(), SIZE, SIZE).unwrap();
    let image = renderer.render(&q, &camera).unwrap();
    let depth_at = |image: &Image, x: f64| {
        let (u, v, _) = camera.project(&Vec3::new(x, 0.0, 0.0), SIZE, SIZE);
        image.depth[v as usize * SIZE as usize + u as usize]
    };
    // The cubes' faces at 2.9 m; nothing between them.
    assert!(
        (depth_at(&image, -0.4) - 2.9).abs() < 1e-3 && (depth_at(&image, 0.4) - 2.9).abs() < 1e-3
    );
    assert_eq!(depth_at(&image, 0.0), 0.0);
    // Its hull (the same model without the triangles) fills the gap.
    let mut hull = (*model).clone();
    hull.visuals[0].mesh = None;
    let mut renderer = Renderer::new(Arc::new(hull), SIZE, SIZE).unwrap();
    let filled = renderer.render(&q, &camera).unwrap();
    assert!((depth_at(&filled, 0.0) - 2.9).abs() < 1e-3);
}
