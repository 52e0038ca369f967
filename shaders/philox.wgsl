// Philox4x32-10, the twin of math/philox.rs (`philox4x32`, `PhiloxStream`):
// the RL environments' reset streams keyed by (seed, environment, episode),
// the same words on the device as on the host. Pure functions and one
// private stream; the multipliers and key increments are the generated
// PHILOX_M0, PHILOX_M1, PHILOX_W0, PHILOX_W1.

// The high and low words of the 64-bit product a·b (WGSL has no u64): by
// 16-bit halves.
fn mulhilo(a: u32, b: u32) -> vec2<u32> {
    let a0 = a & 0xffffu;
    let a1 = a >> 16u;
    let b0 = b & 0xffffu;
    let b1 = b >> 16u;
    let p00 = a0 * b0;
    let p01 = a0 * b1;
    let p10 = a1 * b0;
    let p11 = a1 * b1;
    let mid = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
    let lo = (p00 & 0xffffu) | (mid << 16u);
    let hi = p11 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u);
    return vec2<u32>(hi, lo);
}

// The 4 words of Philox4x32-10 at counter `ctr` and key `key`.
fn philox4x32(ctr: vec4<u32>, key: vec2<u32>) -> vec4<u32> {
    var c = ctr;
    var k = key;
    for (var r = 0u; r < 10u; r++) {
        let p0 = mulhilo(PHILOX_M0, c.x);
        let p1 = mulhilo(PHILOX_M1, c.z);
        c = vec4<u32>(p1.x ^ c.y ^ k.x, p1.y, p0.x ^ c.w ^ k.y, p0.y);
        k = k + vec2<u32>(PHILOX_W0, PHILOX_W1);
    }
    return c;
}

// One stream (PhiloxStream): key, the counter's words 2 and 3 (its two
// indices), the next block (counter word 0; word 1 stays 0 below 2³²
// blocks), the block's words and how many are used.
struct Philox {
    key: vec2<u32>,
    ids: vec2<u32>,
    block: u32,
    used: u32,
    words: vec4<u32>,
}

var<private> rng: Philox;

fn philox_start(key: vec2<u32>, a: u32, b: u32) {
    rng = Philox(key, vec2<u32>(a, b), 0u, 4u, vec4<u32>(0u));
}

fn philox_next() -> u32 {
    if (rng.used == 4u) {
        rng.words = philox4x32(vec4<u32>(rng.block, 0u, rng.ids.x, rng.ids.y), rng.key);
        rng.block += 1u;
        rng.used = 0u;
    }
    let x = rng.words[rng.used];
    rng.used += 1u;
    return x;
}

// Uniform in [0, 1) from the 53 bits the host takes of two words, rounded
// to f32 and kept below 1 (the host's f64 can be within 2⁻⁵³ of 1).
fn philox_uniform() -> f32 {
    let a = philox_next() >> 5u;
    let b = philox_next() >> 6u;
    let u = f32(a) * 7.450580596923828e-9 + f32(b) * 1.1102230246251565e-16;
    return min(u, 0.99999994);
}

fn philox_range(lo: f32, hi: f32) -> f32 {
    return lo + (hi - lo) * philox_uniform();
}

// Standard normal (math::rng::box_muller: one of the pair).
fn philox_normal() -> f32 {
    let u1 = 1.0 - philox_uniform();
    let b = philox_uniform();
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * b);
}
