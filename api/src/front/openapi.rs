//! The API contract as a document: OpenAPI 3.1 generated from the handlers and types themselves
//! (utoipa), served at `GET /v1/openapi.json` and rendered at `GET /docs` by a vendored Swagger UI.
//!
//! Adding an endpoint: annotate its handler with `#[utoipa::path(…)]` (every status it can give,
//! with the [`ErrorBody`](crate::front::error::ErrorBody) shape for errors), derive `ToSchema` on its
//! body types and `IntoParams` on its query struct, and list the handler in [`ApiDoc`]'s `paths`.
//! The route/document test (`tests/tests/app/contract.rs`) fails until both sides agree: every route
//! the router serves is described here, and every described operation is served, except the
//! routes in [`UNDESCRIBED`] (pages, scripts and this document itself), which the document lists
//! under `x-undescribed-routes`.
//!
//! The HTTP conventions common to every operation are added by [`HttpConventions`], not by each
//! handler: `X-Request-Id` on every response, `RateLimit-Policy`/`RateLimit` on every response
//! of a metered operation (one with the `client_key` security scheme), `Retry-After` on every 429
//! and 503, and the 500/503 every route can give (panic, load shedding).

use utoipa::openapi::extensions::ExtensionsBuilder;
use utoipa::openapi::header::HeaderBuilder;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, SecurityScheme};
use utoipa::openapi::{ContentBuilder, Header, ObjectBuilder, Ref, RefOr, ResponseBuilder, Type};
use utoipa::{Modify, OpenApi};

use crate::front::routes;

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
        routes::bulk::bulk_get,
        routes::bulk::bulk_post,
        routes::whois::whois,
        routes::dns::dns,
        routes::suggest::suggest,
        routes::tlds::list,
        routes::tlds::detail,
        routes::health::healthz,
        routes::health::readyz,
        crate::mcp::doc::mcp,
        // No `/metrics`: the public listener serves it only when the operator opts in
        // (`server.public_metrics`); it is operational data, documented in the README.
    ),
    components(schemas(routes::Flag)),
    modifiers(&ClientKeyScheme, &HttpConventions),
    tags(
        (name = "availability", description = "Is a domain name free to register?"),
        (name = "front page", description = "The public front page, the embeddable widget and the front page's short form of the check."),
        (name = "bulk", description = "Up to 10 availability checks in one request, run in parallel; optionally streamed as NDJSON."),
        (name = "whois", description = "The registration record of a domain: RDAP first, WHOIS otherwise."),
        (name = "dns", description = "DNS records of a host name from recursive resolvers."),
        (name = "suggestions", description = "Domain names to offer for a keyword: exact, prefix, suffix, word-segmented and .af forms."),
        (name = "catalogue", description = "The suffixes dsa answers for, how it asks about each, and the live health of their registries (free)."),
        (name = "agents", description = "The MCP endpoint: the same checks, lookups and suggestions as tools for AI agents (Model Context Protocol)."),
        (name = "operations", description = "Liveness and readiness for the operator (free)."),
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
                "An embed key (for browsers: it works only from the origins you allow) or a server key (for your servers: keep it secret).",
            ))),
        );
    }
}

/// Routes the router serves that the document deliberately does not describe, with the reason:
/// they are not JSON operations of the API (pages, scripts, static files) or they are the
/// documentation itself. A pattern is an exact path, or a prefix followed by `*`.
///
/// The rule the route/document test enforces: every other route is described; a route matched
/// here must not answer JSON (the document itself excepted), so a JSON endpoint cannot hide
/// behind a page's prefix.
pub const UNDESCRIBED: &[(&str, &str)] = &[
    ("/v1/openapi.json", "this document"),
    ("/docs*", "the documentation page rendered from this document (Swagger UI, vendored)"),
    ("/account*", "the account portal's HTML pages and forms"),
    ("/metrics", "operators' Prometheus text, not served on the public listener unless the operator enables it"),
];

/// Whether `path` (a router path such as `/docs/{*rest}`) is in [`UNDESCRIBED`].
pub fn undescribed(path: &str) -> Option<&'static str> {
    UNDESCRIBED.iter().find_map(|(pattern, reason)| {
        let hit = match pattern.strip_suffix('*') {
            Some(prefix) => path.starts_with(prefix),
            None => path == *pattern,
        };
        hit.then_some(*reason)
    })
}

/// Response headers of the HTTP conventions, as reusable components (`#/components/headers/…`).
const REQUEST_ID: &str = "X-Request-Id";
const RATE_LIMIT_POLICY: &str = "RateLimit-Policy";
const RATE_LIMIT: &str = "RateLimit";
const RETRY_AFTER: &str = "Retry-After";

/// Adds the conventions every operation follows (see the module doc), so that a handler's
/// annotation only describes what is its own. Entries a handler wrote itself are kept.
struct HttpConventions;

