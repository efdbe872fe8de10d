//! The client against exact wire shapes (httpmock), hostile and failing
//! servers, and the emulator: requests byte for byte, every answer's
//! decoding, error mapping, retries, deadlines and properties. What they
//! share is in `cf-queues-testkit`.
#![allow(missing_docs, unreachable_pub)]

mod deadline;
mod errors;
mod hostile_server;
#[cfg(feature = "unstable-fuzzing")]
mod properties;
mod retries;
mod schema;
mod wire_leases_and_queue;
mod wire_messages;
mod wire_resources;
