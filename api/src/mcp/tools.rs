//! The MCP tools: their arguments (JSON Schema from the Rust types), their descriptions for an
//! agent, and the call of each into the REST endpoint's own function, so a tool call and the
//! REST call it mirrors run the same code (parameters, key, credits, cache, errors):
//!
//! | tool | REST endpoint | function run | credits |
//! |---|---|---|---|
//! | `check_domain` | `GET /v1/domains/check` | [`check::keyed_check`] | 1 per definitive answer |
//! | `check_domains` | `GET /v1/domains/bulk` | [`bulk::check_list`] | 1 per name with a definitive answer |
//! | `whois` | `GET /v1/whois` | [`whois::whois`] | 2 |
//! | `dns_records` | `GET /v1/dns` | [`dns::dns`] | 1 |
//! | `suggest_domains` | `GET /v1/domains/suggest` | [`suggest::suggest`] | 5 (+1 per name `verify` confirmed, +5 with `check`) |
//! | `list_tlds` | `GET /v1/tlds` | [`tlds::listing`] | free |
//!
//! The arguments are typed JSON (numbers, booleans, arrays); each tool turns them into the REST
//! query struct and leaves every check of their values to the endpoint, so a bad value gets the
//! REST 400 text. The structured result is the REST body, and the output schema is the REST
//! body's schema from the OpenAPI document ([`super::schema`]).

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::front::error::ApiError;
use crate::front::keys::KeyRecord;
use crate::front::routes::keyed::Keyed;
use crate::front::routes::{ApiQuery, bulk, check, dns, suggest, tlds, whois};
use crate::front::state::AppState;

/// Arguments of `check_domain`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct CheckDomainArgs {
    /// The full domain name with its TLD, e.g. `example.com` or `bücher.de`. A URL or a host
    /// name under the domain is reduced to the registrable domain (`www.example.co.uk` →
    /// `example.co.uk`).
    #[schemars(length(min = 1, max = 1024))]
    pub domain: String,
    /// Offer options for an available name (price and checkout link).
    #[serde(flatten)]
    pub offer: OfferArgs,
}

/// Arguments of `check_domains`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct CheckDomainsArgs {
    /// 1 to 10 full domain names with their TLDs, e.g. `["example.com", "example.net"]`.
    /// Duplicates (after normalisation) are checked once.
    #[schemars(length(min = 1, max = 10))]
    pub domains: Vec<String>,
    /// Offer options for the available names (price and checkout link).
    #[serde(flatten)]
    pub offer: OfferArgs,
}

/// How an available name is offered: the price shown and the checkout link.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct OfferArgs {
    /// Markup in percent added to the registry price shown (0 to 1000); default: the key's own.
    #[schemars(range(min = 0.0, max = 1000.0))]
    pub commission_percent: Option<f64>,
    /// Your own checkout URL (absolute http or https); `domain`, `sld` and `tld` are appended.
    pub redirect_url: Option<String>,
    /// `true` links to the service's own checkout page instead of the key's.
    pub redirect_checkout: Option<bool>,
}

/// Arguments of `whois`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct WhoisArgs {
    /// The registered domain to look up, e.g. `example.com`.
    #[schemars(length(min = 1, max = 1024))]
    pub domain: String,
}

/// A DNS record type.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "UPPERCASE")]
#[allow(missing_docs, clippy::upper_case_acronyms)]
pub enum RecordType {
    A,
    Aaaa,
    Mx,
    Ns,
    Txt,
    Cname,
    Soa,
    Caa,
    Srv,
}

impl RecordType {
    /// The type's name as `GET /v1/dns` takes it.
    pub fn as_str(self) -> &'static str {
        match self {
            RecordType::A => "A",
            RecordType::Aaaa => "AAAA",
            RecordType::Mx => "MX",
            RecordType::Ns => "NS",
            RecordType::Txt => "TXT",
            RecordType::Cname => "CNAME",
            RecordType::Soa => "SOA",
            RecordType::Caa => "CAA",
            RecordType::Srv => "SRV",
        }
    }
}

/// Arguments of `dns_records`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct DnsArgs {
    /// A public host name: a domain or any name under it, e.g. `example.com` or
    /// `_sip._tcp.example.com`.
    #[schemars(length(min = 1, max = 253))]
    pub domain: String,
    /// Record types to ask for; default `["A", "MX", "NS", "TXT"]`.
    #[schemars(length(min = 1, max = 9))]
    pub types: Option<Vec<RecordType>>,
}

