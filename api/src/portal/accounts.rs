//! Accounts of the portal (`/account`): the owner of a set of keys, signing in with an e-mail
//! address and a password.
//!
//! * Passwords are hashed with **argon2id** (RFC 9106), RustCrypto's `argon2` crate, PHC string
//!   format with a random 16-byte salt. Parameters: [`PasswordParams::default`], OWASP's
//!   "Password Storage Cheat Sheet" minimum for argon2id (19 MiB of memory, 2 passes, 1 lane);
//!   an operator can raise them (`[policy.portal]`), and old hashes keep verifying because the PHC
//!   string carries its own parameters.
//! * A password has [`MIN_PASSWORD_CHARS`] characters or more and is not on the shipped list of
//!   the most common passwords (`api/data/common-passwords.txt`).
//! * Session cookies, CSRF tokens and reset tokens are 256-bit random values, base64url; only
//!   their SHA-256 is stored (a stolen database yields no usable cookie or link).

use std::collections::HashSet;
use std::sync::OnceLock;

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::{Algorithm, Argon2, Params, Version};
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Shortest password accepted, in characters (NIST SP 800-63B §5.1.1.2 asks for at least 8).
pub const MIN_PASSWORD_CHARS: usize = 10;
/// Longest password accepted, in characters (bounds the hashing work an attacker can ask for).
pub const MAX_PASSWORD_CHARS: usize = 256;

/// Whether an account may sign in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, strum::IntoStaticStr, strum::EnumString)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum AccountState {
    /// Signs in normally.
    Active,
    /// Turned off by the operator (`dsa accounts disable`): cannot sign in; its sessions ended.
    Disabled,
}

impl AccountState {
    /// Stored name; the same names as serde's.
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// Parses a stored name.
    pub fn parse(s: &str) -> Option<Self> {
        s.parse().ok()
    }
}

/// An account as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Account {
    /// Stable id (UUID v7).
    pub id: String,
    /// E-mail address (trimmed, lower-case).
    pub email: String,
    /// Display name.
    pub display_name: String,
    /// argon2id PHC string.
    #[serde(skip_serializing)]
    pub password_hash: String,
    /// Active or disabled.
    pub state: AccountState,
    /// When it was created (RFC 3339, UTC).
    pub created_at: String,
    /// The operator's cap on active keys of each kind (`dsa accounts set-key-cap`); `None`: the
    /// plan's (`policy.portal.key_caps`).
    #[serde(default)]
    pub key_cap: Option<i64>,
    /// Whether the owner followed the verification link (always true without
    /// `policy.portal.smtp`, and for accounts made before verification existed).
    #[serde(default)]
    pub email_verified: bool,
}

/// An account being created.
#[derive(Debug, Clone)]
pub struct NewAccount {
    /// E-mail address (see [`Email`]).
    pub email: String,
    /// Display name.
    pub display_name: String,
    /// argon2id PHC string.
    pub password_hash: String,
    /// False when the address must be verified before the account gets keys.
    pub email_verified: bool,
}

/// A portal session as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionRecord {
    /// SHA-256 (hex) of the cookie's token.
    pub token_hash: String,
    /// Whose session.
    pub account_id: String,
    /// The session's CSRF token, echoed by every form.
    pub csrf_token: String,
    /// Start, unix seconds (absolute expiry counts from it).
    pub created_at: i64,
    /// Last request, unix seconds (idle expiry counts from it).
    pub last_seen_at: i64,
}

/// One charge to a key, as the dashboard lists it (no key material: the key's id only).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Charge {
    /// When (RFC 3339, UTC).
    pub charged_at: String,
    /// Which key (id).
    pub key_id: String,
    /// Endpoint name as the ledger records it.
    pub endpoint: String,
    /// Credits charged.
    pub credits: i64,
}

/// A syntactically plausible e-mail address, trimmed and lower-cased.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Email(String);

impl Email {
    /// Parses an address: one `@`, a non-empty local part, a domain with a dot, no white space,
    /// at most 254 characters (RFC 5321 §4.5.3.1.3). Deliverability is not checked.
    ///
    /// # Errors
    /// The key of the form's message (`crate::portal::text`).
    pub fn parse(text: &str) -> Result<Self, &'static str> {
        let email = text.trim().to_lowercase();
        let ok = email.len() <= 254
            && !email.chars().any(|c| c.is_whitespace() || c.is_control() || matches!(c, '<' | '>' | '"'))
            && match email.split_once('@') {
                Some((local, domain)) => {
                    !local.is_empty()
                        && !domain.contains('@')
                        && domain.contains('.')
                        && !domain.starts_with('.')
                        && !domain.ends_with('.')
                }
                None => false,
            };
        if ok { Ok(Self(email)) } else { Err("email_invalid") }
    }

    /// The address.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// argon2id cost parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PasswordParams {
    /// Memory, KiB.
    pub memory_kib: u32,
    /// Passes over the memory.
    pub iterations: u32,
    /// Lanes.
    pub parallelism: u32,
}

