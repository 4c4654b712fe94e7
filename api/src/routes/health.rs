//! `/healthz` (the process is up), `/readyz` (the store answers), `/metrics` (Prometheus text).

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde_json::{Value, json};

use crate::state::AppState;

/// Liveness: always 200 while the process serves.
#[utoipa::path(get, path = "/healthz", tag = "operations", operation_id = "healthz",
    responses((status = 200, description = "The process serves.", body = Object,
        example = json!({"success": true, "status": "ok"}))))]
pub async fn healthz() -> Json<Value> {
    Json(json!({ "success": true, "status": "ok" }))
}

/// Readiness: 200 when the store answers and the job bus can take jobs (in the fleet: NATS is
/// connected), else 503 naming what is missing.
#[utoipa::path(get, path = "/readyz", tag = "operations", operation_id = "readyz",
    responses(
        (status = 200, description = "Ready to serve.", body = Object, example = json!({"success": true, "status": "ready"})),
        (status = 503, description = "Storage or the job bus (NATS) unavailable.", body = crate::error::ErrorBody)))]
pub async fn readyz(State(state): State<AppState>) -> (StatusCode, Json<Value>) {
    if !state.bus().ready() {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({ "success": false, "error": "Job bus (NATS) unavailable." })),
        );
    }
    let probe = tokio::time::timeout(
        crate::state::KEY_LOOKUP_TIMEOUT,
        state.store().settled_usage("readiness-probe", "0000-00"),
    );
    match probe.await.unwrap_or_else(|_| Err(anyhow::anyhow!("no answer in time"))) {
        Ok(_) => (StatusCode::OK, Json(json!({ "success": true, "status": "ready" }))),
        Err(e) => {
            tracing::warn!(error = ?e, "not ready");
            (StatusCode::SERVICE_UNAVAILABLE, Json(json!({ "success": false, "error": "Storage unavailable." })))
        }
    }
}

/// Prometheus metrics in text format.
#[utoipa::path(get, path = "/metrics", tag = "operations", operation_id = "metrics",
    responses((status = 200, description = "Prometheus text exposition format.", body = String, content_type = "text/plain")))]
pub async fn metrics() -> String {
    crate::telemetry::prometheus().render()
}