/// Arguments of `suggest_domains`. New options of `GET /v1/domains/suggest` become fields here
/// and one line in [`SuggestArgs::query`].
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct SuggestArgs {
    /// What the name is about: 2 to 63 letters (any script), digits, spaces or hyphens, e.g.
    /// `best pizza place` or `kabulbakery`.
    #[schemars(length(min = 2, max = 63))]
    pub keyword: String,
    /// TLDs to build names under, each with its leading dot (up to 50), e.g. `[".com", ".io"]`;
    /// default `.com .net .org .io .co .ai .dev .app .af .com.af`.
    #[schemars(length(min = 1, max = 50))]
    pub tlds: Option<Vec<String>>,
    /// How many names, 5 to 20 (default 20).
    #[schemars(range(min = 5, max = 20))]
    pub limit: Option<u32>,
    /// `true` adds a quick DNS hint per name (`likely_available`; unconfirmed: confirm with
    /// `check_domain` before recommending a name). 5 more credits.
    pub check: Option<bool>,
    /// Confirm names with the registry until this many (1 to `limit`) are known to be free: the
    /// confirmed names come first with `available: true` and their verdict; `verification` says
    /// how many were confirmed and tried. 1 more credit per confirmed name.
    #[schemars(range(min = 1, max = 20))]
    pub verify: Option<u32>,
}

impl SuggestArgs {
    /// The REST query these arguments stand for.
    // `..default()` keeps this compiling when the REST query gains a parameter before this
    // struct does (then the lint no longer applies: `allow`, not `expect`).
    #[allow(clippy::needless_update)]
    pub fn query(&self) -> suggest::SuggestQuery {
        suggest::SuggestQuery {
            keyword: Some(self.keyword.clone()),
            tlds: self.tlds.as_ref().map(|t| t.join(",")),
            limit: self.limit.map(|n| n.to_string()),
            check: self.check.map(|c| flag(c).to_owned()),
            verify: self.verify.map(|n| n.to_string()),
            ..suggest::SuggestQuery::default()
        }
    }
}

/// Arguments of `list_tlds`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct ListTldsArgs {
    /// Only suffixes containing this text, e.g. `af` or `.co`.
    #[schemars(length(max = 63))]
    pub contains: Option<String>,
    /// Only suffixes with this zonedb tag, e.g. `generic`, `country`, `brand`, `geo`.
    #[schemars(length(max = 63))]
    pub tag: Option<String>,
    /// At most this many entries, 1 to 2000 (default 200).
    #[schemars(range(min = 1, max = 2000))]
    pub limit: Option<u32>,
}

/// Default and largest number of entries `list_tlds` returns.
pub const LIST_TLDS_DEFAULT: usize = 200;
const LIST_TLDS_MAX: usize = 2000;

/// Why a tool call failed: the REST error, or arguments that do not fit the input schema.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// The REST endpoint's error; its text is the REST `error` text.
    #[error(transparent)]
    Api(#[from] ApiError),
    /// The arguments are not the tool's input shape.
    #[error("Invalid arguments for {tool}: {reason}.")]
    Arguments {
        /// The tool called.
        tool: &'static str,
        /// What serde said.
        reason: String,
    },
}

/// One tool: its name, title, description for an agent, input type and the OpenAPI schema of
/// its result.
struct Spec {
    name: &'static str,
    title: &'static str,
    description: &'static str,
    input: fn() -> Arc<JsonObject>,
    output: &'static str,
}

