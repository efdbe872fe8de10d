//! The management area: queues and consumers as resources
//! (`resources.rs`), and the operations that create, read, change and
//! delete them (`operations.rs`). Laid out as the client's and `cfq`'s
//! `management/`.

pub(crate) mod operations;
pub(crate) mod resources;
