//! Fuzz target `whois`: the bytes are read as choices that build a WHOIS answer from real keys,
//! status and not-found words, dates and case-shifting characters (`checks::whois_structured`);
//! see `fuzz/checks.rs` for the invariants.
#![no_main]

#[allow(dead_code)]
#[path = "../checks_parsers.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::whois_structured(data));
