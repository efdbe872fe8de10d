//! The crate's types on the wire, one file for each area of the API: the
//! requests of the generated client ([`raw`](crate::raw)) made from the
//! crate's types, and the crate's types made from its answers. Above
//! `raw`, below the operations; the crate's own types (`message`,
//! `response`, `resources`) import nothing of the generated code.

pub(crate) mod management;
pub(crate) mod messages;
