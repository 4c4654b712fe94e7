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
        license(name = "MIT OR Apache-2.0", identifier = "MIT OR Apache-2.0"),
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
        routes::watches::create,
        routes::watches::list,
        routes::watches::get_one,
        routes::watches::delete,
        routes::watches::events,
        crate::front::bulk_jobs::routes::submit,
        crate::front::bulk_jobs::routes::list,
        crate::front::bulk_jobs::routes::get_job,
        crate::front::bulk_jobs::routes::cancel,
        crate::front::bulk_jobs::routes::results,
        routes::tlds::list,
        routes::tlds::detail,
        routes::health::healthz,
        routes::health::readyz,
        crate::mcp::doc::mcp,
        routes::webhooks::create,
        routes::webhooks::list,
        routes::webhooks::get_one,
        routes::webhooks::delete,
        routes::webhooks::deliveries,
        routes::webhooks::retry,
        routes::webhooks::test,
        routes::webhooks::rotate_secret,
        routes::webhooks::enable,
        // No `/metrics`: the public listener serves it only when the operator opts in
        // (`server.public_metrics`); it is operational data, documented in docs/operators.md.
    ),
    components(schemas(routes::Flag, crate::front::bulk_jobs::routes::JobEventData)),
    modifiers(&ClientKeyScheme, &HttpConventions, &ForGeneratedClients),
    tags(
        (name = "availability", description = "Is a domain name free to register?"),
        (name = "front page", description = "The public front page, the embeddable widget and the front page's short form of the check."),
        (name = "bulk", description = "Up to 10 availability checks in one request, run in parallel; optionally streamed as NDJSON."),
        (name = "bulk jobs", description = "Long lists of names (up to 100,000) checked as an asynchronous job: submit, follow, read the results page by page, cancel (a dsa extension; server keys only)."),
        (name = "whois", description = "The registration record of a domain: RDAP first, WHOIS otherwise."),
        (name = "dns", description = "DNS records of a host name from recursive resolvers."),
        (name = "suggestions", description = "Domain names to offer for a keyword: exact, prefix, suffix, word-segmented and .af forms."),
        (name = "watches", description = "Our extension: watch a name's lifecycle (registered, expiring, redemption, pending delete, available) and read the events of its changes. A monthly fee in credits per watch."),
        (name = "catalogue", description = "The suffixes dsa answers for, how it asks about each, and the live health of their registries (free)."),
        (name = "agents", description = "The MCP endpoint: the same checks, lookups and suggestions as tools for AI agents (Model Context Protocol)."),
        (name = "operations", description = "Liveness and readiness for the operator (free)."),
        (name = "webhooks", description = "A dsa extension: the key's events (a watched name became available, was registered, …) delivered to your HTTPS endpoint, signed as the Standard Webhooks specification says (server keys only, free)."),
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
                "An embed key (for browsers: it works only from the origins you allow) or a server key (for your servers: keep it secret), \
sent as the `client_key` query parameter of every metered call. Generated clients do not add a query-string key by themselves: \
with openapi-python-client, build the client with `httpx_args={\"params\": {\"client_key\": KEY}}`; with openapi-fetch, \
add a middleware whose `onRequest` sets `client_key` on the request's URL.",
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

/// Closed sets of values sent in members typed as plain strings in Rust (`&'static str`,
/// `String`): each JSON pointer (under `#/components/schemas`) gets an `enum` of the only values
/// the server sends there, so generated clients can type them. Where each set comes from is
/// beside it; the live contract check (`.ci/contract_live.py`) fails if the server sends another.
const CLOSED_SETS: &[(&str, &[&str])] = &[
    // `Status::message` (common::verdict): every definitive non-available status reads "Taken".
    ("/CheckResponse/properties/message", &["Available", "Taken"]),
    ("/BulkEntry/properties/message", &["Available", "Taken"]),
    // routes::suggest::precheck: a cached registry verdict, the delegation probe, or no answer.
    ("/SuggestionItem/properties/checked_by", &["registry", "dns", "none"]),
    // The lookup chain's protocols (`Protocol::as_str`, catalogue::Protocol).
    ("/TldInfo/properties/methods/items", &["dns", "rdap", "whois"]),
    ("/MethodHealth/properties/method", &["dns", "rdap", "whois"]),
    // Provenance of a registration answer (workers::engine::registration, workers::lookup::whois).
    ("/WhoisProvenance/properties/protocol", &["rdap", "whois"]),
    ("/WhoisProvenance/properties/authority", &["registry", "registrar"]),
    // Other response codes are failures (502), never answers (workers::probe::dns).
    ("/DnsLookupInfo/properties/rcode", &["NOERROR", "NXDOMAIN"]),
    // hickory's DNSSEC proofs as dsa reports them (workers::lookup::dns); bogus records are dropped.
    ("/DnsLookupInfo/properties/dnssec", &["secure", "insecure", "indeterminate"]),
    // Webhooks (crate::webhooks): a deleted webhook is never shown; the event types it may take.
    ("/Webhook/properties/state", &["active", "disabled"]),
    (
        "/Webhook/properties/event_types/items",
        &[
            "domain.available",
            "domain.registered",
            "domain.expiring",
            "domain.state_changed",
            "job.finished",
            "webhook.disabled",
        ],
    ),
    ("/Delivery/properties/state", &["pending", "delivered", "failed"]),
    ("/Delivery/properties/event_type", crate::webhooks::EVENT_TYPES),
];

/// Status values the schema of `Status` lists but the API never sends: a check without a
/// definitive answer is a 502, not a status (`Status::Unknown` is internal).
const UNSENT_STATUS: &[&str] = &["unknown"];

/// The error text shown as the example of each error status, taken from the server's own
/// messages (`ApiError`'s texts and the policy's), so that an example reads like a real answer.
/// `first_required` is the operation's first required query parameter (for the 400 example).
fn error_examples(status: &str, first_required: Option<&str>) -> Vec<(&'static str, &'static str, String)> {
    use crate::front::error::ApiError;
    let one = |text: String| vec![("example", "", text)];
    match status {
        "400" => one(match first_required {
            // A missing required parameter: the first thing a new client gets wrong.
            Some("domain") => ApiError::Missing("domain").to_string(),
            Some("domains") => ApiError::Missing("domains").to_string(),
            Some("keyword") => ApiError::Missing("keyword").to_string(),
            _ => ApiError::Missing("client_key").to_string(),
        }),
        "403" => one(ApiError::InvalidKey.to_string()),
        "404" => one(ApiError::NotFound.to_string()),
        "405" => one(ApiError::MethodNotAllowed.to_string()),
        "415" => one(crate::front::routes::bulk::UNSUPPORTED_MEDIA_TYPE.to_owned()),
        "429" => vec![
            // front::policy::windows: the per-minute limit of the key's plan (here 60).
            (
                "per_minute",
                "The key's per-minute limit",
                "Rate limit of 60 requests per minute exceeded; retry after the next minute window.".to_owned(),
            ),
            (
                "monthly_credits",
                "The key's monthly credits are spent",
                ApiError::CreditsExhausted { retry_after_secs: 0 }.to_string(),
            ),
        ],
        "500" => one(ApiError::Internal(anyhow::anyhow!("example")).to_string()),
        "502" => one(ApiError::Upstream(String::new()).to_string()),
        "503" => one(ApiError::Overloaded.to_string()),
        _ => Vec::new(),
    }
}

/// Reshapes the document for client generators (openapi-python-client, openapi-typescript) and
/// linters (Redocly's recommended rules), after every other modifier:
///
/// * `servers: [{"url": "/"}]`, the default made explicit: each dsa instance serves its own
///   document, so the API is wherever the document was fetched from (no example host);
/// * a `description` beside a `$ref` inside `oneOf`/`anyOf` (which generators drop) moves up to
///   the member that holds the `oneOf`;
/// * a parameter's `description` is copied into its `schema` (openapi-python-client reads only
///   the schema's);
/// * [`CLOSED_SETS`] become `enum`s and [`UNSENT_STATUS`] leaves `Status`;
/// * every error response gets its own example ([`error_examples`]) unless it has one;
/// * the `application/x-ndjson` form of a response is described as what it is, a stream of text
///   (`type: string`, `contentMediaType`), its line schema under `x-itemSchema` (the 3.2
///   `itemSchema`, as an extension a 3.1 document may carry), so generators keep the JSON form
///   typed and do not parse the stream as one JSON value.
struct ForGeneratedClients;

impl Modify for ForGeneratedClients {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::schema::{Schema, SchemaType};
        use utoipa::openapi::server::ServerBuilder;
        openapi.servers = Some(vec![
            ServerBuilder::new()
                .url("/")
                .description(Some("This dsa instance: the host that serves this document."))
                .build(),
        ]);
        let components = openapi.components.get_or_insert_with(Default::default);
        for (pointer, values) in CLOSED_SETS {
            let steps: Vec<&str> = pointer.trim_start_matches('/').split('/').collect();
            let Some((name, steps)) = steps.split_first() else { continue };
            let Some(slot) = components.schemas.get_mut(*name).and_then(|schema| slot_at(schema, steps)) else {
                continue;
            };
            let RefOr::T(Schema::Object(object)) = slot else { continue };
            let enumerated: Vec<serde_json::Value> = values.iter().map(|v| (*v).into()).collect();
            let nullable = matches!(&object.schema_type, SchemaType::Array(types) if types.contains(&Type::Null));
            if nullable {
                // `oneOf: [{enum}, {type: null}]`: generators read a nullable enum this way only.
                let mut closed = std::mem::take(object);
                closed.schema_type = SchemaType::Type(Type::String);
                closed.enum_values = Some(enumerated);
                let description = closed.description.take();
                *slot = utoipa::openapi::schema::OneOfBuilder::new()
                    .item(Schema::Object(closed))
                    .item(ObjectBuilder::new().schema_type(Type::Null))
                    .description(description)
                    .into();
            } else {
                object.enum_values = Some(enumerated);
            }
        }
        if let Some(RefOr::T(Schema::Object(status))) = components.schemas.get_mut("Status")
            && let Some(values) = &mut status.enum_values
        {
            values.retain(|v| !v.as_str().is_some_and(|s| UNSENT_STATUS.contains(&s)));
        }
        for schema in components.schemas.values_mut() {
            move_ref_descriptions(schema);
        }
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
                let mut first_required = None;
                for parameter in operation.parameters.iter_mut().flatten() {
                    let RefOr::T(parameter) = parameter else { continue };
                    if first_required.is_none() && parameter.required == utoipa::openapi::Required::True {
                        first_required = Some(parameter.name.clone());
                    }
                    let Some(description) = parameter.description.clone() else { continue };
                    match &mut parameter.schema {
                        Some(RefOr::T(Schema::Object(object))) if object.description.is_none() => {
                            object.description = Some(description);
                        }
                        Some(RefOr::Ref(reference)) if reference.description.is_empty() => {
                            reference.description = description;
                        }
                        _ => {}
                    }
                }
                for (status, response) in operation.responses.responses.iter_mut() {
                    let RefOr::T(response) = response else { continue };
                    for content in response.content.values_mut() {
                        if let RefOr::T(content) = content {
                            for schema in content.schema.iter_mut() {
                                move_ref_descriptions(schema);
                            }
                        }
                    }
                    if let Some(RefOr::T(stream)) = response.content.get_mut(crate::front::routes::bulk::NDJSON)
                        && let Some(line) = stream.schema.take()
                    {
                        stream.schema = Some(
                            ObjectBuilder::new()
                                .schema_type(Type::String)
                                .content_media_type(crate::front::routes::bulk::NDJSON)
                                .description(Some(
                                    "Newline-delimited JSON (NDJSON): one JSON object per line, each line ending with `\\n`, sent as soon as it is known. Read the body line by line; each line has the schema in `x-itemSchema`.",
                                ))
                                .into(),
                        );
                        let line = serde_json::to_value(line).unwrap_or_default();
                        let extensions = ExtensionsBuilder::new().add("x-itemSchema", line).build();
                        match &mut stream.extensions {
                            Some(existing) => existing.merge(extensions),
                            None => stream.extensions = Some(extensions),
                        }
                    }
                    if status.as_str() < "400" {
                        continue;
                    }
                    let Some(RefOr::T(json)) = response.content.get_mut("application/json") else { continue };
                    if json.example.is_some() || !json.examples.is_empty() {
                        continue;
                    }
                    let body = |text: &str| serde_json::json!({"success": false, "error": text});
                    match error_examples(status, first_required.as_deref()).as_slice() {
                        [] => {}
                        [(_, _, text)] => json.example = Some(body(text)),
                        several => {
                            for (name, summary, text) in several {
                                let example = utoipa::openapi::example::ExampleBuilder::new()
                                    .summary(*summary)
                                    .value(Some(body(text)))
                                    .build();
                                json.examples.insert((*name).to_owned(), example.into());
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The schema at `steps` (`properties`, a name; `items`) under `schema`.
fn slot_at<'a>(
    schema: &'a mut RefOr<utoipa::openapi::schema::Schema>,
    steps: &[&str],
) -> Option<&'a mut RefOr<utoipa::openapi::schema::Schema>> {
    use utoipa::openapi::schema::{ArrayItems, Schema};
    if steps.is_empty() {
        return Some(schema);
    }
    let RefOr::T(inner) = schema else { return None };
    match (steps, inner) {
        (["properties", name, rest @ ..], Schema::Object(object)) => slot_at(object.properties.get_mut(*name)?, rest),
        (["items", rest @ ..], Schema::Array(array)) => match &mut array.items {
            ArrayItems::RefOrSchema(items) => slot_at(items.as_mut(), rest),
            ArrayItems::False => None,
        },
        _ => None,
    }
}

/// Moves a `description` written beside a `$ref` inside `oneOf`/`anyOf` up to the schema holding
/// it (unless that has its own), in `schema` and every schema inside it.
fn move_ref_descriptions(schema: &mut RefOr<utoipa::openapi::schema::Schema>) {
    use utoipa::openapi::schema::{AdditionalProperties, ArrayItems, Schema};
    let RefOr::T(schema) = schema else { return };
    let lift = |items: &mut Vec<RefOr<Schema>>, description: &mut Option<String>| {
        for item in items.iter_mut() {
            if let RefOr::Ref(reference) = item
                && !reference.description.is_empty()
            {
                let text = std::mem::take(&mut reference.description);
                description.get_or_insert(text);
            }
            move_ref_descriptions(item);
        }
    };
    match schema {
        Schema::OneOf(one_of) => lift(&mut one_of.items, &mut one_of.description),
        Schema::AnyOf(any_of) => lift(&mut any_of.items, &mut any_of.description),
        Schema::AllOf(all_of) => all_of.items.iter_mut().for_each(move_ref_descriptions),
        Schema::Array(array) => {
            if let ArrayItems::RefOrSchema(items) = &mut array.items {
                move_ref_descriptions(items);
            }
        }
        Schema::Object(object) => {
            object.properties.values_mut().for_each(move_ref_descriptions);
            if let Some(extra) = object.additional_properties.as_deref_mut()
                && let AdditionalProperties::RefOr(extra) = extra
            {
                move_ref_descriptions(extra);
            }
        }
        _ => {}
    }
}
