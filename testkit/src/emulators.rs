//! Emulators on each clock a test needs: the system's, tokio's (paused)
//! clock, and a manual clock at a fixed start.

use cf_queues_emulator::{Emulator, EmulatorClock, EmulatorHandle, ManualClock, TokioClock};

/// The emulator's clock at the start of a test on a manual clock, in ms
/// since the epoch (a 13-digit `timestamp_ms`, as on the live API).
pub const START_MS: u64 = 1_710_950_954_154;

/// An emulator on the system clock, with a fresh token: on paused tokio
/// time, its leases never expire during a test.
pub async fn emulator() -> EmulatorHandle {
    emulator_with(|emulator| emulator).await
}

/// An emulator on the system clock, configured by `configure`.
pub async fn emulator_with(configure: impl FnOnce(Emulator) -> Emulator) -> EmulatorHandle {
    configure(Emulator::new())
        .start()
        .await
        .expect("emulator starts")
}

/// An emulator whose clock is tokio's (paused) clock, starting at the
/// system's now, so that its leases expire on the test's time: one clock
/// drives both the consumer's timers and the emulator's lease expiry.
pub async fn emulator_on_tokio_time() -> (EmulatorHandle, TokioClock) {
    let clock = TokioClock::starting_now();
    let handle = emulator_with(|emulator| emulator.clock(clock)).await;
    (handle, clock)
}

/// An emulator on tokio's (paused) clock starting at `start_ms`,
/// configured by `configure`.
pub async fn emulator_on_tokio_clock(
    start_ms: u64,
    configure: impl FnOnce(Emulator) -> Emulator,
) -> EmulatorHandle {
    emulator_with(|emulator| configure(emulator.clock(EmulatorClock::tokio(start_ms)))).await
}

/// An emulator on a manual clock at [`START_MS`], configured by
/// `configure`; the clock moves only when the test advances it.
pub async fn emulator_on_manual_clock(
    configure: impl FnOnce(Emulator) -> Emulator,
) -> (EmulatorHandle, ManualClock) {
    let clock = ManualClock::new(START_MS);
    let handle = emulator_with(|emulator| configure(emulator.clock(clock.clone()))).await;
    (handle, clock)
}