const SPECS: &[Spec] = &[
    Spec {
        name: "check_domain",
        title: "Check a domain name",
        description: "Asks the registry whether one domain name can be registered now. `available` is true only \
when the registry itself said the name is free; a name in use is `available: false`. For an available name the \
answer may carry its price and a checkout link. Use it before recommending or buying a name: never guess \
availability. Costs 1 credit per definitive answer; an error (no answer from the registry) costs nothing.",
        input: rmcp::handler::server::common::schema_for_type::<CheckDomainArgs>,
        output: "CheckResponse",
    },
    Spec {
        name: "check_domains",
        title: "Check up to 10 domain names",
        description: "Checks 1 to 10 domain names at once, in parallel, with the same registry answers as \
`check_domain`; names that are not valid domains are listed under `invalid` with the reason. Use it to compare \
several candidates (the same name under several TLDs, or a shortlist). Costs 1 credit per name that gets a \
definitive answer; the credits for every valid name must be available when the call starts.",
        input: rmcp::handler::server::common::schema_for_type::<CheckDomainsArgs>,
        output: "BulkResponse",
    },
    Spec {
        name: "whois",
        title: "Look up a domain's registration",
        description: "The registration record of a registered domain from its registry (RDAP, else WHOIS): \
registrar, creation, update and expiry dates, name servers and statuses. A name that is not registered answers \
`whois: null` and `lookup.registered: false`. Use it to find who holds a name and when it expires, not to test \
availability (use `check_domain`). Costs 2 credits.",
        input: rmcp::handler::server::common::schema_for_type::<WhoisArgs>,
        output: "WhoisResponse",
    },
    Spec {
        name: "dns_records",
        title: "Look up DNS records",
        description: "The DNS records of a public host name (A, AAAA, MX, NS, TXT, CNAME, SOA, CAA, SRV; default \
A, MX, NS and TXT) with their TTLs, from recursive resolvers. A name that does not exist answers \
`lookup.rcode: NXDOMAIN` with empty lists. Use it to see where a domain points or how its mail is set up; a \
name without DNS records can still be registered by someone, so do not use it to test availability. Costs 1 \
credit.",
        input: rmcp::handler::server::common::schema_for_type::<DnsArgs>,
        output: "DnsResponse",
    },
    Spec {
        name: "suggest_domains",
        title: "Suggest domain names",
        description: "Up to 20 domain names built from a keyword: the keyword under each TLD asked, its words \
hyphenated or shortened, common prefixes and suffixes. Without `verify` the suggestions are NOT checked with the \
registry: confirm a name with `check_domain` (or several with `check_domains`) before recommending it. With \
`verify: N` the registry itself confirms names until N are free (or about 8 seconds pass): those come first \
with `available: true`, and only they may be presented as available. With `check: true` each name gets a quick \
DNS hint (`likely_available`), still unconfirmed. Costs 5 credits, plus 1 per name `verify` confirmed, plus 5 \
when `check` produced hints.",
        input: rmcp::handler::server::common::schema_for_type::<SuggestArgs>,
        output: "SuggestResponse",
    },
    Spec {
        name: "list_tlds",
        title: "List the supported TLDs",
        description: "The TLDs and registry zones (such as `.com.af`) this service can check, with how it asks \
each registry and whether an `available` answer can be definitive there (`definitive_available`) or the zone is \
restricted to eligible registrants. Filter with `contains` or `tag`; at most `limit` entries (default 200). Use \
it to pick TLDs for `suggest_domains` or to explain why a TLD is unsupported. Free.",
        input: rmcp::handler::server::common::schema_for_type::<ListTldsArgs>,
        output: "TldList",
    },
];

/// Every tool, described for `tools/list` (built once).
pub fn list() -> &'static [Tool] {
    static TOOLS: std::sync::OnceLock<Vec<Tool>> = std::sync::OnceLock::new();
    TOOLS.get_or_init(|| {
        SPECS
            .iter()
            .map(|spec| {
                let annotations = ToolAnnotations::with_title(spec.title)
                    .read_only(true)
                    .destructive(false)
                    // Each call is charged again, and verdicts change: not idempotent.
                    .idempotent(false)
                    .open_world(spec.name != "list_tlds");
                Tool::new(spec.name, spec.description, (spec.input)())
                    .with_title(spec.title)
                    .with_raw_output_schema(super::schema::output_schema(spec.output))
                    .with_annotations(annotations)
            })
            .collect()
    })
}

fn flag(on: bool) -> &'static str {
    if on { "1" } else { "0" }
}

fn parse<T: serde::de::DeserializeOwned>(tool: &'static str, args: JsonObject) -> Result<T, ToolError> {
    serde_json::from_value(Value::Object(args)).map_err(|e| ToolError::Arguments { tool, reason: e.to_string() })
}

fn to_value(body: impl serde::Serialize) -> Result<Value, ToolError> {
    serde_json::to_value(body).map_err(|e| ToolError::Api(ApiError::Internal(e.into())))
}

