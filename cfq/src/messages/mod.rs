//! The messages area's commands: `push` and `replay` (`push.rs`), `pull`,
//! `ack`, `retry`, `extend` and `peek` (`pull.rs`), `drain` and `move`
//! (`drain.rs`), `metrics` and `purge` (`metrics_and_purge.rs`, with the
//! live view of `metrics --watch` in `watch.rs` and the Prometheus exporter
//! of `metrics --listen` in `exporter.rs`). Laid out as the client's
//! and the emulator's `messages/`; management is beside it.

pub mod drain;
pub mod exporter;
pub mod metrics_and_purge;
pub mod pull;
pub mod push;
pub mod watch;
