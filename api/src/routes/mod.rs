//! HTTP routes under `/v1` (spec §4) plus health, readiness and metrics.

pub mod check;
pub mod health;

use std::collections::HashMap;

use crate::error::ApiError;

/// Query parameters of a request (first value wins for a repeated name).
#[derive(Debug, Default)]
pub struct Params(HashMap<String, String>);

impl Params {
    /// Parses a raw query string (`application/x-www-form-urlencoded`).
    pub fn parse(raw: Option<&str>) -> Self {
        let mut map = HashMap::new();
        for (k, v) in url::form_urlencoded::parse(raw.unwrap_or("").as_bytes()) {
            map.entry(k.into_owned()).or_insert_with(|| v.into_owned());
        }
        Self(map)
    }

    /// A parameter, trimmed; `None` when absent or empty.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(|v| v.trim()).filter(|v| !v.is_empty())
    }

    /// A required parameter.
    ///
    /// # Errors
    /// [`ApiError::Missing`] when absent or empty (spec §5.2, §7).
    pub fn require(&self, name: &'static str) -> Result<&str, ApiError> {
        self.get(name).ok_or(ApiError::Missing(name))
    }

    /// A `0`/`1` flag (`true`/`false` accepted too).
    ///
    /// # Errors
    /// [`ApiError::BadRequest`] for any other value.
    pub fn flag(&self, name: &str) -> Result<bool, ApiError> {
        match self.get(name) {
            None | Some("0") | Some("false") => Ok(false),
            Some("1") | Some("true") => Ok(true),
            Some(other) => Err(ApiError::BadRequest(format!("{name} must be 0 or 1, not {other:?}."))),
        }
    }
}
