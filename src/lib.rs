//! A client for the [Cloudflare Queues] HTTP messages API: push, batch push,
//! pull, acknowledge and retry, peek and purge.
//!
//! [Cloudflare Queues]: https://developers.cloudflare.com/queues/
//!
//! # Authentication
//!
//! Build a [`Client`] from the environment, as the official SDKs do:
//! `CLOUDFLARE_API_TOKEN` (or the legacy `CLOUDFLARE_API_KEY` with
//! `CLOUDFLARE_EMAIL`), `CLOUDFLARE_ACCOUNT_ID`, and optionally
//! `CLOUDFLARE_BASE_URL`. Or configure it with [`Client::builder`]. The token
//! needs the Queues read and write permissions. Credentials never show in
//! `Debug` output or errors.
//!
//! ```no_run
//! # fn demo() -> cf_queues::Result<()> {
//! use cf_queues::Client;
//! let client = Client::builder()
//!     .api_token(std::env::var("MY_TOKEN").unwrap_or_default())
//!     .account_id("023e105f4ecef8ad9ca31a8372d0c353")
//!     .build()?;
//! # Ok(()) }
//! ```
//!
//! # Pushing
//!
//! A [`Message`] is text or JSON, with an optional delay. A [`Batch`](crate::batch::Batch) pushes
//! up to 100 messages in one request.
//!
//! Pushes (and every call but pulls, acks and lease extensions) count
//! against Cloudflare's limit of 1,200 requests per five minutes per token,
//! and going over it blocks every call of the token for five minutes. Each
//! [`Client`] paces those calls by the `Ratelimit` headers the API answers
//! with, so that it never goes over on its own; see
//! [`RateLimits`](crate::ratelimit::RateLimits).
//!
//! ```no_run
//! # async fn demo() -> cf_queues::Result<()> {
//! use std::time::Duration;
//! use cf_queues::{Client, Message};
//! use cf_queues::batch::Batch;
//!
//! let queue = Client::from_env()?.queue("023e105f4ecef8ad9ca31a8372d0c353")?;
//! queue.push(Message::text("hello")).await?;
//! queue.push(Message::json(&serde_json::json!({"order": 42}))?.with_delay(Duration::from_secs(5))).await?;
//! queue.push_batch(Batch::new([Message::text("a"), Message::text("b")])).await?;
//! # Ok(()) }
//! ```
//!
//! # A pull and acknowledge loop
//!
//! Pull leases messages; acknowledge each one you handled and retry the
//! others before the lease expires. Bodies decode by their content type.
//!
//! ```no_run
//! # async fn demo(queue: cf_queues::Queue) -> cf_queues::Result<()> {
//! use std::time::Duration;
//! use cf_queues::{Acks, PullOptions};
//!
//! #[derive(serde::Deserialize)]
//! struct Order { order: u64 }
//!
//! loop {
//!     let batch = queue.pull(PullOptions::new().batch_size(50)).await?;
//!     if batch.messages.is_empty() {
//!         tokio::time::sleep(Duration::from_secs(1)).await; // short polling
//!         continue;
//!     }
//!     let mut acks = Acks::new();
//!     for message in &batch.messages {
//!         match message.body().json::<Order>() {
//!             Ok(order) => { println!("order {}", order.order); acks = acks.ack(message); }
//!             Err(_) => acks = acks.retry_after(message, Duration::from_secs(30)),
//!         }
//!     }
//!     let outcome = queue.ack(acks).await?;
//!     // Counts the API left out are None: unknown, not 0.
//!     println!("acked {:?}, retried {:?}", outcome.acked, outcome.retried);
//! }
//! # }
//! ```
//!
//! # Errors
//!
//! Every method returns [`Result`]. Input that breaks a documented limit
//! ([`limits`]) fails with [`Error::InvalidInput`] before anything is sent. A
//! failure from the API, including `success: false` inside a 2xx, is
//! [`Error::Api`] with the HTTP status and every Cloudflare error code; an HTML
//! or empty error page keeps its status and a snippet of the body. A call the
//! rate limits hold back for longer than the retry policy waits fails unsent
//! with [`Error::RateLimited`]; [`Error::may_have_landed`] tells whether a
//! failed push may have landed all the same.
//!
//! ```no_run
//! # async fn demo(queue: cf_queues::Queue) {
//! use cf_queues::{Error, Message};
//! match queue.push(Message::text("hi")).await {
//!     Ok(_) => {}
//!     Err(Error::Api(api)) if api.status == 404 => eprintln!("no such queue: {api}"),
//!     Err(e) => eprintln!("push failed: {e}"),
//! }
//! # }
//! ```
//!
//! # Where things are
//!
//! The names most programs touch are at the crate root: `Client`, `ClientBuilder`, `Credentials`,
//! `Queue`, `Message`, `PulledMessage`, `Body`, `PullOptions`, `Acks`, `Error` and `Result`. Everything
//! else has one path, in a module named for its purpose:
//!
//! | module | what is in it |
//! |---|---|
//! | [`message`] | [`ContentType`](message::ContentType), [`CONTENT_TYPE_KEY`](message::CONTENT_TYPE_KEY), the tokens [`LeaseId`](message::LeaseId), [`PeekRef`](message::PeekRef), [`PreviewId`](message::PreviewId), and [`PeekedMessage`](message::PeekedMessage), [`PreviewedMessage`](message::PreviewedMessage) |
//! | [`request`] | [`PreviewedChanges`](request::PreviewedChanges), [`PurgeConfirmation`](request::PurgeConfirmation) ([`PullOptions`] and [`Acks`] are at the root) |
//! | [`response`] | the typed results: [`PushReceipt`](response::PushReceipt), [`PushAllReport`](response::PushAllReport), [`BatchReport`](response::BatchReport), [`PulledBatch`](response::PulledBatch), [`AckOutcome`](response::AckOutcome), [`ExtendOutcome`](response::ExtendOutcome), [`PreviewedOutcome`](response::PreviewedOutcome), [`Metrics`](response::Metrics), [`QueueInfo`](response::QueueInfo), [`PurgeOutcome`](response::PurgeOutcome), [`PurgeStatus`](response::PurgeStatus), [`Warning`](response::Warning) |
//! | [`batch`] | [`Batch`](batch::Batch), [`BatchPlanner`](batch::BatchPlanner), [`PlannedBatch`](batch::PlannedBatch), [`Rejected`](batch::Rejected): batches within the count and byte limits |
//! | [`retry`] | [`RetryPolicy`](retry::RetryPolicy), [`PushRetries`](retry::PushRetries), [`RetryClass`](retry::RetryClass) |
//! | [`error`] | [`ApiError`](error::ApiError), [`ApiErrorDetail`](error::ApiErrorDetail), [`BodyError`](error::BodyError) ([`Error`] is at the root) |
//! | [`limits`] | [`Limits`](limits::Limits) and the documented limits as constants: sizes and counts of input, never rates |
//! | [`ratelimit`] | [`RateLimits`](ratelimit::RateLimits): the pacing by the token's budget (on by default) and the client's caps on pushes; [`TokenBudget`](ratelimit::TokenBudget) |
//! | [`resources`] | [`QueueSettings`](resources::QueueSettings), [`HttpPullSettings`](resources::HttpPullSettings), [`ConsumerInfo`](resources::ConsumerInfo), [`HttpPullConsumer`](resources::HttpPullConsumer), [`WorkerConsumer`](resources::WorkerConsumer): queues and consumers as resources |
//! | [`event_subscriptions`] | [`EventSource`](event_subscriptions::EventSource), [`EventSubscription`](event_subscriptions::EventSubscription), [`NewEventSubscription`](event_subscriptions::NewEventSubscription), [`EventSubscriptionChange`](event_subscriptions::EventSubscriptionChange), the documented [`events`](event_subscriptions::events): other products' events into a queue |
//! | [`operation`] | [`Operation`](operation::Operation): the twenty-eight operations, named once |
//! | [`codes`] | Cloudflare's error codes, named |
//! | [`raw`] | the generated client and wire types |
//! | [`consumer`], [`producer`] | the consumer and the producer (features of the same names) |
//! | [`metrics`] | what the client, the consumer and the producer record through the `metrics` facade (feature `metrics`) |
//!
//! # Limits, caps and redirects
//!
//! Response caps: by default each call accepts the largest answer the API can legally give to it. A
//! pull, preview or peek of 100 messages of 128 KB whose bodies are all control characters (6 bytes
//! each once JSON-escaped) is about 77 MB; pushes, metrics and purges accept 1 MiB; acks and
//! extensions 1 MiB plus room for a warning per lease. So messages a pull has leased are never dropped
//! unread; calls on the raw client (`Client::raw()`), which has no request to size a cap from, accept
//! the largest legal answer of any operation. `max_response_bytes` sets a hard cap instead: a pull
//! whose largest legal answer exceeds it is refused with `Error::InvalidInput` before anything is
//! leased.
//!
//! Redirects: never followed. reqwest strips `Authorization` on a cross-origin redirect but not the
//! global key's `X-Auth-Email`/`X-Auth-Key`, and re-sends POST bodies on 307/308; Cloudflare does not
//! redirect these endpoints. `http_client` takes a `reqwest::ClientBuilder` (not a built client) so
//! that the crate can turn redirects off whatever it says, and the raw client comes only from
//! `Client::raw()` (its hook state has no public constructor): credentials never leave the configured
//! origin. Rate limits: every client paces the calls that count against the token's budget by
//! the server's `Ratelimit` headers (see [`ratelimit`]), and a call whose budget comes back only
//! after longer than the retry policy waits (Cloudflare's five-minute block) fails at once with
//! `Error::RateLimited` and its `retry_after()`, unsent; `ratelimit::RateLimits::cloudflare()` adds
//! the client's caps, which never let more through in any window than they allow: 1,200 push requests
//! per 5 minutes, 5,000 messages per second per queue. `limits::Limits` holds the documented limits
//! checked before sending, and can be changed for other servers.
//!
//! Secrets: credentials are sensitive header values; they never show in `Debug`, `Display`, errors or
//! logs (tested with a capturing `tracing` subscriber). Each call runs in a `tracing` span
//! (`operation`, `queue_id`) with a span per attempt (`attempt`, `status`, `duration_ms`); retries
//! log the reason and the wait at `debug`, and a call that fails for good logs a `warn`.
//!
//! # The generated layer and regeneration
//!
//! The wire types and the raw client in [`raw`] are generated by
//! [progenitor](https://docs.rs/progenitor) at build time from the OpenAPI
//! fragment shipped in this crate: `openapi/queues-messages.yaml` (the
//! messages operations), `openapi/queues-management.yaml` (queues and
//! consumers) and `openapi/queues-event-subscriptions.yaml`, which
//! `build.rs` merges. To change them, edit the fragment
//! and run `cargo build`: `build.rs` regenerates the code into `OUT_DIR`;
//! nothing generated is committed.
//!
//! # Features
//!
//! | feature | what it adds |
//! |---|---|
//! | `rustls` (default) | TLS by rustls with aws-lc-rs: nothing to set up, a C compile of aws-lc; see [TLS](#tls) |
//! | `rustls-no-provider` | TLS by rustls with the provider you install (ring, say): no aws-lc build |
//! | `native-tls` | TLS by the platform's library (OpenSSL's headers on Linux) |
//! | `consumer` | [`consumer`]: the pull-consumer runtime that keeps leases alive, batches acks and shuts down gracefully (adds `tokio-util`) |
//! | `producer` | [`producer`]: the producer that batches messages by count, bytes and linger |
//! | `metrics` | [`metrics`]: figures for operators through the `metrics` facade |
//! | `schema` | the wire types in [`raw::types`] derive `schemars::JsonSchema` |
//! | `unstable-fuzzing` | the response decoders on arbitrary bytes, for the fuzz targets and property tests: hidden from the docs, not public API, may change in any release |
//!
//! The local emulator of the API is the crate
//! [`cf-queues-emulator`](https://docs.rs/cf-queues-emulator), and the
//! command-line tool the crate [`cfq`](https://docs.rs/cfq): both are
//! released with this crate, at its version.
//!
//! # TLS
//!
//! | feature | backend | what to set up |
//! |---|---|---|
//! | `rustls` (default) | rustls with aws-lc-rs | nothing (a C compiler builds aws-lc) |
//! | `rustls-no-provider` | rustls with the process's default provider | install one, such as ring, before [`ClientBuilder::build`] |
//! | `native-tls` | the platform's library (OpenSSL on Linux) | its headers, to build |
//! | none (`default-features = false`) | no TLS: `http://` base URLs only, such as an emulator's | |
//!
//! The features are additive. With several on, reqwest's rule decides:
//! `native-tls` wins over rustls, and rustls uses an installed default
//! provider before aws-lc-rs. [`ClientBuilder::build`] refuses an `https`
//! base URL when no backend is compiled in, and, under `rustls-no-provider`
//! alone, a missing provider (reqwest would panic), with [`Error::Config`].
//!
//! ```toml
//! # rustls on ring: no C compile of aws-lc
//! cf-queues = { version = "0.3", default-features = false, features = ["rustls-no-provider"] }
//! rustls = { version = "0.23", default-features = false, features = ["ring", "std"] }
//! ```
//!
//! ```ignore
//! rustls::crypto::ring::default_provider().install_default().ok();
//! let client = cf_queues::Client::from_env()?;
//! ```
#![cfg_attr(docsrs, feature(doc_cfg))]

