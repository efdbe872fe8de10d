//! The last requests the emulator answered, for the dashboard's request
//! list: what a program under test actually sent. No body is kept, and no
//! credential: each request's credential is shown as a short fingerprint,
//! a hash under a key drawn when the emulator starts, which says whether
//! two requests used the same credential and nothing about the credential.

use std::collections::VecDeque;
use std::hash::{BuildHasher as _, Hasher as _, RandomState};
use std::sync::{Mutex, PoisonError};

use axum::http::HeaderMap;

/// How many requests are kept: enough to see what a test run did, small
/// enough (a few hundred KB) to keep always.
pub(crate) const CAPACITY: usize = 1_000;
/// The most of a request's path that is kept (longer ones are cut, marked
/// with `…`): a whole API path, ids included, is about 110 bytes, and a
/// request with a path of 60,000 bytes, which anyone can send before any
/// credential is checked, must not cost 60,000 bytes a request.
pub(crate) const MAX_PATH_BYTES: usize = 256;
/// The most of a path's queue id that is kept: ids are 32 characters.
pub(crate) const MAX_QUEUE_BYTES: usize = 64;
/// The most bytes the ring keeps in all (its entries' text), whatever the
/// requests: [`CAPACITY`] entries of the longest kept path fit.
pub(crate) const MAX_BYTES: usize = CAPACITY * (MAX_PATH_BYTES + MAX_QUEUE_BYTES + 64);

/// One answered request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    /// When it was answered (Unix ms, the emulator's clock).
    pub at_ms: u64,
    pub method: String,
    /// The path, without the query (which only lists carry).
    pub path: String,
    /// The operation's id, such as `pull_messages`.
    pub operation: &'static str,
    /// The queue id of the path; empty for the account's operations.
    pub queue: String,
    pub status: u16,
    /// The Cloudflare code of a refusal.
    pub code: Option<u32>,
    /// How long the emulator took to answer, in microseconds.
    pub took_us: u64,
    /// The credential's fingerprint (8 hex digits), if one was presented.
    pub credential: Option<String>,
}

impl Entry {
    /// The bytes of text it keeps.
    fn bytes(&self) -> usize {
        self.method.len()
            + self.path.len()
            + self.queue.len()
            + self.credential.as_ref().map_or(0, String::len)
    }
}

/// The ring of the last [`CAPACITY`] requests, at most [`MAX_BYTES`].
#[derive(Debug)]
pub(crate) struct RequestLog {
    ring: Mutex<Ring>,
    key: RandomState,
}

#[derive(Debug, Default)]
struct Ring {
    entries: VecDeque<Entry>,
    bytes: usize,
}

impl Default for RequestLog {
    fn default() -> Self {
        RequestLog {
            ring: Mutex::new(Ring {
                entries: VecDeque::with_capacity(64),
                bytes: 0,
            }),
            key: RandomState::new(),
        }
    }
}

