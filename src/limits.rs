//! The documented limits of the Queues API, checked before a request is sent.
//!
//! Cloudflare counts 1 KB as 1000 bytes. The constants are the documented
//! values; [`Limits`] carries them into a client and can be changed for tests
//! or for a server with other limits (such as an emulator).

use std::fmt::Display;
use std::time::Duration;

use crate::error::{Error, Result};

/// Largest message, in bytes, metadata included (128 KB).
pub const MAX_MESSAGE_BYTES: usize = 128_000;
/// The metadata Cloudflare stores with each message, estimated in bytes.
pub const MESSAGE_METADATA_BYTES: usize = 100;
/// Most messages in one batch push.
pub const MAX_BATCH_MESSAGES: usize = 100;
/// Largest batch push, in bytes, all messages together (256 KB).
pub const MAX_BATCH_BYTES: usize = 256_000;
/// Longest delay of a push, a batch or a retry (24 hours).
pub const MAX_DELAY: Duration = Duration::from_secs(86_400);
/// Most messages one pull or peek returns.
pub const MAX_PULL_BATCH_SIZE: u32 = 100;
/// Longest visibility timeout of a pull (12 hours).
pub const MAX_VISIBILITY_TIMEOUT: Duration = Duration::from_secs(12 * 60 * 60);
/// Longest account or queue id, in characters.
pub const MAX_ID_LEN: usize = 32;

/// The limits a client checks before sending.
///
/// `Limits::default()` holds Cloudflare's documented values.
///
/// ```
/// use cf_queues::limits::Limits;
/// let mut limits = Limits::default();
/// limits.max_batch_messages = 10;
/// assert_eq!(limits.max_message_bytes, 128_000);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// Largest message, in bytes, metadata included.
    pub max_message_bytes: usize,
    /// Metadata bytes counted with each message.
    pub message_metadata_bytes: usize,
    /// Most messages in one batch.
    pub max_batch_messages: usize,
    /// Largest batch, in bytes.
    pub max_batch_bytes: usize,
    /// Longest delay.
    pub max_delay: Duration,
    /// Largest pull or peek `batch_size`.
    pub max_pull_batch_size: u32,
    /// Longest visibility timeout.
    pub max_visibility_timeout: Duration,
    /// Longest account or queue id, in characters.
    pub max_id_len: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_message_bytes: MAX_MESSAGE_BYTES,
            message_metadata_bytes: MESSAGE_METADATA_BYTES,
            max_batch_messages: MAX_BATCH_MESSAGES,
            max_batch_bytes: MAX_BATCH_BYTES,
            max_delay: MAX_DELAY,
            max_pull_batch_size: MAX_PULL_BATCH_SIZE,
            max_visibility_timeout: MAX_VISIBILITY_TIMEOUT,
            max_id_len: MAX_ID_LEN,
        }
    }
}

impl Limits {
    /// Whole seconds of a delay, rounded up so a message is never delivered early.
    pub(crate) fn delay_seconds(&self, field: &dyn Display, delay: Duration) -> Result<u32> {
        if delay > self.max_delay {
            return Err(Error::invalid(
                field.to_string(),
                format!(
                    "delay of {} s exceeds the limit of {} s",
                    delay.as_secs_f64(),
                    self.max_delay.as_secs()
                ),
            ));
        }
        let secs = delay.as_secs() + u64::from(delay.subsec_nanos() > 0);
        u32::try_from(secs)
            .map_err(|_| Error::invalid(field.to_string(), "delay does not fit in u32 seconds"))
    }

    pub(crate) fn batch_size(&self, field: &dyn Display, size: u32) -> Result<u32> {
        if size == 0 || size > self.max_pull_batch_size {
            return Err(Error::invalid(
                field.to_string(),
                format!("{size} is outside 1..={}", self.max_pull_batch_size),
            ));
        }
        Ok(size)
    }

    /// Whole milliseconds of a visibility timeout, rounded up.
    pub(crate) fn visibility_timeout_ms(&self, timeout: Duration) -> Result<u64> {
        const FIELD: &str = "visibility_timeout";
        if timeout.is_zero() || timeout > self.max_visibility_timeout {
            return Err(Error::invalid(
                FIELD,
                format!(
                    "{} ms is outside 1..={} ms",
                    timeout.as_millis(),
                    self.max_visibility_timeout.as_millis()
                ),
            ));
        }
        let ms =
            timeout.as_millis() + u128::from(!timeout.subsec_nanos().is_multiple_of(1_000_000));
        u64::try_from(ms)
            .map_err(|_| Error::invalid(FIELD, "timeout does not fit in u64 milliseconds"))
    }

