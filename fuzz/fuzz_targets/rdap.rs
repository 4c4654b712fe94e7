//! Fuzz target `rdap`: see `fuzz/checks.rs` for the input framing and the invariants.
#![no_main]

#[allow(dead_code)]
#[path = "../checks_parsers.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::rdap(data));
