//! The event subscriptions area: subscriptions as account resources
//! (`records.rs`), and the operations that create, list, read, change and
//! delete them (`operations.rs`). Laid out as the client's
//! `event_subscriptions/`.
//!
//! Subscriptions are stored resources only here: no product emits events
//! into them yet.

pub(crate) mod operations;
pub(crate) mod records;
