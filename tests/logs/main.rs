//! Tests that read what is logged and traced, in a binary of their own:
//! tracing caches callsite interest per process, and a thread-local
//! subscriber must not race the callsites that other tests register.
#![allow(missing_docs, unreachable_pub)]

mod client;
mod consumer_and_producer;
// The consumer tests' helpers; these tests run no batch handler and
// compare no counters.
#[path = "../consumer_and_producer/support.rs"]
#[allow(dead_code, unused_macros, unused_imports)]
mod support;

/// A handler that acknowledges at once (the kit is built without the
/// `consumer` feature, so that it lends no test binary a feature).
async fn ack_now(
    _message: cf_queues::PulledMessage,
) -> Result<cf_queues::consumer::Verdict, std::convert::Infallible> {
    Ok(cf_queues::consumer::Verdict::Ack)
}
