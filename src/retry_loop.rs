//! The one path every call takes, and its retry loop: the wait for the
//! client's caps, the pacing by the token's budget before each attempt,
//! the attempts and the waits between them, all inside one deadline.
//!
//! # Where retries live, and why here
//!
//! Retries run around the generated call, not inside progenitor's `exec`
//! hook. Here the loop knows the typed outcome of each attempt (the
//! `RetryClass` computed once in the envelope layer), the operation, the
//! per-handle overrides of the policy and the deadline, and the attempt
//! count it puts into every error, transport errors included. In the hook
//! it would see only raw bytes, re-parse them to classify, and need a side
//! channel for all of the above. The cost: the raw client
//! ([`crate::raw`]) does not retry; it is the raw layer.
//!
//! # The deadline
//!
//! One clock, started when the call starts, bounds the rate-limit wait,
//! every attempt and every retry wait. A wait that cannot finish before the
//! deadline is never started: the caller gets the last real error, with its
//! attempt count. Only an attempt (or a rate-limit wait) still running when
//! the deadline passes ends in [`Error::Timeout`]; when that attempt was a
//! retry, the timeout carries the error that caused it
//! ([`Error::Timeout`]'s `last_error`), so the real failure is never lost.
//! A deadline too far away to represent (`Duration::MAX`) means none.
//!
//! # Pacing
//!
//! Before each attempt of a call that counts against the credential's
//! limit, the client's [`Pacer`] says whether it may go (it decides; this
//! path only asks), and every answer's `Ratelimit` headers, 429s included,
//! go back to it. A wait the server's figures impose that is longer than
//! the retry policy honours is not started: the call fails with
//! [`Error::RateLimited`], unsent.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use tracing::Instrument as _;

use crate::envelope::{Envelope, RawOutcome, finish};
use crate::error::{Error, Result};
use crate::hooks::recorded;
use crate::management::ServerClock;
use crate::operation::Operation;
use crate::ratelimit::ClientCaps;
use crate::retry::RetryPolicy;
use crate::token_budget::{Denied, Figures, Pacer, Pass};

/// Who answers a refusal for the queue's limit (429, code 10250): the
/// caller's option, set per call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum QueueRefusal {
    /// Retried here after its `Retry-After`, as any 429 (every call of the
    /// public API).
    #[default]
    Retried,
    /// Handed back at once: the caller paces itself by its share of the
    /// queue's allowance and answers the refusal by lowering it, instead of
    /// being retried at the pace that caused it (the consumer's calls).
    #[cfg_attr(not(feature = "consumer"), allow(dead_code))]
    Returned,
}

/// Everything one call needs besides the request itself.
pub(crate) struct Call<'a> {
    pub operation: Operation,
    pub queue_id: &'a str,
    pub retry: &'a RetryPolicy,
    pub deadline: Option<Duration>,
    /// The client's caps on pushes.
    pub caps: Option<&'a ClientCaps>,
    /// The pacing by the server's headers, unless turned off.
    pub pacer: Option<&'a Arc<Pacer>>,
    /// The pacer's pass for the first attempt, when the caller waited for
    /// it itself (the producer, which fills its batch meanwhile).
    pub first_pass: Option<Pass>,
    /// Told of every failed attempt, retried or not (the producer lowers
    /// its batches in flight on a 429).
    pub observe: Option<&'a (dyn Fn(&Error) + Send + Sync)>,
    /// Who answers a refusal for the queue's limit (429, code 10250).
    pub queue_refusal: QueueRefusal,
    /// Messages a push sends, for the rate limits.
    pub messages: usize,
    /// The largest response body accepted.
    pub response_cap: usize,
    /// For a pull on a queue this client enabled HTTP pull on lately: until
    /// when a "HTTP pull not enabled" answer is Cloudflare's propagation
    /// delay, tried again with backoff, rather than the queue's state.
    pub pull_grace_until: Option<Instant>,
    /// Told the `Date` of every answer, for a create that may have to tell
    /// its own queue from someone else's after a lost answer.
    pub server_clock: Option<&'a ServerClock>,
    /// The client's token gauge.
    #[cfg(feature = "metrics")]
    pub token_gauge: &'a ::metrics::Key,
}

