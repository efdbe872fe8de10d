//! The `cfq` binary against the emulator and against httpmock servers
//! pinned to Cloudflare's wire shapes: every command, its output formats,
//! exit codes and hints, and runs killed midway that lose nothing.
#![allow(missing_docs, unreachable_pub)]

mod admin;
mod backlog;
mod consumers;
mod dashboard;
mod data_dir;
mod drain;
mod event_subscriptions;
mod messages;
mod relay;
#[cfg(unix)]
mod relay_edges;
mod relay_options;
mod resources;
#[cfg(unix)]
mod signals;
mod standalone;
mod support;
mod terminal;
mod token_budget;
