//! Readers for registry answers: the step between a probe's raw bytes and a verdict.
//!
//! A probe hands over what a registry said — plain text from a WHOIS server (RFC 3912) or a
//! JSON document from an RDAP server (RFC 9083) — and gets back a *reading*: a class (registered,
//! available/not found, reserved, throttled, unknown) plus the registration facts found in the
//! answer, in the shared [`common::record::DomainRecord`] shape (spec §2.3).
//!
//! The readers never do I/O and never guess in the dangerous direction: an answer that matches
//! no known "not found" wording is `Unknown`, never available. Registry wording is data
//! (`workers/data/whois-markers.json`), not code.
//!
//! - [`whois`]: charset decoding, marker-based classification, key/value and block field reader.
//! - [`rdap`]: RDAP domain object reader (status values per RFC 9083 §10.2.2).

// No string is sliced with an offset found in another string (a lower-cased or folded copy):
// slices go through `get` or carry a reason why the offset is the same string's boundary
// (house rule 15; issue 32).
#![deny(clippy::string_slice)]

pub mod lexicon;
pub(crate) mod lowered;
pub mod rdap;
pub mod whois;
