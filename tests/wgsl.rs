//! The WGSL side against the Rust side, piece by piece:
//! - every shader file parses and validates with naga, as the kernels are
//!   assembled (`gpu::shader::kernel_source`), and each kernel's file is the
//!   one on disk;
//! - the generated header: every constant a kernel is compiled with reads
//!   back from the parsed module with the Rust value, bit for bit, and no
//!   shader file declares one of them by hand;
//! - the WGSL structs are generated from their `#[repr(C)]` twins, and
//!   naga's layout of each has every member at the Rust field's offset
//!   with its size (a deliberate mismatch of each kind fails the check);
//! - the pure functions of `shaders/cone.wgsl` (cone and dual-cone
//!   projections, de Saxcé's correction, the pyramid, one contact's
//!   residuals under each model), run by small test kernels on grids of
//!   inputs that include the cone's apex, its boundary, its interior and
//!   exterior, against the CPU functions of `contact::cone` and
//!   `contact::criteria` in f32. A failure names the function and the input.
//!
//! The GPU part needs an adapter (lavapipe in CI, `MOREAU_REQUIRE_GPU=1`).

use moreau::contact::cone::{Pyramid, de_saxce, project_cone, project_dual_cone};
use moreau::contact::wide::{Wide, project_cone_wide, project_dual_cone_wide};
use moreau::contact::{ContactModel, KernelModel};
use moreau::gpu::GpuContext;
use moreau::gpu::batch::{GpuContact, GpuParams, GpuProblem, GpuResult};
use moreau::gpu::contract::{self, WgslMember, WgslRecord};
use moreau::gpu::kernel::BatchKernel;
use moreau::gpu::registry::{self, ALL as KERNELS};
use moreau::gpu::shader::{self, WgslValue};
use std::collections::HashMap;

fn shaders_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("shaders")
}

fn parse(name: &str, source: &str) -> naga::Module {
    let module = naga::front::wgsl::parse_str(source)
        .unwrap_or_else(|e| panic!("{name}: {}", e.emit_to_string(source)));
    naga::valid::Validator::new(
        naga::valid::ValidationFlags::all(),
        naga::valid::Capabilities::default(),
    )
    .validate(&module)
    .unwrap_or_else(|e| panic!("{name}: {}", e.emit_to_string(source)));
    module
}

fn kernels() -> Vec<&'static dyn BatchKernel> {
    KERNELS.iter().map(|&k| registry::of(k)).collect()
}

#[test]
fn every_shader_parses_and_validates_with_naga() {
    let mut files: Vec<String> = std::fs::read_dir(shaders_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().and_then(|e| e.to_str()) == Some("wgsl"))
        .map(|p| p.file_name().unwrap().to_string_lossy().to_string())
        .collect();
    files.sort();
    let mut expected: Vec<String> = [
        "cone.wgsl",
        "common.wgsl",
        "vjp.wgsl",
        "resident.wgsl",
        "resident_contacts.wgsl",
        "resident_collide.wgsl",
        "philox.wgsl",
        "gym_task.wgsl",
        "gym_task_forces.wgsl",
        "render.wgsl",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain(
        kernels()
            .iter()
            .flat_map(|k| k.wgsl_files().iter().map(|(name, _)| name.to_string())),
    )
    .collect();
    expected.sort();
    assert_eq!(files, expected, "every shader file is shared or a kernel's");
    let dir = shaders_dir();
    assert_eq!(
        shader::CONE,
        std::fs::read_to_string(dir.join("cone.wgsl")).unwrap()
    );
    assert_eq!(
        shader::COMMON,
        std::fs::read_to_string(dir.join("common.wgsl")).unwrap()
    );
    parse("cone.wgsl", &shader::functions_source());
    for k in kernels() {
        // The kernel's files, its first named after it.
        assert_eq!(k.wgsl_files()[0].0, format!("{}.wgsl", k.name()));
        for (file, text) in k.wgsl_files() {
            assert_eq!(
                *text,
                std::fs::read_to_string(dir.join(file)).unwrap(),
                "{file}"
            );
        }
        parse(k.name(), &shader::kernel_source(k));
    }
}

/// The standalone contact-VJP kernel: its assembled source validates, its
/// header's constants are Rust's and declared nowhere else, and its world
/// header is `GpuVjpWorld` field by field.
#[test]
fn the_vjp_kernel_validates_and_matches_its_rust_side() {
    use moreau::gpu::vjp;
    let module = parse("vjp.wgsl", &vjp::source());
    let values = constants(&module);
    let text = std::fs::read_to_string(shaders_dir().join("vjp.wgsl")).unwrap();
    for c in vjp::constants() {
        assert_eq!(values[c.name], literal(c.value), "{}", c.name);
        assert!(!text.contains(&format!("const {}:", c.name)), "{}", c.name);
    }
    check_record::<vjp::GpuVjpWorld>(&module).unwrap();
}

/// A generated constant's value as naga reads it back.
fn literal(v: WgslValue) -> naga::Literal {
    match v {
        WgslValue::U32(v) => naga::Literal::U32(v),
        WgslValue::F32(v) => naga::Literal::F32(v),
        WgslValue::Bool(v) => naga::Literal::Bool(v),
    }
}

/// Every shader file's name and text.
fn shader_files() -> Vec<(String, String)> {
    let mut files: Vec<(String, String)> = std::fs::read_dir(shaders_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().and_then(|e| e.to_str()) == Some("wgsl"))
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().to_string(),
                std::fs::read_to_string(&p).unwrap(),
            )
        })
        .collect();
    files.sort();
    files
}

