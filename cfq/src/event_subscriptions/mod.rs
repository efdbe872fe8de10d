//! The event subscriptions area's commands: `cfq subscriptions`
//! (`subscriptions.rs`) and `cfq events` (`events.rs`). Laid out as the
//! client's and the emulator's `event_subscriptions/`, beside the messages
//! and management areas.

pub mod events;
pub mod subscriptions;
