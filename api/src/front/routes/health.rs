//! `/healthz` (the process is up), `/readyz` (this process can take work: live workers or a
//! connected bus, and a store that answers), `/metrics` (Prometheus text).

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Serialize;
use serde_json::{Value, json};
use utoipa::ToSchema;

use crate::front::state::AppState;

/// The `/healthz` body.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(example = json!({"success": true, "status": "ok"}))]
pub struct Liveness {
    /// Always true.
    pub success: bool,
    /// Always `ok`.
    pub status: LiveStatus,
}

/// The one `status` of a live process.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum LiveStatus {
    /// The process serves HTTP.
    Ok,
}

/// The `/readyz` body when the instance is ready.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(example = json!({"success": true, "status": "ready", "workers": {"check": 64, "whois": 8, "dns": 8}}))]
pub struct Readiness {
    /// Always true.
    pub success: bool,
    /// Always `ready`.
    pub status: ReadyStatus,
    /// Standalone mode only: the worker tasks alive per kind of lookup (`check`, `whois`, `dns`…).
    /// Absent on a fleet front, whose workers run elsewhere.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    #[schema(required = false)]
    pub workers: std::collections::BTreeMap<String, usize>,
}

/// The one `status` of a ready instance.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReadyStatus {
    /// The instance can take work.
    Ready,
}

/// Liveness: always 200 while the process serves.
#[utoipa::path(get, path = "/healthz", tag = "operations", operation_id = "healthz",
    summary = "Liveness",
    description = "200 while the process serves HTTP. For load balancers and orchestrators; free.",
    responses((status = 200, description = "The process serves.", body = Liveness)))]
pub async fn healthz() -> Json<Liveness> {
    Json(Liveness { success: true, status: LiveStatus::Ok })
}

/// Readiness: 200 when the job bus can take and answer jobs ([`crate::front::dispatch::JobBus::readiness`]:
/// in standalone mode every kind of lookup has live worker tasks; in the fleet NATS is connected),
/// the store answers and (standalone) no disk sync of the ledger has failed
/// ([`crate::front::ledger::LedgerSink::disk_fault`]), else 503 naming what is missing.
#[utoipa::path(get, path = "/readyz", tag = "operations", operation_id = "readyz",
    summary = "Readiness",
    description = "200 when this instance can take work: its job bus and its workers can answer lookups and its store answers; 503 with the reason otherwise, so a load balancer stops sending it traffic. Free.",
    responses(
        (status = 200, description = "Ready to serve: lookups can be answered and storage answers. In standalone mode `workers` gives the worker tasks alive per kind of lookup.", body = Readiness),
        (status = 503, description = "Not ready: the `error` says what is missing — no live workers for a kind of lookup (standalone), the job bus (NATS) unavailable (fleet), storage unavailable, or a failed disk sync of the ledger (standalone: charges are refused until the process is restarted). Take this instance out of rotation until it answers 200; `/healthz` still says whether the process itself runs.", body = crate::front::error::ErrorBody,
            example = json!({"success": false, "error": "No live check workers: check jobs cannot be answered."}))))]
pub async fn readyz(State(state): State<AppState>) -> (StatusCode, Json<Value>) {
    if let Err(why) = state.bus().readiness() {
        tracing::warn!(%why, "not ready");
        return (StatusCode::SERVICE_UNAVAILABLE, Json(json!({ "success": false, "error": why })));
    }
    if let Some(why) = state.credits().ledger().disk_fault() {
        return (StatusCode::SERVICE_UNAVAILABLE, Json(json!({ "success": false, "error": why })));
    }
    let probe = tokio::time::timeout(
        crate::front::state::KEY_LOOKUP_TIMEOUT,
        state.store().settled_usage("readiness-probe", "0000-00"),
    );
    match probe.await.unwrap_or_else(|_| Err(anyhow::anyhow!("no answer in time"))) {
        Ok(_) => {
            let workers = state.bus().live_workers().into_iter().map(|(kind, n)| (kind.to_string(), n)).collect();
            let body = Readiness { success: true, status: ReadyStatus::Ready, workers };
            (
                StatusCode::OK,
                Json(serde_json::to_value(body).unwrap_or_else(|_| json!({ "success": true, "status": "ready" }))),
            )
        }
        Err(e) => {
            tracing::warn!(error = ?e, "not ready");
            (StatusCode::SERVICE_UNAVAILABLE, Json(json!({ "success": false, "error": "Storage unavailable." })))
        }
    }
}

/// A fleet worker's readiness (its admin listener's `/readyz`): 200 while every pull loop of its
/// pool is alive and fetching jobs ([`workers::fleet::PoolStats::readiness`]), else 503 saying
/// which is missing. `kinds` is the number of kinds of lookup the worker serves.
pub fn worker_readyz(stats: &workers::fleet::PoolStats, kinds: usize) -> (StatusCode, Json<Value>) {
    match stats.readiness(kinds) {
        Ok(()) => (StatusCode::OK, Json(json!({ "success": true, "status": "ready" }))),
        Err(why) => (StatusCode::SERVICE_UNAVAILABLE, Json(json!({ "success": false, "error": why }))),
    }
}

/// Prometheus metrics in text format.
#[utoipa::path(get, path = "/metrics", tag = "operations", operation_id = "metrics",
    responses((status = 200, description = "Prometheus text exposition format.", body = String, content_type = "text/plain")))]
pub async fn metrics() -> String {
    crate::front::telemetry::prometheus().render()
}
