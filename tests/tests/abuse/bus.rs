//! See the suite's crate doc (`main.rs`).
