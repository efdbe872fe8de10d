//! Emulators on each clock a test needs: the system's, tokio's (paused)
//! clock, and a manual clock at a fixed start.

use std::time::Duration;

use cf_queues_emulator::{
    Emulator, EmulatorClock, EmulatorHandle, ManualClock, TokioClock, WorkerBody,
};
use tokio::time::{Instant, sleep_until};

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

/// Waits `duration` while writing `per_second` messages a second to
/// `queue`, a tenth every 100 ms, as a Worker would (no API calls, no
/// limits spent): a producer beside the consumers under test.
pub async fn push_meanwhile(
    emulator: &EmulatorHandle,
    queue: &str,
    per_second: u32,
    duration: Duration,
) {
    const STEP: Duration = Duration::from_millis(100);
    let end = Instant::now() + duration;
    let mut next = Instant::now() + STEP;
    let mut n: u64 = 0;
    while next <= end {
        sleep_until(next).await;
        for _ in 0..per_second / 10 {
            n += 1;
            emulator.push_from_worker(queue, WorkerBody::Bytes(n.to_be_bytes().to_vec()));
        }
        next += STEP;
    }
    sleep_until(end).await;
}
