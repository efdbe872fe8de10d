//! What you receive: pulled, peeked and previewed messages, and the opaque
//! tokens that settle them ([`LeaseId`], [`PeekRef`], [`PreviewId`]).

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value};

use super::*;

/// The opaque id of a leased (pulled) message; acknowledge or retry with it.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LeaseId(String);

/// The opaque reference of a peeked message; purge with it.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PeekRef(String);

/// The opaque id of a previewed message. It holds no lease: it serves only
/// to delete or delay the message with
/// [`Queue::delete_previewed`](crate::Queue::delete_previewed), and cannot
/// be acknowledged, retried or extended as a lease.
///
/// # Not a lease
///
/// Each example that must not compile follows a sibling that compiles and
/// differs from it only in the one argument: a `compile_fail` example
/// passes on any error, a typo in a path included, so the sibling proves
/// that the argument is the only thing wrong.
///
/// [`Acks::ack`](crate::Acks::ack) takes a pulled message, not a previewed one:
///
/// ```
/// # fn demo(pulled: &cf_queues::PulledMessage, previewed: &cf_queues::message::PreviewedMessage) {
/// # let _ = (pulled, previewed);
/// let _acks = cf_queues::Acks::new().ack(pulled);
/// # }
/// ```
/// ```compile_fail,E0277
/// # fn demo(pulled: &cf_queues::PulledMessage, previewed: &cf_queues::message::PreviewedMessage) {
/// # let _ = (pulled, previewed);
/// let _acks = cf_queues::Acks::new().ack(previewed);
/// # }
/// ```
///
/// Nor a preview id by reference:
///
/// ```
/// # fn demo(pulled: &cf_queues::PulledMessage, previewed: &cf_queues::message::PreviewedMessage) {
/// # let _ = (pulled, previewed);
/// let _acks = cf_queues::Acks::new().ack(&pulled.lease_id);
/// # }
/// ```
/// ```compile_fail,E0277
/// # fn demo(pulled: &cf_queues::PulledMessage, previewed: &cf_queues::message::PreviewedMessage) {
/// # let _ = (pulled, previewed);
/// let _acks = cf_queues::Acks::new().ack(&previewed.preview_id);
/// # }
/// ```
///
/// [`Acks::retry`](crate::Acks::retry) takes a lease id, not a preview id:
///
/// ```
/// # fn demo(pulled: &cf_queues::PulledMessage, previewed: &cf_queues::message::PreviewedMessage) {
/// # let _ = (pulled, previewed);
/// let _acks = cf_queues::Acks::new().retry(pulled.lease_id.clone());
/// # }
/// ```
/// ```compile_fail,E0277
/// # fn demo(pulled: &cf_queues::PulledMessage, previewed: &cf_queues::message::PreviewedMessage) {
/// # let _ = (pulled, previewed);
/// let _acks = cf_queues::Acks::new().retry(previewed.preview_id.clone());
/// # }
/// ```
///
/// Nor does [`Acks::retry_after`](crate::Acks::retry_after):
///
/// ```
/// # fn demo(pulled: &cf_queues::PulledMessage, previewed: &cf_queues::message::PreviewedMessage) {
/// # let _ = (pulled, previewed);
/// let _acks = cf_queues::Acks::new().retry_after(&pulled.lease_id, std::time::Duration::from_secs(60));
/// # }
/// ```
/// ```compile_fail,E0277
/// # fn demo(pulled: &cf_queues::PulledMessage, previewed: &cf_queues::message::PreviewedMessage) {
/// # let _ = (pulled, previewed);
/// let _acks = cf_queues::Acks::new().retry_after(&previewed.preview_id, std::time::Duration::from_secs(60));
/// # }
/// ```
///
/// [`Queue::extend`](crate::Queue::extend) extends leases, not preview ids:
///
/// ```
/// # async fn demo(queue: &cf_queues::Queue, pulled: &cf_queues::PulledMessage, previewed: &cf_queues::message::PreviewedMessage) -> cf_queues::Result<()> {
/// # let _ = (pulled, previewed);
/// queue.extend([&pulled.lease_id], std::time::Duration::from_secs(60)).await?;
/// # Ok(()) }
/// ```
/// ```compile_fail,E0277
/// # async fn demo(queue: &cf_queues::Queue, pulled: &cf_queues::PulledMessage, previewed: &cf_queues::message::PreviewedMessage) -> cf_queues::Result<()> {
/// # let _ = (pulled, previewed);
/// queue.extend([&previewed.preview_id], std::time::Duration::from_secs(60)).await?;
/// # Ok(()) }
/// ```
///
/// Nor previewed messages:
///
/// ```
/// # async fn demo(queue: &cf_queues::Queue, pulled: &cf_queues::PulledMessage, previewed: &cf_queues::message::PreviewedMessage) -> cf_queues::Result<()> {
/// # let _ = (pulled, previewed);
/// queue.extend([pulled], std::time::Duration::from_secs(60)).await?;
/// # Ok(()) }
/// ```
/// ```compile_fail,E0277
/// # async fn demo(queue: &cf_queues::Queue, pulled: &cf_queues::PulledMessage, previewed: &cf_queues::message::PreviewedMessage) -> cf_queues::Result<()> {
/// # let _ = (pulled, previewed);
/// queue.extend([previewed], std::time::Duration::from_secs(60)).await?;
/// # Ok(()) }
/// ```
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PreviewId(String);

