//! What the consumer and the producer log and trace: OpenTelemetry-style
//! spans with the messaging attributes, a panic inside one of the
//! consumer's own tasks (injected by a subscriber), and the senders a
//! runtime shut down under the producer drops, all logged.
//!
//! Moved out of the consumer and producer tests so that each thread-local
//! subscriber is set in this binary only: tracing caches callsite interest
//! per process.

use std::time::Duration;

use cf_queues::PullOptions;
use cf_queues::consumer::{Consumer, Verdict};
use cf_queues::error::BodyError;
use cf_queues::producer::{Producer, ProducerError};
use cf_queues_emulator::{Fault, Operation};
use tokio::time::Instant;

use crate::ack_now;
use crate::support::{Running, pushed, pushed_to, spawn_sends};
use cf_queues_testkit::clients::{LONG_LEASE, queue, texts};
use cf_queues_testkit::emulators::{emulator, emulator_on_tokio_time};
use cf_queues_testkit::wait::until;

const MS: Duration = Duration::from_millis(1);
const SECOND: Duration = Duration::from_secs(1);

/// A subscriber that panics when the consumer opens a span of one name:
/// a bug inside one of the consumer's own tasks, for the tests.
struct PanicOn(&'static str);

impl tracing::Subscriber for PanicOn {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, span: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        let metadata = span.metadata();
        if metadata.name() == self.0 && metadata.target().starts_with("cf_queues::consumer") {
            panic!("injected panic in the {} span", self.0);
        }
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, _: &tracing::Event<'_>) {}
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

fn panic_text(error: tokio::task::JoinError) -> String {
    assert!(error.is_panic(), "{error}");
    let payload = error.into_panic();
    payload
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_default()
}

#[tokio::test(start_paused = true)]
async fn a_panic_in_the_acker_reaches_the_caller_instead_of_a_clean_summary() {
    // The test's runtime is current-thread: every task runs on this thread.
    let _guard = tracing::subscriber::set_default(PanicOn("settle"));
    let (emulator, queue) = pushed("ackerpanic", 3).await;
    cf_queues_testkit::logs::refresh_tracing_interest();
    let consumer = Consumer::builder(queue.clone())
        .visibility_timeout(LONG_LEASE)
        .max_lease(LONG_LEASE)
        .build()
        .expect("valid settings");
    let monitor = consumer.monitor();
    let stop = consumer.shutdown_token();
    let run = tokio::spawn(consumer.run(ack_now));
    until("handled", || monitor.snapshot().handled == 3).await;
    // The acker panics on the shutdown's flush: nothing was acked.
    stop.cancel();
    let error = run.await.expect_err("the panic is resumed");
    assert_eq!(panic_text(error), "injected panic in the settle span");
    assert_eq!(monitor.snapshot().acked, 0);
    assert_eq!(emulator.metrics("ackerpanic").backlog_count, 3);
}

#[tokio::test(start_paused = true)]
async fn a_panic_in_the_lease_keeper_stops_the_consumer_and_reaches_the_caller() {
    let _guard = tracing::subscriber::set_default(PanicOn("extend"));
    let (emulator, _clock) = emulator_on_tokio_time().await;
    let queue = pushed_to(&emulator, "keeperpanic", 1).await;
    cf_queues_testkit::logs::refresh_tracing_interest();
    let consumer = Consumer::builder(queue.clone())
        .visibility_timeout(Duration::from_secs(3))
        .grace_period(Duration::from_secs(5))
        .build()
        .expect("valid settings");
    let started = Instant::now();
    let run = tokio::spawn(consumer.run(|_message| async {
        tokio::time::sleep(Duration::from_secs(60)).await;
        Ok::<_, BodyError>(Verdict::Ack)
    }));
    // Nobody cancels the token: the keeper's panic at its first extension
    // (2 s) stops the consumer, which gives the handler its grace period.
    let ended = tokio::time::timeout(Duration::from_secs(30), run)
        .await
        .expect("the consumer stopped on its own");
    let error = ended.expect_err("the panic is resumed");
    assert_eq!(panic_text(error), "injected panic in the extend span");
    assert_eq!(started.elapsed(), Duration::from_secs(7), "2 s + grace");
    // The acker still worked: the message was released, not left to expire.
    let back = queue
        .pull(PullOptions::new().batch_size(10))
        .await
        .expect("pull");
    let attempts: Vec<u32> = back.messages.iter().map(|m| m.attempts).collect();
    assert_eq!(attempts, [2]);
}

#[tokio::test(start_paused = true)]
async fn the_extend_span_carries_the_messaging_attributes() {
    let (log, _guard) = cf_queues_testkit::logs::capture_spans();
    let (emulator, _clock) = emulator_on_tokio_time().await;
    let queue = pushed_to(&emulator, "spanned", 1).await;
    cf_queues_testkit::logs::refresh_tracing_interest();
    let consumer = Consumer::builder(queue.clone())
        .visibility_timeout(Duration::from_secs(3))
        .build()
        .expect("valid settings");
    let running = Running::start(consumer, |_message| async {
        // One extension, 2 s after the pull.
        tokio::time::sleep(Duration::from_millis(2_500)).await;
        Ok::<_, BodyError>(Verdict::Ack)
    });
    tokio::time::sleep(Duration::from_secs(3)).await;
    let s = running.finish().await;
    assert_eq!((s.extended, s.acked), (1, 1));
    let text = log.text();
    let extend: Vec<&str> = text
        .lines()
        .filter(|l| l.contains(" extend{") && l.contains(": cf_queues::consumer::"))
        .filter(|l| l.contains(": close "))
        .collect();
    assert_eq!(extend.len(), 1, "{text}");
    for attribute in [
        "otel.name=extend spanned",
        "messaging.system=\"cloudflare_queues\"",
        "messaging.destination.name=\"spanned\"",
        "messaging.operation.type=\"extend\"",
        "messaging.batch.message_count=1",
    ] {
        assert!(
            extend[0].contains(attribute),
            "{attribute} in {}",
            extend[0]
        );
    }
}

#[tokio::test(start_paused = true)]
async fn spans_follow_the_opentelemetry_messaging_conventions() {
    // The test's runtime is current-thread: every task logs on this thread.
    let (log, _guard) = cf_queues_testkit::logs::capture_spans();

    let (_emulator, queue) = pushed("traced", 2).await;
    // Flushed by size only: paused time may jump while loopback I/O is
    // pending, and an interval flush between the two acks would make two
    // settle spans.
    cf_queues_testkit::logs::refresh_tracing_interest();
    let consumer = Consumer::builder(queue.clone())
        .ack_batch_size(2)
        .ack_interval(Duration::from_secs(3600))
        .build()
        .expect("settings");
    let running = Running::start(consumer, ack_now);
    running
        .eventually("acked", MS, SECOND, |s| s.acked == 2)
        .await;
    running.finish().await;

    let text = log.text();
    let closed = |name: &str| -> Vec<String> {
        // The span closing is the last of the line's chain: the consumer's
        // own, not the client call it contains.
        text.lines()
            .filter(|l| l.contains(&format!(" {name}{{")))
            .filter(|l| l.contains(": cf_queues::consumer::") && l.contains(": close "))
            .map(str::to_owned)
            .collect()
    };
    let common = [
        "messaging.system=\"cloudflare_queues\"",
        "messaging.destination.name=\"traced\"",
    ];
    let receive = closed("receive");
    assert!(
        receive
            .iter()
            .any(|l| l.contains("messaging.batch.message_count=2")),
        "{text}"
    );
    let process = closed("process");
    assert_eq!(process.len(), 2, "{text}");
    let settle = closed("settle");
    assert_eq!(settle.len(), 1, "{text}");
    assert!(
        settle[0].contains("messaging.batch.message_count=2"),
        "{text}"
    );
    for (lines, kind) in [
        (&receive, "receive"),
        (&process, "process"),
        (&settle, "settle"),
    ] {
        for line in lines {
            for attribute in common {
                assert!(line.contains(attribute), "{line}");
            }
            let operation = format!("messaging.operation.type=\"{kind}\"");
            assert!(line.contains(&operation), "{line}");
            let name = format!("otel.name={kind} traced ");
            assert!(line.contains(&name), "{line}");
        }
    }
}

#[test]
fn a_runtime_shut_down_under_the_producer_drops_every_sender_and_logs_them_all() {
    use tokio::runtime::Builder;
    let outer = Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    outer.block_on(async {
        let emulator = emulator().await;
        // The batch on its way never gets an answer.
        emulator.inject(Fault::stall_only(Duration::from_secs(3600)).only(Operation::Batch));
        let queue = queue(&emulator, "abandoned");

        // The producer runs on a runtime of its own, on a thread whose
        // logs the test reads; the senders and the emulator run here.
        let log = cf_queues_testkit::logs::SharedLog::default();
        let writer = log.clone();
        let (handle_sender, handle) = std::sync::mpsc::channel();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let subscriber = tracing_subscriber::fmt()
                .with_writer(writer)
                .with_ansi(false)
                .finish();
            let _guard = tracing::subscriber::set_default(subscriber);
            let runtime = Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            handle_sender
                .send(runtime.handle().clone())
                .expect("handle sent");
            runtime.block_on(async {
                let _ = stopped.await;
            });
            // Its tasks, the producer's among them, are dropped here.
            drop(runtime);
        });
        let handle = handle.recv().expect("the producer's runtime");
        let producer = {
            let _entered = handle.enter();
            Producer::builder(queue)
                .linger(Duration::from_secs(3600))
                .build()
                .expect("settings")
        };
        let sends = spawn_sends(&producer, texts(150));
        // Another thread does the work: wait on the wall clock, unpaused.
        for _ in 0..10_000 {
            let stats = producer.stats();
            if stats.accepted == 150 && emulator.requests_received() == 1 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        // 100 in a batch on its way, 50 in the open batch.
        let stats = producer.stats();
        assert_eq!(
            (stats.accepted, stats.batches, stats.in_flight),
            (150, 1, 100)
        );
        stop.send(()).expect("the runtime waits");
        tokio::task::spawn_blocking(move || thread.join())
            .await
            .expect("joined")
            .expect("the producer's thread ended");
        let mut may_have_landed = 0;
        for send in sends {
            match send.await.expect("task") {
                Err(error @ ProducerError::Dropped { .. }) => {
                    may_have_landed += usize::from(error.may_have_landed());
                }
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(
            may_have_landed, 100,
            "the batch on its way may have landed; the open batch was not sent"
        );
        let text = log.text();
        assert!(
            text.contains("messages=150 in_flight=100"),
            "every message without an outcome is counted: {text}"
        );
    });
}
