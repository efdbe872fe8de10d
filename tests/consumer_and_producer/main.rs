//! The consumer runtime and the producer against the emulator, on tokio's
//! paused clock. What they log and trace is tested in `tests/logs/`; what
//! the tests share is in `cf-queues-testkit`.
#![allow(missing_docs, unreachable_pub)]

mod consumer;
mod consumer_at_a_distance;
mod consumer_faults;
mod consumer_http_pull;
mod consumer_lifecycle;
#[cfg(feature = "metrics")]
mod metrics;
mod producer;
mod producer_refusals;
mod replicas;
mod replicas_on_one_token;
mod server_waits;
mod support;
mod token_budget;

/// A handler that acknowledges at once (the kit is built without the
/// `consumer` feature, so that it lends no test binary a feature).
async fn ack_now(
    _message: cf_queues::PulledMessage,
) -> Result<cf_queues::consumer::Verdict, std::convert::Infallible> {
    Ok(cf_queues::consumer::Verdict::Ack)
}
