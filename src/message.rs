//! Messages: what you push ([`Message`]) and what you receive
//! ([`PulledMessage`], [`PeekedMessage`], with their [`Body`]).

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::error::{BodyError, Error, Result, built};
use crate::raw::types;

/// The metadata key that names a received body's encoding.
pub const CONTENT_TYPE_KEY: &str = "CF-Content-Type";

/// A message to push: a text or a JSON body, with an optional delay.
///
/// ```
/// use std::time::Duration;
/// use cf_queues::Message;
///
/// let hello = Message::text("hello");
/// let order = Message::json(&serde_json::json!({"order": 42}))?
///     .with_delay(Duration::from_secs(30));
/// # Ok::<(), cf_queues::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    body: OutgoingBody,
    delay: Option<Duration>,
}

#[derive(Debug, Clone, PartialEq)]
enum OutgoingBody {
    Text(String),
    Json(Map<String, Value>),
}

impl Message {
    /// A message with a UTF-8 text body (`content_type: "text"`).
    pub fn text(body: impl Into<String>) -> Message {
        Message {
            body: OutgoingBody::Text(body.into()),
            delay: None,
        }
    }

    /// A message with a JSON body (`content_type: "json"`) serialized from `value`.
    ///
    /// Cloudflare's published schema types a JSON body as an object, so
    /// `value` must serialize to a JSON object (a struct or a map); wrap
    /// arrays and scalars in one.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] when `value` is not a JSON object, or cannot
    /// be represented as JSON (a map with non-string keys, a failing
    /// `Serialize` impl).
    pub fn json<T: Serialize + ?Sized>(value: &T) -> Result<Message> {
        let value = serde_json::to_value(value)
            .map_err(|e| Error::invalid("body", format!("cannot be serialized as JSON: {e}")))?;
        match value {
            Value::Object(object) => Ok(Message {
                body: OutgoingBody::Json(object),
                delay: None,
            }),
            other => Err(Error::invalid(
                "body",
                format!(
                    "a json message body must be a JSON object (Cloudflare's schema), not {}",
                    json_kind(&other)
                ),
            )),
        }
    }

    /// Delays delivery by `delay` (at most 24 hours; rounded up to whole seconds).
    pub fn with_delay(mut self, delay: Duration) -> Message {
        self.delay = Some(delay);
        self
    }

    /// The content type this message is pushed with.
    pub fn content_type(&self) -> ContentType {
        match self.body {
            OutgoingBody::Text(_) => ContentType::Text,
            OutgoingBody::Json(_) => ContentType::Json,
        }
    }

    /// The delay set with [`Message::with_delay`].
    pub fn delay(&self) -> Option<Duration> {
        self.delay
    }

    /// Checks the limits and builds the wire message; returns it with the bytes it counts for.
    pub(crate) fn to_wire(
        &self,
        field: &dyn fmt::Display,
        limits: &crate::Limits,
    ) -> Result<(types::QueueMessage, usize)> {
        let delay_seconds = self
            .delay
            .map(|d| limits.delay_seconds(&format_args!("{field}.delay"), d))
            .transpose()?;
        let (wire, body_bytes) = match &self.body {
            OutgoingBody::Text(text) => (
                types::QueueMessage::TextMessage(built(
                    types::TextMessage::builder()
                        .body(text.clone())
                        .content_type(types::TextMessageContentType::Text)
                        .delay_seconds(delay_seconds),
                )?),
                text.len(),
            ),
            OutgoingBody::Json(value) => {
                let encoded = serde_json::to_vec(value).map_err(|e| {
                    Error::invalid(format!("{field}.body"), format!("cannot be encoded: {e}"))
                })?;
                (
                    types::QueueMessage::JsonMessage(built(
                        types::JsonMessage::builder()
                            .body(value.clone())
                            .content_type(types::JsonMessageContentType::Json)
                            .delay_seconds(delay_seconds),
                    )?),
                    encoded.len(),
                )
            }
        };
        let counted = limits.check_message_size(&format_args!("{field}.body"), body_bytes)?;
        Ok((wire, counted))
    }
}

