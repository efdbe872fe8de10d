//! What the benches share: the error type, the batch shape, reading counts
//! from the environment, timing an answer, pulling and acking through the
//! client, and number formatting. Nothing here knows about a particular measurement.

use std::time::Duration;

use cf_queues::{Acks, PullOptions, PulledMessage, Queue};

/// Any error a bench reports and stops on.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;
/// A bench step's result.
pub type Result<T, E = BoxError> = std::result::Result<T, E>;

/// Messages per push, pull and ack.
pub const BATCH: usize = 100;
/// The lease of every pull: longer than any measured step.
pub const VISIBILITY: Duration = Duration::from_secs(60);
/// A mebibyte, for memory figures.
pub const MB: f64 = 1024.0 * 1024.0;

/// A positive count from the environment variable `name`, or `default` when
/// it is unset; `_` separators are allowed (`30_000`).
pub fn env_count(name: &str, default: usize) -> Result<usize> {
    match std::env::var(name) {
        Err(_) => Ok(default),
        Ok(value) => match value.trim().replace('_', "").parse::<usize>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(format!("{name}={value:?}: expected a positive whole number").into()),
        },
    }
}

/// The time `request` takes to be answered whole (its body read), checked
/// to succeed: one sample of a latency bench.
pub async fn time_to_answer(request: reqwest::RequestBuilder) -> Result<Duration> {
    let started = std::time::Instant::now();
    let answer = request.send().await?.error_for_status()?;
    answer.bytes().await?;
    Ok(started.elapsed())
}

/// The median of `samples` (the upper one of an even count); zero for none.
pub fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort_unstable();
    samples.get(samples.len() / 2).copied().unwrap_or_default()
}

/// A pull of [`BATCH`] messages leased for [`VISIBILITY`].
pub fn pull_options() -> PullOptions {
    PullOptions::new()
        .batch_size(BATCH as u32)
        .visibility_timeout(VISIBILITY)
}

/// Acks every message of a pull; anything short of all of them, or a
/// warning, is an error, since a bench that loses messages measures nothing.
pub async fn ack_all(queue: &Queue, messages: &[PulledMessage]) -> Result<usize> {
    let acks = messages.iter().fold(Acks::new(), Acks::ack);
    let outcome = queue
        .ack(acks)
        .await
        .map_err(|e| format!("ack on {}: {e}", queue.id()))?;
    // The emulator always says how many it acked: an unknown count is a failure here.
    if outcome.acked != u32::try_from(messages.len()).ok() || !outcome.warnings.is_empty() {
        return Err(format!(
            "ack on {}: acked {:?} of {} leases, warnings {:?}",
            queue.id(),
            outcome.acked,
            messages.len(),
            outcome.warnings
        )
        .into());
    }
    Ok(messages.len())
}

/// Pulls and acks until the queue is empty; returns how many it acked.
pub async fn drain(queue: &Queue) -> Result<usize> {
    let mut drained = 0;
    loop {
        let batch = queue
            .pull(pull_options())
            .await
            .map_err(|e| format!("pull from {}: {e}", queue.id()))?;
        if batch.messages.is_empty() {
            return Ok(drained);
        }
        drained += ack_all(queue, &batch.messages).await?;
    }
}

/// `part` as a percentage of `whole` (0 when `whole` is 0).
pub fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

/// `1234567.8` as `1,234,568`.
pub fn thousands(n: f64) -> String {
    let digits = format!("{:.0}", n.max(0.0));
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The runtime a bench measures on: two worker threads, the cores of the
/// machines its figures come from.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}
