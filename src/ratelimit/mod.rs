//! How a client keeps to rate limits: [`RateLimits`], the one setting
//! ([`ClientBuilder::rate_limits`](crate::ClientBuilder::rate_limits)) for
//! the pacing by the token's budget (on by default) and the caps a user
//! sets on pushes; [`TokenBudget`], what the pacing reports.
//!
//! Three scopes, three homes, and one word for each (ARCHITECTURE.md's
//! glossary): the **token's budget** is every call's (the pacing, in the
//! crate's `token_budget/`); the **client's caps** are this module's
//! (`caps.rs`); the **queue's allowance** is the consumer's alone
//! ([`ConsumerBuilder::queue_allowance`](crate::consumer::ConsumerBuilder::queue_allowance),
//! feature `consumer`).

mod caps;

pub use crate::token_budget::{BURST_PER_CENT, MARGIN_PER_CENT, TokenBudget};
pub(crate) use caps::ClientCaps;

use std::time::Duration;

/// How a client limits its calls; see
/// [`ClientBuilder::rate_limits`](crate::ClientBuilder::rate_limits).
///
/// # Pacing by the server's headers (on by default)
///
/// Cloudflare answers every API call with `Ratelimit` (`r`, the requests
/// the credential may still make in the window; `t`, the seconds until it
/// may make more) and `Ratelimit-Policy` (`q` requests per `w` seconds:
/// 1,200 per 300). Going over the window blocks every call of the
/// credential, pulls and acks included, for five minutes. So every client
/// reads these headers on every answer and, before each call that counts
/// against the limit ([`Operation::counts_against_api_limit`]: every call
/// but pulls, acks and lease extensions, which are never held back):
///
/// - sends no more than `r` before the next answer;
/// - keeps to at most q/w calls a second on average, aiming
///   [`MARGIN_PER_CENT`] below the window, with bursts of
///   [`BURST_PER_CENT`] of the quota: about 3.86 calls a second at
///   Cloudflare's figures, so about 386 messages a second for full batch
///   pushes of 100, per credential;
/// - waits while a 429 with code 971 asked it to (its `Retry-After`).
///
/// A client that follows them never exceeds the window on its own. Clones of
/// a client share its pacing. Clients built separately, or in other
/// processes (replicas of one service) using the same token, each read in
/// `r` what the others spend (the window counts the whole token's calls)
/// and keep to their share of the room it leaves, with no coordinator and
/// no setting: measured for up to 16 replicas without a block (the
/// producer's docs, feature `producer`, say how and with what figures;
/// more replicas than that, or a window much shorter than Cloudflare's,
/// want a token per group of replicas). A server that sends no such headers is
/// not paced (a missing header means no information, not zero); when it
/// starts sending them (limits switched back on), its own count (`r`)
/// says what is spent, not the calls this client sent while it did not
/// limit.
///
/// A call whose budget, by the server's figures, comes back only after
/// longer than the retry policy honours
/// ([`RetryPolicy::max_retry_after`](crate::retry::RetryPolicy::max_retry_after),
/// 60 s), such as during a five-minute block, fails at once with
/// [`Error::RateLimited`](crate::Error::RateLimited) without being sent.
///
/// # The client's caps
///
/// Limits of your own on pushes come on top: each one is kept over every
/// sliding window, never letting more through in any period than it
/// allows (a burst of 1 % of the count, and a refill of the rest over the
/// period).
///
/// ```
/// use std::time::Duration;
/// use cf_queues::ratelimit::RateLimits;
///
/// let paced = RateLimits::default(); // the server's headers only
/// let documented = RateLimits::cloudflare(); // and 1,200 pushes / 5 min, 5,000 messages/s per queue
/// let custom = RateLimits::default().push_requests(100, Duration::from_secs(60));
/// let off = RateLimits::none(); // nothing at all, not even the headers
/// # let _ = (paced, documented, custom, off);
/// ```
///
/// [`Operation::counts_against_api_limit`]: crate::operation::Operation::counts_against_api_limit
#[derive(Debug, Clone, Copy, PartialEq)]
#[must_use]
pub struct RateLimits {
    headers: bool,
    push_requests: Option<(u32, Duration)>,
    messages_per_second: Option<u32>,
}

impl Default for RateLimits {
    /// Pacing by the token's budget, none of the client's caps.
    fn default() -> Self {
        RateLimits {
            headers: true,
            push_requests: None,
            messages_per_second: None,
        }
    }
}

impl RateLimits {
    /// No limits, and no pacing by the server's headers either: every call
    /// goes at once, and a burst can trigger Cloudflare's five-minute block.
    pub fn none() -> RateLimits {
        RateLimits {
            headers: false,
            push_requests: None,
            messages_per_second: None,
        }
    }

    /// The pacing by the headers, and Cloudflare's documented limits kept on
    /// the client's side as well: 1,200 push requests per 5 minutes (REST
    /// pushes count against the token's window), and 5,000 messages per second
    /// per queue.
    pub fn cloudflare() -> RateLimits {
        RateLimits::default()
            .push_requests(1_200, Duration::from_secs(300))
            .messages_per_second(5_000)
    }

    /// Whether to pace by the server's `Ratelimit` headers (default: yes).
    pub fn pace_by_headers(mut self, on: bool) -> RateLimits {
        self.headers = on;
        self
    }

    /// At most `count` push requests (single or batch) in any `period`,
    /// across the client: a burst of 1 % of `count` (at least 1), the rest
    /// spread over the period.
    pub fn push_requests(mut self, count: u32, period: Duration) -> RateLimits {
        self.push_requests = (count > 0 && !period.is_zero()).then_some((count, period));
        self
    }

    /// At most `count` pushed messages to each queue in any second.
    pub fn messages_per_second(mut self, count: u32) -> RateLimits {
        self.messages_per_second = (count > 0).then_some(count);
        self
    }

    /// Whether the client follows the server's headers.
    pub(crate) fn paces(&self) -> bool {
        self.headers
    }
}
