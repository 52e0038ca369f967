//! The problem flags: each bit a problem can come back with, its name in
//! messages and its WGSL constant (generated from [`FLAGS`]).

/// Flag: the problem failed host validation (NaN, sizes, μ < 0, R < 0,
/// asymmetric G), or a value f32 cannot hold (a box bound of
/// [`ROW_BILATERAL`](super::batch::ROW_BILATERAL) or more among them).
pub const FLAG_INVALID: u32 = 1;
/// Flag: a 3×3 diagonal block of G + R has a negative principal minor, or
/// the in-kernel Cholesky factorization of G + R + ρI met a non-positive pivot.
pub const FLAG_NOT_PSD: u32 = 2;
/// Flag: the iterates became non-finite.
pub const FLAG_DIVERGED: u32 = 4;
/// Flag: more contacts than the solver's `max_contacts_per_problem`, more
/// unilateral rows than its `max_unilateral_rows_per_problem`, or (workgroup
/// kernel) more rows than its workgroup memory holds.
pub const FLAG_OVER_CAPACITY: u32 = 8;
/// Flag: the driver's per-invocation loop limit was reached during a
/// dispatch (Mesa's llvmpipe / lavapipe), so the results cannot be trusted.
/// The kernels detect it with a canary loop; the host also sets it on a
/// problem whose state the kernel never marked finished although no
/// problem was left running (seen on lavapipe when the limit cuts a
/// workgroup kernel's loops, whose barriers then no longer pair up).
pub const FLAG_LOOP_LIMIT: u32 = 16;
/// Flag: the problem has rows of a contact's wider cone (torsional or
/// rolling friction, MuJoCo's `condim` 4 and 6), which only the ADMM
/// kernels solve; the PGS kernels (and their f32 CPU twin) return it
/// unsolved.
pub const FLAG_CONE_ROWS: u32 = 32;

/// A problem flag: its bit, its name in messages and its WGSL constant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Flag {
    pub bit: u32,
    pub name: &'static str,
    pub wgsl_name: &'static str,
}

/// Every flag (the WGSL constants are generated from this table).
pub const FLAGS: [Flag; 6] = [
    Flag {
        bit: FLAG_INVALID,
        name: "invalid",
        wgsl_name: "FLAG_INVALID",
    },
    Flag {
        bit: FLAG_NOT_PSD,
        name: "not-psd",
        wgsl_name: "FLAG_NOT_PSD",
    },
    Flag {
        bit: FLAG_DIVERGED,
        name: "diverged",
        wgsl_name: "FLAG_DIVERGED",
    },
    Flag {
        bit: FLAG_OVER_CAPACITY,
        name: "over-capacity",
        wgsl_name: "FLAG_OVER_CAPACITY",
    },
    Flag {
        bit: FLAG_LOOP_LIMIT,
        name: "driver-loop-limit",
        wgsl_name: "FLAG_LOOP_LIMIT",
    },
    Flag {
        bit: FLAG_CONE_ROWS,
        name: "cone-rows",
        wgsl_name: "FLAG_CONE_ROWS",
    },
];

/// The flags a problem keeps when a dispatch was cut by the driver's loop
/// limit: the verdicts made before any loop ran (the host's validation, the
/// capacity, the cone rows a PGS kernel does not take). The others (a
/// non-positive pivot, non-finite iterates) come from loops the driver may
/// have cut, so they are dropped rather than reported as the problem's.
pub const FLAGS_KEPT_WHEN_CUT: u32 = FLAG_INVALID | FLAG_OVER_CAPACITY | FLAG_CONE_ROWS;

/// The flags of a problem whose dispatch the driver's loop limit cut:
/// [`FLAG_LOOP_LIMIT`] and those in [`FLAGS_KEPT_WHEN_CUT`] (the kernels'
/// `cut_flags` in `common.wgsl` applies the same rule).
pub fn cut_flags(flags: u32) -> u32 {
    (flags & FLAGS_KEPT_WHEN_CUT) | FLAG_LOOP_LIMIT
}

/// Trip count of the kernels' canary loop (see [`FLAG_LOOP_LIMIT`]).
pub const CANARY: u32 = 16;

/// Names of the flags set in `flags`, for messages.
pub fn flag_names(flags: u32) -> Vec<&'static str> {
    FLAGS
        .iter()
        .filter(|f| flags & f.bit != 0)
        .map(|f| f.name)
        .collect()
}