    /// The size a message counts for: its encoded body plus the metadata estimate.
    pub(crate) fn check_message_size(
        &self,
        field: &dyn Display,
        body_bytes: usize,
    ) -> Result<usize> {
        let counted = body_bytes + self.message_metadata_bytes;
        if counted > self.max_message_bytes {
            return Err(Error::invalid(
                field.to_string(),
                format!(
                    "message of {body_bytes} bytes (+{} bytes of metadata) exceeds the limit of {} bytes",
                    self.message_metadata_bytes, self.max_message_bytes
                ),
            ));
        }
        Ok(counted)
    }

    pub(crate) fn check_batch(&self, count: usize, bytes: usize) -> Result<()> {
        let refused = |reason: String| Err(Error::invalid("messages", reason));
        if count == 0 {
            return refused("a batch needs at least one message".to_owned());
        }
        if count > self.max_batch_messages {
            let most = self.max_batch_messages;
            return refused(format!(
                "{count} messages exceed the limit of {most} per batch"
            ));
        }
        if bytes > self.max_batch_bytes {
            let most = self.max_batch_bytes;
            return refused(format!(
                "batch of {bytes} bytes exceeds the limit of {most} bytes"
            ));
        }
        Ok(())
    }
}

impl Limits {
    /// Checks an account or queue id: 1 to `max_id_len` ASCII letters and
    /// digits. The client checks every id with it before sending; a server
    /// (such as the emulator) can check what it receives the same way.
    ///
    /// ```
    /// let limits = cf_queues::limits::Limits::default();
    /// assert!(limits.check_id("queue_id", "0123456789abcdef0123456789abcdef").is_ok());
    /// assert!(limits.check_id("queue_id", "my-queue").is_err());
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] naming `field`, when the id is empty, longer
    /// than `max_id_len` characters, or holds anything but ASCII letters and
    /// digits.
    pub fn check_id(&self, field: &str, id: &str) -> Result<()> {
        if id.is_empty() {
            return Err(Error::invalid(field, "must not be empty"));
        }
        let len = id.chars().count();
        if len > self.max_id_len {
            return Err(Error::invalid(
                field,
                format!("{len} characters exceed the limit of {}", self.max_id_len),
            ));
        }
        if !id.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return Err(Error::invalid(
                field,
                "must contain only ASCII letters and digits",
            ));
        }
        Ok(())
    }
}

/// Checks an opaque token (lease id or ref): non-empty.
pub(crate) fn check_token(field: &dyn Display, token: &str) -> Result<()> {
    if token.is_empty() {
        return Err(Error::invalid(field.to_string(), "must not be empty"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids() {
        let l = Limits::default();
        let check_id = |field, id: &str| l.check_id(field, id);
        assert!(check_id("queue_id", "023e105f4ecef8ad9ca31a8372d0c353").is_ok());
        assert!(
            matches!(check_id("queue_id", ""), Err(Error::InvalidInput { field, .. }) if field == "queue_id")
        );
        assert!(check_id("queue_id", &"a".repeat(33)).is_err());
        assert!(check_id("queue_id", "a/b").is_err());
    }

    #[test]
    fn delays_round_up_and_cap() {
        let l = Limits::default();
        assert_eq!(
            l.delay_seconds(&"d", Duration::from_millis(1500)).ok(),
            Some(2)
        );
        assert_eq!(
            l.delay_seconds(&"d", Duration::from_secs(86_400)).ok(),
            Some(86_400)
        );
        assert!(l.delay_seconds(&"d", Duration::from_secs(86_401)).is_err());
    }

    #[test]
    fn visibility_timeout() {
        let l = Limits::default();
        assert_eq!(
            l.visibility_timeout_ms(Duration::from_micros(1500)).ok(),
            Some(2)
        );
        assert!(l.visibility_timeout_ms(Duration::ZERO).is_err());
        assert!(
            l.visibility_timeout_ms(Duration::from_secs(43_201))
                .is_err()
        );
        assert_eq!(
            l.visibility_timeout_ms(Duration::from_secs(43_200)).ok(),
            Some(43_200_000)
        );
    }

    #[test]
    fn batch_bounds() {
        let l = Limits::default();
        assert!(l.batch_size(&"batch_size", 0).is_err());
        assert!(l.batch_size(&"batch_size", 101).is_err());
        assert!(l.check_batch(0, 0).is_err());
        assert!(l.check_batch(101, 10).is_err());
        assert!(l.check_batch(100, 256_001).is_err());
        assert!(l.check_batch(100, 256_000).is_ok());
    }
}