/// The value of every named constant of `module`.
fn constants(module: &naga::Module) -> HashMap<String, naga::Literal> {
    module
        .constants
        .iter()
        .filter_map(|(_, c)| {
            let name = c.name.clone()?;
            match module.global_expressions[c.init] {
                naga::Expression::Literal(l) => Some((name, l)),
                _ => None,
            }
        })
        .collect()
}

#[test]
fn the_generated_header_matches_the_rust_constants() {
    let hand_written = shader_files();
    for k in kernels() {
        let source = shader::kernel_source(k);
        let module = parse(k.name(), &source);
        let values = constants(&module);
        let generated = shader::constants(k);
        assert!(
            generated.len() >= 16,
            "{}: {} constants",
            k.name(),
            generated.len()
        );
        for c in &generated {
            let got = values
                .get(c.name)
                .unwrap_or_else(|| panic!("{}: `{}` missing", k.name(), c.name));
            match (c.value, *got) {
                (WgslValue::U32(v), naga::Literal::U32(w)) => {
                    assert_eq!(v, w, "{}: {}", k.name(), c.name)
                }
                (WgslValue::F32(v), naga::Literal::F32(w)) => assert_eq!(
                    v.to_bits(),
                    w.to_bits(),
                    "{}: {} is {w} in WGSL, {v} in Rust",
                    k.name(),
                    c.name
                ),
                (v, w) => panic!("{}: {}: Rust {v:?}, WGSL {w:?}", k.name(), c.name),
            }
            for (file, text) in &hand_written {
                assert!(
                    !text.contains(&format!("const {}:", c.name)),
                    "{file} declares `{}` by hand; it is generated",
                    c.name
                );
            }
        }
        // The values a kernel dispatches with come from the same enums.
        for m in KernelModel::ALL {
            assert_eq!(values[m.wgsl_name()], naga::Literal::U32(m as u32));
        }
        assert_eq!(
            values["WORKGROUP_SIZE"],
            naga::Literal::U32(k.workgroup_size()),
            "{}",
            k.name()
        );
    }
}

/// The members of WGSL struct `name` in `module` as naga lays them out, and
/// its size.
fn members(module: &naga::Module, name: &str) -> (Vec<WgslMember>, usize) {
    let mut layouter = naga::proc::Layouter::default();
    layouter.update(module.to_ctx()).unwrap();
    let (_, t) = module
        .types
        .iter()
        .find(|(_, t)| t.name.as_deref() == Some(name))
        .unwrap_or_else(|| panic!("no struct {name}"));
    let naga::TypeInner::Struct { members, span } = &t.inner else {
        panic!("{name} is not a struct");
    };
    let members = members
        .iter()
        .map(|m| WgslMember {
            name: m.name.clone().unwrap_or_default(),
            offset: m.offset as usize,
            size: layouter[m.ty].size as usize,
        })
        .collect();
    (members, *span as usize)
}

/// Record `T`'s listed fields tile it, and its WGSL struct in `module` has
/// every member at the Rust field's offset with its size.
fn check_record<T: WgslRecord>(module: &naga::Module) -> Result<(), String> {
    let size = std::mem::size_of::<T>();
    contract::check_tiling(T::WGSL_NAME, &T::fields(), size)?;
    let (m, wgsl_size) = members(module, T::WGSL_NAME);
    contract::check_layout(T::WGSL_NAME, &T::fields(), size, &m, wgsl_size)
}

