//! The event subscriptions area on the wire: one handler per operation
//! (`handlers.rs`) and the subscription objects and request bodies
//! (`wire.rs`). Laid out as the client's `event_subscriptions/`.

pub(crate) mod handlers;
pub(crate) mod wire;