impl OfferArgs {
    /// The REST check query for `domain` with these options.
    fn query(&self, domain: Option<String>) -> check::CheckQuery {
        check::CheckQuery {
            domain,
            commission_percent: self.commission_percent.map(|c| c.to_string()),
            redirect_url: self.redirect_url.clone(),
            redirect_checkout: self.redirect_checkout.map(|c| flag(c).to_owned()),
            ..check::CheckQuery::default()
        }
    }
}

/// Runs tool `name` for `key` with `args`; `Ok(None)` when no tool has that name. The value is
/// the REST body of the call.
///
/// # Errors
/// The REST error of the call, or arguments that are not the tool's input shape.
pub async fn call(
    state: &AppState,
    key: Arc<KeyRecord>,
    name: &str,
    args: JsonObject,
) -> Result<Option<Value>, ToolError> {
    let value = match name {
        "check_domain" => {
            let args: CheckDomainArgs = parse("check_domain", args)?;
            let checked = check::keyed_check(state, &key, &args.offer.query(Some(args.domain))).await?;
            to_value(checked.outcome.into_body(checked.credits_cost, checked.credits_remaining, None))?
        }
        "check_domains" => {
            let args: CheckDomainsArgs = parse("check_domains", args)?;
            let options = check::CheckOptions::from_query(&args.offer.query(None))?;
            to_value(bulk::check_list(state, key, options, args.domains).await?)?
        }
        "whois" => {
            let args: WhoisArgs = parse("whois", args)?;
            let query = whois::WhoisQuery { domain: Some(args.domain) };
            // The tool call is the admission: its deadline counts from here, like a REST call's.
            let admitted = crate::front::routes::keyed::Admitted(tokio::time::Instant::now());
            let Json(body) = whois::whois(State(state.clone()), Keyed { key }, admitted, ApiQuery(query)).await?;
            to_value(body)?
        }
        "dns_records" => {
            let args: DnsArgs = parse("dns_records", args)?;
            let types = args.types.map(|t| t.iter().map(|t| t.as_str()).collect::<Vec<_>>().join(","));
            let query = dns::DnsQuery { domain: Some(args.domain), types };
            let admitted = crate::front::routes::keyed::Admitted(tokio::time::Instant::now());
            let Json(body) = dns::dns(State(state.clone()), Keyed { key }, admitted, ApiQuery(query)).await?;
            to_value(body)?
        }
        "suggest_domains" => {
            let args: SuggestArgs = parse("suggest_domains", args)?;
            let Json(body) = suggest::suggest(State(state.clone()), Keyed { key }, ApiQuery(args.query())).await?;
            to_value(body)?
        }
        "list_tlds" => {
            let args: ListTldsArgs = parse("list_tlds", args)?;
            list_tlds(state, &args)?
        }
        _ => return Ok(None),
    };
    Ok(Some(value))
}

/// The `GET /v1/tlds` listing, filtered: entries whose suffix contains `contains` (case- and
/// dot-insensitive at the start) and that carry `tag`, at most `limit` of them; `count` is the
/// number returned.
fn list_tlds(state: &AppState, args: &ListTldsArgs) -> Result<Value, ToolError> {
    let mut listing: Value =
        serde_json::from_slice(&tlds::listing(state)).map_err(|e| ToolError::Api(ApiError::Internal(e.into())))?;
    let contains = args.contains.as_deref().map(|c| c.trim().trim_start_matches('.').to_lowercase());
    let tag = args.tag.as_deref().map(|t| t.trim().to_lowercase());
    let limit = args.limit.map_or(LIST_TLDS_DEFAULT, |n| (n as usize).clamp(1, LIST_TLDS_MAX));
    let entries = listing.get_mut("tlds").and_then(Value::as_array_mut).map(std::mem::take).unwrap_or_default();
    let kept: Vec<Value> = entries
        .into_iter()
        .filter(|e| {
            let suffix = e.get("tld").and_then(Value::as_str).unwrap_or("");
            contains.as_deref().is_none_or(|c| suffix.contains(c))
        })
        .filter(|e| {
            tag.as_deref().is_none_or(|t| {
                e.get("tags").and_then(Value::as_array).is_some_and(|tags| tags.iter().any(|x| x.as_str() == Some(t)))
            })
        })
        .take(limit)
        .collect();
    listing["count"] = Value::from(kept.len());
    listing["tlds"] = Value::Array(kept);
    Ok(listing)
}
