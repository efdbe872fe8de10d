//! [`Message`]: what you push, and the messages you received turned back
//! into one (redrive, replay).

use std::time::Duration;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::error::{BodyError, Error, Result};

use super::*;

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
    pub(crate) body: OutgoingBody,
    pub(crate) delay: Option<Duration>,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum OutgoingBody {
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
}

pub(super) fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A received message pushed again, for redrive and replay. The body keeps
/// its content type; the delay is not carried over.
///
/// ```
/// # fn demo(message: &cf_queues::PulledMessage) -> Result<(), cf_queues::error::BodyError> {
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

/// A previewed message pushed again; see the [`PulledMessage`] conversion.
impl TryFrom<&PreviewedMessage> for Message {
    type Error = BodyError;
    fn try_from(message: &PreviewedMessage) -> Result<Message, BodyError> {
        message.body.to_message()
    }
}
