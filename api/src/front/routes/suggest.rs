//! `GET /v1/domains/suggest` (spec §2.6, §4.5): name suggestions for a keyword. Cost: 5 credits;
//! with `check=1`, 5 more for the DNS pre-check (charged only when at least one suggestion got an
//! answer). The generation rules and ranking are in [`crate::suggest`].
//!
//! Order: key prelude (400/403/429) → `keyword`, `tlds`, `limit`, `check` (400) → credits (429) →
//! generation → optional pre-check → one commit of everything charged (a refused commit is a 503
//! with nothing charged).

use axum::Json;
use axum::extract::State;
use common::lookup::DnsType;
use futures::future::join_all;
use serde::Serialize;
use time::OffsetDateTime;
use utoipa::{IntoParams, ToSchema};

use super::keyed::Keyed;
use super::{ApiQuery, Flag, flag, optional, required};
use crate::front::error::{ApiError, ErrorBody};
use crate::front::state::AppState;
use crate::suggest::{DEFAULT_TLDS, Keyword, LIMIT_RANGE, Suggestion, Variant, Words, parse_tld, suggest as generate};

/// Credits per suggestion request (spec §8).
pub const SUGGEST_COST: i64 = 5;

/// Extra credits for `check=1` (our choice; charged only when some pre-check answered).
pub const PRECHECK_COST: i64 = 5;

/// Query parameters of `GET /v1/domains/suggest` (spec §4.5). `client_key` is the security scheme.
#[derive(Debug, Default, serde::Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SuggestQuery {
    /// 2–63 characters after trimming: letters (any script), digits, spaces and hyphens.
    #[param(required = true, value_type = String, min_length = 2, max_length = 63, example = "bestpizzaplace")]
    pub keyword: Option<String>,
    /// Comma-separated TLDs with a leading dot, each supported by the catalogue and open to
    /// registration (default `.com,.net,.org,.io,.co,.ai,.dev,.app,.af,.com.af`).
    #[param(value_type = Option<String>, default = ".com,.net,.org,.io,.co,.ai,.dev,.app,.af,.com.af", example = ".com,.io,.af")]
    pub tlds: Option<String>,
    /// How many suggestions, 5 to 20 (default 20).
    #[param(value_type = Option<u32>, minimum = 5, maximum = 20, default = 20, example = 10)]
    pub limit: Option<String>,
    /// `1` pre-checks every suggestion with a DNS delegation probe (5 more credits; our addition).
    #[param(value_type = Option<Flag>, default = 0)]
    pub check: Option<String>,
}

/// One suggested name (with `check=1`, its availability hint).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SuggestionItem {
    /// The domain (A-label).
    #[schema(example = "bestpizzaplace.com")]
    pub domain: String,
    /// `exact`, `prefix`, `suffix`, `split` (word segmentation) or `af_cctld`.
    pub variant: Variant,
    /// The label under the TLD (A-label).
    #[schema(example = "bestpizzaplace")]
    pub sld: String,
    /// The TLD with its leading dot.
    #[schema(example = ".com")]
    pub tld: String,
    /// The domain in U-label form, for display (our addition).
    #[schema(example = "bestpizzaplace.com")]
    pub unicode: String,
    /// With `check=1` only: `true`/`false` when known for certain (a registry verdict from the
    /// cache, or a delegation in DNS, which means registered); `null` when only DNS was asked and
    /// the name is not delegated (see `likely_available`) or nothing answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub available: Option<Option<bool>>,
    /// With `check=1` only: `true` when the name is not delegated in DNS. **Unconfirmed**:
    /// reserved, held and pending-delete names are not delegated either; check it with
    /// `/v1/domains/check` before selling it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub likely_available: Option<Option<bool>>,
    /// With `check=1` only: where the answer came from: `registry` (a cached registry verdict),
    /// `dns` (the delegation probe) or `none` (no answer in time).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = "dns")]
    #[schema(nullable = false)]
    pub checked_by: Option<&'static str>,
}

