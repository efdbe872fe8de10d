//! The largest legal answer to each request: the cap a call reads its
//! response with, derived from the request so that a legal answer is never
//! refused after the server has acted on it (leased its messages, say).

use crate::limits::Limits;

/// The most a response spends on one message besides its body: id, lease
/// id or ref (JWE tokens of about 1 KB in practice), metadata, attempts and
/// timestamp, generously.
pub(crate) const RESPONSE_BYTES_PER_MESSAGE: usize = 4 * 1024;
/// The most a response spends on its envelope: `success`, `errors`,
/// `messages` and the fixed fields of `result`, generously.
pub(crate) const RESPONSE_ENVELOPE_BYTES: usize = 64 * 1024;
/// How much JSON escaping can grow a body: a control character such as
/// U+0001 is one byte, and `\u0001` on the wire.
pub(crate) const WORST_CASE_ESCAPING: usize = 6;
/// The cap on an answer that carries no messages or tokens (push,
/// metrics, purge): far above any legal answer, far below what would hurt.
pub(crate) const SMALL_RESPONSE_BYTES: usize = 1024 * 1024;

impl Limits {
    /// The largest legal answer to a pull, preview or peek of `batch_size`
    /// messages: every message of the largest size, every byte escaped in
    /// the worst way. For 100 messages of 128 KB that is about 77 MB.
    pub fn max_messages_response_bytes(&self, batch_size: u32) -> usize {
        let per_message = self
            .max_message_bytes
            .saturating_mul(WORST_CASE_ESCAPING)
            .saturating_add(RESPONSE_BYTES_PER_MESSAGE);
        (batch_size as usize)
            .saturating_mul(per_message)
            .saturating_add(RESPONSE_ENVELOPE_BYTES)
    }

    /// The largest legal answer about these lease ids or refs (ack, extend,
    /// purge by ref): a warning for each, its token escaped in the worst way.
    pub(crate) fn tokens_response_bytes<'a>(&self, tokens: impl Iterator<Item = &'a str>) -> usize {
        tokens
            .map(|t| {
                t.len()
                    .saturating_mul(WORST_CASE_ESCAPING)
                    .saturating_add(512)
            })
            .fold(SMALL_RESPONSE_BYTES, usize::saturating_add)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn response_caps_fit_the_worst_legal_answer() {
        let l = Limits::default();
        // 100 bodies of 127,900 control characters: about 77 MB on the wire.
        assert!(l.max_messages_response_bytes(100) >= 100 * 127_900 * 6);
        assert!(l.max_messages_response_bytes(100) < 80_000_000);
        assert_eq!(
            l.max_messages_response_bytes(1),
            128_000 * 6 + RESPONSE_BYTES_PER_MESSAGE + RESPONSE_ENVELOPE_BYTES
        );
        assert_eq!(
            l.tokens_response_bytes(["ab", "c"].into_iter()),
            SMALL_RESPONSE_BYTES + 12 + 512 + 6 + 512
        );
    }
}
