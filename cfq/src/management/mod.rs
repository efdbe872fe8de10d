//! The management area's commands: `cfq queues` (`queues.rs`) and `cfq
//! consumer` (`consumers.rs`). Laid out as the client's and the emulator's
//! `management/`; the messages area is beside it.

pub mod consumers;
pub mod queues;
