//! The dashboard (`/account`): the account's keys, this month's usage chart and recent charges.

use std::collections::HashMap;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use serde::Serialize;
use time::OffsetDateTime;

use super::chart;
use super::render::{PortalError, PortalResult, render, ser};
use super::session::require_session;
use super::text::t;
use crate::front::keys::{KeyRecord, Plan};
use crate::front::state::AppState;

/// How many charges the dashboard lists.
const RECENT_CHARGES: i64 = 20;

/// One key's row on the dashboard.
#[derive(Debug, Serialize)]
pub(super) struct KeyRow {
    id: String,
    label: String,
    fingerprint: String,
    pub(super) kind: &'static str,
    state: &'static str,
    plan: &'static str,
    used: i64,
    remaining: i64,
    allowance: i64,
    per_minute: u32,
    origins: Vec<String>,
    /// The key's webhooks with their latest deliveries (issue 25; server keys only).
    webhooks: Vec<PortalWebhook>,
}

/// A webhook as the key page shows it.
#[derive(Debug, Clone, serde::Serialize)]
pub(super) struct PortalWebhook {
    id: String,
    url: String,
    event_types: String,
    state: String,
    disabled_reason: Option<String>,
    /// The latest deliveries: event type, state, attempts, last status or error.
    deliveries: Vec<PortalDelivery>,
}

/// A delivery as the key page shows it.
#[derive(Debug, Clone, serde::Serialize)]
pub(super) struct PortalDelivery {
    event_type: String,
    state: String,
    attempts: i64,
    last: String,
    created_at: String,
}

/// Deliveries shown per webhook on the key page.
const PORTAL_DELIVERIES: i64 = 5;

async fn portal_webhooks(state: &AppState, key: &KeyRecord) -> Result<Vec<PortalWebhook>, PortalError> {
    if key.kind != crate::front::keys::KeyKind::Server {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for hook in state.store().list_webhooks(&key.id).await? {
        let deliveries = state
            .store()
            .list_deliveries(&hook.id, i64::MAX, PORTAL_DELIVERIES)
            .await?
            .into_iter()
            .map(|d| PortalDelivery {
                last: d
                    .attempt_log
                    .last()
                    .map(|a| match (a.status, &a.error) {
                        (_, Some(e)) => e.clone(),
                        (Some(s), None) => format!("HTTP {s}"),
                        (None, None) => String::new(),
                    })
                    .unwrap_or_default(),
                created_at: crate::webhooks::rfc3339_ms(d.created_at_ms),
                event_type: d.event_type,
                state: d.state,
                attempts: d.attempts,
            })
            .collect();
        out.push(PortalWebhook {
            event_types: if hook.event_types.is_empty() { "*".into() } else { hook.event_types.join(", ") },
            id: hook.id,
            url: hook.url,
            state: hook.state,
            disabled_reason: hook.disabled_reason,
            deliveries,
        });
    }
    Ok(out)
}

pub(super) fn plan_name(plan: Plan) -> &'static str {
    match plan {
        Plan::Free => "Free Developer",
        Plan::Starter => "Starter",
        Plan::Pro => "PRO",
        Plan::Reseller => "Reseller",
    }
}

pub(super) async fn key_row(state: &AppState, key: &KeyRecord, period: &str) -> Result<KeyRow, PortalError> {
    let used = state.store().settled_usage(&key.id, period).await?;
    Ok(KeyRow {
        id: key.id.clone(),
        label: key.label.clone(),
        fingerprint: key.fingerprint.clone(),
        kind: key.kind.as_str(),
        state: key.state.as_str(),
        plan: plan_name(key.plan),
        used,
        remaining: (key.monthly_allowance - used).max(0),
        allowance: key.monthly_allowance,
        per_minute: state.policy().per_minute.of(key.plan),
        origins: key.allowed_origins.clone(),
        webhooks: portal_webhooks(state, key).await?,
    })
}

/// The first day of the next month (UTC), when allowances reset (spec §3, §8).
pub(super) fn reset_date(now: OffsetDateTime) -> String {
    let (y, m) = if now.month() == time::Month::December {
        (now.year() + 1, 1)
    } else {
        (now.year(), u8::from(now.month()) + 1)
    };
    format!("{y:04}-{m:02}-01")
}

pub(super) async fn dashboard(State(state): State<AppState>, headers: HeaderMap) -> PortalResult {
    let signed = require_session(&state, &headers).await?;
    let now = state.now();
    let period = common::messages::billing_period(now);
    let keys = state.store().account_keys(&signed.account.id).await?;
    let mut rows = Vec::with_capacity(keys.len());
    for key in &keys {
        rows.push(key_row(&state, key, &period).await?);
    }
    let usage = state.store().account_daily_usage(&signed.account.id, &period).await?;
    let chart = chart::render(&period, now.month().length(now.year()), &usage, t("chart_title"));
    let fingerprints: HashMap<&str, &str> = keys.iter().map(|k| (k.id.as_str(), k.fingerprint.as_str())).collect();
    let recent: Vec<_> = state
        .store()
        .recent_charges(&signed.account.id, RECENT_CHARGES)
        .await?
        .into_iter()
        .map(|c| {
            minijinja::context! {
                when => c.charged_at.get(..19).unwrap_or(&c.charged_at).replace('T', " "),
                fingerprint => fingerprints.get(c.key_id.as_str()).copied().unwrap_or("-"),
                endpoint => c.endpoint,
                credits => c.credits,
            }
        })
        .collect();
    render(
        "portal/dashboard.html",
        StatusCode::OK,
        minijinja::context! {
            signed_in => true,
            csrf => signed.session.csrf_token,
            account => ser(&signed.account),
            keys => ser(&rows),
            resets => reset_date(now),
            period,
            chart_svg => minijinja::Value::from_safe_string(chart.svg.clone()),
            legend => ser(&chart.legend),
            usage_rows => ser(&chart.rows),
            recent,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reset_dates() {
        assert_eq!(reset_date(time::macros::datetime!(2026-11-23 13:00 UTC)), "2026-12-01");
        assert_eq!(reset_date(time::macros::datetime!(2026-12-31 23:59 UTC)), "2027-01-01");
    }
}
