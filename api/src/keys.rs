//! Client keys (spec §2.1, §5): kinds, states, plans, generation and hashing.
//!
//! A key is `dsa_<kind>_<32 random base62 characters>` (≈190 bits): the prefix lets a human tell
//! an embed key (`dsa_embed_…`, browser-side) from a server key (`dsa_server_…`, secret). Only the
//! SHA-256 of the key is stored; logs carry an 8-hex-digit fingerprint, never the key.

use rand::Rng;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Browser-side or secret key (spec §2.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KeyKind {
    /// For browser-side use; its allowed-origins list protects it.
    Embed,
    /// Secret; must never appear in front-end code.
    Server,
}

impl KeyKind {
    /// Lower-case name as stored (`embed`, `server`).
    pub fn as_str(self) -> &'static str {
        match self {
            KeyKind::Embed => "embed",
            KeyKind::Server => "server",
        }
    }

    /// Parses a stored or typed name.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "embed" => Some(KeyKind::Embed),
            "server" => Some(KeyKind::Server),
            _ => None,
        }
    }
}

/// Key state (spec §3): only active keys are accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KeyState {
    /// Accepted.
    Active,
    /// Turned off by its owner or the operator.
    Disabled,
    /// Turned off by the operator (abuse, unpaid).
    Suspended,
}

impl KeyState {
    /// Lower-case name as stored.
    pub fn as_str(self) -> &'static str {
        match self {
            KeyState::Active => "active",
            KeyState::Disabled => "disabled",
            KeyState::Suspended => "suspended",
        }
    }

    /// Parses a stored or typed name.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "active" => Some(KeyState::Active),
            "disabled" => Some(KeyState::Disabled),
            "suspended" => Some(KeyState::Suspended),
            _ => None,
        }
    }
}

/// Plans and their monthly allowances in credits (spec §8).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Plan {
    /// Free Developer: 500 credits a month.
    Free,
    /// Starter: 5,000 credits a month.
    Starter,
    /// PRO: 25,000 credits a month.
    Pro,
    /// Reseller: 50,000 credits a month.
    Reseller,
}

impl Plan {
    /// Monthly allowance, credits (spec §8).
    pub fn monthly_credits(self) -> i64 {
        match self {
            Plan::Free => 500,
            Plan::Starter => 5_000,
            Plan::Pro => 25_000,
            Plan::Reseller => 50_000,
        }
    }

    /// Stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Plan::Free => "free",
            Plan::Starter => "starter",
            Plan::Pro => "pro",
            Plan::Reseller => "reseller",
        }
    }

    /// Parses a stored or typed name.
    pub fn parse(s: &str) -> Option<Self> {
        match s.to_ascii_lowercase().as_str() {
            "free" | "developer" | "free_developer" => Some(Plan::Free),
            "starter" => Some(Plan::Starter),
            "pro" => Some(Plan::Pro),
            "reseller" => Some(Plan::Reseller),
            _ => None,
        }
    }
}

/// A key record as stored, with the settings responses depend on (spec §2.1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeyRecord {
    /// Stable id (UUID v7).
    pub id: String,
    /// Short fingerprint for logs and the CLI.
    pub fingerprint: String,
    /// Embed or server.
    pub kind: KeyKind,
    /// Active, disabled or suspended.
    pub state: KeyState,
    /// Plan name.
    pub plan: Plan,
    /// Monthly allowance, credits.
    pub monthly_allowance: i64,
    /// Whether responses carry `pricing` (spec §2.2).
    pub pricing_enabled: bool,
    /// Whether responses carry `purchase` for available names.
    pub show_purchase_button: bool,
    /// Admin-configured default commission, percent.
    pub default_commission_percent: Option<f64>,
    /// Configured purchase (checkout) URL.
    pub purchase_url: Option<String>,
    /// Allowed origins (`https://shop.example`, `https://*.example.com`).
    pub allowed_origins: Vec<String>,
    /// Free-text label.
    pub label: String,
}

/// Generates a new key of `kind`; returns the key (show once) and its stored hash.
pub fn generate(kind: KeyKind) -> (String, String) {
    const ALPHABET: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    let mut rng = rand::rng();
    let body: String = (0..32).map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char).collect();
    let key = format!("dsa_{}_{body}", kind.as_str());
    let hash = hash_key(&key);
    (key, hash)
}

/// Hex SHA-256 of a key (what is stored and looked up).
pub fn hash_key(key: &str) -> String {
    hex::encode(Sha256::digest(key.as_bytes()))
}

/// Short fingerprint of a key hash for logs (first 8 hex digits).
pub fn fingerprint(hash: &str) -> String {
    hash.chars().take(8).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_prefixed_random_and_hashed() {
        let (a, ha) = generate(KeyKind::Embed);
        let (b, _) = generate(KeyKind::Server);
        assert!(a.starts_with("dsa_embed_") && a.len() == 42, "{a}");
        assert!(b.starts_with("dsa_server_"));
        assert_ne!(a, b);
        assert_eq!(ha, hash_key(&a));
        assert_eq!(ha.len(), 64);
        assert!(!ha.contains(&a[10..]));
    }
}
