//! The API contract as a document: OpenAPI 3.1 generated from the handlers and types themselves
//! (utoipa), served at `GET /v1/openapi.json` and rendered at `GET /docs` by a vendored Swagger UI.
//!
//! Adding an endpoint: annotate its handler with `#[utoipa::path(…)]` (every status it can give,
//! with the [`ErrorBody`](crate::error::ErrorBody) shape for errors), derive `ToSchema` on its
//! body types and `IntoParams` on its query struct, and list the handler in [`ApiDoc`]'s `paths`.
//! The route/document test fails until both sides agree.

use utoipa::openapi::security::{ApiKey, ApiKeyValue, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::routes;

/// The OpenAPI document of dsa's HTTP interface.
#[derive(Debug, OpenApi)]
#[openapi(
    info(
        title = "dsa — the domain search API",
        description = "Domain availability, WHOIS, DNS, bulk checks and name suggestions under `/v1`. \
Every metered call takes `client_key` as a query parameter and answers JSON; errors are \
`{\"success\":false,\"error\":\"…\"}` with 400/403/429/500/502. Objects named `verdict` (and other \
members marked as our additions) extend the service specification's fields without changing them.",
        license(name = "MIT OR Apache-2.0"),
    ),
    paths(
        routes::check::check,
        routes::domain_check::domain_check,
        routes::front::front_page,
        routes::front::widget_js,
        routes::front::front_stylesheet,
        routes::whois::whois,
        routes::dns::dns,
        routes::health::healthz,
        routes::health::readyz,
        routes::health::metrics,
    ),
    modifiers(&ClientKeyScheme),
    tags(
        (name = "availability", description = "Is a domain name free to register? (spec §4.1)"),
        (name = "front page", description = "The public front page, the embeddable widget (spec §4.6) and the front page's short form of the check (spec §4.7)."),
        (name = "whois", description = "The registration record of a domain: RDAP first, WHOIS otherwise (spec §4.2)."),
        (name = "dns", description = "DNS records of a host name from recursive resolvers (spec §4.3)."),
        (name = "operations", description = "Liveness, readiness and metrics for the operator (free)."),
    ),
)]
pub struct ApiDoc;

/// Adds the `client_key` security scheme: an API key in the query string (spec §5.1).
struct ClientKeyScheme;

impl Modify for ClientKeyScheme {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "client_key",
            SecurityScheme::ApiKey(ApiKey::Query(ApiKeyValue::with_description(
                "client_key",
                "An embed key (browser use, origin-checked) or a server key (keep secret), spec §2.1, §5.",
            ))),
        );
    }
}

/// The document, built once.
pub fn document() -> &'static utoipa::openapi::OpenApi {
    static DOC: std::sync::OnceLock<utoipa::openapi::OpenApi> = std::sync::OnceLock::new();
    DOC.get_or_init(ApiDoc::openapi)
}