mod auth;
mod backoff;
pub mod batch;
mod bucket;
mod classify;
mod client;
pub mod codes;
#[cfg(feature = "consumer")]
#[cfg_attr(docsrs, doc(cfg(feature = "consumer")))]
pub mod consumer;
#[cfg(any(feature = "consumer", feature = "producer"))]
mod counters;
mod envelope;
pub mod error;
pub mod event_subscriptions;
mod hook_state;
mod hooks;
mod instance;
mod management;
mod retry_loop;
// The decoders on arbitrary bytes, for the fuzz targets and property tests:
// not public API, so hidden and behind a feature that says so.
#[cfg(feature = "unstable-fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
pub mod limits;
pub mod message;
mod messages;
#[cfg(feature = "metrics")]
#[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
pub mod metrics;
pub mod operation;
#[cfg(feature = "producer")]
#[cfg_attr(docsrs, doc(cfg(feature = "producer")))]
pub mod producer;
mod queue;
pub mod ratelimit;
pub mod raw;
pub mod request;
pub mod resources;
pub mod response;
mod response_cap;
pub mod retry;
mod setters;
mod spans;
mod time;
mod tls;
mod token_budget;

// The names most users touch; everything else is in the modules above, at
// one path each.
pub use auth::Credentials;
pub use client::{Client, ClientBuilder};
pub use error::error::{Error, Result};
pub use message::body::Body;
pub use message::outgoing::Message;
pub use message::received::PulledMessage;
pub use queue::Queue;
pub use request::pull_ack::{Acks, PullOptions};

// The README's examples are compiled as doc tests.
#[cfg(all(doctest, feature = "consumer", feature = "producer"))]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
