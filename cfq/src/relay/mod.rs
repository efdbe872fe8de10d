//! `cfq relay`: the consumer runtime with a handler that POSTs each
//! message to an HTTP service (`--to`), for services in any language.
//!
//! | part | file |
//! |---|---|
//! | the message as a request (body, `Cfq-*` headers) | `request.rs` |
//! | `--batch`: records packed in requests, and what a 2xx answer retries | `batch.rs` |
//! | the service's URL, headers, signature and HTTP client | `endpoint.rs` |
//! | what an answer means (the table) | `answer.rs` |
//! | the pause every POST passes while the service is down | `gate.rs` |
//! | what the consumer's handlers do (`--max-age`, one or a batch) | `handle.rs` |
//! | one request's way, to its messages' verdicts | `deliver.rs` |
//! | counters, failure lines, the summary | `report.rs` |
//! | `--listen`: `/healthz`, `/readyz`, `/metrics` | `listen.rs` |
//!
//! Defaults and why (the flags' own defaults are in `args/relay.rs`):
//!
//! | setting | default | why |
//! |---|---|---|
//! | `--concurrency` | 16 | POSTs at once; each waiting message holds a lease others cannot take |
//! | `--timeout` | 10 s | Pub/Sub push's default; fits the shutdown's bound |
//! | `--hold` | 10 min | a service down for minutes costs no attempt; well under the hour of a consumer's `max_lease` |
//! | `--retry-delay` | 1 s doubling to 5 min | the consumer runtime's |
//! | `--backoff` | 1 s doubling to 30 s | the consumer runtime's `error_backoff` |
//! | `--max-pause` | 60 s | the client's cap on a server's `Retry-After` |
//! | `--visibility` | 30 s | Cloudflare's default; extended while a message is held |
//! | `--grace` | 15 s, or `--timeout` + 1 s | a POST started before the signal ends within it; with the 10 s flush, within Kubernetes' 30 s |
//! | leased at most | `--concurrency` + what a round trip brings at the queue's 4,900/s (at least `--concurrency`, at most 1,000 more) | slots wait full, not thousands hidden from other replicas |
//! | slot wait | `--timeout` × ⌈(leased at most − `--concurrency`) ÷ `--concurrency`⌉, at least `--timeout` | how long a message may wait for a POST slot while the service answers: every POST ahead of it taking all of `--timeout`; a message that waited `--hold` + this in all is retried |
//! | `max_lease` | `--hold` + slot wait + `--timeout` + `--visibility` | every message is settled while its lease is kept |
//! | a lease too short | `--visibility` under 8 round trips to the API (measured at start) | said at start: the library extends a lease 4 round trips before it ends, at most half a lease |
//! | `--batch-bytes` | 1 MiB | nginx's default `client_max_body_size` |
//! | a batch answer read | 64 KiB | a retry list of 100 long ids, many times over |
//! | `--backlog-interval` | 30 s (5 s to 1 h), with `--listen` only | the backlog gauges of `/metrics`: 10 calls of the token's 1,200 in five minutes, as often as KEDA looks |

mod answer;
mod batch;
mod deliver;
mod endpoint;
mod gate;
mod handle;
mod listen;
mod report;
mod request;

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use cf_queues::consumer::{
    BacklogReader, CancellationToken, Consumer, ConsumerError, RetryDelay, Summary,
};
use tokio::sync::Semaphore;
use tokio::time::Instant;

use crate::args::RelayArgs;
use crate::exit::{Code, Failure};
use crate::session::Session;
use crate::signals::Interrupts;
use crate::stderr::note;
use deliver::Relay;
use endpoint::Endpoint;
use gate::Gate;
use report::{Lines, RelayCounters, RelaySummary};
use request::QueueNames;

/// The grace period's floor after SIGTERM.
const MIN_GRACE: Duration = Duration::from_secs(15);

/// What the leased-at-most sizing assumes one replica pulls at most: the
/// consumer's default share of the queue's allowance.
const PULLED_PER_SECOND: f64 = 4_900.0;

/// The most messages leased beyond `--concurrency` by default.
const MAX_BUFFERED: u32 = 1_000;

