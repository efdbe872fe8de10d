//! What `cfq relay --listen` and `cfq metrics --listen` share of
//! Prometheus: the recorder, the listening socket, and the page.

use std::net::SocketAddr;

use axum::http::header;
use axum::response::IntoResponse;
use metrics_exporter_prometheus::PrometheusHandle;

use crate::exit::Failure;

/// Installs the process's recorder: before any consumer or backlog reader
/// is built, so that each records from its first figure on.
pub fn install() -> Result<PrometheusHandle, Failure> {
    metrics_exporter_prometheus::PrometheusBuilder::new()
        .install_recorder()
        .map_err(|e| Failure::local(format_args!("cannot start the metrics: {e}")))
}

/// Binds `--listen`'s address before anything starts, so that a taken
/// port is a usage failure.
pub async fn bind(address: SocketAddr) -> Result<tokio::net::TcpListener, Failure> {
    tokio::net::TcpListener::bind(address)
        .await
        .map_err(|e| Failure::usage(format_args!("--listen {address}: {e}")))
}

/// The recorder's figures, as Prometheus's text format renders them.
pub fn render(handle: &PrometheusHandle) -> String {
    handle.run_upkeep();
    handle.render()
}

/// `text` as a `/metrics` answer.
pub fn page(text: String) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        text,
    )
}
