//! The keyed prelude shared by every metered endpoint (spec §5, §7), as one middleware:
//!
//! ```text
//! per-address limit (429) → client_key (400 missing) → key lookup (403 not found/disabled/suspended) → origin (403)
//!     → per-minute limit (429 with Retry-After) → handler → RateLimit headers on the response
//! ```
//!
//! Routes that accept demo mode (spec §5.6) use [`key_or_demo`]: without a `client_key` the
//! request reaches the handler with no [`Keyed`] extension and the handler applies the demo rules.
//! Every other metered route uses [`require_key`]; the MCP endpoint uses [`require_key_or_bearer`],
//! which also takes the key from `Authorization: Bearer`. Handlers read the admitted key with the
//! [`Keyed`] extractor (or `Option<Keyed>` on demo-capable routes).

use std::sync::Arc;

use axum::extract::{FromRequestParts, OptionalFromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::Params;
use crate::front::error::ApiError;
use crate::front::keys::KeyRecord;
use crate::front::policy::ClientAddr;
use crate::front::state::AppState;

/// The key admitted by the prelude for this request.
#[derive(Debug, Clone)]
pub struct Keyed {
    /// The active key record (origin and per-minute limit already checked).
    pub key: Arc<KeyRecord>,
}

/// When the front admitted the request, before the prelude's first step (the key lookup may
/// wait for the database): a handler's deadline runs from here, so that the time spent on the
/// key and the credits counts against it. Outside the prelude, the time of extraction.
#[derive(Debug, Clone, Copy)]
pub struct Admitted(pub tokio::time::Instant);

impl Admitted {
    /// The instant `budget` after admission.
    pub fn deadline(self, budget: std::time::Duration) -> tokio::time::Instant {
        self.0 + budget
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Admitted {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        Ok(parts.extensions.get::<Admitted>().copied().unwrap_or_else(|| Admitted(tokio::time::Instant::now())))
    }
}

/// Refuses an embed key (403 with `refusal`, which names the feature) where an operation takes a
/// server key only: watches, webhooks and bulk jobs act for the key's owner, never for a page's
/// visitors.
///
/// # Errors
/// [`ApiError::Forbidden`] with `refusal` for an embed key.
pub fn require_server_key(key: &KeyRecord, refusal: &'static str) -> Result<(), ApiError> {
    match key.kind {
        crate::front::keys::KeyKind::Server => Ok(()),
        crate::front::keys::KeyKind::Embed => Err(ApiError::Forbidden(refusal.into())),
    }
}

/// Middleware for metered routes that need a key: a missing `client_key` is a 400.
pub async fn require_key(State(state): State<AppState>, req: Request, next: Next) -> Response {
    prelude(state, req, next, false).await
}

/// Middleware for the MCP endpoint (`/mcp`): as [`require_key`], the key also accepted as
/// `Authorization: Bearer <key>` (MCP clients configure headers more easily than URLs). A
/// `client_key` in the query string wins over the header.
pub async fn require_key_or_bearer(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let bearer = bearer(req.headers());
    prelude_with(state, req, next, false, bearer).await
}

/// The token of an `Authorization: Bearer <token>` header (RFC 6750 §2.1), if any.
fn bearer(headers: &axum::http::HeaderMap) -> Option<String> {
    let value = headers.get(axum::http::header::AUTHORIZATION)?.to_str().ok()?.trim();
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then(|| token.to_owned())
}

/// Middleware for routes that fall back to demo mode when `client_key` is absent and demo mode
/// is enabled (the check and the front-page form).
pub async fn key_or_demo(State(state): State<AppState>, req: Request, next: Next) -> Response {
    prelude(state, req, next, true).await
}

async fn prelude(state: AppState, req: Request, next: Next, demo_allowed: bool) -> Response {
    prelude_with(state, req, next, demo_allowed, None).await
}

async fn prelude_with(
    state: AppState,
    mut req: Request,
    next: Next,
    demo_allowed: bool,
    bearer: Option<String>,
) -> Response {
    req.extensions_mut().insert(Admitted(tokio::time::Instant::now()));
    // Per-address limit first: a flood of made-up keys must not become a key lookup each.
    if let Err(e) = state.ip_limiter().check(&ClientAddr::from_parts(req.headers(), req.extensions())) {
        return e.into_response();
    }
    let Some(presented) = Params::first(req.uri().query(), "client_key").or(bearer) else {
        if demo_allowed && state.demo().enabled() {
            return next.run(req).await;
        }
        return ApiError::Missing("client_key").into_response();
    };
    let key = match state.key(&presented).await {
        Ok(key) => key,
        Err(e) => return e.into_response(),
    };
    if let Err(e) = crate::front::origin::check(&key, req.headers(), state.policy().empty_origins_allow_all) {
        return e.into_response();
    }
    let rate = match state.rate_limit(&key).await {
        Ok(rate) => rate,
        Err((e, rate)) => {
            let mut response = e.into_response();
            rate.apply(response.headers_mut());
            return response;
        }
    };
    req.extensions_mut().insert(Keyed { key });
    let mut response = next.run(req).await;
    rate.apply(response.headers_mut());
    response
}

impl<S: Send + Sync> FromRequestParts<S> for Keyed {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        parts
            .extensions
            .get::<Keyed>()
            .cloned()
            .ok_or_else(|| ApiError::Internal(anyhow::anyhow!("route is missing the keyed prelude layer")))
    }
}

impl<S: Send + Sync> OptionalFromRequestParts<S> for Keyed {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Option<Self>, Self::Rejection> {
        Ok(parts.extensions.get::<Keyed>().cloned())
    }
}
