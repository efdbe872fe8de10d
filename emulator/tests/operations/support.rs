//! What the operation tests share: one start time and an emulator on a
//! manual clock set to it.

use cf_queues_emulator::{Emulator, EmulatorHandle, ManualClock};

/// The emulator's clock at the start of a test, in ms since the epoch
/// (a 13-digit `timestamp_ms`, as on the live API).
pub const START_MS: u64 = 1_710_950_954_154;

/// An emulator configured by `configure`, on a manual clock at
/// [`START_MS`].
pub async fn emulator_with(
    configure: impl FnOnce(Emulator) -> Emulator,
) -> (EmulatorHandle, ManualClock) {
    let clock = ManualClock::new(START_MS);
    let handle = configure(Emulator::new().clock(clock.clone()))
        .start()
        .await
        .expect("emulator starts");
    (handle, clock)
}
