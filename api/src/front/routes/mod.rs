//! HTTP routes under `/v1` (spec §4) plus the front page, the widget, `/domain-check` (§4.6, §4.7),
//! health, readiness and metrics.

pub mod bulk;
pub mod check;
pub mod dns;
pub mod domain_check;
pub mod front;
pub mod health;
pub mod keyed;
pub mod suggest;
pub mod tlds;
pub mod watches;
pub mod webhooks;
pub mod whois;

use std::collections::HashMap;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use crate::front::error::ApiError;

/// Typed query parameters whose rejection answers in the spec's error shape (§7, 400).
///
/// `T` is the endpoint's `…Query` struct, which also describes the parameters in the OpenAPI
/// document (`IntoParams`), so the document and the parser cannot drift apart. Fields are
/// `Option<String>` where the spec's own 400 texts must be produced by the handler (missing,
/// empty, out of range); unknown parameters are ignored.
#[derive(Debug, Clone, Default)]
pub struct ApiQuery<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        let raw = parts.uri.query().unwrap_or("");
        serde_urlencoded::from_str(raw)
            .map(ApiQuery)
            .map_err(|e| ApiError::BadRequest(format!("Malformed query string: {e}.")))
    }
}

/// Bytes reserved for a JSON answer before it is written: a check's answer is 400–700 bytes.
/// axum's `Json` starts from 128 and grows (two or three reallocations and copies per check).
const JSON_BODY_CAPACITY: usize = 1024;

/// Headers a metered JSON answer ends up with: content type and length, `RateLimit-Policy`,
/// `RateLimit`, `X-Request-Id`, CORS (`Vary` and the `Access-Control-*` of a browser request),
/// `Strict-Transport-Security`.
const RESPONSE_HEADERS: usize = 12;

/// `body` as an `application/json` answer (200), like axum's `Json`, written into a buffer sized
/// for the metered endpoints' answers ([`JSON_BODY_CAPACITY`]) and handed to hyper without a
/// copy. Used on the hot paths (the availability check and the front-page form).
///
/// A body that cannot be serialised (a map with non-string keys: a bug) is a 500 in the spec's
/// error shape.
pub fn json_response<T: serde::Serialize>(body: &T) -> axum::response::Response {
    use axum::response::IntoResponse;
    let mut buffer = Vec::with_capacity(JSON_BODY_CAPACITY);
    match serde_json::to_writer(&mut buffer, body) {
        Ok(()) => {
            let mut response = axum::response::Response::new(axum::body::Body::from(bytes::Bytes::from(buffer)));
            // Room for every header the layers add on the way out (rate limit, request id, CORS,
            // HSTS), so the map is allocated once instead of growing as they arrive.
            response.headers_mut().reserve(RESPONSE_HEADERS);
            response
                .headers_mut()
                .insert(axum::http::header::CONTENT_TYPE, axum::http::HeaderValue::from_static("application/json"));
            response
        }
        Err(e) => ApiError::Internal(anyhow::anyhow!("answer not serialisable: {e}")).into_response(),
    }
}

/// A required parameter's value, trimmed.
///
/// # Errors
/// [`ApiError::Missing`] when absent or empty (spec §5.2, §7).
pub fn required<'a>(value: &'a Option<String>, name: &'static str) -> Result<&'a str, ApiError> {
    optional(value).ok_or(ApiError::Missing(name))
}

/// An optional parameter's value, trimmed; `None` when absent or empty.
pub fn optional(value: &Option<String>) -> Option<&str> {
    value.as_deref().map(str::trim).filter(|v| !v.is_empty())
}

/// A `0`/`1` flag parameter (`true`/`false` accepted too); absent or empty is false.
///
/// # Errors
/// [`ApiError::BadRequest`] naming the parameter for any other value.
pub fn flag(value: &Option<String>, name: &str) -> Result<bool, ApiError> {
    match optional(value) {
        None | Some("0") | Some("false") => Ok(false),
        Some("1") | Some("true") => Ok(true),
        Some(other) => Err(ApiError::BadRequest(format!("{name} must be 0 or 1, not {other:?}."))),
    }
}

/// The values a `0`/`1` flag parameter takes, for the OpenAPI document: what [`flag`] accepts,
/// `0`/`1` as a number or a string, or `true`/`false`. Absent or empty is off.
#[derive(Debug, Clone, Copy)]
pub struct Flag;

impl utoipa::PartialSchema for Flag {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{ObjectBuilder, OneOfBuilder, Type};
        let values = |kind: Type, values: Vec<serde_json::Value>| {
            ObjectBuilder::new().schema_type(kind).enum_values(Some(values)).build()
        };
        OneOfBuilder::new()
            .item(values(Type::Integer, vec![0.into(), 1.into()]))
            .item(values(Type::String, vec!["0".into(), "1".into(), "true".into(), "false".into()]))
            .item(ObjectBuilder::new().schema_type(Type::Boolean).build())
            .description(Some("A switch: `1` (or `true`) turns it on; `0`, `false`, empty or absent leaves it off."))
            .into()
    }
}

impl utoipa::ToSchema for Flag {}

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

    /// The first value of parameter `name` in a raw query string, trimmed; `None` when absent or
    /// empty. The same answer as `Params::parse(raw).get(name)` without building the map (the
    /// keyed prelude reads only `client_key`, on every metered request).
    ///
    /// A name or value without `%` or `+` is its own decoded form, so only a pair holding one is
    /// decoded (`application/x-www-form-urlencoded` decoding ran on every pair up to the key,
    /// the key's own value included: 2,000 instructions of a cached check).
    pub fn first(raw: Option<&str>, name: &str) -> Option<String> {
        let encoded = |part: &str| part.contains(['%', '+']);
        for pair in raw.unwrap_or("").split('&') {
            let (raw_name, raw_value) = pair.split_once('=').unwrap_or((pair, ""));
            let value = if encoded(raw_name) || encoded(raw_value) {
                match url::form_urlencoded::parse(pair.as_bytes()).next() {
                    Some((k, v)) if k == name => v,
                    _ => continue,
                }
            } else if raw_name == name {
                std::borrow::Cow::Borrowed(raw_value)
            } else {
                continue;
            };
            let value = value.trim();
            return (!value.is_empty()).then(|| value.to_owned());
        }
        None
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

#[cfg(test)]
mod tests {
    use super::Params;

    /// The prelude's single-parameter scan answers as the map does: first value wins, trimmed,
    /// empty is absent, percent-decoded.
    #[test]
    fn first_matches_the_parsed_map() {
        for raw in [
            None,
            Some(""),
            Some("client_key=abc"),
            Some("domain=x.com&client_key=%20abc%20"),
            Some("client_key=&client_key=abc"),
            Some("client_key=one&client_key=two"),
            Some("client_key=a%2Bb+c"),
            Some("client_keyx=1&xclient_key=2"),
            Some("client%5Fkey=encoded&client_key=plain"),
            Some("domain=a.com&&client_key=after-an-empty-pair"),
            Some("client_key"),
            Some("client+key=1&client_key=2"),
            Some("%63lient_key=%20x%20&client_key=y"),
            Some("client_key=%ZZ"),
            Some("client_key=a=b"),
        ] {
            assert_eq!(Params::first(raw, "client_key").as_deref(), Params::parse(raw).get("client_key"), "{raw:?}");
        }
    }
}
