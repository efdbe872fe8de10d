//! `cfq metrics --listen ADDR`: the backlog of one or more queues as
//! Prometheus gauges, read by the library's one backlog reader. It needs
//! no consumer running, so an autoscaler (KEDA's Prometheus scaler) can
//! scale a deployment of consumers or relays up from zero replicas.
//!
//! | path | answers |
//! |---|---|
//! | `/metrics` | Prometheus's text format: `cf_queues_queue_backlog_messages`, `_bytes` and `cf_queues_queue_oldest_message_age` per queue (label `messaging_destination_name`, its id) |
//! | `/healthz` | 200 `ok` while it runs |
//!
//! Each queue is read once at start (a refused credential or a queue that
//! does not exist ends it with exit 3 or 4 before it serves), then every
//! `--backlog-interval` (30 s): one call of the token's 1,200 in five
//! minutes per queue and reading, paced with the token's other calls.

use std::net::SocketAddr;
use std::time::SystemTime;

use axum::Router;
use axum::extract::State;
use axum::response::IntoResponse;
use axum::routing::get;
use cf_queues::consumer::BacklogReader;
use metrics_exporter_prometheus::PrometheusHandle;

use crate::args::{MetricsArgs, QueueRef};
use crate::exit::{Code, Failure};
use crate::output::plural;
use crate::session::Session;
use crate::signals::Interrupts;
use crate::stderr::note;

pub async fn serve(
    session: &Session,
    args: &MetricsArgs,
    address: SocketAddr,
) -> Result<Code, Failure> {
    // Installed before the readers, so their first readings are recorded.
    let prometheus = crate::prometheus::install()?;
    let mut queues = vec![session.queue.clone()];
    for given in &args.also {
        queues.push(session.other(&QueueRef::Either(given.clone())).await?);
    }
    let mut readers = Vec::with_capacity(queues.len());
    for queue in queues {
        let first = session.answer(queue.metrics().await)?;
        let reader =
            BacklogReader::start_seeded(queue, args.backlog_interval, first, SystemTime::now())
                .map_err(Failure::usage)?;
        readers.push(reader);
    }
    let listener = crate::prometheus::bind(address).await?;
    let app = Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/metrics", get(metrics))
        .with_state(prometheus);
    let mut interrupts = Interrupts::watch()?;
    note(format_args!(
        "serving the backlog of {} on http://{address}/metrics, read every {} (one call of the \
         token's 1,200 per 5 minutes each, per queue); SIGTERM or Ctrl-C stops",
        plural(readers.len() as u64, "queue"),
        humantime::format_duration(args.backlog_interval),
    ));
    tokio::select! {
        served = axum::serve(listener, app) => {
            served.map_err(|e| Failure::local(format_args!("the metrics server failed: {e}")))?;
        }
        () = interrupts.reached(1) => {}
    }
    drop(readers);
    Ok(Code::Ok)
}

async fn metrics(State(prometheus): State<PrometheusHandle>) -> impl IntoResponse {
    crate::prometheus::page(crate::prometheus::render(&prometheus))
}
