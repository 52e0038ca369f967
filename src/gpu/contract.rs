//! The host–device contract: the records the host writes and the kernels
//! read, each a `#[repr(C)]` (bytemuck) struct whose WGSL side is generated
//! from it, never written by hand.
//!
//! - A record the kernels bind as a WGSL struct (a problem's header, a
//!   result, a uniform's parameters) declares its fields' WGSL types with
//!   [`wgsl_record!`]; [`declaration`] writes the WGSL struct, and
//!   `tests/wgsl.rs` checks through naga that every member sits at the
//!   Rust field's offset with its size ([`check_layout`]).
//! - A record the kernels read as words of a flat array (a body's floats, a
//!   pair's words) names a WGSL constant per field; [`offsets`] makes them
//!   (the field's offset in words), and the kernels index the array with
//!   them (`bf(i, BF_MASS)`), so that a field moved in Rust moves in every
//!   kernel.
//!
//! [`check_tiling`] checks, for either kind, that the named fields cover
//! the struct exactly, in order, without gaps: a field added to the Rust
//! struct and not to its list is an error of the tests.

use super::shader::WgslConst;

/// One field of a record: its Rust name, its WGSL type (a struct's member)
/// or constant (a flat record's offset), and where it lies in bytes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RecordField {
    pub name: &'static str,
    pub wgsl: &'static str,
    pub offset: usize,
    pub size: usize,
}

/// A `#[repr(C)]` record with its fields listed for the WGSL side (see
/// [`wgsl_record!`]).
pub trait WgslRecord: bytemuck::Pod {
    /// Its name in WGSL (a struct's; a flat record's, for messages).
    const WGSL_NAME: &'static str;
    /// Its fields, in declaration order.
    fn fields() -> Vec<RecordField>;
    /// Its size in 4-byte words.
    fn words() -> usize {
        std::mem::size_of::<Self>() / 4
    }
}

/// The size of a field, from a projection (for [`wgsl_record!`]).
#[doc(hidden)]
pub const fn field_size<T, F>(_: fn(&T) -> &F) -> usize {
    std::mem::size_of::<F>()
}

/// Lists a `#[repr(C)]` struct's fields for the WGSL side:
/// `wgsl_record!(GpuProblem as "Problem" { nc: "u32", ... })`, each field
/// with its WGSL type (a struct) or its offset constant's name (a flat
/// record).
#[macro_export]
macro_rules! wgsl_record {
    ($ty:ty as $name:literal { $($field:ident: $wgsl:literal),* $(,)? }) => {
        impl $crate::gpu::contract::WgslRecord for $ty {
            const WGSL_NAME: &'static str = $name;
            fn fields() -> Vec<$crate::gpu::contract::RecordField> {
                vec![$($crate::gpu::contract::RecordField {
                    name: stringify!($field),
                    wgsl: $wgsl,
                    offset: std::mem::offset_of!($ty, $field),
                    size: $crate::gpu::contract::field_size(|r: &$ty| &r.$field),
                }),*]
            }
        }
    };
}

/// The WGSL struct of a record whose fields carry WGSL types, with a line
/// saying where it comes from.
pub fn declaration<T: WgslRecord>() -> String {
    let mut s = format!(
        "// Generated from `{}` (src/gpu/contract.rs): do not edit.\nstruct {} {{\n",
        std::any::type_name::<T>(),
        T::WGSL_NAME
    );
    for f in T::fields() {
        s.push_str(&format!("    {}: {},\n", f.name, f.wgsl));
    }
    s.push_str("}\n");
    s
}

/// The offset constants of a flat record: each field's first word.
pub fn offsets<T: WgslRecord>() -> Vec<WgslConst> {
    T::fields()
        .iter()
        .map(|f| WgslConst::u32(f.wgsl, (f.offset / 4) as u32))
        .collect()
}

/// Whether `fields` cover a record of `size` bytes exactly: in order, each
/// starting where the last ended, 4-byte aligned.
pub fn check_tiling(name: &str, fields: &[RecordField], size: usize) -> Result<(), String> {
    let mut at = 0;
    for f in fields {
        if f.offset != at {
            return Err(format!(
                "{name}: field `{}` at byte {}, expected {at} (a field missing from the list, or out of order)",
                f.name, f.offset
            ));
        }
        if f.size % 4 != 0 {
            return Err(format!(
                "{name}: field `{}` has {} bytes, not whole words",
                f.name, f.size
            ));
        }
        at += f.size;
    }
    if at != size {
        return Err(format!(
            "{name}: the listed fields end at byte {at}, the struct has {size} (a field missing from the list)"
        ));
    }
    Ok(())
}

/// A WGSL struct member as a compiler laid it out (name, offset, size).
#[derive(Clone, Debug, PartialEq)]
pub struct WgslMember {
    pub name: String,
    pub offset: usize,
    pub size: usize,
}

/// Whether the WGSL struct `members` (of `wgsl_size` bytes, as naga lays
/// it out) is the record `fields` of `size` bytes: the same names in the
/// same order, each at the same offset with the same size.
pub fn check_layout(
    name: &str,
    fields: &[RecordField],
    size: usize,
    members: &[WgslMember],
    wgsl_size: usize,
) -> Result<(), String> {
    if members.len() != fields.len() {
        return Err(format!(
            "{name}: {} WGSL members, {} Rust fields",
            members.len(),
            fields.len()
        ));
    }
    for (f, m) in fields.iter().zip(members) {
        if f.name != m.name || f.offset != m.offset || f.size != m.size {
            return Err(format!(
                "{name}: Rust field `{}` at byte {} ({} bytes), WGSL member `{}` at byte {} ({} bytes)",
                f.name, f.offset, f.size, m.name, m.offset, m.size
            ));
        }
    }
    if size != wgsl_size {
        return Err(format!("{name}: {size} bytes in Rust, {wgsl_size} in WGSL"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[repr(C)]
    #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
    struct Three {
        a: u32,
        b: [f32; 3],
        c: f32,
    }
    crate::wgsl_record!(Three as "THREE" { a: "THREE_A", b: "THREE_B", c: "THREE_C" });

    #[test]
    fn offsets_are_words_and_the_fields_tile_the_record() {
        let c = offsets::<Three>();
        let got: Vec<(&str, String)> = c.iter().map(|c| (c.name, c.declaration())).collect();
        assert_eq!(got[1].1, "const THREE_B: u32 = 1u;");
        assert_eq!(got[2].1, "const THREE_C: u32 = 4u;");
        assert_eq!(Three::words(), 5);
        assert!(check_tiling("Three", &Three::fields(), 20).is_ok());
        // One field left out of the list: the check says which.
        let mut missing = Three::fields();
        missing.remove(1);
        let e = check_tiling("Three", &missing, 20).unwrap_err();
        assert!(e.contains("`c`"), "{e}");
        let e = check_tiling("Three", &Three::fields()[..2], 20).unwrap_err();
        assert!(e.contains("end at byte 16"), "{e}");
    }
}
