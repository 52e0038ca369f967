// The vector–Jacobian product of the contact stage, one invocation per
// world: given the adjoint λ̄ of the impulses at a solution (λ, c) whose
// modes the host read off, ḡ = Λᵀ λ̄ = −D_cᵀ A⁻ᵀ λ̄ with
// A = D_λ + D_c (G + R) (see `src/contact/sensitivity.rs`, whose
// `apply_transpose` this mirrors, and `src/gpu/vjp.rs`, its f64 twin).
// Aᵀ is formed in the world's work area, factorized by Gaussian elimination
// with partial pivoting after a relative regularization VJP_REGULARIZATION,
// and the solve refined VJP_ROUNDS times against Aᵀ itself.
//
// Constants from the Rust header: VJP_WORKGROUP, VJP_REGULARIZATION,
// VJP_ROUNDS, MODE_BREAKING, MODE_STICKING, MODE_SLIDING, VJP_FLAG_SINGULAR;
// the struct VjpWorld, from GpuVjpWorld (src/gpu/vjp.rs).

@group(0) @binding(0) var<storage, read> worlds: array<VjpWorld>;
@group(0) @binding(1) var<storage, read> inputs: array<f32>;
@group(0) @binding(2) var<storage, read> modes: array<u32>;
@group(0) @binding(3) var<storage, read_write> g_bar: array<f32>;
@group(0) @binding(4) var<storage, read_write> work: array<f32>;
@group(0) @binding(5) var<storage, read_write> pivots: array<u32>;
@group(0) @binding(6) var<storage, read_write> flags: array<u32>;

// D_λ and D_c of one block (row-major 3 × 3), as the CPU's `factorize`.
struct Blocks {
    dl: array<f32, 9>,
    dc: array<f32, 9>,
}

fn contact_blocks(w: VjpWorld, i: u32) -> Blocks {
    var b: Blocks;
    let base = w.input + w.m * w.m;
    let mode = modes[w.row + 3u * i];
    if mode == MODE_BREAKING {
        b.dl[0] = 1.0;
        b.dl[4] = 1.0;
        b.dl[8] = 1.0;
    } else if mode == MODE_STICKING {
        b.dc[0] = 1.0;
        b.dc[4] = 1.0;
        b.dc[8] = 1.0;
    } else {
        let c0 = inputs[base + w.m + 3u * i];
        let c1 = inputs[base + w.m + 3u * i + 1u];
        let ln = inputs[base + 3u * i + 2u];
        let mu = inputs[base + 2u * w.m + 3u * i];
        let ct = sqrt(c0 * c0 + c1 * c1);
        let u0 = c0 / ct;
        let u1 = c1 / ct;
        let s = mu * ln / ct;
        b.dc[8] = 1.0;
        b.dl[0] = 1.0;
        b.dl[4] = 1.0;
        b.dl[2] = mu * u0;
        b.dl[5] = mu * u1;
        b.dc[0] = s * (1.0 - u0 * u0);
        b.dc[1] = -s * u0 * u1;
        b.dc[3] = -s * u0 * u1;
        b.dc[4] = s * (1.0 - u1 * u1);
    }
    return b;
}

// Aᵀ[j, r] (column-major at work + j + m r) = A[r, j].
fn at_index(w: VjpWorld, j: u32, r: u32) -> u32 {
    return w.work + j + w.m * r;
}

fn lu_index(w: VjpWorld, i: u32, j: u32) -> u32 {
    return w.work + w.m * w.m + i + w.m * j;
}

// LU x = b in place on the vector at `work + 2m² + off` (pivots applied).
fn lu_solve(w: VjpWorld, off: u32) {
    let m = w.m;
    let v = w.work + 2u * m * m + off;
    for (var k = 0u; k < m; k++) {
        let p = pivots[w.row + k];
        if p != k {
            let t = work[v + k];
            work[v + k] = work[v + p];
            work[v + p] = t;
        }
    }
    for (var i = 1u; i < m; i++) {
        var s = work[v + i];
        for (var k = 0u; k < i; k++) {
            s -= work[lu_index(w, i, k)] * work[v + k];
        }
        work[v + i] = s;
    }
    for (var ii = 0u; ii < m; ii++) {
        let i = m - 1u - ii;
        var s = work[v + i];
        for (var k = i + 1u; k < m; k++) {
            s -= work[lu_index(w, i, k)] * work[v + k];
        }
        work[v + i] = s / work[lu_index(w, i, i)];
    }
}