pub async fn relay(session: &Session, args: &RelayArgs) -> Result<Code, Failure> {
    let endpoint = Endpoint::new(args)?;
    let grace = args
        .grace
        .unwrap_or(MIN_GRACE.max(args.timeout.saturating_add(Duration::from_secs(1))));
    // The exporter goes in before the consumer exists, so that every figure
    // of the consumer's is recorded from its first pull.
    let prometheus = match args.listen {
        Some(_) => Some(crate::prometheus::install()?),
        None => None,
    };
    // One call before the start line: the credentials and the queue are
    // checked (exit 3 or 4), and its time sizes what is leased at once.
    let asked = Instant::now();
    let backlog = session.answer(session.queue.metrics().await)?;
    let round_trip = asked.elapsed();
    // The backlog gauges of /metrics, from this first reading on: the
    // queue's truth even while nothing is pulled (--wait-for-target).
    let _backlog = match args.listen {
        Some(_) => Some(
            BacklogReader::start_seeded(
                session.queue.clone(),
                args.backlog_interval,
                backlog,
                std::time::SystemTime::now(),
            )
            .map_err(Failure::usage)?,
        ),
        None => None,
    };
    let name = match session.queue.name() {
        Some(name) => Some(name.to_owned()),
        None => session
            .queue
            .info()
            .await
            .ok()
            .and_then(|info| info.queue_name),
    };
    let (max_in_flight, batch_size) = leased_at_most(args, round_trip);
    let slot_wait = slot_wait(args, max_in_flight);
    if let Some(warning) = lease_too_short(args, round_trip) {
        note(warning);
    }
    let stopping = CancellationToken::new();
    let gate = if args.wait_for_target {
        Gate::closed(args.backoff, args.max_pause)
    } else {
        Gate::new(args.backoff, args.max_pause)
    };
    let relay = Arc::new(Relay {
        gate,
        slots: Semaphore::new(args.concurrency as usize),
        queue: QueueNames {
            id: session.queue.id().to_owned(),
            name: name.clone(),
        },
        hold: args.hold,
        slot_wait,
        retry_delay: retry_delay(args),
        stopping: stopping.clone(),
        counters: RelayCounters::default(),
        lines: Lines::default(),
        endpoint,
        batch: args.batch.map(|n| {
            let bytes = usize::try_from(args.batch_bytes).unwrap_or(usize::MAX);
            (n as usize, bytes)
        }),
        max_age: args.max_age.map(|age| (age, args.max_age_action)),
        waiting_for_target: AtomicBool::new(args.wait_for_target),
    });
    let poisoned = Arc::clone(&relay);
    let consumer = Consumer::builder(session.queue.clone())
        .visibility_timeout(args.visibility)
        .batch_size(batch_size)
        .max_in_flight(max_in_flight as usize)
        .retry_delay(relay.retry_delay)
        .max_lease(
            args.hold
                .saturating_add(slot_wait)
                .saturating_add(args.timeout)
                .saturating_add(args.visibility),
        )
        .grace_period(grace)
        .shutdown_token(stopping.clone())
        .on_poison(move |message, _why| {
            let relay = Arc::clone(&poisoned);
            async move { handle::undecodable(&relay, &message).await }
        })
        .build()
        .map_err(Failure::usage)?;
    let switch = consumer.pull_switch();
    let mut background = Vec::new();
    if let (Some(address), Some(prometheus)) = (args.listen, prometheus) {
        let health = listen::Health {
            relay: Arc::clone(&relay),
            switch: switch.clone(),
            stopping: stopping.clone(),
            prometheus,
        };
        background.push(AbortOnDrop(tokio::spawn(
            listen::serve(address, health).await?,
        )));
    }
    let gate_keeper = Arc::clone(&relay);
    background.push(AbortOnDrop(tokio::spawn(async move {
        gate_keeper.gate.drive(switch).await;
    })));
    if args.wait_for_target {
        let waiter = Arc::clone(&relay);
        let every = args.backoff.min.max(Duration::from_millis(100));
        background.push(AbortOnDrop(tokio::spawn(async move {
            wait_for_target(&waiter, every).await;
        })));
    }
    let monitor = consumer.monitor();
    let mut interrupts = Interrupts::watch()?;
    let queue_shown = match &name {
        Some(name) if name != session.queue.id() => format!("{name} ({})", session.queue.id()),
        _ => session.queue.id().to_owned(),
    };
    note(format_args!(
        "relaying {queue_shown} to {}: {} POSTs at once, {max_in_flight} messages leased at \
         most, timeout {}, hold {}; SIGTERM or Ctrl-C stops",
        relay.endpoint.shown(),
        args.concurrency,
        humantime::format_duration(args.timeout),
        humantime::format_duration(args.hold),
    ));
    let handled = Arc::clone(&relay);
    let mut run: std::pin::Pin<Box<dyn Future<Output = _> + Send>> = match args.batch {
        None => Box::pin(consumer.run(move |message| {
            let relay = Arc::clone(&handled);
            async move { Ok::<_, Infallible>(handle::one(&relay, &message).await) }
        })),
        Some(_) => Box::pin(consumer.run_batch(move |messages| {
            let relay = Arc::clone(&handled);
            async move { Ok::<_, Infallible>(handle::many(&relay, &messages).await) }
        })),
    };
    let ended = tokio::select! {
        ended = &mut run => ended,
        () = interrupts.reached(1) => {
            stopping.cancel();
            note(format_args!(
                "{}: stopping; the POSTs in flight get {} to finish, the waiting messages go \
                 back to the queue (a second signal stops at once)",
                interrupts.first().unwrap_or("a signal"),
                humantime::format_duration(grace),
            ));
            tokio::select! {
                ended = &mut run => ended,
                () = interrupts.reached(2) => {
                    cut_short(&relay, &monitor.snapshot());
                    return Ok(Code::Partial);
                }
            }
        }
    };
    let stopped_by = interrupts.first();
    match ended {
        Ok(summary) => {
            RelaySummary::new(session.queue.id(), &relay.counters, &summary, stopped_by)
                .print(session.out)?;
            if summary.unflushed > 0 {
                note(format_args!(
                    "{} acks or retries were not sent before the stop: those messages come back \
                     after their leases expire, and may be delivered again",
                    summary.unflushed
                ));
                return Ok(Code::Partial);
            }
            Ok(Code::Ok)
        }
        Err(ConsumerError::Stopped { error, summary }) => {
            RelaySummary::new(session.queue.id(), &relay.counters, &summary, stopped_by)
                .print(session.out)?;
            Err(session.fail(&error))
        }
        Err(other) => Err(Failure::local(format_args!("the relay stopped: {other}"))),
    }
}

