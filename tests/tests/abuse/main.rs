//! The abuse suite: dsa tried as an attacker would, one place for the whole threat model.
//!
//! Each module is one class of attack, and each test in it failed on the code before its fix
//! (the closing notes of issue 32 say which commit closed which finding):
//!
//! - [`upstream`]: hostile registry bytes (WHOIS, RDAP, DNS answers) never panic a reader, never
//!   take a worker task away, and readiness tells the truth while a role cannot take work.
//! - [`accounts`]: credits cannot be farmed (key caps, sign-up and key-creation rates, e-mail
//!   verification), anonymous portal traffic has bounded memory, disabled accounts disable their
//!   keys, password hashing has a global budget, and no third party can lock a user out.
//! - [`bus`]: fleet roles cannot read or forge each other's NATS traffic, the ledger applies only
//!   its own stream's deliveries and never a non-positive charge, `/v1/dns` resolves public names
//!   only, and the smaller network and durability rules (redirects, proxies, `/metrics`,
//!   streaming bulk deadlines).

mod accounts;
mod bus;
mod upstream;