/// The encoding of a message body, from `CF-Content-Type`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ContentType {
    /// Plain UTF-8 text.
    Text,
    /// JSON; base64-encoded on pull and peek.
    Json,
    /// Raw bytes, base64-encoded (written by Workers only).
    Bytes,
    /// V8 structured clone, which only Workers can decode.
    V8,
    /// A type this crate does not know, or none (an empty string).
    Other(String),
}

impl ContentType {
    fn from_metadata(metadata: &Map<String, Value>) -> ContentType {
        match metadata.get(CONTENT_TYPE_KEY).and_then(Value::as_str) {
            Some("text") => ContentType::Text,
            Some("json") => ContentType::Json,
            Some("bytes") => ContentType::Bytes,
            Some("v8") => ContentType::V8,
            Some(other) => ContentType::Other(other.to_owned()),
            None => ContentType::Other(String::new()),
        }
    }

    /// The wire name: `text`, `json`, `bytes`, `v8`, or the unknown name.
    pub fn as_str(&self) -> &str {
        match self {
            ContentType::Text => "text",
            ContentType::Json => "json",
            ContentType::Bytes => "bytes",
            ContentType::V8 => "v8",
            ContentType::Other(name) => name,
        }
    }
}

impl fmt::Display for ContentType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A received message body, decoded on request according to its content type.
///
/// ```
/// # fn demo(message: &cf_queues::PulledMessage) -> cf_queues::Result<()> {
/// #[derive(serde::Deserialize)]
/// struct Order { id: u64 }
/// let order: Order = message.body().json()?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Body {
    raw: String,
    content_type: ContentType,
}

impl Body {
    /// The body exactly as the API returned it (base64 for `json` and `bytes`).
    pub fn raw(&self) -> &str {
        &self.raw
    }

    /// The body's content type.
    pub fn content_type(&self) -> &ContentType {
        &self.content_type
    }

    /// The text of a `text` body.
    ///
    /// # Errors
    ///
    /// [`BodyError::ContentTypeMismatch`] for any other content type.
    pub fn text(&self) -> Result<&str, BodyError> {
        match self.content_type {
            ContentType::Text => Ok(&self.raw),
            _ => Err(self.mismatch("text")),
        }
    }

    /// Deserializes a `json` body, base64-encoded or plain JSON text, into `T`.
    ///
    /// # Errors
    ///
    /// [`BodyError::Json`] when the body does not deserialize into `T`,
    /// [`BodyError::UnsupportedContentType`] for `v8` and unknown types, and
    /// [`BodyError::ContentTypeMismatch`] for `text` and `bytes`.
    pub fn json<T: DeserializeOwned>(&self) -> Result<T, BodyError> {
        match self.content_type {
            ContentType::Json => {}
            ContentType::V8 | ContentType::Other(_) => return Err(self.unsupported()),
            _ => return Err(self.mismatch("json")),
        }
        let trimmed = self.raw.trim_start();
        // Base64 never starts with these, JSON documents usually do: try the
        // likelier reading first and fall back to the other.
        let plain_first = trimmed.starts_with(['{', '[', '"']);
        if plain_first && let Ok(value) = serde_json::from_str(&self.raw) {
            return Ok(value);
        }
        if let Ok(bytes) = BASE64.decode(self.raw.trim())
            && let Ok(value) = serde_json::from_slice(&bytes)
        {
            return Ok(value);
        }
        serde_json::from_str(&self.raw).map_err(BodyError::Json)
    }

    /// The bytes of the body: decoded base64 for `bytes` and `json`, UTF-8 for `text`.
    ///
    /// # Errors
    ///
    /// [`BodyError::Base64`] for a `bytes` body that is not base64, and
    /// [`BodyError::UnsupportedContentType`] for `v8` and unknown types.
    pub fn bytes(&self) -> Result<Vec<u8>, BodyError> {
        match self.content_type {
            ContentType::Text => Ok(self.raw.clone().into_bytes()),
            ContentType::Bytes => Ok(BASE64.decode(self.raw.trim())?),
            ContentType::Json => Ok(BASE64
                .decode(self.raw.trim())
                .unwrap_or_else(|_| self.raw.clone().into_bytes())),
            ContentType::V8 | ContentType::Other(_) => Err(self.unsupported()),
        }
    }