impl Call<'_> {
    /// This call, with who answers a refusal for the queue's limit.
    pub(crate) fn answering(mut self, queue_refusal: QueueRefusal) -> Self {
        self.queue_refusal = queue_refusal;
        self
    }

    /// Runs the call: `send` makes one attempt of the generated request.
    pub(crate) async fn run<E, F, Fut>(mut self, mut send: F) -> Result<E::Result>
    where
        E: Envelope,
        F: FnMut() -> Fut,
        Fut: Future<Output = RawOutcome<E>>,
    {
        let span = crate::spans::call(self.operation.operation_id(), self.queue_id);
        #[cfg(feature = "metrics")]
        let started = Instant::now();
        let result = async {
            let ends = self.deadline.and_then(|d| Instant::now().checked_add(d));
            let mut first_pass = self.first_pass.take();
            self.throttle(ends).await?;
            let mut attempt: u32 = 0;
            let mut last_error: Option<Error> = None;
            loop {
                attempt += 1;
                let outcome = self.attempt(attempt, ends, first_pass.take(), send()).await;
                tracing::Span::current().record("attempts", attempt);
                #[cfg(feature = "metrics")]
                if !matches!(outcome, Err(Error::RateLimited { .. })) {
                    // A pacer's refusal sent nothing: not a request.
                    crate::metrics::attempt(self.operation, self.queue_id, outcome.as_ref().err());
                }
                let error = match outcome {
                    Ok(result) => return Ok(result),
                    Err(error) => error.after(last_error.take()),
                };
                if let Some(observe) = self.observe {
                    observe(&error);
                }
                if self.queue_refusal == QueueRefusal::Returned && error.refused_by_queue() {
                    tracing::debug!(attempts = attempt, error = %error, "refused for the queue's allowance");
                    return Err(error);
                }
                let wait = self
                    .retry
                    .wait_before(
                        attempt,
                        self.operation,
                        error.retry_class(),
                        error.retry_after(),
                    )
                    .or_else(|| self.propagation_wait(attempt, &error))
                    .filter(|wait| fits(ends, *wait));
                let Some(wait) = wait else {
                    tracing::warn!(attempts = attempt, error = %error, "call failed");
                    return Err(error);
                };
                tracing::debug!(
                    attempt,
                    wait_ms = wait.as_millis() as u64,
                    reason = %error,
                    "retrying"
                );
                tokio::time::sleep(wait).await;
                last_error = Some(error);
            }
        }
        .instrument(span)
        .await;
        #[cfg(feature = "metrics")]
        crate::metrics::call(
            self.operation,
            self.queue_id,
            started.elapsed(),
            result.as_ref().err(),
        );
        result
    }

    async fn attempt<E, Fut>(
        &self,
        attempt: u32,
        ends: Option<Instant>,
        pass: Option<Pass>,
        request: Fut,
    ) -> Result<E::Result>
    where
        E: Envelope,
        Fut: Future<Output = RawOutcome<E>>,
    {
        let pass = match (pass, self.pacer) {
            (Some(pass), _) => Some(pass),
            (None, Some(pacer)) => Some(self.pace(pacer, attempt, ends).await?),
            (None, None) => None,
        };
        let attempt_span = crate::spans::attempt(attempt);
        let run = async {
            let (outcome, exchange) = recorded(self.response_cap, request).await;
            if let Some(clock) = self.server_clock.filter(|_| exchange.status.is_some()) {
                clock.observe(&exchange.headers);
            }
            // The figures are read once, before the answer is consumed:
            // three numbers, not a copy of its headers; only when the pacer
            // or the metrics want them.
            let wanted = pass.is_some() || cfg!(feature = "metrics");
            let figures = exchange
                .status
                .filter(|_| wanted)
                .map(|status| (status, Figures::read(&exchange.headers)));
            #[cfg(feature = "metrics")]
            if let Some(quota) = figures.and_then(|(_, figures)| figures.quota) {
                crate::metrics::token_remaining(self.token_gauge, quota.remaining);
            }
            let answer = pass
                .zip(figures)
                .map(|(pass, (status, figures))| (pass, status, figures));
            let result = finish(self.operation, attempt, outcome, exchange);
            if let Some((pass, status, figures)) = answer {
                let codes = result.as_ref().err().map(Error::codes).unwrap_or_default();
                pass.answered(status, figures, &codes);
            }
            result
        }
        .instrument(attempt_span);
        match ends {
            None => run.await,
            Some(end) => tokio::time::timeout_at(end, run)
                .await
                .unwrap_or_else(|_| Err(self.timeout(attempt))),
        }
    }

    /// Waits until the pacer lets attempt number `attempt` go.
    async fn pace(&self, pacer: &Arc<Pacer>, attempt: u32, ends: Option<Instant>) -> Result<Pass> {
        let counted = self.operation.counts_against_api_limit();
        let max_wait = self.retry.max_retry_after;
        pacer
            .admit(counted, ends, max_wait)
            .await
            .map_err(|denied| match denied {
                Denied::Deadline => self.timeout(attempt - 1),
                Denied::Exhausted(retry_after) => Error::RateLimited {
                    operation: self.operation,
                    retry_after,
                    attempts: attempt - 1,
                },
            })
    }

    /// Waits for the client's caps on pushes, unless the wait would outlast the deadline.
    async fn throttle(&self, ends: Option<Instant>) -> Result<()> {
        let Some(caps) = self.caps.filter(|_| self.operation.is_push()) else {
            return Ok(());
        };
        let now = Instant::now();
        let wait = caps.reserve(self.queue_id, self.messages, now);
        if wait.is_zero() {
            return Ok(());
        }
        let reserved = Reserved {
            caps,
            queue_id: self.queue_id,
            messages: self.messages,
        };
        if !fits(ends, wait) {
            return Err(self.timeout(0));
        }
        tracing::debug!(
            wait_ms = wait.as_millis() as u64,
            "waiting for the client's caps"
        );
        tokio::time::sleep(wait).await;
        // Waited for: the request that follows uses the reservation.
        std::mem::forget(reserved);
        Ok(())
    }

    /// The wait before trying a pull again that met "HTTP pull not enabled"
    /// within the propagation window after this client enabled it: the
    /// policy's backoff, cut to the window's end, however many retries the
    /// policy allows otherwise (the window bounds them). `None` outside it,
    /// or when the policy allows no retry at all.
    fn propagation_wait(&self, attempt: u32, error: &Error) -> Option<Duration> {
        // A policy of no retries (`RetryPolicy::none()`) means one request.
        if self.retry.max_retries == 0 {
            return None;
        }
        let until = self.pull_grace_until?;
        let left = until.checked_duration_since(Instant::now())?;
        (error.is_pull_disabled() && !left.is_zero())
            .then(|| self.retry.backoff_for(attempt).min(left))
    }

    fn timeout(&self, attempts: u32) -> Error {
        Error::Timeout {
            operation: self.operation,
            deadline: self.deadline.unwrap_or_default(),
            attempts,
            last_error: None,
        }
    }
}