#[test]
fn wgsl_structs_are_their_rust_twins_field_by_field() {
    for k in kernels() {
        let module = parse(k.name(), &shader::kernel_source(k));
        check_record::<GpuParams>(&module).unwrap();
        check_record::<GpuProblem>(&module).unwrap();
        check_record::<GpuContact>(&module).unwrap();
        check_record::<GpuResult>(&module).unwrap();
    }
    // The resident contact stage binds the same records.
    let model = moreau::scenes::scene("quadruped").unwrap().model;
    let module = parse("resident", &moreau::gpu::resident::source(&model));
    check_record::<GpuProblem>(&module).unwrap();
    check_record::<GpuContact>(&module).unwrap();
    check_record::<GpuResult>(&module).unwrap();
    // The resident step's own uniform, with and without contacts.
    check_record::<moreau::gpu::resident::layout::StepParams>(&module).unwrap();
    let pendulum = moreau::scenes::scene("cartpole").unwrap().model;
    let module = parse("resident", &moreau::gpu::resident::source(&pendulum));
    check_record::<moreau::gpu::resident::layout::StepParams>(&module).unwrap();
    // No shader file declares one of them by hand (the renderer's are
    // generated too).
    for entry in std::fs::read_dir(shaders_dir()).unwrap() {
        let p = entry.unwrap().path();
        let text = std::fs::read_to_string(&p).unwrap();
        for name in ["Params", "StepParams", "Problem", "Contact", "SolveResult"] {
            assert!(
                !text.contains(&format!("struct {name} {{")),
                "{} declares `struct {name}` by hand; it is generated",
                p.display()
            );
        }
    }
}

/// The renderer's structs are generated from their twins too.
#[test]
fn the_renderers_structs_are_its_records() {
    use moreau::render::records::{self, RenderCamera, RenderInstance, RenderParams};
    let module = parse("render.wgsl", &records::source());
    check_record::<RenderInstance>(&module).unwrap();
    check_record::<RenderCamera>(&module).unwrap();
    check_record::<RenderParams>(&module).unwrap();
}

/// A deliberate mismatch of each kind is caught: a field whose WGSL type
/// aligns differently from its Rust type, a field left out of the list,
/// and a WGSL struct whose members were reordered by hand.
#[test]
fn the_record_checks_fail_on_a_mismatch() {
    #[repr(C)]
    #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
    struct Skewed {
        a: f32,
        b: [f32; 4],
    }
    moreau::wgsl_record!(Skewed as "Skewed" { a: "f32", b: "vec4<f32>" });
    let source = format!(
        "{}@group(0) @binding(0) var<storage, read> s: array<Skewed>;",
        contract::declaration::<Skewed>()
    );
    let e = check_record::<Skewed>(&parse("skewed", &source)).unwrap_err();
    assert!(
        e.contains("`b` at byte 4") && e.contains("at byte 16"),
        "{e}"
    );

    let mut missing = GpuProblem::fields();
    missing.remove(3);
    let e =
        contract::check_tiling("Problem", &missing, std::mem::size_of::<GpuProblem>()).unwrap_err();
    assert!(e.contains("`tolerance`"), "{e}");

    // Two members swapped by hand in the WGSL (same types: naga is happy).
    let swapped = contract::declaration::<GpuProblem>().replace(
        "    delassus_offset: u32,\n    contact_offset: u32,",
        "    contact_offset: u32,\n    delassus_offset: u32,",
    );
    assert_ne!(swapped, contract::declaration::<GpuProblem>());
    let source = format!("{swapped}@group(0) @binding(0) var<storage, read> p: array<Problem>;");
    let e = check_record::<GpuProblem>(&parse("swapped", &source)).unwrap_err();
    assert!(
        e.contains("`delassus_offset`") && e.contains("`contact_offset`"),
        "{e}"
    );
}

// ---------------------------------------------------------------------------
// The functions of cone.wgsl, one by one, on the GPU.

