//! [`Body`]: a received body, decoded by its content type.

use std::fmt;

use base64::Engine as _;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::error::{BodyError, Result};

use super::outgoing::{OutgoingBody, json_kind};
use super::*;

/// The metadata key that names a received body's encoding.
pub const CONTENT_TYPE_KEY: &str = "CF-Content-Type";

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
    pub(super) fn from_metadata(metadata: &Map<String, Value>) -> ContentType {
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
    pub(super) raw: String,
    pub(super) content_type: ContentType,
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
    pub(super) fn to_message(&self) -> Result<Message, BodyError> {
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