/// A task that ends with the relay, however it returns.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// `--wait-for-target`: asks the service every `every` until it answers,
/// then opens the gate (and so the pulls).
async fn wait_for_target(relay: &Relay, every: Duration) {
    let mut asked = 0u64;
    while !relay.endpoint.answers().await {
        asked += 1;
        if asked == 1 || asked.is_multiple_of(100) {
            note(format_args!(
                "waiting for the service to answer before pulling ({asked} tries so far)"
            ));
        }
        tokio::time::sleep(every).await;
    }
    relay.waiting_for_target.store(false, Ordering::Relaxed);
    relay.gate.open();
    if asked > 0 {
        note("the service answers: pulling");
    }
}

/// `--retry-delay` as the consumer's policy.
fn retry_delay(args: &RelayArgs) -> RetryDelay {
    let span = args.retry_delay;
    if span.min == span.max {
        RetryDelay::fixed(span.min)
    } else {
        RetryDelay::exponential(span.min, span.max)
    }
}

/// The most messages leased at once, and the pull size: `--concurrency`
/// for the POSTs, and beyond them what one round trip of pulls brings at
/// the queue's pace, so that the POST slots never wait for a pull, and no
/// more (each leased message is hidden from other replicas).
fn leased_at_most(args: &RelayArgs, round_trip: Duration) -> (u32, u32) {
    let concurrency = args.concurrency;
    let max_in_flight = args.max_in_flight.unwrap_or_else(|| {
        let brought = (PULLED_PER_SECOND * round_trip.as_secs_f64()).ceil() as u32;
        concurrency + brought.clamp(concurrency.min(MAX_BUFFERED), MAX_BUFFERED)
    });
    let beyond = max_in_flight.saturating_sub(concurrency);
    let batch_size = if beyond == 0 { max_in_flight } else { beyond };
    (max_in_flight, batch_size.clamp(1, 100))
}

/// How long a message may wait for a POST slot while the service answers,
/// beyond `--hold`: the slots' POSTs ahead of it, each up to `--timeout`
/// (the semaphore is first come, first served). At least one `--timeout`.
fn slot_wait(args: &RelayArgs, max_in_flight: u32) -> Duration {
    let beyond = max_in_flight.saturating_sub(args.concurrency);
    let rounds = beyond.div_ceil(args.concurrency.max(1)).max(1);
    args.timeout.saturating_mul(rounds)
}