    fn mismatch(&self, requested: &'static str) -> BodyError {
        BodyError::ContentTypeMismatch {
            requested,
            actual: self.content_type.to_string(),
        }
    }

    fn unsupported(&self) -> BodyError {
        BodyError::UnsupportedContentType {
            content_type: self.content_type.to_string(),
        }
    }

    /// The message to push for this body, for redrive and replay: `text`
    /// stays text, `json` is decoded and must be an object.
    fn to_message(&self) -> Result<Message, BodyError> {
        let not_pushable = |reason: &str| BodyError::NotPushable {
            content_type: self.content_type.to_string(),
            reason: reason.to_owned(),
        };
        match self.content_type {
            ContentType::Text => Ok(Message::text(self.raw.clone())),
            ContentType::Json => match self.json::<Value>()? {
                Value::Object(object) => Ok(Message {
                    body: OutgoingBody::Json(object),
                    delay: None,
                }),
                other => Err(not_pushable(&format!(
                    "the API takes a JSON object, this is {}",
                    json_kind(&other)
                ))),
            },
            ContentType::Bytes => Err(not_pushable("only Workers can write bytes bodies")),
            ContentType::V8 => Err(not_pushable("only Workers can write v8 bodies")),
            ContentType::Other(_) => Err(not_pushable("the content type is unknown")),
        }
    }
}

