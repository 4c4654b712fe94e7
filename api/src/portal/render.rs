//! Responses of the portal: the page templates, error pages and the headers every response
//! carries.

use std::sync::OnceLock;

use axum::extract::Query;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use serde::Serialize;

use super::PORTAL_CSP;
use super::text::{self, t};
use crate::front::routes::front::front_css;

/// Errors of a portal handler: an HTML page with a status.
#[derive(Debug)]
pub enum PortalError {
    /// The CSRF token is missing or wrong: 403.
    Csrf,
    /// Not signed in: 303 to the sign-in page.
    SignIn,
    /// No such key in the account: 404.
    NotFound,
    /// Every password-hashing slot is taken (the global argon2 budget): 429 with
    /// `Retry-After: 1`, at once, instead of a queue.
    Busy,
    /// A store or template failure: 500 (logged, not shown).
    Internal(anyhow::Error),
}

impl<E: Into<anyhow::Error>> From<E> for PortalError {
    fn from(e: E) -> Self {
        PortalError::Internal(e.into())
    }
}

impl IntoResponse for PortalError {
    fn into_response(self) -> Response {
        match self {
            PortalError::Csrf => message_page(StatusCode::FORBIDDEN, t("csrf_title"), t("csrf_failed")),
            PortalError::SignIn => redirect("/account/signin"),
            PortalError::NotFound => message_page(StatusCode::NOT_FOUND, t("not_found_title"), t("not_found")),
            PortalError::Busy => {
                with_retry_after(message_page(StatusCode::TOO_MANY_REQUESTS, t("busy_title"), t("busy")), 1)
            }
            PortalError::Internal(e) => {
                tracing::error!(error = format!("{e:#}"), "portal request failed");
                message_page(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "Internal server error",
                    "Something went wrong on our side; try again in a moment.",
                )
            }
        }
    }
}

pub(super) type PortalResult = Result<Response, PortalError>;

/// The headers of every portal response.
pub(super) fn secure(mut response: Response) -> Response {
    let h = response.headers_mut();
    h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(PORTAL_CSP));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    // Reset links carry a token in the URL: never send it anywhere as a Referer.
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    // Pages may show a key once: no cache may keep them.
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

pub(super) fn redirect(to: &str) -> Response {
    let mut response = StatusCode::SEE_OTHER.into_response();
    if let Ok(v) = HeaderValue::from_str(to) {
        response.headers_mut().insert(header::LOCATION, v);
    }
    secure(response)
}

/// Adds `Retry-After` (seconds, RFC 9110 §10.2.3) to a refusal.
pub(super) fn with_retry_after(mut response: Response, secs: u64) -> Response {
    response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(secs.max(1)));
    response
}

pub(super) fn with_cookies(mut response: Response, cookies: &[String]) -> Response {
    for c in cookies {
        if let Ok(v) = HeaderValue::from_str(c) {
            response.headers_mut().append(header::SET_COOKIE, v);
        }
    }
    response
}

/// The template environment of the portal (the front page's layout plus `portal/*`).
pub(super) fn templates() -> &'static minijinja::Environment<'static> {
    static ENV: OnceLock<minijinja::Environment<'static>> = OnceLock::new();
    ENV.get_or_init(|| {
        let mut env = minijinja::Environment::new();
        for (name, source) in [
            ("layout.html", include_str!("../../templates/layout.html")),
            ("portal/base.html", include_str!("../../templates/portal/base.html")),
            ("portal/signin.html", include_str!("../../templates/portal/signin.html")),
            ("portal/signup.html", include_str!("../../templates/portal/signup.html")),
            ("portal/keys_shown.html", include_str!("../../templates/portal/keys_shown.html")),
            ("portal/dashboard.html", include_str!("../../templates/portal/dashboard.html")),
            ("portal/key.html", include_str!("../../templates/portal/key.html")),
            ("portal/reset.html", include_str!("../../templates/portal/reset.html")),
            ("portal/message.html", include_str!("../../templates/portal/message.html")),
        ] {
            if let Err(e) = env.add_template(name, source) {
                tracing::error!(template = name, error = %e, "template does not compile");
            }
        }
        env
    })
}

/// The portal's stylesheet (`api/static/portal.css`), on top of the front page's.
pub(super) fn portal_css() -> &'static crate::front::routes::front::Asset {
    static CSS: OnceLock<crate::front::routes::front::Asset> = OnceLock::new();
    CSS.get_or_init(|| {
        crate::front::routes::front::Asset::new(include_str!("../../static/portal.css"), "text/css; charset=utf-8")
    })
}

pub(super) async fn stylesheet(
    Query(q): Query<crate::front::routes::front::AssetQuery>,
    headers: HeaderMap,
) -> Response {
    portal_css().respond(q.v.as_deref(), &headers)
}

/// Renders a page; `ctx` is merged with what every page needs.
pub(super) fn render(name: &str, status: StatusCode, ctx: minijinja::Value) -> PortalResult {
    let template = templates().get_template(name)?;
    let base = minijinja::context! {
        t => text::strings(),
        css_version => front_css().version.as_str(),
        portal_css_version => portal_css().version.as_str(),
    };
    let html = template.render(minijinja::context! { ..ctx, ..base })?;
    Ok(secure((status, Html(html)).into_response()))
}

/// A serialisable value as a template value.
pub(super) fn ser<T: Serialize + ?Sized>(value: &T) -> minijinja::Value {
    minijinja::Value::from(minijinja::value::Serde(value))
}

pub(super) fn message_page(status: StatusCode, title: &str, message: &str) -> Response {
    match render("portal/message.html", status, minijinja::context! { title, message }) {
        Ok(r) => r,
        Err(_) => secure((status, message.to_owned()).into_response()),
    }
}

/// A duration for people: `24 h`, `15 min`, `3 s`.
pub(super) fn human_secs(secs: u64) -> String {
    match secs {
        s if s >= 3_600 && s % 3_600 == 0 => format!("{} h", s / 3_600),
        s if s >= 60 && s % 60 == 0 => format!("{} min", s / 60),
        s => format!("{s} s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_compile() {
        for name in templates().templates().map(|(n, _)| n) {
            assert!(templates().get_template(name).is_ok(), "{name}");
        }
        assert_eq!(templates().templates().count(), 9, "every template compiled");
    }

    #[test]
    fn durations_for_people() {
        assert_eq!(human_secs(86_400), "24 h");
        assert_eq!(human_secs(900), "15 min");
        assert_eq!(human_secs(3), "3 s");
    }
}