impl HttpConventions {
    fn string_header(description: &str, example: &str) -> Header {
        HeaderBuilder::new()
            .schema(Some(ObjectBuilder::new().schema_type(Type::String)))
            .description(Some(description))
            .example(Some(serde_json::Value::String(example.to_owned())))
            .build()
    }

    fn error_response(description: &str) -> RefOr<utoipa::openapi::Response> {
        ResponseBuilder::new()
            .description(description)
            .content("application/json", ContentBuilder::new().schema(Some(Ref::from_schema_name("ErrorBody"))).build())
            .build()
            .into()
    }
}

impl Modify for HttpConventions {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.headers.insert(
            REQUEST_ID.into(),
            Self::string_header(
                "Identifier of this request (a UUID, or the one the client sent), also in dsa's logs: quote it when reporting a problem.",
                "0193a8f2-5a7e-7c31-9f04-2b1d6f0c9e55",
            )
            .into(),
        );
        components.headers.insert(
            RATE_LIMIT_POLICY.into(),
            Self::string_header(
                "The key's per-minute quota (IETF httpapi RateLimit header fields): `q` requests per `w` seconds. On every answer of a metered operation once the key is accepted (not on demo checks).",
                "\"per-minute\";q=60;w=60",
            )
            .into(),
        );
        components.headers.insert(
            RATE_LIMIT.into(),
            Self::string_header(
                "Requests left in the current window (`r`) and seconds until it resets (`t`), IETF httpapi RateLimit header fields. Present whenever `RateLimit-Policy` is.",
                "\"per-minute\";r=59;t=42",
            )
            .into(),
        );
        components.headers.insert(
            RETRY_AFTER.into(),
            HeaderBuilder::new()
                .schema(Some(ObjectBuilder::new().schema_type(Type::Integer).minimum(Some(1))))
                .description(Some(
                    "Seconds until a retry can succeed (RFC 9110 §10.2.3): to the next minute window for the per-minute limit, to 00:00 UTC on the 1st of next month for `Monthly credit limit reached`, to 00:00 UTC for the demo limit, and a short wait for load shedding (503).",
                ))
                .example(Some(serde_json::json!(42)))
                .build()
                .into(),
        );
        if !components.schemas.contains_key("ErrorBody") {
            use utoipa::PartialSchema;
            components.schemas.insert("ErrorBody".into(), crate::front::error::ErrorBody::schema());
        }
        let header_ref = |name: &str| RefOr::Ref(Ref::new(format!("#/components/headers/{name}")));
        for item in openapi.paths.paths.values_mut() {
            for operation in [
                &mut item.get,
                &mut item.put,
                &mut item.post,
                &mut item.delete,
                &mut item.patch,
                &mut item.head,
                &mut item.options,
                &mut item.trace,
            ]
            .into_iter()
            .flatten()
            {
                // A free operation says so (`security: []`), so generated clients send no key.
                if operation.security.is_none() {
                    operation.security = Some(Vec::new());
                }
                let metered =
                    operation.security.iter().flatten().any(|requirement| {
                        serde_json::to_value(requirement).is_ok_and(|v| v.get("client_key").is_some())
                    });
                let responses = &mut operation.responses.responses;
                responses.entry("500".into()).or_insert_with(|| {
                    Self::error_response(
                        "Unexpected server error (a failing handler answers this too); retry after a short delay.",
                    )
                });
                responses.entry("503".into()).or_insert_with(|| {
                    Self::error_response(
                        "This front is shedding load (too many requests at once); retry after `Retry-After`.",
                    )
                });
                for (status, response) in responses.iter_mut() {
                    let RefOr::T(response) = response else { continue };
                    let headers = &mut response.headers;
                    for name in [REQUEST_ID]
                        .into_iter()
                        .chain(metered.then_some([RATE_LIMIT_POLICY, RATE_LIMIT]).into_iter().flatten())
                        .chain((status == "429" || status == "503").then_some(RETRY_AFTER))
                    {
                        if !headers.keys().any(|h| h.eq_ignore_ascii_case(name)) {
                            headers.insert(name.into(), header_ref(name));
                        }
                    }
                }
            }
        }
        let undescribed = UNDESCRIBED
            .iter()
            .map(|(pattern, reason)| serde_json::json!({ "path": pattern, "reason": reason }))
            .collect::<Vec<_>>();
        let extensions = ExtensionsBuilder::new().add("x-undescribed-routes", undescribed).build();
        match &mut openapi.extensions {
            Some(existing) => existing.merge(extensions),
            None => openapi.extensions = Some(extensions),
        }
    }
}

/// The document, built once.
pub fn document() -> &'static utoipa::openapi::OpenApi {
    static DOC: std::sync::OnceLock<utoipa::openapi::OpenApi> = std::sync::OnceLock::new();
    DOC.get_or_init(ApiDoc::openapi)
}
