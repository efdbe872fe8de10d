//! The queue's allowance: the messages a second this consumer's replicas
//! aim to pull and settle on one queue, below the queue's limit, and each
//! replica's share of it. Only the consumer paces itself by a queue's
//! allowance, so it lives here; the token's budget, which every call
//! spends, is the client's (`token_budget/`), and the caps a user sets on
//! pushes are `RateLimits`'s (`ratelimit/`). The words are defined once,
//! in ARCHITECTURE.md's glossary.
//!
//! - [`share`]: one replica's share of the allowance ([`AllowanceShare`],
//!   one for pulled messages and one for settled or extended leases), the
//!   pace it sends at, and what a refusal (429, code 10250) does to it;
//! - [`backlog`]: the price every replica reads from the backlog count's
//!   fall, which sets the pulls' pace while it can be trusted.
//!
//! The consumer's calls ask the retry loop to hand a refusal for the queue's
//! limit back at once ([`QueueRefusal::Returned`](crate::retry_loop::QueueRefusal)),
//! for the share to answer, instead of retrying it at the pace that caused it.

mod backlog;
mod share;

pub(crate) use share::AllowanceShare;