macro_rules! opaque_token {
    ($name:ident) => {
        impl $name {
            /// The token as the API sent it.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }
        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                // Tokens are long JWEs: show enough to tell them apart.
                let short: String = self.0.chars().take(16).collect();
                if short.len() < self.0.len() {
                    write!(f, "{}({short}…)", stringify!($name))
                } else {
                    write!(f, "{}({short})", stringify!($name))
                }
            }
        }
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
        impl From<String> for $name {
            fn from(token: String) -> Self {
                $name(token)
            }
        }
        impl From<&str> for $name {
            fn from(token: &str) -> Self {
                $name(token.to_owned())
            }
        }
        impl From<&$name> for $name {
            fn from(token: &$name) -> Self {
                token.clone()
            }
        }
    };
}
opaque_token!(LeaseId);
opaque_token!(PeekRef);
opaque_token!(PreviewId);

/// A message leased by [`Queue::pull`](crate::Queue::pull).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct PulledMessage {
    /// The message id (ephemeral: not stable across deliveries).
    pub id: String,
    /// How many times the message has been delivered, this delivery included.
    pub attempts: u32,
    /// When the message was pushed, as Unix milliseconds.
    pub timestamp_ms: u64,
    /// The lease: acknowledge or retry the message with it before it expires.
    pub lease_id: LeaseId,
    /// All metadata, `CF-Content-Type` included.
    pub metadata: Map<String, Value>,
    pub(crate) body: Body,
}

/// A message seen by [`Queue::peek`](crate::Queue::peek); peek does not lease it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct PeekedMessage {
    /// The message id.
    pub id: String,
    /// How many times the message has been delivered so far.
    pub attempts: u32,
    /// When the message was pushed, as Unix milliseconds.
    pub timestamp_ms: u64,
    /// The reference to purge the message with.
    pub peek_ref: PeekRef,
    /// All metadata, `CF-Content-Type` included.
    pub metadata: Map<String, Value>,
    pub(crate) body: Body,
}

/// A message seen by [`Queue::preview`](crate::Queue::preview), in the pull
/// shape but not leased: it stays available to pull, peek and preview, and
/// its `attempts` is not incremented.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct PreviewedMessage {
    /// The message id.
    pub id: String,
    /// How many times the message has been delivered so far.
    pub attempts: u32,
    /// When the message was pushed, as Unix milliseconds.
    pub timestamp_ms: u64,
    /// The id to delete or delay the message with.
    pub preview_id: PreviewId,
    /// All metadata, `CF-Content-Type` included.
    pub metadata: Map<String, Value>,
    pub(crate) body: Body,
}

macro_rules! received_accessors {
    ($name:ident) => {
        impl $name {
            /// The body, to decode as text, JSON or bytes.
            pub fn body(&self) -> &Body {
                &self.body
            }

            /// The body's content type (from `CF-Content-Type`).
            pub fn content_type(&self) -> &ContentType {
                &self.body.content_type
            }

            /// When the message was pushed; `None` if the server's value is
            /// beyond what this platform's clock can represent.
            pub fn timestamp(&self) -> Option<SystemTime> {
                UNIX_EPOCH.checked_add(Duration::from_millis(self.timestamp_ms))
            }
        }
    };
}
received_accessors!(PulledMessage);
received_accessors!(PeekedMessage);
received_accessors!(PreviewedMessage);

/// Server numbers are JSON `number`s: clamp anything odd (negative, NaN, huge) into range.
pub(crate) fn count_u32(n: Option<f64>) -> u32 {
    n.filter(|n| n.is_finite() && *n > 0.0)
        .map_or(0, |n| n.min(f64::from(u32::MAX)) as u32)
}

pub(crate) fn count_u64(n: Option<f64>) -> u64 {
    n.filter(|n| n.is_finite() && *n > 0.0)
        .map_or(0, |n| n.min(u64::MAX as f64) as u64)
}

/// A count the API may leave out: `None` when it is absent, or is not a
/// count (negative, not finite), rather than a 0 that reads as known.
pub(crate) fn known_u32(n: Option<f64>) -> Option<u32> {
    n.filter(|n| n.is_finite() && *n >= 0.0)
        .map(|n| n.min(f64::from(u32::MAX)) as u32)
}

/// [`known_u32`] for 64-bit counts.
pub(crate) fn known_u64(n: Option<f64>) -> Option<u64> {
    n.filter(|n| n.is_finite() && *n >= 0.0)
        .map(|n| n.min(u64::MAX as f64) as u64)
}

/// The body as the API sent it: a string in practice, anything else kept as its JSON text.
pub(crate) fn body(raw: Option<Value>, metadata: &Map<String, Value>) -> Body {
    let raw = match raw {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(text)) => text,
        Some(other) => other.to_string(),
    };
    Body {
        raw,
        content_type: ContentType::from_metadata(metadata),
    }
}

impl From<&PreviewedMessage> for PreviewId {
    fn from(message: &PreviewedMessage) -> Self {
        message.preview_id.clone()
    }
}

impl From<&PulledMessage> for LeaseId {
    fn from(message: &PulledMessage) -> Self {
        message.lease_id.clone()
    }
}

impl From<&PeekedMessage> for PeekRef {
    fn from(message: &PeekedMessage) -> Self {
        message.peek_ref.clone()
    }
}
