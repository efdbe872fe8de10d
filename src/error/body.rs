//! [`BodyError`]: a body that cannot be decoded or pushed as asked.

/// Why a received message body could not be decoded, or cannot be pushed again.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BodyError {
    /// The body's content type cannot be decoded outside Workers (`v8`) or is unknown.
    #[error("message body of content type {content_type:?} cannot be decoded here")]
    #[non_exhaustive]
    UnsupportedContentType {
        /// The `CF-Content-Type` metadata value (empty when absent).
        content_type: String,
    },
    /// The caller asked for a form the content type does not have.
    #[error("message body is {actual:?}, not {requested}")]
    #[non_exhaustive]
    ContentTypeMismatch {
        /// What the caller asked for: `text`, `json` or `bytes`.
        requested: &'static str,
        /// The message's `CF-Content-Type`.
        actual: String,
    },
    /// The body cannot be pushed over HTTP, which writes only `text` and
    /// `json` (an object): `bytes` and `v8` bodies, and JSON that is not an
    /// object, stay where they are.
    #[error("message body of content type {content_type:?} cannot be pushed over HTTP: {reason}")]
    #[non_exhaustive]
    NotPushable {
        /// The `CF-Content-Type` metadata value.
        content_type: String,
        /// Why not.
        reason: String,
    },
    /// A `bytes` body that is not valid base64.
    #[error("message body is not valid base64: {0}")]
    Base64(#[from] base64::DecodeError),
    /// A `json` body that does not deserialize into the requested type.
    #[error("message body is not the expected JSON: {0}")]
    Json(#[from] serde_json::Error),
}
