//! A local emulator of the Cloudflare Queues HTTP API, as a local
//! Cloudflare account: the crate `cf-queues-emulator`.
//!
//! It serves the twelve operations of Cloudflare's published Queues
//! messages API, the eleven that manage queues and their consumers and the
//! five on event subscriptions (with other products' events emitted on
//! request: [`EmulatorHandle::emit_event`], the [`catalogue`]), at
//! Cloudflare's paths, with or without the `/client/v4` prefix, with
//! Cloudflare's envelopes, field names, error codes and semantics: delays,
//! leases that expire, late acks, retries, lease extension, `max_retries`
//! with an optional dead-letter queue, peek and purge by ref, preview,
//! exact metrics, purging a whole queue; queues with names, ids and
//! settings, and one consumer each, whose settings decide delivery. Any
//! client written for Cloudflare, the official SDKs included, can be
//! pointed at its base URL. The account can be declared in a file
//! ([`config::EmulatorConfig`], `cfq emulator --config FILE`).
//!
//! Nothing else offers this locally: Miniflare emulates the Worker
//! bindings of Queues only, and `wrangler dev` has no pull consumers. So a
//! test of an HTTP consumer either runs against a real account or against
//! this crate.
//!
//! The queue logic is a pure state machine; this crate wraps it in an
//! HTTP/1 server on tokio (axum routing, hyper connections driven by an
//! accept loop of its own, see [Limits under load](semantics#limits-under-load)).
//! Time can be driven by a [`ManualClock`], or follow tokio's (paused)
//! clock with a [`TokioClock`], so that tests never sleep; failures can be
//! injected with [`Fault`]. On request it answers [at a
//! distance](semantics#at-a-distance), a round trip away, and [under
//! Cloudflare's rate limits](semantics#rate-limits), so that a client can be
//! judged as it runs against Cloudflare. It serves a [dashboard](semantics#dashboard)
//! of the local account to a browser.
//!
//! What it does, exactly (its semantics, the assumptions it makes where
//! Cloudflare's documents are silent or disagree, and its limits, each
//! with its default and why) is written once, in [`semantics`]: its
//! [operations](semantics#operations), [error codes](semantics#error-codes),
//! [semantics](semantics#semantics), [durability](semantics#durability),
//! [limits under load](semantics#limits-under-load), [rate
//! limits](semantics#rate-limits), [assumptions](semantics#assumptions), the
//! [dashboard](semantics#dashboard), [a declared
//! account](semantics#a-declared-account) and [conformance](semantics#conformance).
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use cf_queues::{Message, PullOptions};
//! use cf_queues_emulator::Emulator;
//!
//! let emulator = Emulator::new().start().await?;   // 127.0.0.1, a free port, a fresh token
//! let queue = emulator.client()?.queue("orders")?;
//! queue.push(Message::text("hello")).await?;
//! let batch = queue.pull(PullOptions::new()).await?;
//! assert_eq!(batch.messages[0].body().text()?, "hello");
//! emulator.shutdown().await?;
//! # Ok(()) }
//! ```
//!
//! From the command line: `cfq emulator --listen 127.0.0.1:8787` (the crate
//! `cfq`: `cargo install cfq`). It prints the base URL and the token
//! (generated unless `--token`), serves until Ctrl-C or SIGTERM (requests
//! in flight get the 5 s [shutdown grace](Emulator::shutdown_grace)), binds
//! loopback by default and warns when it listens on any other address.
//!

#[doc = include_str!("semantics.md")]
pub mod semantics {
    // The names its links point at.
    #[allow(unused_imports)]
    use crate::{
        EMULATOR_ACCOUNT_ID, Emulator, EmulatorHandle, Fault, Latency, ManualClock, Operation,
        RateLimitModel, TokioClock, config, reset_data_dir,
    };
}
mod builder;
#[doc = include_str!("catalogue.md")]
pub mod catalogue;
mod clock;
pub mod config;
#[cfg(feature = "dashboard")]
mod dashboard;
mod faults;
mod handle;
mod http;
mod latency;
mod random;
mod ratelimit;
#[cfg(feature = "dashboard")]
mod request_log;
mod server;
mod state;
mod store;

/// The operation a [`Fault`] is aimed at: the crate's own [`Operation`].
pub use cf_queues::operation::Operation;

// The README's example is compiled as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
pub use builder::Emulator;
pub use clock::{EmulatorClock, ManualClock, TokioClock};
pub use faults::Fault;
pub use handle::{EmitError, EmulatorHandle, EventDelivered, EventToEmit, WorkerBody};
pub use latency::Latency;
pub use ratelimit::RateLimitModel;
pub use server::{ServerMonitor, ServerStats};
pub use store::{DATA_FORMAT_VERSION, reset_data_dir};

/// The account id [`EmulatorHandle::client`] uses and declared queues
/// belong to; the emulator accepts any valid id.
pub const EMULATOR_ACCOUNT_ID: &str = "0123456789abcdef0123456789abcdef";

/// The largest piece a pull or peek answer is written in.
const MAX_CHUNK_BYTES: usize = 16 * 1024;
