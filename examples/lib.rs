//! The examples of `cf-queues`, in a package of their own: building one
//! compiles the client, the emulator and tokio, not the tests' tools. Run
//! them from the repository's root: `cargo run --example quickstart`.
