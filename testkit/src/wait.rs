//! Waiting for a condition on tokio's paused clock, with or without letting
//! the time move.

use std::time::Duration;

/// Waits until `done` holds, yielding to the other tasks and the I/O
/// driver without ever letting paused time move.
///
/// # Panics
/// When `done` still does not hold after 200,000 yields.
pub async fn until(what: &str, mut done: impl FnMut() -> bool) {
    for _ in 0..200_000 {
        if done() {
            return;
        }
        tokio::task::yield_now().await;
    }
    panic!("gave up waiting for {what}");
}

/// Waits until `done` holds, letting paused time move by `step` whenever
/// the other tasks have nothing left to do without it, up to `limit`.
///
/// # Panics
/// When `done` still does not hold once `limit` has passed.
pub async fn eventually(
    what: &str,
    step: Duration,
    limit: Duration,
    mut done: impl FnMut() -> bool,
) {
    let end = tokio::time::Instant::now() + limit;
    loop {
        for _ in 0..500 {
            if done() {
                return;
            }
            tokio::task::yield_now().await;
        }
        assert!(
            tokio::time::Instant::now() < end,
            "gave up waiting for {what}"
        );
        tokio::time::sleep(step).await;
    }
}
