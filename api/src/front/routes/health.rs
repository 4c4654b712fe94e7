//! `/healthz` (the process is up), `/readyz` (this process can take work: live workers or a
//! connected bus, and a store that answers), `/metrics` (Prometheus text).

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde_json::{Value, json};

use crate::front::state::AppState;

/// Liveness: always 200 while the process serves.
#[utoipa::path(get, path = "/healthz", tag = "operations", operation_id = "healthz",
    summary = "Liveness",
    description = "200 while the process serves HTTP. For load balancers and orchestrators; free.",
    responses((status = 200, description = "The process serves.", body = Object,
        example = json!({"success": true, "status": "ok"}))))]
pub async fn healthz() -> Json<Value> {
    Json(json!({ "success": true, "status": "ok" }))
}

/// Readiness: 200 when the job bus can take and answer jobs ([`crate::front::dispatch::JobBus::readiness`]:
/// in standalone mode every kind of lookup has live worker tasks; in the fleet NATS is connected)
/// and the store answers, else 503 naming what is missing.
#[utoipa::path(get, path = "/readyz", tag = "operations", operation_id = "readyz",
    summary = "Readiness",
    description = "200 when this instance can take work: its job bus and its workers can answer lookups and its store answers; 503 with the reason otherwise, so a load balancer stops sending it traffic. Free.",
    responses(
        (status = 200, description = "Ready to serve: lookups can be answered and storage answers. In standalone mode `workers` gives the worker tasks alive per kind of lookup.", body = Object, example = json!({"success": true, "status": "ready", "workers": {"check": 64, "whois": 8, "dns": 8}})),
        (status = 503, description = "Not ready: the `error` says what is missing — no live workers for a kind of lookup (standalone), the job bus (NATS) unavailable (fleet), or storage unavailable. Take this instance out of rotation until it answers 200; `/healthz` still says whether the process itself runs.", body = crate::front::error::ErrorBody,
            example = json!({"success": false, "error": "No live check workers: check jobs cannot be answered."}))))]
pub async fn readyz(State(state): State<AppState>) -> (StatusCode, Json<Value>) {
    if let Err(why) = state.bus().readiness() {
        tracing::warn!(%why, "not ready");
        return (StatusCode::SERVICE_UNAVAILABLE, Json(json!({ "success": false, "error": why })));
    }
    let probe = tokio::time::timeout(
        crate::front::state::KEY_LOOKUP_TIMEOUT,
        state.store().settled_usage("readiness-probe", "0000-00"),
    );
    match probe.await.unwrap_or_else(|_| Err(anyhow::anyhow!("no answer in time"))) {
        Ok(_) => {
            let workers: serde_json::Map<String, Value> =
                state.bus().live_workers().into_iter().map(|(kind, n)| (kind.to_string(), json!(n))).collect();
            let mut body = json!({ "success": true, "status": "ready" });
            if !workers.is_empty() {
                body["workers"] = Value::Object(workers);
            }
            (StatusCode::OK, Json(body))
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
