//! Shared vocabulary of dsa.
//!
//! * [`domain`]: user input → a normalised registrable [`domain::DomainName`] (UTS 46 + the Public
//!   Suffix List's ICANN section).
//! * [`catalogue`]: every IANA TLD with its lookup method chain (RDAP, WHOIS, DNS) and a reason,
//!   loaded from the versioned data file `common/data/tld-catalogue.json`.
//! * [`lookup`]: the kinds of lookup on the job bus (check, whois, dns) and their answers.
//! * [`request_id`]: the id that follows one request through every role's logs.
//! * [`record`]: the registration facts read from a WHOIS or RDAP answer (spec §2.3).
//! * [`verdict`]: the availability verdict the engine hands to the front (spec §2.2 plus our nested
//!   additions).

pub mod catalogue;
pub mod domain;
pub mod lookup;
pub mod messages;
pub mod nats_auth;
pub mod priority;
pub mod public_name;
pub mod record;
pub mod request_id;
pub mod subjects;
pub mod verdict;
