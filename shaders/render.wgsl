// The renderer (src/render/mod.rs): each shape of each world drawn as one
// instance; a Lambert light from above and behind the camera plus an
// ambient term; planes checkered. Two targets: the colour and the depth
// along the camera's axis (0 where nothing is drawn). The structs Instance,
// Camera and Params are generated from their Rust twins
// (src/render/records.rs).

@group(0) @binding(0) var<storage, read> instances: array<Instance>;
@group(0) @binding(1) var<storage, read> cameras: array<Camera>;
@group(0) @binding(2) var<uniform> params: Params;

struct VertexOut {
    @builtin(position) clip: vec4<f32>,
    @location(0) normal: vec3<f32>,
    @location(1) world: vec3<f32>,
    @location(2) @interpolate(flat) instance: u32,
    @location(3) depth: f32,
};

@vertex
fn vs_main(
    @location(0) position: vec3<f32>,
    @location(1) normal: vec3<f32>,
    @builtin(instance_index) instance: u32,
) -> VertexOut {
    let inst = instances[instance];
    let cam = cameras[instance / params.per_world];
    let world = inst.model * vec4<f32>(position, 1.0);
    var out: VertexOut;
    out.clip = cam.view_proj * world;
    out.normal = (inst.model * vec4<f32>(normal, 0.0)).xyz;
    out.world = world.xyz;
    out.instance = instance;
    out.depth = -(cam.view * world).z;
    return out;
}

struct FragmentOut {
    @location(0) color: vec4<f32>,
    @location(1) depth: f32,
};

@fragment
fn fs_main(in: VertexOut, @builtin(front_facing) front: bool) -> FragmentOut {
    let inst = instances[in.instance];
    let cam = cameras[in.instance / params.per_world];
    var base = inst.color.rgb;
    if (inst.color.w > 0.5) {
        // A checker of 0.5 m squares.
        let cell = floor(in.world.xy / 0.5);
        let odd = (i32(cell.x) + i32(cell.y)) & 1;
        if (odd == 1) {
            base = base * 0.75;
        }
    }
    // A two-sided mesh seen from behind: its normal turned to the camera.
    var n = normalize(in.normal);
    if (!front) {
        n = -n;
    }
    let lit = max(dot(n, cam.light.xyz), 0.0);
    var out: FragmentOut;
    out.color = vec4<f32>(base * (0.3 + 0.7 * lit), 1.0);
    out.depth = in.depth;
    return out;
}

// The overlay's marks (contact points and forces): colour only, lit as
// the scene is.
@fragment
fn fs_overlay(in: VertexOut) -> @location(0) vec4<f32> {
    let inst = instances[in.instance];
    let cam = cameras[in.instance / params.per_world];
    let n = normalize(in.normal);
    let lit = max(dot(n, cam.light.xyz), 0.0);
    return vec4<f32>(inst.color.rgb * (0.45 + 0.55 * lit), 1.0);
}
