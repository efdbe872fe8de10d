//! The emulator under abuse and load: slow, silent and greedy clients,
//! forged leases, shutdown mid-request, and many producers and consumers at
//! once that must lose nothing.
#![allow(missing_docs, unreachable_pub)]

#[cfg(feature = "dashboard")]
mod dashboard;
mod limits;
mod races;
mod soak;
mod support;
