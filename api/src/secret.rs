//! A configuration value that may carry a credential, kept out of logs.

use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};

/// A setting that may carry a credential (the NATS URL's `user:password@`, the database URL's
/// password, the demo cookie secret), held as a [`secrecy::SecretString`]: its `Debug` prints
/// `[REDACTED]`, so neither a log line nor a `{:?}` of the settings shows it, and it is zeroed
/// when dropped. Read it with [`Secret::expose`] where it is used, never in a message.
///
/// It serializes as the plain value, deliberately: that is how defaults enter the configuration
/// layers and how a configuration file is written; serialized settings are never logged.
#[derive(Clone, Default, Deserialize)]
#[serde(transparent)]
pub struct Secret(SecretString);

impl Secret {
    /// The value itself, for the one place that uses it (connecting, signing).
    pub fn expose(&self) -> &str {
        self.0.expose_secret()
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("[REDACTED]")
    }
}

impl PartialEq for Secret {
    fn eq(&self, other: &Self) -> bool {
        self.expose() == other.expose()
    }
}

impl Serialize for Secret {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.expose())
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Self {
        Self(value.into())
    }
}

impl From<&str> for Secret {
    fn from(value: &str) -> Self {
        Self(value.into())
    }
}