@compute @workgroup_size(VJP_WORKGROUP)
fn contact_vjp(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let index = id.x + id.y * groups.x * VJP_WORKGROUP;
    if index >= arrayLength(&worlds) {
        return;
    }
    let w = worlds[index];
    let m = w.m;
    let nc = w.nc;
    if m == 0u {
        flags[index] = 0u;
        return;
    }
    // Aᵀ: row r of A is D_c (G + R) over the block's rows plus D_λ on the
    // block's diagonal.
    for (var r = 0u; r < m; r++) {
        for (var j = 0u; j < m; j++) {
            work[at_index(w, j, r)] = 0.0;
        }
    }
    for (var i = 0u; i < nc; i++) {
        let b = contact_blocks(w, i);
        for (var r = 0u; r < 3u; r++) {
            for (var j = 0u; j < m; j++) {
                var v = 0.0;
                for (var t = 0u; t < 3u; t++) {
                    v += b.dc[3u * r + t] * inputs[w.input + 3u * i + t + m * j];
                }
                work[at_index(w, j, 3u * i + r)] = v;
            }
            for (var t = 0u; t < 3u; t++) {
                work[at_index(w, 3u * i + t, 3u * i + r)] += b.dl[3u * r + t];
            }
        }
    }
    for (var k = 3u * nc; k < m; k++) {
        if modes[w.row + k] == MODE_BREAKING {
            work[at_index(w, k, k)] = 1.0;
        } else {
            for (var j = 0u; j < m; j++) {
                work[at_index(w, j, k)] = inputs[w.input + k + m * j];
            }
        }
    }
    // LU of Aᵀ + εI with partial pivoting.
    var amax = 0.0;
    for (var e = 0u; e < m * m; e++) {
        work[w.work + m * m + e] = work[w.work + e];
        amax = max(amax, abs(work[w.work + e]));
    }
    for (var k = 0u; k < m; k++) {
        work[lu_index(w, k, k)] += VJP_REGULARIZATION * amax;
    }
    var flag = 0u;
    for (var k = 0u; k < m; k++) {
        var p = k;
        var best = abs(work[lu_index(w, k, k)]);
        for (var i = k + 1u; i < m; i++) {
            let a = abs(work[lu_index(w, i, k)]);
            if a > best {
                best = a;
                p = i;
            }
        }
        pivots[w.row + k] = p;
        if p != k {
            for (var j = 0u; j < m; j++) {
                let t = work[lu_index(w, k, j)];
                work[lu_index(w, k, j)] = work[lu_index(w, p, j)];
                work[lu_index(w, p, j)] = t;
            }
        }
        let d = work[lu_index(w, k, k)];
        if d == 0.0 {
            flag = VJP_FLAG_SINGULAR;
            work[lu_index(w, k, k)] = 1.0;
        }
        for (var i = k + 1u; i < m; i++) {
            work[lu_index(w, i, k)] /= work[lu_index(w, k, k)];
        }
        for (var j = k + 1u; j < m; j++) {
            let f = work[lu_index(w, k, j)];
            for (var i = k + 1u; i < m; i++) {
                work[lu_index(w, i, j)] -= work[lu_index(w, i, k)] * f;
            }
        }
    }
    // Aᵀ y = λ̄, refined: y at x, the residual at x + m.
    let x = w.work + 2u * m * m;
    let lambda_bar = w.input + m * m + 3u * m;
    for (var r = 0u; r < m; r++) {
        work[x + r] = 0.0;
    }
    for (var round = 0u; round <= VJP_ROUNDS; round++) {
        for (var r = 0u; r < m; r++) {
            var v = inputs[lambda_bar + r];
            for (var k = 0u; k < m; k++) {
                v -= work[at_index(w, r, k)] * work[x + k];
            }
            work[x + m + r] = v;
        }
        lu_solve(w, m);
        for (var r = 0u; r < m; r++) {
            work[x + r] += work[x + m + r];
        }
    }
    // ḡ = −D_cᵀ y.
    for (var i = 0u; i < nc; i++) {
        let b = contact_blocks(w, i);
        for (var t = 0u; t < 3u; t++) {
            var v = 0.0;
            for (var r = 0u; r < 3u; r++) {
                v += b.dc[3u * r + t] * work[x + 3u * i + r];
            }
            g_bar[w.row + 3u * i + t] = -v;
        }
    }
    for (var k = 3u * nc; k < m; k++) {
        if modes[w.row + k] == MODE_BREAKING {
            g_bar[w.row + k] = 0.0;
        } else {
            g_bar[w.row + k] = -work[x + k];
        }
    }
    flags[index] = flag;
}
