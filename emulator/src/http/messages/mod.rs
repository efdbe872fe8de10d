//! The messages area of the API: one handler per messages operation
//! (`handlers.rs`), the answers' shapes (`wire.rs`) and the pull and peek
//! answers streamed as the client reads them (`stream.rs`). Laid out as the
//! client's `messages/` and `cfq`'s are; management is beside it.

pub(crate) mod handlers;
pub(crate) mod stream;
pub(crate) mod wire;
