//! Cloudflare's error codes that this crate names, in one place.
//!
//! The client reads them to classify failures ([`Error::is_retryable`],
//! [`Error::is_rate_limited`], [`Error::is_auth`], [`Error::is_not_found`]),
//! and the emulator answers with them. Sources: the Queues error-code table
//! of Cloudflare's documentation, and public reports of the v4 API for the
//! generic auth codes (see `queues-facts.md` in the project's shared notes).
//!
//! [`Error::is_retryable`]: crate::Error::is_retryable
//! [`Error::is_rate_limited`]: crate::Error::is_rate_limited
//! [`Error::is_auth`]: crate::Error::is_auth
//! [`Error::is_not_found`]: crate::Error::is_not_found
//!
//! ```
//! use cf_queues::codes;
//! # fn handle(error: &cf_queues::Error) {
//! if error.codes().contains(&codes::QUEUE_OVERLOADED) {
//!     // slow down
//! }
//! # }
//! ```

/// The API's own rate limit ("Rate limited"): the request was refused, not applied.
pub const API_RATE_LIMITED: u32 = 971;
/// Cloudflare's generic "Authentication error": a bad token, or one without
/// the permission the call needs.
pub const AUTHENTICATION_ERROR: u32 = 10000;
/// Invalid request headers (a malformed auth header); often chained with [`INVALID_AUTH_FORMAT`].
pub const INVALID_REQUEST_HEADERS: u32 = 6003;
/// Invalid format for the `Authorization` header.
pub const INVALID_AUTH_FORMAT: u32 = 6111;
/// Invalid format for the `X-Auth-Email` header.
pub const INVALID_AUTH_EMAIL_FORMAT: u32 = 6102;
/// Invalid format for the `X-Auth-Key` header.
pub const INVALID_AUTH_KEY_FORMAT: u32 = 6103;
/// Missing `X-Auth-Key`, `X-Auth-Email` or `Authorization` headers.
pub const MISSING_AUTH_HEADERS: u32 = 9106;
/// The HTTP method is not allowed on this path.
pub const METHOD_NOT_ALLOWED: u32 = 7001;
/// No route for the URI.
pub const NO_ROUTE: u32 = 7003;
/// QueueNotFound.
pub const QUEUE_NOT_FOUND: u32 = 10104;
/// Unauthorized: the token may not use this queue.
pub const UNAUTHORIZED: u32 = 10106;
/// QueueIDMalformed: an account or queue id that is not 1 to 32 letters and digits.
pub const QUEUE_ID_MALFORMED: u32 = 10107;
/// ClientDisconnected.
pub const CLIENT_DISCONNECTED: u32 = 10201;
/// BatchDelayInvalid: a batch `delay_seconds` outside 0 to 86,400.
pub const BATCH_DELAY_INVALID: u32 = 10202;
/// MessageMetadataInvalid: a bad message `delay_seconds` or `content_type`.
pub const MESSAGE_METADATA_INVALID: u32 = 10203;
/// MessageSizeOutOfBounds: a message over 128 KB.
pub const MESSAGE_SIZE_OUT_OF_BOUNDS: u32 = 10204;
/// BatchSizeOutOfBounds: a batch over 256 KB.
pub const BATCH_SIZE_OUT_OF_BOUNDS: u32 = 10205;
/// BatchCountOutOfBounds: a batch of 0 or more than 100 messages.
pub const BATCH_COUNT_OUT_OF_BOUNDS: u32 = 10206;
/// JSONRequestBodyInvalid: JSON that does not match the operation's schema.
pub const JSON_REQUEST_BODY_INVALID: u32 = 10207;
/// JSONRequestBodyMalformed: a body that is not JSON.
pub const JSON_REQUEST_BODY_MALFORMED: u32 = 10208;
/// QueueOverloaded: over the queue's throughput; the request was refused, not applied.
pub const QUEUE_OVERLOADED: u32 = 10250;
/// QueueStorageLimitExceeded: waiting does not fix it.
pub const QUEUE_STORAGE_LIMIT_EXCEEDED: u32 = 10251;
/// QueueDisabled: waiting does not fix it.
pub const QUEUE_DISABLED: u32 = 10252;
/// FreeTierLimitExceeded: waiting does not fix it.
pub const FREE_TIER_LIMIT_EXCEEDED: u32 = 10253;
/// UnknownInternalError.
pub const UNKNOWN_INTERNAL_ERROR: u32 = 15000;

