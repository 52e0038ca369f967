//! The README's Rust block runs as written: it is `examples/readme.rs`
//! word for word, and this test runs it. (The command-line blocks are run
//! by the lab's `tests/readme.rs`, the Python blocks by
//! `python/tests/test_readme.py`.)

mod common;

use common::code_blocks as blocks;

mod readme {
    include!("../examples/readme.rs");

    pub fn run() -> Result<(), Box<dyn std::error::Error>> {
        main()
    }
}

#[test]
fn the_readme_rust_block_is_examples_readme_and_runs() {
    let readme = include_str!("../README.md");
    let rust = blocks(readme, "rust");
    assert_eq!(rust.len(), 1, "one Rust block in the README");
    let example = include_str!("../examples/readme.rs");
    assert!(
        example.ends_with(&rust[0]),
        "examples/readme.rs is not the README's Rust block:\n{}",
        rust[0]
    );
    readme::run().unwrap();
}