/// The answer to a suggestions request.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SuggestResponse {
    /// Always true here.
    pub success: bool,
    /// The keyword as requested (trimmed).
    pub keyword: String,
    /// The base used for generation: the keyword in lower case without spaces and hyphens.
    pub base: String,
    /// The keyword's words, as given or from word segmentation (our addition).
    pub words: Vec<String>,
    /// TLDs applied, each with its leading dot.
    pub tlds_used: Vec<String>,
    /// The suggestions in rank order.
    pub suggestions: Vec<SuggestionItem>,
    /// Number of suggestions.
    pub total: usize,
    /// Credits charged (5; 10 with a pre-check that answered).
    pub credits_cost: i64,
    /// Credits left this month.
    pub credits_remaining: i64,
    /// When the list was made (RFC 3339, UTC).
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub generated_at: OffsetDateTime,
}

/// Handler of `GET /v1/domains/suggest` (spec §4.5, §2.6), behind the
/// [`require_key`](super::keyed::require_key) prelude.
#[utoipa::path(
    get,
    path = "/v1/domains/suggest",
    tag = "suggestions",
    operation_id = "suggestDomains",
    summary = "Suggest domain names for a keyword",
    description = "Up to `limit` names built from `keyword`: the keyword itself under each requested TLD, its words hyphenated or shortened, common prefixes and suffixes, and the requested .af zones. Every suggestion is a valid registrable name under a requested TLD. With `check=1` each suggestion also carries a quick availability hint. Costs 5 credits, plus 5 when `check=1` produced hints.",
    params(SuggestQuery),
    security(("client_key" = [])),
    responses(
        (status = 200, description = "Suggestions in rank order: `exact` first, then the .af forms, then the other variants by score (the ranking rules are in docs/api.md). \
Every suggestion is a valid registrable domain under a supported TLD; availability is not checked unless `check=1`.",
            body = SuggestResponse, headers(
                ("RateLimit-Policy" = String, description = "The key's per-minute quota, e.g. `\"per-minute\";q=60;w=60`."),
                ("RateLimit" = String, description = "Requests left in this window and seconds until it resets."),
                ("X-Request-Id" = String, description = "Request identifier (also in the logs).")),
            example = json!({"success": true, "keyword": "bestpizzaplace", "base": "bestpizzaplace", "words": ["best", "pizza", "place"],
                "tlds_used": [".com", ".net", ".af"],
                "suggestions": [
                    {"domain": "bestpizzaplace.com", "variant": "exact", "sld": "bestpizzaplace", "tld": ".com", "unicode": "bestpizzaplace.com"},
                    {"domain": "bestpizzaplace.net", "variant": "exact", "sld": "bestpizzaplace", "tld": ".net", "unicode": "bestpizzaplace.net"},
                    {"domain": "bestpizzaplace.af", "variant": "af_cctld", "sld": "bestpizzaplace", "tld": ".af", "unicode": "bestpizzaplace.af"},
                    {"domain": "best-pizza-place.com", "variant": "split", "sld": "best-pizza-place", "tld": ".com", "unicode": "best-pizza-place.com"},
                    {"domain": "getbestpizzaplace.net", "variant": "prefix", "sld": "getbestpizzaplace", "tld": ".net", "unicode": "getbestpizzaplace.net"}],
                "total": 5, "credits_cost": 5, "credits_remaining": 495, "generated_at": "2026-11-23T13:40:00Z"})),
        (status = 400, description = "Missing `client_key` or `keyword`; a keyword out of 2–63 characters or with other characters than letters, digits, spaces and hyphens; an unsupported or restricted TLD (named); `limit` not an integer from 5 to 20; `check` not 0 or 1.", body = ErrorBody),
        (status = 403, description = "Key not found, disabled or suspended (`Invalid or disabled client key.`), or the request's origin is not allowed for the key.", body = ErrorBody),
        (status = 429, description = "Per-minute limit (`Retry-After`: the next window) or monthly credits (`Monthly credit limit reached`).", body = ErrorBody,
            headers(("Retry-After" = u64, description = "Seconds until a retry may succeed."))),
        (status = 500, description = "Unexpected server error; retry after a short delay.", body = ErrorBody),
    )
)]
pub async fn suggest(
    State(state): State<AppState>,
    Keyed { key }: Keyed,
    ApiQuery(query): ApiQuery<SuggestQuery>,
) -> Result<Json<SuggestResponse>, ApiError> {
    let words = Words::shipped();
    let keyword = Keyword::parse(required(&query.keyword, "keyword")?, words).map_err(ApiError::BadRequest)?;
    let catalogue = state.book().catalogue();
    let mut tlds: Vec<String> = Vec::new();
    match optional(&query.tlds) {
        None => tlds.extend(DEFAULT_TLDS.iter().map(|s| (*s).to_owned())),
        Some(list) => {
            for part in list.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                let suffix = parse_tld(part, catalogue).map_err(ApiError::BadRequest)?;
                if !tlds.contains(&suffix) {
                    tlds.push(suffix);
                }
            }
            if tlds.is_empty() {
                return Err(ApiError::BadRequest("tlds lists no TLD; give e.g. .com,.net or leave it out.".into()));
            }
            if tlds.len() > 50 {
                return Err(ApiError::BadRequest("tlds lists more than 50 TLDs.".into()));
            }
        }
    }
    let limit = match optional(&query.limit) {
        None => *LIMIT_RANGE.end(),
        Some(text) => match text.parse::<usize>() {
            Ok(n) if LIMIT_RANGE.contains(&n) => n,
            _ => return Err(ApiError::BadRequest(format!("limit must be an integer from 5 to 20, not {text:?}."))),
        },
    };
    let check = flag(&query.check, "check")?;
    let reservation = state.credits().reserve(&key, "suggest", SUGGEST_COST, state.now()).await?;
    let precheck =
        if check { Some(state.credits().reserve(&key, "suggest", PRECHECK_COST, state.now()).await?) } else { None };
    let generated = generate(words, catalogue, &keyword, &tlds, limit);
    let mut items: Vec<SuggestionItem> = generated.items.iter().map(item).collect();
    let mut credits_cost = SUGGEST_COST;
    let mut reservation = reservation;
    if let Some(precheck) = precheck {
        let answers = join_all(generated.items.iter().map(|s| precheck_one(&state, s))).await;
        let answered = answers.iter().any(|a| a.2 != "none");
        for (item, (available, likely, by)) in items.iter_mut().zip(answers) {
            item.available = Some(available);
            item.likely_available = Some(likely);
            item.checked_by = Some(by);
        }
        if answered {
            credits_cost += PRECHECK_COST;
            reservation.absorb(precheck);
        }
        // Not answered: the pre-check's reservation is dropped here, its credits released.
    }
    // One commit for the whole answer, at the end: a refused commit (503) leaves nothing
    // charged, never the suggestions' 5 credits without their answer.
    let credits_remaining = reservation.commit().await?;
    Ok(Json(SuggestResponse {
        success: true,
        keyword: keyword.given,
        base: keyword.base,
        words: keyword.words,
        tlds_used: generated.tlds_used.iter().map(|t| format!(".{t}")).collect(),
        total: items.len(),
        suggestions: items,
        credits_cost,
        credits_remaining,
        generated_at: state.now(),
    }))
}

