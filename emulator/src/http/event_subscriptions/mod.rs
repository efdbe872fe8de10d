//! The event subscriptions area on the wire: one handler per operation
//! (`handlers.rs`), the subscription objects and request bodies
//! (`wire.rs`), and events emitted on request (`emit.rs`, the emulator's
//! own route). Laid out as the client's `event_subscriptions/`.

pub(crate) mod emit;
pub(crate) mod handlers;
pub(crate) mod wire;
