//! The token's budget: the calls the API token may still make in
//! Cloudflare's window (1,200 per 300 s, for every process using the
//! token), as the server's headers report it, and the pacing that keeps
//! this client inside it. One scope, one home:
//!
//! - [`headers`]: every header a server sends about when to call again
//!   (`Ratelimit`, `Ratelimit-Policy`, `Retry-After`, `retry-after-ms`,
//!   `x-should-retry`), read here and nowhere else, and the one bound on
//!   every wait a server asks for ([`LONGEST_SERVER_WAIT`]);
//! - [`pacer`]: when a call that counts against the window may go
//!   ([`Pacer`]; [`TokenBudget`] is what it reports);
//! - [`fleet`]: what the other users of the token spend, read from how the
//!   budget moves, and this client's share of the window's room.
//!
//! The public names are re-exported where users look for them:
//! `cf_queues::ratelimit` (`TokenBudget`, [`BURST_PER_CENT`],
//! [`MARGIN_PER_CENT`]) and `cf_queues::retry` ([`LONGEST_SERVER_WAIT`]).
//! The words are defined once, in ARCHITECTURE.md's glossary.

mod fleet;
mod headers;
mod pacer;

pub use headers::LONGEST_SERVER_WAIT;
#[cfg(feature = "consumer")]
pub(crate) use headers::server_wait_ends;
pub(crate) use headers::{Figures, should_retry_header};
pub use headers::{retry_after, server_wait};
pub use pacer::{BURST_PER_CENT, MARGIN_PER_CENT, TokenBudget};
pub(crate) use pacer::{Denied, Pacer, Pass};