const BASE64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

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
/// # fn demo(pulled: &cf_queues::PulledMessage, previewed: &cf_queues::PreviewedMessage) {
/// # let _ = (pulled, previewed);
/// let _acks = cf_queues::Acks::new().ack(pulled);
/// # }
/// ```
/// ```compile_fail,E0277
/// # fn demo(pulled: &cf_queues::PulledMessage, previewed: &cf_queues::PreviewedMessage) {
/// # let _ = (pulled, previewed);
/// let _acks = cf_queues::Acks::new().ack(previewed);
/// # }
/// ```
///
/// Nor a preview id by reference:
///
/// ```
/// # fn demo(pulled: &cf_queues::PulledMessage, previewed: &cf_queues::PreviewedMessage) {
/// # let _ = (pulled, previewed);
/// let _acks = cf_queues::Acks::new().ack(&pulled.lease_id);
/// # }
/// ```
/// ```compile_fail,E0277
/// # fn demo(pulled: &cf_queues::PulledMessage, previewed: &cf_queues::PreviewedMessage) {
/// # let _ = (pulled, previewed);
/// let _acks = cf_queues::Acks::new().ack(&previewed.preview_id);
/// # }
/// ```
///
/// [`Acks::retry`](crate::Acks::retry) takes a lease id, not a preview id:
///
/// ```
/// # fn demo(pulled: &cf_queues::PulledMessage, previewed: &cf_queues::PreviewedMessage) {
/// # let _ = (pulled, previewed);
/// let _acks = cf_queues::Acks::new().retry(pulled.lease_id.clone());
/// # }
/// ```
/// ```compile_fail,E0277
/// # fn demo(pulled: &cf_queues::PulledMessage, previewed: &cf_queues::PreviewedMessage) {
/// # let _ = (pulled, previewed);
/// let _acks = cf_queues::Acks::new().retry(previewed.preview_id.clone());
/// # }
/// ```
///
/// Nor does [`Acks::retry_after`](crate::Acks::retry_after):
///
/// ```
/// # fn demo(pulled: &cf_queues::PulledMessage, previewed: &cf_queues::PreviewedMessage) {
/// # let _ = (pulled, previewed);
/// let _acks = cf_queues::Acks::new().retry_after(&pulled.lease_id, std::time::Duration::from_secs(60));
/// # }
/// ```
/// ```compile_fail,E0277
/// # fn demo(pulled: &cf_queues::PulledMessage, previewed: &cf_queues::PreviewedMessage) {
/// # let _ = (pulled, previewed);
/// let _acks = cf_queues::Acks::new().retry_after(&previewed.preview_id, std::time::Duration::from_secs(60));
/// # }
/// ```
///
/// [`Queue::extend`](crate::Queue::extend) extends leases, not preview ids:
///
/// ```
/// # async fn demo(queue: &cf_queues::Queue, pulled: &cf_queues::PulledMessage, previewed: &cf_queues::PreviewedMessage) -> cf_queues::Result<()> {
/// # let _ = (pulled, previewed);
/// queue.extend([&pulled.lease_id], std::time::Duration::from_secs(60)).await?;
/// # Ok(()) }
/// ```
/// ```compile_fail,E0277
/// # async fn demo(queue: &cf_queues::Queue, pulled: &cf_queues::PulledMessage, previewed: &cf_queues::PreviewedMessage) -> cf_queues::Result<()> {
/// # let _ = (pulled, previewed);
/// queue.extend([&previewed.preview_id], std::time::Duration::from_secs(60)).await?;
/// # Ok(()) }
/// ```
///
/// Nor previewed messages:
///
/// ```
/// # async fn demo(queue: &cf_queues::Queue, pulled: &cf_queues::PulledMessage, previewed: &cf_queues::PreviewedMessage) -> cf_queues::Result<()> {
/// # let _ = (pulled, previewed);
/// queue.extend([pulled], std::time::Duration::from_secs(60)).await?;
/// # Ok(()) }
/// ```
/// ```compile_fail,E0277
/// # async fn demo(queue: &cf_queues::Queue, pulled: &cf_queues::PulledMessage, previewed: &cf_queues::PreviewedMessage) -> cf_queues::Result<()> {
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
    body: Body,
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
    body: Body,
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
    body: Body,
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

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The body as the API sent it: a string in practice, anything else kept as its JSON text.
fn body(raw: Option<Value>, metadata: &Map<String, Value>) -> Body {
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

/// Metadata as the API sent it: an object in practice, anything else read as empty.
fn metadata(raw: Option<Value>) -> Map<String, Value> {
    match raw {
        Some(Value::Object(map)) => map,
        _ => Map::new(),
    }
}

impl From<types::PulledMessage> for PulledMessage {
    fn from(m: types::PulledMessage) -> Self {
        let metadata = metadata(m.metadata);
        PulledMessage {
            body: body(m.body, &metadata),
            id: m.id.unwrap_or_default(),
            attempts: count_u32(m.attempts),
            timestamp_ms: count_u64(m.timestamp_ms),
            lease_id: LeaseId(m.lease_id.unwrap_or_default()),
            metadata,
        }
    }
}

impl From<types::PeekedMessage> for PeekedMessage {
    fn from(m: types::PeekedMessage) -> Self {
        let metadata = metadata(m.metadata);
        PeekedMessage {
            body: body(m.body, &metadata),
            id: m.id.unwrap_or_default(),
            attempts: count_u32(m.attempts),
            timestamp_ms: count_u64(m.timestamp_ms),
            peek_ref: PeekRef(m.ref_.unwrap_or_default()),
            metadata,
        }
    }
}

/// A received message pushed again, for redrive and replay. The body keeps
/// its content type; the delay is not carried over.
///
/// ```
/// # fn demo(message: &cf_queues::PulledMessage) -> Result<(), cf_queues::BodyError> {
/// use cf_queues::Message;
/// let again = Message::try_from(message)?;
/// # Ok(()) }
/// ```
impl TryFrom<&PulledMessage> for Message {
    type Error = BodyError;
    /// # Errors
    ///
    /// [`BodyError::NotPushable`] for `bytes`, `v8` and unknown bodies and
    /// JSON that is not an object, which HTTP cannot push;
    /// [`BodyError::Json`] for a `json` body that is not JSON.
    fn try_from(message: &PulledMessage) -> Result<Message, BodyError> {
        message.body.to_message()
    }
}

/// A peeked message pushed again; see the [`PulledMessage`] conversion.
impl TryFrom<&PeekedMessage> for Message {
    type Error = BodyError;
    fn try_from(message: &PeekedMessage) -> Result<Message, BodyError> {
        message.body.to_message()
    }
}

impl From<types::PreviewedMessage> for PreviewedMessage {
    fn from(m: types::PreviewedMessage) -> Self {
        let metadata = metadata(m.metadata);
        PreviewedMessage {
            body: body(m.body, &metadata),
            id: m.id.unwrap_or_default(),
            attempts: count_u32(m.attempts),
            timestamp_ms: count_u64(m.timestamp_ms),
            preview_id: PreviewId(m.lease_id.unwrap_or_default()),
            metadata,
        }
    }
}

/// A previewed message pushed again; see the [`PulledMessage`] conversion.
impl TryFrom<&PreviewedMessage> for Message {
    type Error = BodyError;
    fn try_from(message: &PreviewedMessage) -> Result<Message, BodyError> {
        message.body.to_message()
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

#[cfg(test)]
mod tests {
    use super::*;

    fn body_of(content_type: &str, raw: &str) -> Body {
        let mut metadata = Map::new();
        metadata.insert(CONTENT_TYPE_KEY.into(), Value::from(content_type));
        body(Some(Value::from(raw)), &metadata)
    }

    #[test]
    fn json_base64_and_plain() {
        let b64 = body_of("json", "eyJhIjoxfQ==");
        assert_eq!(b64.json::<Value>().ok(), Some(serde_json::json!({"a": 1})));
        let plain = body_of("json", r#"{"a":1}"#);
        assert_eq!(
            plain.json::<Value>().ok(),
            Some(serde_json::json!({"a": 1}))
        );
        let number = body_of("json", "1234");
        assert_eq!(number.json::<u32>().ok(), Some(1234));
    }

    #[test]
    fn v8_and_unknown_are_typed_errors() {
        assert!(matches!(
            body_of("v8", "AAAA").json::<Value>(),
            Err(BodyError::UnsupportedContentType { content_type }) if content_type == "v8"
        ));
        assert!(matches!(
            body_of("v8", "AAAA").bytes(),
            Err(BodyError::UnsupportedContentType { .. })
        ));
        assert!(matches!(
            body_of("text", "hi").json::<Value>(),
            Err(BodyError::ContentTypeMismatch {
                requested: "json",
                ..
            })
        ));
    }

    #[test]
    fn received_bodies_push_again_when_http_can_carry_them() {
        assert_eq!(
            body_of("text", "hi").to_message().ok(),
            Some(Message::text("hi"))
        );
        assert_eq!(
            body_of("json", "eyJhIjoxfQ==").to_message().ok(),
            Message::json(&serde_json::json!({"a": 1})).ok()
        );
        for (kind, raw) in [
            ("json", "WzFd"),
            ("bytes", "AAE="),
            ("v8", "AAE="),
            ("", "x"),
        ] {
            assert!(
                matches!(
                    body_of(kind, raw).to_message(),
                    Err(BodyError::NotPushable { .. })
                ),
                "{kind}"
            );
        }
    }

    #[test]
    fn clamps_server_numbers() {
        assert_eq!(count_u32(Some(-1.0)), 0);
        assert_eq!(count_u32(Some(f64::NAN)), 0);
        assert_eq!(count_u32(Some(3.0)), 3);
        assert_eq!(count_u32(Some(1e20)), u32::MAX);
        assert_eq!(count_u64(None), 0);
        assert_eq!(known_u32(None), None);
        assert_eq!(known_u32(Some(-1.0)), None);
        assert_eq!(known_u32(Some(f64::NAN)), None);
        assert_eq!(known_u32(Some(0.0)), Some(0));
        assert_eq!(known_u32(Some(3.0)), Some(3));
        assert_eq!(known_u32(Some(1e20)), Some(u32::MAX));
        assert_eq!(known_u64(None), None);
        assert_eq!(known_u64(Some(7.0)), Some(7));
    }

    #[test]
    fn token_debug_is_short() {
        let lease = LeaseId::from("a".repeat(100));
        assert_eq!(
            format!("{lease:?}"),
            format!("LeaseId({}…)", "a".repeat(16))
        );
    }
}
