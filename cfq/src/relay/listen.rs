//! `--listen ADDR`: the relay's own small HTTP server for an orchestrator
//! and for Prometheus.
//!
//! | path | answers |
//! |---|---|
//! | `/healthz` | 200 `ok` while the relay runs (liveness: a relay that is waiting for its service, or for Cloudflare, is alive) |
//! | `/readyz` | 200 `ready` while it is pulling and its service answers; 503 with the reason otherwise: waiting for the service's first answer (`--wait-for-target`), the service down or busy (a pause), the token blocked by Cloudflare (429, code 971), stopping |
//! | `/metrics` | Prometheus's text format: the consumer's figures (the library's `metrics` feature) and the relay's own (`cfq_relay_*`) |
//!
//! An empty queue is ready: the relay is pulling, there is just nothing
//! to relay. Read-only, no secret in any answer, any other path or method
//! 404/405: the server is safe to expose to a cluster's network.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::get;
use cf_queues::consumer::{CancellationToken, PullSwitch};
use metrics_exporter_prometheus::PrometheusHandle;

use super::deliver::Relay;
use crate::exit::Failure;

/// What the endpoints read.
pub struct Health {
    pub relay: Arc<Relay>,
    pub switch: PullSwitch,
    pub stopping: CancellationToken,
    pub prometheus: PrometheusHandle,
}

/// Binds `address` (before the start line, so a taken port is a usage
/// failure) and serves until the task is dropped.
pub async fn serve(
    address: SocketAddr,
    health: Health,
) -> Result<impl std::future::Future<Output = ()>, Failure> {
    let listener = crate::prometheus::bind(address).await?;
    let app = Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .with_state(Arc::new(health));
    Ok(async move {
        let _ = axum::serve(listener, app).await;
    })
}

async fn readyz(State(health): State<Arc<Health>>) -> impl IntoResponse {
    match not_ready(&health) {
        None => (StatusCode::OK, "ready\n".to_owned()),
        Some(why) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("not ready: {why}\n"),
        ),
    }
}

/// Why the relay is not ready, if it is not.
pub fn not_ready(health: &Health) -> Option<String> {
    if health.stopping.is_cancelled() {
        return Some("stopping".into());
    }
    if health.relay.waiting_for_target.load(Ordering::Relaxed) {
        return Some("waiting for the service's first answer (--wait-for-target)".into());
    }
    if let Some(left) = health.switch.blocked_for() {
        return Some(format!(
            "Cloudflare blocked the token's requests (429, code 971) for {} more",
            humantime::format_duration(std::time::Duration::from_secs(left.as_secs()))
        ));
    }
    if health.relay.gate.is_paused() {
        return Some("the service is down or busy: the relay is paused".into());
    }
    None
}

/// A label value in Prometheus's text format (the emulator's free-form
/// queue ids may hold anything).
fn label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

async fn metrics(State(health): State<Arc<Health>>) -> impl IntoResponse {
    let mut text = crate::prometheus::render(&health.prometheus);
    let counters = &health.relay.counters;
    let queue = label(&health.relay.queue.id);
    let figures = [
        (
            "delivered",
            "Messages the service answered with 2xx",
            &counters.delivered,
        ),
        (
            "refused",
            "Messages the service refused, retried",
            &counters.refused,
        ),
        (
            "busy_answers",
            "Answers saying the service is down or busy",
            &counters.busy_answers,
        ),
        ("pauses", "Pauses of the whole relay", &counters.pauses),
        (
            "held_too_long",
            "Messages held past --hold, retried",
            &counters.held_too_long,
        ),
        (
            "released",
            "Messages given back unsent at the stop",
            &counters.released,
        ),
        (
            "expired",
            "Messages past --max-age, not sent",
            &counters.expired,
        ),
        (
            "unknown_ids",
            "Ids a batch answer named that its batch did not hold",
            &counters.unknown_ids,
        ),
    ];
    for (name, help, counter) in figures {
        let _ = write!(
            text,
            "# HELP cfq_relay_{name}_total {help}.\n# TYPE cfq_relay_{name}_total counter\n\
             cfq_relay_{name}_total{{queue=\"{queue}\"}} {}\n",
            counter.load(Ordering::Relaxed)
        );
    }
    let _ = write!(
        text,
        "# HELP cfq_relay_posting POSTs on their way now.\n# TYPE cfq_relay_posting gauge\n\
         cfq_relay_posting{{queue=\"{queue}\"}} {}\n\
         # HELP cfq_relay_ready 1 while /readyz answers 200.\n# TYPE cfq_relay_ready gauge\n\
         cfq_relay_ready{{queue=\"{queue}\"}} {}\n",
        counters.posting.load(Ordering::Relaxed),
        u8::from(not_ready(&health).is_none())
    );
    crate::prometheus::page(text)
}