/// Runs `expr` (a WGSL expression of `a`, `b`, `p`: three vec4<f32> per
/// case, giving a vec4<f32>) on every case, after `shader::functions_source()`.
fn run_cases(ctx: &GpuContext, expr: &str, cases: &[[[f32; 4]; 3]]) -> Vec<[f32; 4]> {
    use wgpu::util::DeviceExt;
    let source = format!(
        "{}
@group(0) @binding(0) var<storage, read> cases: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> out: array<vec4<f32>>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {{
    let i = gid.x;
    if (i >= arrayLength(&out)) {{
        return;
    }}
    let a = cases[3u * i];
    let b = cases[3u * i + 1u];
    let p = cases[3u * i + 2u];
    out[i] = {expr};
}}
",
        shader::functions_source()
    );
    parse(expr, &source);
    let device = &ctx.device;
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some(expr),
        source: wgpu::ShaderSource::Wgsl(source.into()),
    });
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some(expr),
        layout: None,
        module: &module,
        entry_point: Some("main"),
        compilation_options: Default::default(),
        cache: None,
    });
    let input = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some("cases"),
        contents: bytemuck::cast_slice(cases),
        usage: wgpu::BufferUsages::STORAGE,
    });
    let bytes = (cases.len() * 16) as u64;
    let output = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("out"),
        size: bytes,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let readback = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("readback"),
        size: bytes,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: None,
        layout: &pipeline.get_bind_group_layout(0),
        entries: &[
            wgpu::BindGroupEntry {
                binding: 0,
                resource: input.as_entire_binding(),
            },
            wgpu::BindGroupEntry {
                binding: 1,
                resource: output.as_entire_binding(),
            },
        ],
    });
    let mut encoder = device.create_command_encoder(&Default::default());
    {
        let mut pass = encoder.begin_compute_pass(&Default::default());
        pass.set_pipeline(&pipeline);
        pass.set_bind_group(0, &bind_group, &[]);
        pass.dispatch_workgroups((cases.len() as u32).div_ceil(64), 1, 1);
    }
    encoder.copy_buffer_to_buffer(&output, 0, &readback, 0, bytes);
    ctx.queue.submit(Some(encoder.finish()));
    let (tx, rx) = std::sync::mpsc::channel();
    readback.map_async(wgpu::MapMode::Read, .., move |r| tx.send(r).unwrap());
    device
        .poll(wgpu::PollType::Wait {
            submission_index: None,
            timeout: None,
        })
        .unwrap();
    rx.recv().unwrap().unwrap();
    let out =
        bytemuck::cast_slice::<u8, [f32; 4]>(&readback.get_mapped_range(..).unwrap()).to_vec();
    readback.unmap();
    ctx.take_error("test kernel").unwrap();
    out
}

const MUS: [f32; 5] = [0.0, 0.3, 1.0, 2.5, 40.0];

/// 3-vectors around the cone `K_μ`: the apex, on its boundary, inside,
/// outside, in its polar cone, on the dual cone's boundary, on the axes.
fn cone_grid(mu: f32) -> Vec<[f32; 3]> {
    let mut pts = vec![[0.0, 0.0, 0.0]];
    for k in 0..8 {
        let th = std::f32::consts::TAU * k as f32 / 8.0 + 0.1;
        let (c, s) = (th.cos(), th.sin());
        for n in [-2.0f32, -0.5, 0.0, 0.3, 1.0, 3.0] {
            for r in [0.0f32, 0.25, 1.0, 4.0] {
                pts.push([r * c, r * s, n]);
            }
            // On K_μ's boundary, and on K_μ*'s.
            pts.push([mu * n.abs() * c, mu * n.abs() * s, n.abs()]);
            if mu > 0.0 {
                pts.push([n.abs() * c / mu, n.abs() * s / mu, n.abs()]);
            }
        }
    }
    pts
}

fn close(gpu: &[f32], cpu: &[f32], scale: f32) -> bool {
    let tol = 4e-6 * scale.max(1.0);
    gpu.iter().zip(cpu).all(|(g, c)| (g - c).abs() <= tol)
}

fn norm(x: &[f32]) -> f32 {
    x.iter().map(|v| v * v).sum::<f32>().sqrt()
}

/// Compares the GPU's results with `cpu` on every case, naming `what` and the
/// first input where they differ.
fn check(
    ctx: &GpuContext,
    what: &str,
    expr: &str,
    cases: &[[[f32; 4]; 3]],
    cpu: impl Fn(&[[f32; 4]; 3]) -> Vec<f32>,
) {
    let out = run_cases(ctx, expr, cases);
    for (case, got) in cases.iter().zip(&out) {
        let want = cpu(case);
        let scale = norm(&case[0]) + norm(&case[1]);
        assert!(
            close(&got[..want.len()], &want, scale),
            "{what} is wrong at a = {:?}, b = {:?}, p = {:?}: GPU {:?}, CPU {want:?}",
            case[0],
            case[1],
            case[2],
            &got[..want.len()]
        );
    }
    eprintln!("{what}: {} inputs agree", cases.len());
}

