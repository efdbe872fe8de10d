//! The client against exact wire shapes (httpmock), hostile and failing
//! servers, and the emulator: requests byte for byte, every answer's
//! decoding, error mapping, retries, deadlines and properties. What they
//! share is in `cf-queues-testkit`.
#![allow(missing_docs, unreachable_pub)]

mod deadline;
mod errors;
mod hostile_server;
mod properties;
mod retries;
mod schema;
mod wire_leases_and_queue;
mod wire_messages;
mod wire_resources;

/// The kit under the name `wire_resources.rs` and its `#[path]` modules
/// still import it by, until they import the kit themselves.
mod support {
    pub use cf_queues_testkit::clients::quick;
    pub use cf_queues_testkit::wire::{ACCOUNT, QUEUE, TOKEN, path, rfc3339, shifted, success};
}