/// `text` cut to at most `most` bytes on a character boundary, `…` marking
/// a cut.
pub(crate) fn cut(text: &str, most: usize) -> String {
    if text.len() <= most {
        return text.to_owned();
    }
    let mut end = most.saturating_sub('…'.len_utf8());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

impl RequestLog {
    /// Keeps `entry`, its path and queue cut to their bounds, dropping the
    /// oldest entries while the ring is over [`CAPACITY`] or [`MAX_BYTES`].
    pub(crate) fn record(&self, mut entry: Entry) {
        entry.path = cut(&entry.path, MAX_PATH_BYTES);
        entry.queue = cut(&entry.queue, MAX_QUEUE_BYTES);
        entry.method = cut(&entry.method, 16);
        let bytes = entry.bytes();
        // A push never panics mid-way: a poisoned ring is still whole.
        let mut ring = self.ring.lock().unwrap_or_else(PoisonError::into_inner);
        ring.bytes += bytes;
        ring.entries.push_back(entry);
        while ring.entries.len() > CAPACITY || ring.bytes > MAX_BYTES {
            let Some(old) = ring.entries.pop_front() else {
                break;
            };
            ring.bytes -= old.bytes();
        }
    }

    /// The entries kept, newest first, that `keep` accepts.
    pub(crate) fn newest_first(&self, keep: impl Fn(&Entry) -> bool) -> Vec<Entry> {
        let ring = self.ring.lock().unwrap_or_else(PoisonError::into_inner);
        ring.entries
            .iter()
            .rev()
            .filter(|e| keep(e))
            .cloned()
            .collect()
    }

    /// The fingerprint of the credential `headers` present (a bearer
    /// token, or a global key with its e-mail), if any.
    pub(crate) fn fingerprint(&self, headers: &HeaderMap) -> Option<String> {
        let mut hasher = self.key.build_hasher();
        let mut any = false;
        for name in ["authorization", "x-auth-key", "x-auth-email"] {
            if let Some(value) = headers.get(name) {
                hasher.write(name.as_bytes());
                hasher.write(value.as_bytes());
                any = true;
            }
        }
        any.then(|| format!("{:08x}", hasher.finish() >> 32))
    }
}

/// The queue id in an API path (`…/queues/{id}/…`), or "".
pub(crate) fn queue_of(path: &str) -> &str {
    let mut segments = path.split('/');
    while let Some(segment) = segments.next() {
        if segment == "queues" {
            return segments.next().unwrap_or("");
        }
    }
    ""
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(i: u64) -> Entry {
        Entry {
            at_ms: i,
            method: "POST".into(),
            path: "/accounts/a/queues/q/messages".into(),
            operation: "push_message",
            queue: "q".into(),
            status: 200,
            code: None,
            took_us: 1,
            credential: None,
        }
    }

    #[test]
    fn the_ring_keeps_the_last_thousand_newest_first() {
        let log = RequestLog::default();
        for i in 0..(CAPACITY as u64 + 5) {
            log.record(entry(i));
        }
        let kept = log.newest_first(|_| true);
        assert_eq!(kept.len(), CAPACITY);
        assert_eq!(kept.first().map(|e| e.at_ms), Some(CAPACITY as u64 + 4));
        assert_eq!(kept.last().map(|e| e.at_ms), Some(5));
    }

    #[test]
    fn a_long_path_is_kept_cut_and_the_ring_stays_within_its_bytes() {
        let log = RequestLog::default();
        let long = format!("/accounts/a/queues/{}/messages", "é".repeat(30_000));
        for _ in 0..(CAPACITY + 10) {
            let mut e = entry(1);
            e.path.clone_from(&long);
            e.queue = crate::request_log::queue_of(&long).to_owned();
            log.record(e);
        }
        let kept = log.newest_first(|_| true);
        assert_eq!(kept.len(), CAPACITY);
        let first = &kept[0];
        assert!(first.path.len() <= MAX_PATH_BYTES, "{}", first.path.len());
        assert!(first.path.ends_with('…') && first.path.starts_with("/accounts/a/queues/é"));
        assert!(first.queue.len() <= MAX_QUEUE_BYTES);
        let held: usize = kept.iter().map(Entry::bytes).sum();
        assert!(held <= MAX_BYTES, "{held}");
        assert_eq!(cut("short", 10), "short");
        assert_eq!(cut("abcdef", 4), "a…");
    }

    #[test]
    fn a_fingerprint_tells_credentials_apart_without_showing_them() {
        let log = RequestLog::default();
        let mut one = HeaderMap::new();
        one.insert("authorization", "Bearer secret-one".parse().expect("value"));
        let mut two = HeaderMap::new();
        two.insert("authorization", "Bearer secret-two".parse().expect("value"));
        let (a, b) = (log.fingerprint(&one), log.fingerprint(&two));
        assert_eq!(a, log.fingerprint(&one), "stable");
        assert_ne!(a, b);
        let a = a.expect("a fingerprint");
        assert_eq!(a.len(), 8);
        assert!(!"Bearer secret-one".contains(&a));
        assert_eq!(log.fingerprint(&HeaderMap::new()), None);
    }

    #[test]
    fn the_queue_is_read_from_the_path() {
        assert_eq!(
            queue_of("/client/v4/accounts/a/queues/q1/messages/pull"),
            "q1"
        );
        assert_eq!(queue_of("/accounts/a/queues"), "");
        assert_eq!(queue_of("/accounts/a/queues/"), "");
    }
}