fn v3(a: [f32; 4]) -> [f32; 3] {
    [a[0], a[1], a[2]]
}

#[test]
fn cone_functions_match_their_cpu_twins_on_input_grids() {
    let Some(ctx) = GpuContext::for_tests() else {
        return;
    };
    eprintln!("adapter: {}", ctx.adapter);
    let cases: Vec<[[f32; 4]; 3]> = MUS
        .iter()
        .flat_map(|&mu| {
            cone_grid(mu)
                .into_iter()
                .map(move |x| [[x[0], x[1], x[2], mu], [0.0; 4], [0.0; 4]])
        })
        .collect();
    check(
        &ctx,
        "project_cone",
        "vec4<f32>(project_cone(a.w, a.xyz), 0.0)",
        &cases,
        |c| project_cone(c[0][3], v3(c[0])).to_vec(),
    );
    check(
        &ctx,
        "project_dual_cone",
        "vec4<f32>(project_dual_cone(a.w, a.xyz), 0.0)",
        &cases,
        |c| project_dual_cone(c[0][3], v3(c[0])).to_vec(),
    );
    check(
        &ctx,
        "de_saxce",
        "vec4<f32>(de_saxce(a.w, a.xyz), 0.0)",
        &cases,
        |c| de_saxce(c[0][3], v3(c[0])).to_vec(),
    );
    // soc_scale and dual_soc_scale, the wide cones' projections, in four
    // dimensions: the grid's tangential part turned into (t1, t2, spin) by
    // a third of it moved to the spin row, a = [t1, t2, n, μ], b.x the spin.
    let wide: Vec<[[f32; 4]; 3]> = cases
        .iter()
        .map(|c| {
            let [t1, t2, n, mu] = c[0];
            [[t1, 0.7 * t2, n, mu], [0.5 * t2, 0.0, 0.0, 0.0], [0.0; 4]]
        })
        .collect();
    let cpu_wide = |c: &[[f32; 4]; 3], dual: bool| {
        let x = Wide::gather(&[c[0][0], c[0][1], c[0][2], c[1][0]], 0, &[3]);
        let mu = c[0][3];
        let p = if dual {
            project_dual_cone_wide(mu, x)
        } else {
            project_cone_wide(mu, x)
        };
        // [t1, t2, spin, n]
        p.x[..4].to_vec()
    };
    for (what, f) in [
        ("soc_scale", "soc_scale(a.w, false, T, a.z)"),
        ("dual_soc_scale", "dual_soc_scale(a.w, T, a.z)"),
    ] {
        let k = f.replace('T', "sqrt(a.x * a.x + a.y * a.y + b.x * b.x)");
        check(
            &ctx,
            what,
            &format!("vec4<f32>({k}.x * a.x, {k}.x * a.y, {k}.x * b.x, {k}.y)"),
            &wide,
            |c| cpu_wide(c, what == "dual_soc_scale"),
        );
    }
}

#[test]
fn pyramid_functions_match_their_cpu_twins_on_input_grids() {
    let Some(ctx) = GpuContext::for_tests() else {
        return;
    };
    let mut cases = Vec::new();
    for facets in [3u32, 4, 6, 8] {
        for x in cone_grid(1.0) {
            for r in [0.0f32, 0.5, 2.0] {
                cases.push([
                    [x[0], x[1], r, 0.0],
                    [0.0; 4],
                    [0.0, facets as f32, 0.0, 0.0],
                ]);
            }
        }
    }
    let pyr = |c: &[[f32; 4]; 3]| Pyramid::new(c[2][1] as usize);
    check(
        &ctx,
        "pyramid_project",
        "vec4<f32>(pyramid_project(u32(p.y), a.z, a.xy), 0.0, 0.0)",
        &cases,
        |c| pyr(c).project_disk(c[0][2], [c[0][0], c[0][1]]).to_vec(),
    );
    check(
        &ctx,
        "pyramid_gauge",
        "vec4<f32>(pyramid_gauge(u32(p.y), a.xy), 0.0, 0.0, 0.0)",
        &cases,
        |c| vec![pyr(c).gauge([c[0][0], c[0][1]])],
    );
    check(
        &ctx,
        "pyramid_support",
        "vec4<f32>(pyramid_support(u32(p.y), a.xy), 0.0, 0.0, 0.0)",
        &cases,
        |c| vec![pyr(c).support([c[0][0], c[0][1]])],
    );
}

