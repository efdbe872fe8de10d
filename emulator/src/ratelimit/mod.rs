//! Cloudflare's rate limits as the emulator models them: [`RateLimitModel`]
//! (the figures, public) and [`RateLimiter`] (the state, a pure function of
//! the calls and the emulator's clock; the HTTP layer asks it and answers).
//!
//! The model and its sources are written down once, in the crate docs
//! ("Rate limits").

mod bucket;
mod window;

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash};
use std::net::IpAddr;
use std::time::Duration;

use bucket::{Bucket, BucketRate};
use cf_queues::codes;
use cf_queues::operation::Operation;
pub(crate) use window::Remaining;
use window::{Window, WindowRate};

/// How many queues, credentials or client addresses the limiter tracks
/// before it forgets the ones whose state is back to "full": a client that
/// sends each call to a new queue, or under a new token on an emulator
/// without auth, cannot make it grow without bound.
const MAX_TRACKED: usize = 4_096;

/// The rate limits an [`Emulator`](crate::Emulator) enforces when given
/// one: by default Cloudflare's figures, each settable so that a test can
/// reach an edge with a few calls.
///
/// | limit | default | counts |
/// |---|---|---|
/// | [per queue](RateLimitModel::per_queue) | 5,000 a second, 5,000 of burst, two buckets | messages pulls return; leases in acks, retries and extensions |
/// | [per credential](RateLimitModel::per_credential) | 1,200 requests per sliding 300 s, then a 300 s block | every other call |
/// | [per client IP](RateLimitModel::per_ip) | 200 a second, 200 of burst | every call |
///
/// ```
/// use std::time::Duration;
/// use cf_queues_emulator::RateLimitModel;
///
/// // A window of 5 requests a minute, so a test reaches it at once.
/// let small = RateLimitModel::cloudflare()
///     .per_credential(5, Duration::from_secs(60), Duration::from_secs(60));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub struct RateLimitModel {
    per_queue: BucketRate,
    per_credential: WindowRate,
    per_ip: BucketRate,
}

impl Default for RateLimitModel {
    fn default() -> Self {
        RateLimitModel::cloudflare()
    }
}

impl RateLimitModel {
    /// Cloudflare's figures, as its documents give them in 2026.
    pub fn cloudflare() -> RateLimitModel {
        RateLimitModel {
            per_queue: BucketRate::new(5_000, 5_000),
            per_credential: WindowRate {
                requests: 1_200,
                window_ms: 300_000,
                block_ms: 300_000,
            },
            per_ip: BucketRate::new(200, 200),
        }
    }

    /// Each queue's two buckets (pulled messages; leases settled or
    /// extended): `per_second` tokens a second, `burst` at most (both at
    /// least 1). A call that needs more than `burst` is served once its
    /// bucket is full, leaving it in debt.
    pub fn per_queue(mut self, per_second: u32, burst: u32) -> RateLimitModel {
        self.per_queue = BucketRate::new(per_second, burst);
        self
    }

    /// Each credential's window: `requests` per sliding `window`, and once a
    /// request goes over it, every call of the credential refused for
    /// `block` (zero: only the calls over the window are refused).
    pub fn per_credential(
        mut self,
        requests: u32,
        window: Duration,
        block: Duration,
    ) -> RateLimitModel {
        self.per_credential = WindowRate {
            requests,
            window_ms: millis(window).max(1),
            block_ms: millis(block),
        };
        self
    }

    /// Each client address's bucket: `per_second` requests a second,
    /// `burst` at most (both at least 1).
    pub fn per_ip(mut self, per_second: u32, burst: u32) -> RateLimitModel {
        self.per_ip = BucketRate::new(per_second, burst);
        self
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// Which of a queue's two buckets a call draws on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum QueueBucket {
    /// The messages a pull returns.
    Pulled,
    /// The leases an ack (acks and retries) or an extension lists.
    Leases,
}

/// A call the limits refuse: answered 429 with `code` and `Retry-After`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refused {
    pub code: u32,
    pub message: String,
    pub retry_after_seconds: u64,
}

/// A credential, as the limiter keys it: a keyed hash of what the request
/// presented, so that the limiter holds no secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct CredentialKey(u64);

