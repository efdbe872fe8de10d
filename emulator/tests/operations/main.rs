//! The emulator's operations end to end, through the client and over raw
//! HTTP: Cloudflare's shapes, codes and semantics, at a distance and under
//! Cloudflare's rate limits.
#![allow(missing_docs, unreachable_pub)]

mod account;
mod account_settings;
mod distance;
mod event_subscriptions;
mod events;
mod leases_and_queue;
mod leases_and_queue_wire;
mod rate_limits;
mod semantics;
mod support;
mod wrangler_calls;