#[test]
fn contact_residuals_match_their_cpu_twins_on_input_grids() {
    let Some(ctx) = GpuContext::for_tests() else {
        return;
    };
    // λ and c from the cone grids (apex, boundaries, interior, exterior),
    // paired in a fixed scramble, under each model.
    let mut cases = Vec::new();
    for &mu in &MUS[..4] {
        let lam = cone_grid(mu);
        let vel = cone_grid(if mu > 0.0 { 1.0 / mu } else { 1.0 });
        for (i, l) in lam.iter().enumerate() {
            for j in [i, (7 * i + 3) % vel.len(), (13 * i + 5) % vel.len()] {
                let c = vel[j % vel.len()];
                for (model, facets) in [
                    (KernelModel::Ncp, 4u32),
                    (KernelModel::Ccp, 4),
                    (KernelModel::Lcp, 4),
                    (KernelModel::Lcp, 6),
                ] {
                    cases.push([
                        [l[0], l[1], l[2], mu],
                        [c[0], c[1], c[2], 0.0],
                        [model as u32 as f32, facets as f32, 0.0, 0.0],
                    ]);
                }
            }
        }
    }
    check(
        &ctx,
        "contact_residuals",
        "contact_residuals(u32(p.x), u32(p.y), a.w, a.xyz, b.xyz)",
        &cases,
        |c| {
            let facets = c[2][1] as usize;
            let model = match c[2][0] as u32 {
                0 => ContactModel::Ncp,
                1 => ContactModel::Ccp,
                _ => ContactModel::Lcp(Pyramid::new(facets)),
            };
            let r = model.contact_residuals(c[0][3], v3(c[0]), v3(c[1]));
            vec![r.primal, r.dual, r.complementarity, r.eps_abs]
        },
    );
}

#[test]
fn unilateral_residuals_and_projection_match_their_cpu_twins_on_a_grid() {
    let Some(ctx) = GpuContext::for_tests() else {
        return;
    };
    // λ and c on a grid spanning signs, zero, tiny (|λ|² underflows f32)
    // and large values; every pair.
    let values = [
        -10.0f32, -1.0, -0.3, -1e-20, 0.0, 1e-25, 1e-20, 1e-6, 0.3, 1.0, 7.5, 1e10,
    ];
    let mut cases = Vec::new();
    for &l in &values {
        for &c in &values {
            cases.push([[l, c, 0.0, 0.0], [0.0; 4], [0.0; 4]]);
        }
    }
    check(
        &ctx,
        "unilateral_residuals",
        "unilateral_residuals(a.x, a.y)",
        &cases,
        |c| {
            let r = moreau::contact::criteria::unilateral_residuals(c[0][0], c[0][1]);
            vec![r.primal, r.dual, r.complementarity, r.eps_abs]
        },
    );
    check(
        &ctx,
        "project_unilateral",
        "vec4<f32>(project_unilateral(a.x), project_unilateral(a.y), 0.0, 0.0)",
        &cases,
        |c| vec![c[0][0].max(0.0), c[0][1].max(0.0)],
    );
}

/// The resident step's WGSL validates with naga for the models' sizes
/// (every scene's, with and without per-world records), every constant it
/// is compiled with reads back with the Rust value and is declared in no
/// shader file by hand, and every flat record's listed fields tile it.
#[test]
fn the_resident_kernel_validates_and_its_constants_are_rusts() {
    use moreau::gpu::resident::{self, layout, pairs};
    let files = shader_files();
    let mut with_contacts = 0;
    for name in moreau::scenes::SCENE_NAMES {
        let scene = moreau::scenes::scene(name).unwrap();
        for per_world in [false, true] {
            let source = resident::source_for(&scene.model, per_world, 0);
            with_contacts += usize::from(source.contains("const CONTACTS: bool = true"));
            let module = parse(&format!("resident.wgsl ({name})"), &source);
            let values = constants(&module);
            let generated = resident::constants_for(&scene.model, per_world, 0);
            for c in &generated {
                assert_eq!(
                    values.get(c.name),
                    Some(&literal(c.value)),
                    "{name}: {}",
                    c.name
                );
                for (file, text) in &files {
                    assert!(
                        !text.contains(&format!("const {}:", c.name)),
                        "{file} declares `{}` by hand; it is generated",
                        c.name
                    );
                }
            }
        }
    }
    // The contact stage (resident_contacts.wgsl) is in some of them.
    assert!(with_contacts > 0);
    // Every pair kind has its narrow phase, dispatched by name.
    let collide = std::fs::read_to_string(shaders_dir().join("resident_collide.wgsl")).unwrap();
    for kind in pairs::PairKind::ALL {
        assert!(
            collide.contains(&format!("== {}", kind.wgsl_name())),
            "resident_collide.wgsl does not dispatch {kind:?}"
        );
    }
    for (name, fields, size) in layout::records().into_iter().chain(pairs::records()) {
        contract::check_tiling(name, &fields, size).unwrap();
    }
}

