//! The management area of the API: queues and their consumers as
//! resources, the eleven operations a pull consumer's owner needs, as
//! methods of [`Client`](crate::Client) and [`Queue`](crate::Queue), beside
//! their wire conversions and what they remember between calls. The
//! messages area (`messages/`) is laid out alike, and so are the
//! emulator's and `cfq`'s areas of the same names.
//!
//! - `queues.rs`: the account's queues (list, resolve a name, create) and
//!   one queue (read, change its settings, delete);
//! - `consumers.rs`: a queue's consumers, and its HTTP pull consumer
//!   enabled or disabled;
//! - `wire.rs`: the requests of the generated client made from the crate's
//!   types, and the crate's types made from its answers (the public types
//!   are in [`resources`](crate::resources));
//! - `lookup.rs`: a name resolved through the account's pages;
//! - `recent.rs`: the queues this client enabled HTTP pull on lately;
//! - `server_clock.rs`: the server's clock, read from answers, to tell a
//!   queue this client created from someone else's.

mod consumers;
pub(crate) mod lookup;
mod queues;
mod recent;
pub(crate) mod server_clock;
pub(crate) mod wire;

pub use recent::PROPAGATION_WINDOW;
pub(crate) use recent::RecentlyEnabled;
pub(crate) use server_clock::ServerClock;
