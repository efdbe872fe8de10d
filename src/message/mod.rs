//! Messages: what you push ([`Message`]) and what you
//! receive ([`PulledMessage`], [`PeekedMessage`],
//! [`PreviewedMessage`], with their [`Body`]), and the tokens
//! that settle them.
//!
//! `Message`, `PulledMessage` and `Body` are at the crate root; this module
//! holds the rest.

pub(crate) mod body;
pub(crate) mod outgoing;
pub(crate) mod received;
#[cfg(test)]
mod tests;

pub use body::{CONTENT_TYPE_KEY, ContentType};
pub use received::{LeaseId, PeekRef, PeekedMessage, PreviewId, PreviewedMessage};

pub(crate) use body::Body;
pub(crate) use outgoing::Message;
pub(crate) use received::{PulledMessage, known_u32, known_u64};