/// The RL task's kernel (the resident kernel's source, then the task's
/// header, `philox.wgsl`, `gym_task.wgsl` and, with contacts,
/// `gym_task_forces.wgsl`) validates for every task the device evaluates,
/// with and without per-world records, on hinges and slides without
/// contacts (the cart-pole) and on a free joint with contacts (the
/// quadruped); its generated constants are Rust's and declared in no file
/// by hand; its records are their Rust twins.
#[test]
fn the_task_kernel_validates_for_every_device_task() {
    use moreau::gpu::resident::{self, DeviceTaskKind, DeviceTaskSpec, TaskFloats};
    let files = shader_files();
    for scene in ["cartpole", "quadruped"] {
        let model = moreau::scenes::scene(scene).unwrap().model;
        let contacts = !resident::pair_frames(&model).is_empty();
        assert_eq!(contacts, scene == "quadruped");
        for kind in DeviceTaskKind::ALL {
            let mut spec = DeviceTaskSpec {
                kind,
                obs_dim: 0,
                info_dim: 0,
                floats: TaskFloats::default(),
                qpos0: vec![0.0; model.nq],
                qvel0: vec![0.0; model.nv],
                frame_bodies: [1, 2],
                exclude_positions: true,
                terminate_unhealthy: true,
                normal_velocities: kind == DeviceTaskKind::HalfCheetah,
                include_cfrc_ext: kind == DeviceTaskKind::Ant,
                include_cinert: true,
                include_cvel: true,
                include_qfrc_actuator: true,
                frame_skip: 2,
            };
            // Other widths than the kernel writes are refused.
            assert!(
                spec.unsupported(&model)
                    .unwrap()
                    .contains("the kernel writes")
            );
            (spec.obs_dim, spec.info_dim) = spec.kernel_dims(&model);
            // (Humanoid's task reads a free joint: refused on the cart-pole,
            // its kernel validated still.)
            let refused = kind == DeviceTaskKind::Humanoid && model.nv < 6;
            assert_eq!(spec.unsupported(&model).is_some(), refused);
            for per_world in [false, true] {
                let source = resident::task_source(&model, per_world, 0, &spec);
                assert_eq!(source.contains("lambda[3u * i * n + world]"), contacts);
                let module = parse(&format!("gym_task.wgsl ({scene}, {kind:?})"), &source);
                check_record::<resident::TaskUniform>(&module).unwrap();
                let values = constants(&module);
                for name in [
                    "TASK_KIND",
                    "TASK_ROW",
                    "TASK_PAIR_FRAMES",
                    "TASK_WRENCHES",
                    "PHILOX_M0",
                    "PHILOX_W1",
                    "TF_FRAME_B",
                    "TF_CONTACT_FORCE_RANGE",
                    "TBF_INERTIA",
                    "TASK_TENDON_AT",
                ] {
                    assert!(values.contains_key(name), "{name}");
                    for (file, text) in &files {
                        assert!(!text.contains(&format!("const {name}:")), "{file}: {name}");
                    }
                }
                let row = spec.obs_dim + 2 + spec.info_dim;
                assert_eq!(values["TASK_ROW"], naga::Literal::U32(row as u32));
                assert_eq!(
                    values["PHILOX_M0"],
                    naga::Literal::U32(moreau::math::philox_constants()[0].1)
                );
            }
        }
    }
    let (name, fields, size) = contract::record_of::<TaskFloats>();
    contract::check_tiling(name, &fields, size).unwrap();
    let (name, fields, size) = contract::record_of::<resident::TaskBodyFrame>();
    contract::check_tiling(name, &fields, size).unwrap();
}