/// The lease the library needs to keep a message across POSTs: it extends
/// a lease 4 round trips before it ends, at most half a lease before, so
/// `--visibility` under 8 round trips leaves an extension little room, and
/// a POST longer than the lease depends on each one landing in time. Said
/// at start, without `-v`.
fn lease_too_short(args: &RelayArgs, round_trip: Duration) -> Option<String> {
    let wanted = round_trip.saturating_mul(8);
    (args.visibility < wanted).then(|| {
        format!(
            "warning: --visibility {} is short for the {} round trip to the API measured at \
             start: a lease is extended at most {} before it ends, and a POST (up to --timeout \
             {}) outlives it only if every extension lands in time; a lost lease delivers the \
             message again while its POST runs. Set --visibility to {} or more",
            humantime::format_duration(args.visibility),
            humantime::format_duration(millis(round_trip)),
            humantime::format_duration(millis(args.visibility / 2)),
            humantime::format_duration(args.timeout),
            humantime::format_duration(Duration::from_secs(wanted.as_secs() + 1)),
        )
    })
}

/// `d` to the millisecond, for a line.
fn millis(d: Duration) -> Duration {
    Duration::from_millis(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// A second signal: what is left behind, said before exiting at once.
fn cut_short(relay: &Relay, summary: &Summary) {
    let posting = relay.counters.posting.load(Ordering::Relaxed);
    note(format_args!(
        "stopped at once: {posting} POSTs cut off (the service may have them: they will be \
         delivered again); {} messages still leased come back after their leases expire (up to \
         the visibility timeout); acks and retries not yet sent are lost with them",
        summary.in_flight
    ));
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser as _;

    fn args(line: &str) -> RelayArgs {
        #[derive(clap::Parser)]
        struct Wrapper {
            #[command(flatten)]
            relay: RelayArgs,
        }
        let words = std::iter::once("relay").chain(line.split_whitespace());
        Wrapper::try_parse_from(words).expect("valid").relay
    }

    #[test]
    fn the_slot_wait_covers_every_post_ahead() {
        let s = Duration::from_secs;
        let relay = args("--to http://x/");
        // 490 leased beyond 16 slots: 31 rounds of POSTs of up to 10 s.
        assert_eq!(slot_wait(&relay, 16 + 490), s(310));
        assert_eq!(slot_wait(&relay, 16), s(10), "at least one --timeout");
        let one = args("--to http://x/ --concurrency 1 --timeout 2s");
        assert_eq!(slot_wait(&one, 6), s(10));
        // The consumer keeps each lease past the longest wait and POST.
        let huge = args("--to http://x/ --concurrency 1 --timeout 1h --max-in-flight 100000");
        assert_eq!(slot_wait(&huge, 100_000), s(3_600 * 99_999));
    }

    #[test]
    fn a_lease_under_eight_round_trips_is_said() {
        let ms = Duration::from_millis;
        let short = args("--to http://x/ --visibility 1s --timeout 6s");
        let said = lease_too_short(&short, ms(400)).expect("said");
        assert!(said.starts_with("warning: --visibility 1s is short for the 400ms round trip"));
        assert!(said.ends_with("Set --visibility to 4s or more"), "{said}");
        assert_eq!(lease_too_short(&short, ms(100)), None);
        assert_eq!(lease_too_short(&args("--to http://x/"), ms(300)), None);
    }

    #[test]
    fn leased_at_most_follows_the_round_trip_within_bounds() {
        let ms = Duration::from_millis;
        let relay = args("--to http://x/");
        assert_eq!(leased_at_most(&relay, ms(1)), (32, 16));
        assert_eq!(leased_at_most(&relay, ms(100)), (16 + 490, 100));
        assert_eq!(leased_at_most(&relay, ms(5_000)), (16 + 1_000, 100));
        let one = args("--to http://x/ --concurrency 1");
        assert_eq!(leased_at_most(&one, ms(1)), (1 + 5, 5));
        let set = args("--to http://x/ --concurrency 4 --max-in-flight 4");
        assert_eq!(leased_at_most(&set, ms(100)), (4, 4));
    }
}