impl Default for PasswordParams {
    /// OWASP Password Storage Cheat Sheet, argon2id: m = 19 MiB, t = 2, p = 1.
    fn default() -> Self {
        Self { memory_kib: 19_456, iterations: 2, parallelism: 1 }
    }
}

impl PasswordParams {
    fn hasher(self) -> anyhow::Result<Argon2<'static>> {
        let params = Params::new(self.memory_kib, self.iterations, self.parallelism, None)
            .map_err(|e| anyhow::anyhow!("argon2 parameters: {e}"))?;
        Ok(Argon2::new(Algorithm::Argon2id, Version::V0x13, params))
    }

    /// Hashes a password (CPU- and memory-heavy: call it on a blocking thread).
    ///
    /// # Errors
    /// Bad parameters.
    pub fn hash(self, password: &str) -> anyhow::Result<String> {
        let salt =
            SaltString::encode_b64(&rand::random::<[u8; 16]>()).map_err(|e| anyhow::anyhow!("password salt: {e}"))?;
        Ok(self
            .hasher()?
            .hash_password(password.as_bytes(), &salt)
            .map_err(|e| anyhow::anyhow!("password hash: {e}"))?
            .to_string())
    }
}

/// Whether `password` matches a stored PHC string (its own parameters apply). A malformed hash
/// never matches.
pub fn verify_password(password: &str, phc: &str) -> bool {
    match PasswordHash::new(phc) {
        Ok(parsed) => Argon2::default().verify_password(password.as_bytes(), &parsed).is_ok(),
        Err(_) => false,
    }
}

/// Checks a new password against the policy.
///
/// # Errors
/// The key of the form's message (`crate::portal::text`).
pub fn check_new_password(password: &str, email: &str) -> Result<(), &'static str> {
    let chars = password.chars().count();
    if chars < MIN_PASSWORD_CHARS {
        return Err("password_too_short");
    }
    if chars > MAX_PASSWORD_CHARS {
        return Err("password_too_long");
    }
    let lower = password.to_lowercase();
    if common_passwords().contains(lower.as_str()) {
        return Err("password_common");
    }
    if !email.is_empty() && lower == email.to_lowercase() {
        return Err("password_is_email");
    }
    if password.chars().all(|c| password.starts_with(c)) {
        return Err("password_repeated");
    }
    Ok(())
}

/// The shipped list of common passwords (lower-case).
fn common_passwords() -> &'static HashSet<&'static str> {
    static LIST: OnceLock<HashSet<&'static str>> = OnceLock::new();
    LIST.get_or_init(|| {
        include_str!("../../data/common-passwords.txt")
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .collect()
    })
}

/// A new random token (256 bits, base64url without padding): session cookies, CSRF and reset
/// tokens.
pub fn new_token() -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(rand::random::<[u8; 32]>())
}

/// Hex SHA-256 of a token (what is stored).
pub fn token_hash(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// Compares two strings in time independent of where they differ (CSRF tokens).
pub fn same_secret(a: &str, b: &str) -> bool {
    let (a, b) = (Sha256::digest(a.as_bytes()), Sha256::digest(b.as_bytes()));
    a.iter().zip(b.iter()).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cheap() -> PasswordParams {
        PasswordParams { memory_kib: 64, iterations: 1, parallelism: 1 }
    }

    #[test]
    fn hashes_are_argon2id_and_verify() {
        let hash = cheap().hash("correct horse battery").expect("hash");
        assert!(hash.starts_with("$argon2id$v=19$m=64,t=1,p=1$"), "{hash}");
        assert!(verify_password("correct horse battery", &hash));
        assert!(!verify_password("correct horse batterY", &hash));
        assert!(!verify_password("x", "not a hash"));
        assert_ne!(hash, cheap().hash("correct horse battery").expect("hash"), "salted");
    }

    #[test]
    fn password_policy() {
        assert_eq!(check_new_password("short", ""), Err("password_too_short"));
        assert_eq!(check_new_password("Password123", ""), Err("password_common"), "common, any case");
        assert!(check_new_password("qwertyuiop", "").is_err());
        assert!(check_new_password("aaaaaaaaaaaa", "").is_err());
        assert!(check_new_password("me@example.com", "me@example.com").is_err());
        assert!(check_new_password("tiny-lamp-orbit-77", "me@example.com").is_ok());
    }

    #[test]
    fn emails() {
        assert_eq!(Email::parse(" Me@Example.COM ").expect("ok").as_str(), "me@example.com");
        for bad in ["", "me", "me@", "@example.com", "me@example", "me@@example.com", "m e@example.com", "me@.com"] {
            assert!(Email::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn tokens() {
        let t = new_token();
        assert_eq!(t.len(), 43);
        assert_ne!(t, new_token());
        assert_eq!(token_hash(&t).len(), 64);
        assert!(same_secret(&t, &t.clone()));
        assert!(!same_secret(&t, &new_token()));
    }
}