/// The number-coded facts the host and the kernels share are spelled by
/// name in every shader: a pair's kind, a joint's code, a contact's or a
/// row's mode, a solve's state or phase are compared with the generated
/// constants (`kind == PAIR_BOX_BOX`, `case JOINT_FREE:`), and the flat
/// records are indexed by their fields' offsets (`bf(i, BF_MASS)`), never
/// by a number.
#[test]
fn no_shader_spells_a_shared_code_or_record_field_by_number() {
    let mut bad = Vec::new();
    for (file, text) in shader_files() {
        bad.extend(spelled_by_number(&file, &text));
    }
    assert!(
        bad.is_empty(),
        "codes or record fields by number:\n{}",
        bad.join("\n")
    );
    // The scan finds each kind of number it looks for.
    let snippet = "switch jtype {\n    case JOINT_HINGE, 3u: {}\n}\n\
                   let m = bf(i, 15u) + bf(i, BF_MASS + 1u);\n\
                   if (kind == 6u || pu(p, PU_KIND) == PAIR_BOX_BOX) {}\n\
                   (*st).state = 8u; // PHASE_PMODES\n\
                   let mode = MODE_SLIDING; if (new_mode != 2.0) {}\n\
                   let x = wp(7u, params.limits.w);\n";
    let found = spelled_by_number("snippet", snippet);
    assert_eq!(found.len(), 6, "{found:#?}");
}

/// The lines of `text` (comments aside) that spell a shared code or a
/// record field by number (see the test above).
fn spelled_by_number(file: &str, text: &str) -> Vec<String> {
    let coded = |word: &str| {
        let w = word.to_ascii_lowercase();
        ["kind", "jtype", "mode", "state", "phase"]
            .iter()
            .any(|k| w.contains(k))
    };
    // The record accessors and which argument is the field's offset.
    let accessors = [
        ("bu", 1),
        ("bf", 1),
        ("bvec", 1),
        ("bmat", 1),
        ("df", 1),
        ("act_u", 1),
        ("act_f", 1),
        ("wp", 0),
        ("pu", 1),
        ("pf", 1),
        ("pvec", 1),
        ("crec", 1),
    ];
    let mut bad = Vec::new();
    {
        let code: Vec<&str> = text
            .lines()
            .map(|l| l.split("//").next().unwrap())
            .collect();
        let mut switch_on: Option<bool> = None;
        for (n, line) in code.iter().enumerate() {
            let at = format!("{file}:{}: {}", n + 1, line.trim());
            let tokens: Vec<&str> = line
                .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.'))
                .filter(|t| !t.is_empty())
                .collect();
            let numeric = |t: &str| t.starts_with(|c: char| c.is_ascii_digit());
            // `x == 3u`, `x != 2.0`, `x = 8u;` where x names a code.
            for op in ["==", "!=", " = "] {
                for (i, _) in line.match_indices(op) {
                    let left = line[..i].trim_end();
                    let right = line[i + op.len()..].trim_start();
                    let word = left
                        .rsplit(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.'))
                        .next()
                        .unwrap_or("");
                    if coded(word) && numeric(right) {
                        bad.push(at.clone());
                    }
                }
            }
            if let Some(rest) = line.trim().strip_prefix("switch ") {
                switch_on = Some(coded(rest));
            }
            if switch_on == Some(true)
                && line.trim_start().starts_with("case ")
                && tokens.iter().skip(1).any(|t| numeric(t))
            {
                bad.push(at.clone());
            }
            for (name, arg) in accessors {
                let pat = format!("{name}(");
                for (i, _) in line.match_indices(&pat) {
                    let before = line[..i].chars().last();
                    if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                        continue;
                    }
                    let args = &line[i + pat.len()..];
                    let mut depth = 0;
                    let mut parts = vec![String::new()];
                    for c in args.chars() {
                        match c {
                            '(' => depth += 1,
                            ')' if depth == 0 => break,
                            ')' => depth -= 1,
                            ',' if depth == 0 => {
                                parts.push(String::new());
                                continue;
                            }
                            _ => {}
                        }
                        parts.last_mut().unwrap().push(c);
                    }
                    if line.trim_start().starts_with("fn ") {
                        continue;
                    }
                    if parts.get(arg).is_some_and(|a| numeric(a.trim())) {
                        bad.push(at.clone());
                    }
                }
            }
        }
    }
    bad
}