/// The limits' state: one window per credential, two buckets per queue,
/// one bucket per client address.
#[derive(Debug)]
pub(crate) struct RateLimiter {
    model: RateLimitModel,
    hasher: std::collections::hash_map::RandomState,
    credentials: HashMap<CredentialKey, Window>,
    queues: HashMap<(String, String), [Bucket; 2]>,
    addresses: HashMap<IpAddr, Bucket>,
}

impl RateLimiter {
    /// A limiter with every bucket full and every window empty.
    pub(crate) fn new(model: RateLimitModel) -> RateLimiter {
        RateLimiter {
            model,
            hasher: Default::default(),
            credentials: HashMap::new(),
            queues: HashMap::new(),
            addresses: HashMap::new(),
        }
    }

    /// The key of a credential made of these parts (a token; or an e-mail
    /// and a key).
    pub(crate) fn credential_key(&self, parts: &[&[u8]]) -> CredentialKey {
        CredentialKey(self.hasher.hash_one(parts))
    }

    /// The checks a call passes before its body is read: its address's
    /// bucket, then its credential's block and (unless the call is limited
    /// per queue instead) its window. A call refused by one is counted by
    /// none after it.
    pub(crate) fn admit(
        &mut self,
        address: Option<IpAddr>,
        credential: Option<CredentialKey>,
        op: Operation,
        now_ms: u64,
    ) -> Result<(), Refused> {
        if let Some(address) = address {
            let rate = self.model.per_ip;
            forget_full(&mut self.addresses, now_ms, |b, now| b.is_full(rate, now));
            let bucket = self
                .addresses
                .entry(address)
                .or_insert_with(|| Bucket::full(rate, now_ms));
            bucket.take(rate, 1, now_ms).map_err(api_rate_limited)?;
        }
        if let Some(credential) = credential {
            let rate = self.model.per_credential;
            forget_full(&mut self.credentials, now_ms, |w, now| w.is_idle(rate, now));
            let window = self.credentials.entry(credential).or_default();
            window
                .admit(rate, op.counts_against_api_limit(), now_ms)
                .map_err(api_rate_limited)?;
        }
        Ok(())
    }

    /// Takes `n` tokens from a queue's bucket, or refuses the whole call.
    pub(crate) fn take_from_queue(
        &mut self,
        account: &str,
        queue: &str,
        which: QueueBucket,
        n: usize,
        now_ms: u64,
    ) -> Result<(), Refused> {
        if n == 0 {
            return Ok(());
        }
        let rate = self.model.per_queue;
        forget_full(&mut self.queues, now_ms, |buckets, now| {
            buckets.iter().all(|b| b.is_full(rate, now))
        });
        let key = (account.to_owned(), queue.to_owned());
        let buckets = self
            .queues
            .entry(key)
            .or_insert_with(|| [Bucket::full(rate, now_ms), Bucket::full(rate, now_ms)]);
        let (bucket, what) = match which {
            QueueBucket::Pulled => (&mut buckets[0], "messages pulled"),
            QueueBucket::Leases => (&mut buckets[1], "leases acknowledged, retried or extended"),
        };
        let n = u64::try_from(n).unwrap_or(u64::MAX);
        bucket.take(rate, n, now_ms).map_err(|seconds| Refused {
            code: codes::QUEUE_OVERLOADED,
            message: format!(
                "QueueOverloaded: the queue's limit of {} {what} a second is reached",
                rate.per_second
            ),
            retry_after_seconds: seconds,
        })
    }

    /// The `Ratelimit` figures of a credential at `now_ms`; a credential
    /// never seen has its whole quota.
    pub(crate) fn remaining(&mut self, credential: CredentialKey, now_ms: u64) -> Remaining {
        let rate = self.model.per_credential;
        match self.credentials.get_mut(&credential) {
            Some(window) => window.remaining(rate, now_ms),
            None => Remaining {
                remaining: rate.requests,
                reset_seconds: 0,
            },
        }
    }

    /// The `Ratelimit-Policy` figures: the quota and the window in seconds.
    pub(crate) fn policy(&self) -> (u32, u64) {
        let rate = self.model.per_credential;
        (rate.requests, rate.window_ms.div_ceil(1000))
    }
}

fn api_rate_limited(retry_after_seconds: u64) -> Refused {
    Refused {
        code: codes::API_RATE_LIMITED,
        message: "Please wait and consider throttling your request speed".to_owned(),
        retry_after_seconds,
    }
}

