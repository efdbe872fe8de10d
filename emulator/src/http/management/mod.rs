//! The management area of the API: one handler per operation on queues
//! and consumers (`handlers.rs`), and the resources on the wire, answers
//! and request bodies (`wire.rs`). Laid out as the client's `management/`
//! and `cfq`'s are; the messages area is beside it.

pub(crate) mod handlers;
pub(crate) mod wire;
