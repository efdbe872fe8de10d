//! What the tests and benches of the cf-queues workspace share: one
//! scripted TCP server, the emulator and client constructors, the wire
//! constants and Cloudflare's envelopes, raw-HTTP calls to the emulator,
//! pulls through the client that must succeed, a dashboard session, a
//! seeded RNG, waiting on paused time, a TCP gate, a log sink and a
//! recording HTTP target.
//!
//! Test code of this repository, never published (`publish = false`): the
//! crates' integration tests and benches take it as a dev-dependency by
//! path, which `cargo package` drops. Unit tests inside a crate's `src/`
//! keep their own small helpers: this crate depends on the client and the
//! emulator, so using it there would build them twice.
//!
//! Every helper panics with a message on what a test cannot go on
//! without (a port, an emulator that starts): a failed test, not an error
//! to handle.

pub mod bench;
pub mod clients;
pub mod dashboard;
pub mod distance;
pub mod emulators;
pub mod gate;
pub mod logs;
pub mod pulls;
pub mod raw_http;
pub mod recording_target;
pub mod rng;
pub mod scripted;
pub mod wait;
pub mod wire;
