//! The consumer runtime and the producer against the emulator, on tokio's
//! paused clock. What they log and trace is tested in `tests/logs/`.
#![allow(missing_docs, unreachable_pub)]

mod budget;
mod consumer;
mod consumer_distance;
mod consumer_faults;
mod consumer_http_pull;
mod consumer_lifecycle;
mod producer;
mod producer_refusals;
mod support;
