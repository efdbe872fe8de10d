//! The messages area: one queue's messages and what names them (`queue.rs`,
//! `refs.rs`, `tokens.rs`), preview (`preview.rs`) and the purge of a whole
//! queue (`purge_all.rs`). The broker (`broker.rs`) runs the messages
//! operations on them. Laid out as the client's and `cfq`'s `messages/`.

pub(crate) mod preview;
pub(crate) mod purge_all;
pub(crate) mod queue;
pub(crate) mod refs;
pub(crate) mod tokens;