/// At [`MAX_TRACKED`] entries, forgets those whose state is back to where a
/// new entry would start, so that the map stays bounded by the entries
/// really in use.
fn forget_full<K: Eq + Hash, V>(
    map: &mut HashMap<K, V>,
    now_ms: u64,
    mut full: impl FnMut(&mut V, u64) -> bool,
) {
    if map.len() >= MAX_TRACKED {
        map.retain(|_, value| !full(value, now_ms));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> RateLimitModel {
        RateLimitModel::cloudflare()
            .per_queue(10, 10)
            .per_credential(2, Duration::from_secs(60), Duration::from_secs(120))
            .per_ip(3, 3)
    }

    #[test]
    fn lease_calls_skip_the_window_but_not_the_block() {
        let mut limiter = RateLimiter::new(small().per_ip(1_000, 1_000));
        let token = limiter.credential_key(&[b"token"]);
        for _ in 0..5 {
            assert_eq!(limiter.admit(None, Some(token), Operation::Pull, 0), Ok(()));
        }
        assert_eq!(limiter.admit(None, Some(token), Operation::Push, 0), Ok(()));
        assert_eq!(
            limiter.admit(None, Some(token), Operation::Metrics, 0),
            Ok(())
        );
        let refused = limiter.admit(None, Some(token), Operation::Batch, 0);
        assert_eq!(
            refused.map_err(|r| (r.code, r.retry_after_seconds)),
            Err((971, 120))
        );
        for op in [Operation::Pull, Operation::Ack, Operation::Extend] {
            let refused = limiter.admit(None, Some(token), op, 1_000);
            assert_eq!(refused.map_err(|r| r.retry_after_seconds), Err(119));
        }
        // Another credential is not blocked.
        let other = limiter.credential_key(&[b"other"]);
        assert_eq!(
            limiter.admit(None, Some(other), Operation::Push, 1_000),
            Ok(())
        );
        assert_eq!(
            limiter.admit(None, Some(token), Operation::Push, 120_000),
            Ok(())
        );
    }

    #[test]
    fn the_address_bucket_counts_every_call_and_blocks_nothing_after() {
        let mut limiter = RateLimiter::new(small().per_credential(
            100,
            Duration::from_secs(60),
            Duration::from_secs(120),
        ));
        let ip = IpAddr::from([127, 0, 0, 1]);
        let token = limiter.credential_key(&[b"token"]);
        for op in [Operation::Pull, Operation::Push, Operation::Ack] {
            assert_eq!(limiter.admit(Some(ip), Some(token), op, 0), Ok(()));
        }
        let refused = limiter.admit(Some(ip), Some(token), Operation::Pull, 0);
        assert_eq!(
            refused.map_err(|r| (r.code, r.retry_after_seconds)),
            Err((971, 1))
        );
        // A third of a second brings one back; no block followed.
        assert_eq!(
            limiter.admit(Some(ip), Some(token), Operation::Push, 334),
            Ok(())
        );
        assert_eq!(limiter.remaining(token, 334).remaining, 98);
    }

    #[test]
    fn each_queue_has_two_buckets() {
        let mut limiter = RateLimiter::new(small());
        let take = |l: &mut RateLimiter, queue, which, n| {
            l.take_from_queue("acct", queue, which, n, 0)
                .map_err(|r| (r.code, r.retry_after_seconds))
        };
        assert_eq!(take(&mut limiter, "a", QueueBucket::Pulled, 10), Ok(()));
        assert_eq!(
            take(&mut limiter, "a", QueueBucket::Pulled, 1),
            Err((10250, 1))
        );
        assert_eq!(take(&mut limiter, "a", QueueBucket::Pulled, 0), Ok(()));
        assert_eq!(take(&mut limiter, "a", QueueBucket::Leases, 10), Ok(()));
        assert_eq!(take(&mut limiter, "b", QueueBucket::Pulled, 10), Ok(()));
    }

    #[test]
    fn the_maps_stay_bounded() {
        let mut limiter = RateLimiter::new(RateLimitModel::cloudflare());
        for i in 0..(3 * MAX_TRACKED) {
            let queue = i.to_string();
            let _ =
                limiter.take_from_queue("acct", &queue, QueueBucket::Pulled, 1, 1_000 * i as u64);
        }
        assert!(limiter.queues.len() <= MAX_TRACKED);
    }
}
