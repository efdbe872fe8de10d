//! The event subscriptions area: subscriptions as account resources
//! (`records.rs`), the operations that create, list, read, change and
//! delete them (`operations.rs`), and the events emitted into them on
//! request (`emit.rs`). Laid out as the client's `event_subscriptions/`.

pub(crate) mod emit;
pub(crate) mod operations;
pub(crate) mod records;