/// A rate-limit reservation not used yet: given back when dropped, so a
/// call cancelled (or out of time) during its wait does not spend the
/// budget of the calls after it.
struct Reserved<'a> {
    caps: &'a ClientCaps,
    queue_id: &'a str,
    messages: usize,
}

impl Drop for Reserved<'_> {
    fn drop(&mut self) {
        self.caps.refund(self.queue_id, self.messages);
    }
}

/// Whether a wait of `wait` starting now ends before the deadline `ends`.
/// A wait too long to represent never fits a deadline.
fn fits(ends: Option<Instant>, wait: Duration) -> bool {
    match ends {
        None => true,
        Some(end) => Instant::now()
            .checked_add(wait)
            .is_some_and(|done| done < end),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ratelimit::RateLimits;

    #[cfg(feature = "metrics")]
    static TOKEN_GAUGE: ::metrics::Key =
        ::metrics::Key::from_static_name("cf_queues.client.token.remaining");

    fn push_call<'a>(caps: &'a ClientCaps, retry: &'a RetryPolicy) -> Call<'a> {
        Call {
            operation: Operation::Push,
            queue_id: "q",
            retry,
            deadline: None,
            caps: Some(caps),
            pacer: None,
            first_pass: None,
            observe: None,
            queue_refusal: QueueRefusal::Retried,
            messages: 1,
            response_cap: 1024,
            pull_grace_until: None,
            server_clock: None,
            #[cfg(feature = "metrics")]
            token_gauge: &TOKEN_GAUGE,
        }
    }

    /// Caps of one push every 10 s, and no retries.
    fn one_push_per_ten_seconds() -> (ClientCaps, RetryPolicy) {
        let caps = ClientCaps::new(RateLimits::none().push_requests(1, Duration::from_secs(10)))
            .expect("a limit");
        (caps, RetryPolicy::none())
    }

    #[tokio::test(start_paused = true)]
    async fn a_wait_cancelled_gives_its_reservation_back() {
        let (caps, retry) = one_push_per_ten_seconds();
        let call = push_call(&caps, &retry);
        call.throttle(None).await.expect("the first token is there");
        // The second push waits 10 s for its token, and is dropped after 1 s.
        let cancelled = tokio::time::timeout(Duration::from_secs(1), call.throttle(None)).await;
        assert!(cancelled.is_err(), "still waiting when dropped");
        // Its token went back: the next push waits 9 s more, not 19 s.
        let wait = caps.reserve("q", 1, Instant::now());
        assert_eq!(wait, Duration::from_secs(9));
    }

    #[tokio::test(start_paused = true)]
    async fn a_wait_that_ran_uses_its_reservation() {
        let (caps, retry) = one_push_per_ten_seconds();
        let call = push_call(&caps, &retry);
        call.throttle(None).await.expect("first");
        call.throttle(None).await.expect("after 10 s");
        assert_eq!(
            caps.reserve("q", 1, Instant::now()),
            Duration::from_secs(10)
        );
    }
}
