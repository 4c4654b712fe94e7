//! The one error type of the HTTP boundary and its mapping to the spec's error shape (§7):
//! `{"success":false,"error":"…"}` with 400/403/404/405/415/429/500/502/503.
//!
//! 4xx are logged at debug; 5xx are logged with their cause chain and never leak internals.

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

/// The spec's text for an unusable key (§7).
pub const INVALID_KEY: &str = "Invalid or disabled client key.";
/// The spec's text for an exhausted monthly allowance (§7).
pub const CREDITS_EXHAUSTED: &str = "Monthly credit limit reached";

/// Every way a request can fail.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// A required query parameter is missing or empty (400).
    #[error("Missing required parameter: {0}.")]
    Missing(&'static str),
    /// Malformed input: bad domain, bad number, bad URL… (400). The text is shown to the client.
    #[error("{0}")]
    BadRequest(String),
    /// A request body in a media type the endpoint does not take (415); the text names the one
    /// it takes.
    #[error("{0}")]
    UnsupportedMediaType(String),
    /// A request body over the endpoint's size or count limit (413); the text names the limit.
    #[error("{0}")]
    PayloadTooLarge(String),
    /// Key not found, disabled or suspended (403).
    #[error("Invalid or disabled client key.")]
    InvalidKey,
    /// Origin not allowed for the key, or a server key used from a browser (403).
    #[error("{0}")]
    Forbidden(String),
    /// Monthly allowance exhausted (429), with the seconds to the 1st of next month 00:00 UTC,
    /// when the allowance resets (see [`crate::front::policy::secs_to_next_month`]).
    #[error("Monthly credit limit reached")]
    CreditsExhausted {
        /// Seconds for `Retry-After`.
        retry_after_secs: u64,
    },
    /// Per-minute rate limit or demo limit (429), with seconds until a retry may succeed.
    #[error("{message}")]
    TooManyRequests {
        /// Text for the client.
        message: String,
        /// Seconds for `Retry-After`, if known.
        retry_after_secs: Option<u64>,
    },
    /// Unknown path (404).
    #[error("Not found: no such endpoint; the API's paths are listed at /docs.")]
    NotFound,
    /// A suffix that is not in the catalogue, or that dsa cannot answer for (404); the text names
    /// it and says why.
    #[error("{0}")]
    UnknownSuffix(String),
    /// A resource of the key's that does not exist (404): a watch, a webhook, a delivery, a job
    /// the key does not hold. The text names what was not found.
    #[error("{0}")]
    NoSuchResource(String),
    /// Wrong method for a known path (405).
    #[error("Method not allowed: this endpoint takes the methods in the Allow header (see /docs).")]
    MethodNotAllowed,
    /// Upstream registry trouble or no verdict in time (502); the text is safe to show.
    #[error("Upstream WHOIS/registry service temporarily unavailable; retry with exponential backoff.")]
    Upstream(String),
    /// Too many requests in flight on this front (503, `Retry-After: 1`): shed, not queued.
    #[error("Server busy; retry after the time in Retry-After.")]
    Overloaded,
    /// A dependency the front needs (the key store) is unreachable and nothing cached can stand
    /// in (503, `Retry-After: 5`).
    #[error("Service temporarily unavailable; retry after the time in Retry-After.")]
    Unavailable,
    /// The request ran past `server.request_timeout_secs` (500).
    #[error("The request took too long and was stopped; retry after a short delay.")]
    TimedOut,
    /// Anything unexpected (500); the cause is logged, not shown.
    #[error("Internal server error; retry after a short delay.")]
    Internal(#[from] anyhow::Error),
}

impl ApiError {
    /// The HTTP status of this error.
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::Missing(_) | ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::PayloadTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::InvalidKey | ApiError::Forbidden(_) => StatusCode::FORBIDDEN,
            ApiError::CreditsExhausted { .. } | ApiError::TooManyRequests { .. } => StatusCode::TOO_MANY_REQUESTS,
            ApiError::NotFound | ApiError::UnknownSuffix(_) | ApiError::NoSuchResource(_) => StatusCode::NOT_FOUND,
            ApiError::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::Upstream(_) => StatusCode::BAD_GATEWAY,
            ApiError::Overloaded | ApiError::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::Internal(_) | ApiError::TimedOut => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

impl From<common::domain::DomainError> for ApiError {
    fn from(e: common::domain::DomainError) -> Self {
        ApiError::BadRequest(e.to_string())
    }
}

/// Every error answer: `{"success":false,"error":"…"}`, the error written for people.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
#[schema(example = json!({"success": false, "error": "Invalid or disabled client key."}))]
pub struct ErrorBody {
    /// Always false.
    pub success: bool,
    /// Human-readable reason: what to fix (4xx) or what to retry (429, 5xx).
    pub error: String,
}

/// Builds the spec's error body for a status and text (also used by fallbacks and panics).
pub fn error_response(status: StatusCode, message: &str) -> Response {
    (status, Json(ErrorBody { success: false, error: message.to_owned() })).into_response()
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        match &self {
            ApiError::Internal(cause) => tracing::error!(error = ?cause, "internal error"),
            ApiError::Upstream(cause) => tracing::warn!(%cause, "upstream unavailable"),
            other => tracing::debug!(error = %other, %status, "client error"),
        }
        let mut response = error_response(status, &self.to_string());
        let retry_after = match &self {
            ApiError::TooManyRequests { retry_after_secs, .. } => *retry_after_secs,
            ApiError::CreditsExhausted { retry_after_secs } => Some(*retry_after_secs),
            ApiError::Overloaded => Some(1),
            ApiError::Unavailable => Some(5),
            _ => None,
        };
        if let Some(secs) = retry_after
            && let Ok(v) = HeaderValue::from_str(&secs.to_string())
        {
            response.headers_mut().insert(header::RETRY_AFTER, v);
        }
        response
    }
}