fn item(s: &Suggestion) -> SuggestionItem {
    SuggestionItem {
        domain: s.domain.as_str().to_owned(),
        variant: s.variant,
        sld: s.domain.sld().to_owned(),
        tld: s.domain.tld(),
        unicode: s.domain.unicode().to_owned(),
        available: None,
        likely_available: None,
        checked_by: None,
    }
}

/// One suggestion's pre-check: a cached registry verdict if there is one, else the NS records of
/// the name from the recursive resolvers (a delegation means registered; none means only "likely
/// available"). Returns (`available`, `likely_available`, `checked_by`).
async fn precheck_one(state: &AppState, s: &Suggestion) -> (Option<bool>, Option<bool>, &'static str) {
    if let Some(v) = state.book().cached(&s.domain).await
        && !matches!(v.status, common::verdict::Status::Unknown)
    {
        let available = v.status.is_available();
        return (Some(available), Some(available), "registry");
    }
    let deadline = std::time::Duration::from_secs_f64(state.book().config().records.dns_deadline_secs + 1.0);
    match state.bus().dns(s.domain.as_str().to_owned(), vec![DnsType::Ns], deadline).await {
        Ok(answer) if answer.rcode == "NXDOMAIN" => (None, Some(true), "dns"),
        Ok(answer) if answer.records.get(&DnsType::Ns).is_some_and(|r| !r.is_empty()) => {
            (Some(false), Some(false), "dns")
        }
        // NODATA (the name exists without a delegation): nothing is known.
        Ok(answer) if answer.failed.is_empty() => (None, None, "dns"),
        _ => (None, None, "none"),
    }
}