// Seen on the live API by third-party integrations, not in Cloudflare's
// code table (see the "Seen on the live API" notes in `queues-facts.md`).

/// InvalidRequestBody: a body the API refuses as a whole.
pub const INVALID_REQUEST_BODY: u32 = 10026;
/// An invalid bulk (batch) push body.
pub const INVALID_BATCH_BODY: u32 = 10013;
/// InvalidQueueName: a name the API does not accept for a queue.
pub const INVALID_QUEUE_NAME: u32 = 11003;
/// `consumer_exists`: the queue has a consumer already, and a queue has one
/// (cloudflare/workers-sdk#5347).
pub const CONSUMER_EXISTS: u32 = 11004;
/// The queue name is taken in this account (third-party tests of the live API).
pub const QUEUE_NAME_TAKEN: u32 = 11009;
/// FeatureFlagNotSet: the account lacks a feature the call needs.
pub const FEATURE_FLAG_NOT_SET: u32 = 10105;
/// The code of "messages cannot be pulled unless http_pull mode is
/// enabled", answered with HTTP 405: the queue has no HTTP pull consumer
/// (or it was enabled moments ago). See
/// [`Error::is_pull_disabled`](crate::Error::is_pull_disabled).
pub const HTTP_PULL_NOT_ENABLED: u32 = 0;

/// Codes of a request refused for its rate: it did not take effect, so
/// repeating it cannot duplicate anything.
pub(crate) const RATE_LIMITED: [u32; 2] = [QUEUE_OVERLOADED, API_RATE_LIMITED];

/// Codes of 429 answers that waiting does not fix.
pub(crate) const LASTING_429: [u32; 3] = [
    QUEUE_STORAGE_LIMIT_EXCEEDED,
    QUEUE_DISABLED,
    FREE_TIER_LIMIT_EXCEEDED,
];

/// Codes of 409 answers that waiting does not fix: a conflict with what
/// exists, not with a request in flight.
pub(crate) const LASTING_409: [u32; 2] = [CONSUMER_EXISTS, QUEUE_NAME_TAKEN];

/// Codes that say the credentials were refused or lack a permission.
pub(crate) const AUTH: [u32; 7] = [
    AUTHENTICATION_ERROR,
    UNAUTHORIZED,
    MISSING_AUTH_HEADERS,
    INVALID_REQUEST_HEADERS,
    INVALID_AUTH_FORMAT,
    INVALID_AUTH_EMAIL_FORMAT,
    INVALID_AUTH_KEY_FORMAT,
];

/// Every code above: the values a metric's `cloudflare.code` label may
/// take (any other code is labelled `other`).
#[cfg(feature = "metrics")]
pub(crate) const NAMED: [u32; 32] = [
    API_RATE_LIMITED,
    AUTHENTICATION_ERROR,
    INVALID_REQUEST_HEADERS,
    INVALID_AUTH_FORMAT,
    INVALID_AUTH_EMAIL_FORMAT,
    INVALID_AUTH_KEY_FORMAT,
    MISSING_AUTH_HEADERS,
    METHOD_NOT_ALLOWED,
    NO_ROUTE,
    QUEUE_NOT_FOUND,
    UNAUTHORIZED,
    QUEUE_ID_MALFORMED,
    CLIENT_DISCONNECTED,
    BATCH_DELAY_INVALID,
    MESSAGE_METADATA_INVALID,
    MESSAGE_SIZE_OUT_OF_BOUNDS,
    BATCH_SIZE_OUT_OF_BOUNDS,
    BATCH_COUNT_OUT_OF_BOUNDS,
    JSON_REQUEST_BODY_INVALID,
    JSON_REQUEST_BODY_MALFORMED,
    QUEUE_OVERLOADED,
    QUEUE_STORAGE_LIMIT_EXCEEDED,
    QUEUE_DISABLED,
    FREE_TIER_LIMIT_EXCEEDED,
    UNKNOWN_INTERNAL_ERROR,
    INVALID_REQUEST_BODY,
    INVALID_BATCH_BODY,
    INVALID_QUEUE_NAME,
    CONSUMER_EXISTS,
    QUEUE_NAME_TAKEN,
    FEATURE_FLAG_NOT_SET,
    HTTP_PULL_NOT_ENABLED,
];
