//! What the `metrics` feature records, read through the facade's
//! debugging recorder. Each test sets the recorder for its own thread (a
//! `#[tokio::test]` runs its tasks, the emulator's included, on that
//! thread), so tests in parallel never see each other's figures, and no
//! global recorder is ever installed here.

use std::collections::BTreeMap;
use std::time::Duration;

use cf_queues::consumer::{Consumer, RetryDelay, Verdict};
use cf_queues::operation::Operation;
use cf_queues::producer::Producer;
use cf_queues::retry::RetryPolicy;
use cf_queues::{Message, PulledMessage};
use cf_queues_emulator::{EmulatorHandle, Fault};
use cf_queues_testkit::clients::{LONG_LEASE, client, push_texts};
use cf_queues_testkit::wait::until;
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};

use crate::support::{Running, acks_after, assert_counts, pushed, pushed_to};

/// Every figure recorded, by `name{label=value,…}` (labels sorted).
fn figures(snapshotter: &Snapshotter) -> BTreeMap<String, DebugValue> {
    snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .map(|(key, _, _, value)| {
            let key = key.key();
            let mut labels: Vec<String> = key
                .labels()
                .map(|l| format!("{}={}", l.key(), l.value()))
                .collect();
            labels.sort();
            (format!("{}{{{}}}", key.name(), labels.join(",")), value)
        })
        .collect()
}

fn counter(figures: &BTreeMap<String, DebugValue>, key: &str) -> u64 {
    match figures.get(key) {
        Some(DebugValue::Counter(n)) => *n,
        other => panic!("{key}: {other:?} in {:#?}", figures.keys()),
    }
}

fn gauge(figures: &BTreeMap<String, DebugValue>, key: &str) -> f64 {
    match figures.get(key) {
        Some(DebugValue::Gauge(v)) => v.into_inner(),
        other => panic!("{key}: {other:?} in {:#?}", figures.keys()),
    }
}

fn histogram(figures: &BTreeMap<String, DebugValue>, key: &str) -> Vec<f64> {
    match figures.get(key) {
        Some(DebugValue::Histogram(values)) => values.iter().map(|v| v.into_inner()).collect(),
        other => panic!("{key}: {other:?} in {:#?}", figures.keys()),
    }
}

/// No metric's name, label name or label value carries the emulator's
/// token or a message body.
fn assert_no_secret(figures: &BTreeMap<String, DebugValue>, emulator: &EmulatorHandle) {
    let token = emulator.token().expect("a generated token");
    for key in figures.keys() {
        assert!(!key.contains(token), "the token in {key}");
        assert!(!key.contains("body-"), "a body in {key}");
    }
}

/// m0 is acked, m1 retried in an hour, m2 fails (retried in an hour).
async fn by_body(message: PulledMessage) -> Result<Verdict, String> {
    match message.body().text() {
        Ok("body-0") => Ok(Verdict::Ack),
        Ok("body-1") => Ok(Verdict::Retry(Some(Duration::from_secs(3600)))),
        other => Err(format!("failed on {other:?}")),
    }
}

#[tokio::test]
async fn a_consumers_run_is_recorded_by_outcome() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let _recording = metrics::set_default_local_recorder(&recorder);
    let (emulator, queue) = pushed("recorded", 0).await;
    for i in 0..3 {
        queue
            .push(Message::text(format!("body-{i}")))
            .await
            .expect("push");
    }
    let running = Running::start(
        Consumer::builder(queue.clone())
            .visibility_timeout(LONG_LEASE)
            .max_lease(LONG_LEASE)
            .retry_delay(RetryDelay::fixed(Duration::from_secs(3600)))
            .instance("run"),
        by_body,
    );
    running
        .until("all settled", |s| s.acked + s.retried == 3)
        .await;
    let summary = running.finish().await;
    assert_counts!(summary, received: 3, acked: 1, retried: 2, handler_errors: 1);

    let f = figures(&snapshotter);
    let q = "messaging.destination.name=recorded";
    // A gauge is the instance's too.
    let g = format!("cf_queues.instance=run,{q}");
    assert_eq!(
        counter(&f, &format!("messaging.client.consumed.messages{{{q}}}")),
        3
    );
    for outcome in ["ack", "error", "retry"] {
        let durations = histogram(
            &f,
            &format!("messaging.process.duration{{cf_queues.outcome={outcome},{q}}}"),
        );
        assert_eq!(durations.len(), 1, "{outcome}: {durations:?}");
        assert!(durations[0] >= 0.0 && durations[0] < 5.0, "{durations:?}");
    }
    assert_eq!(
        counter(
            &f,
            &format!("cf_queues.consumer.settlements{{cf_queues.outcome=ack,{q}}}")
        ),
        1
    );
    assert_eq!(
        counter(
            &f,
            &format!("cf_queues.consumer.settlements{{cf_queues.outcome=retry,{q}}}")
        ),
        2
    );
    assert_eq!(
        counter(
            &f,
            &format!("cf_queues.consumer.pulls{{cf_queues.outcome=ok,{q}}}")
        ),
        summary.pulls
    );
    assert_eq!(
        gauge(&f, &format!("cf_queues.consumer.messages_in_flight{{{g}}}")),
        0.0
    );
    assert_eq!(
        gauge(&f, &format!("cf_queues.consumer.bytes_in_flight{{{g}}}")),
        0.0
    );
    assert_eq!(
        gauge(&f, &format!("cf_queues.consumer.pulls_in_flight{{{g}}}")),
        0.0
    );
    assert_eq!(
        gauge(&f, &format!("cf_queues.consumer.pulled_backlog{{{g}}}")),
        summary.backlog as f64
    );
    let lag = gauge(&f, &format!("cf_queues.consumer.lag{{{g}}}"));
    assert!((0.0..60.0).contains(&lag), "lag {lag}");
    assert_eq!(
        gauge(&f, &format!("cf_queues.consumer.pace{{{g}}}")),
        summary.pace as f64
    );
    // The client's figures, per operation: three pushes, the pulls, the
    // settlements (one ack call with the ack and both retries, or more).
    let push = format!("{q},messaging.operation.name=push_message");
    assert_eq!(
        counter(&f, &format!("cf_queues.client.requests{{{push}}}")),
        3
    );
    assert_eq!(
        histogram(
            &f,
            &format!("messaging.client.operation.duration{{{push}}}")
        )
        .len(),
        3
    );
    let pulls = format!("cf_queues.client.requests{{{q},messaging.operation.name=pull_messages}}");
    assert_eq!(counter(&f, &pulls), summary.pulls);
    let acks = format!("cf_queues.client.requests{{{q},messaging.operation.name=ack_messages}}");
    assert_eq!(counter(&f, &acks), summary.settle_requests);
    // Nothing failed, so no failure was recorded.
    assert!(
        !f.keys().any(|k| k.contains("error.type")),
        "{:#?}",
        f.keys()
    );
    assert_no_secret(&f, &emulator);
}

#[tokio::test]
async fn a_retry_and_a_refusal_are_recorded_with_their_codes() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let _recording = metrics::set_default_local_recorder(&recorder);
    let emulator = cf_queues_testkit::emulators::emulator().await;
    let queue = client(&emulator, RetryPolicy::default())
        .queue("refused")
        .expect("queue");
    queue.push(Message::text("body-0")).await.expect("pushed");
    emulator.inject(
        Fault::status(503)
            .cloudflare_error(15000, "Unknown internal error")
            .times(1)
            .only(Operation::Metrics),
    );
    queue.metrics().await.expect("read on the retry");
    emulator.inject(
        Fault::status(429)
            .cloudflare_error(10250, "QueueOverloaded")
            .times(1)
            .only(Operation::Pull),
    );
    let running = Running::start(
        Consumer::builder(queue)
            .visibility_timeout(LONG_LEASE)
            .max_lease(LONG_LEASE),
        acks_after(Duration::ZERO),
    );
    running.until("acked", |s| s.acked == 1).await;
    let summary = running.finish().await;
    assert_eq!(summary.refused_by_queue, 1);

    let f = figures(&snapshotter);
    let q = "messaging.destination.name=refused";
    let read = format!("{q},messaging.operation.name=get_metrics");
    // Two requests (one failed with its code), one call (that succeeded).
    assert_eq!(
        counter(
            &f,
            &format!("cf_queues.client.requests{{cloudflare.code=15000,error.type=api,{read}}}")
        ),
        1
    );
    assert_eq!(
        counter(&f, &format!("cf_queues.client.requests{{{read}}}")),
        1
    );
    assert_eq!(
        histogram(
            &f,
            &format!("messaging.client.operation.duration{{{read}}}")
        )
        .len(),
        1
    );
    let pull = format!("{q},messaging.operation.name=pull_messages");
    // The consumer answers a refusal for the queue's allowance itself: the
    // call failed, with the code.
    assert_eq!(
        counter(
            &f,
            &format!("cf_queues.client.requests{{cloudflare.code=10250,error.type=api,{pull}}}")
        ),
        1
    );
    assert_eq!(
        histogram(
            &f,
            &format!(
                "messaging.client.operation.duration{{cloudflare.code=10250,error.type=api,{pull}}}"
            )
        )
        .len(),
        1
    );
    assert_eq!(
        counter(
            &f,
            &format!("cf_queues.consumer.refusals{{cf_queues.limit=queue,{q}}}")
        ),
        1
    );
    assert_eq!(
        counter(
            &f,
            &format!("cf_queues.consumer.pulls{{cf_queues.outcome=error,{q}}}")
        ),
        summary.pull_errors
    );
    assert_no_secret(&f, &emulator);
}

#[tokio::test(start_paused = true)]
async fn a_lost_lease_is_recorded() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let _recording = metrics::set_default_local_recorder(&recorder);
    let (emulator, _clock) = cf_queues_testkit::emulators::emulator_on_tokio_time().await;
    let queue = pushed_to(&emulator, "lost", 1).await;
    let running = Running::start(
        Consumer::builder(queue)
            .visibility_timeout(Duration::from_secs(3))
            .max_lease(Duration::from_secs(3))
            .max_in_flight(1),
        acks_after(Duration::from_secs(5)),
    );
    tokio::time::sleep(Duration::from_secs(6)).await;
    let summary = running.finish().await;
    assert_eq!((summary.leases_lost, summary.max_lease_reached), (1, 1));

    let f = figures(&snapshotter);
    let q = "messaging.destination.name=lost";
    assert_eq!(
        counter(&f, &format!("cf_queues.consumer.leases.lost{{{q}}}")),
        1
    );
    assert_eq!(
        counter(&f, &format!("cf_queues.consumer.leases.max_reached{{{q}}}")),
        1
    );
    assert_eq!(
        counter(&f, &format!("cf_queues.consumer.leases.extended{{{q}}}")),
        summary.extended
    );
    assert_no_secret(&f, &emulator);
}

/// An emulator with Cloudflare's limits: every answer carries the token's
/// `Ratelimit`, which the token gauge reads.
async fn limited_emulator() -> cf_queues_emulator::EmulatorHandle {
    cf_queues_testkit::emulators::emulator_with(|emulator| {
        emulator.rate_limits(cf_queues_emulator::RateLimitModel::cloudflare())
    })
    .await
}

#[tokio::test]
async fn a_producers_batch_is_recorded() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let _recording = metrics::set_default_local_recorder(&recorder);
    let emulator = limited_emulator().await;
    let queue = cf_queues_testkit::clients::queue(&emulator, "produced");
    let producer = Producer::builder(queue)
        .linger(Duration::from_secs(60))
        .instance("batcher")
        .build()
        .expect("valid settings");
    let sends: Vec<_> = (0..5)
        .map(|i| {
            let producer = producer.clone();
            tokio::spawn(async move { producer.send(Message::text(format!("body-{i}"))).await })
        })
        .collect();
    let monitor = producer.monitor();
    until("all five taken", || monitor.snapshot().accepted == 5).await;
    let stats = producer.close().await;
    for send in sends {
        send.await.expect("task").expect("landed");
    }
    assert_eq!((stats.batches, stats.landed), (1, 5));

    let f = figures(&snapshotter);
    let q = "messaging.destination.name=produced";
    assert_eq!(
        counter(
            &f,
            &format!("messaging.client.sent.messages{{cf_queues.outcome=landed,{q}}}")
        ),
        5
    );
    assert_eq!(
        counter(&f, &format!("cf_queues.producer.batches{{{q}}}")),
        1
    );
    assert_eq!(
        histogram(&f, &format!("cf_queues.producer.batch.size{{{q}}}")),
        [5.0]
    );
    // One wait for the pacer's pass, however short.
    assert_eq!(
        histogram(&f, &format!("cf_queues.producer.budget_wait{{{q}}}")).len(),
        1
    );
    assert_eq!(
        gauge(
            &f,
            &format!("cf_queues.producer.messages_in_flight{{cf_queues.instance=batcher,{q}}}")
        ),
        0.0
    );
    assert_eq!(
        counter(
            &f,
            &format!("cf_queues.client.requests{{{q},messaging.operation.name=push_batch}}")
        ),
        1
    );
    assert_no_secret(&f, &emulator);
}

/// Handles are taken when a consumer is built: one built before the
/// recorder records nothing of its own, while the client's per-call
/// figures, looked up on each call, are recorded from then on.
#[tokio::test]
async fn a_consumer_built_before_the_recorder_stays_silent() {
    let (emulator, queue) = pushed("early", 0).await;
    push_texts(&queue, 2).await;
    let consumer = Consumer::builder(queue)
        .visibility_timeout(LONG_LEASE)
        .max_lease(LONG_LEASE)
        .build()
        .expect("valid settings");
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let _recording = metrics::set_default_local_recorder(&recorder);
    let running = Running::start(consumer, acks_after(Duration::ZERO));
    running.until("acked", |s| s.acked == 2).await;
    running.finish().await;

    let f = figures(&snapshotter);
    assert!(
        !f.keys().any(|k| k.starts_with("cf_queues.consumer.")
            || k.starts_with("messaging.client.consumed")
            || k.starts_with("messaging.process")),
        "{:#?}",
        f.keys()
    );
    assert!(
        counter(
            &f,
            "cf_queues.client.requests{messaging.destination.name=early,messaging.operation.name=ack_messages}"
        ) >= 1
    );
    drop(emulator);
}

/// Two clients on one token and two consumers of one queue, in one
/// process: each writes its own gauges, told apart by `cf_queues.instance`
/// (a name given, else a number of the process), instead of whichever
/// wrote last.
#[tokio::test]
async fn gauges_of_two_instances_are_told_apart() {
    use std::sync::Arc;
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let _recording = metrics::set_default_local_recorder(&recorder);
    let emulator = limited_emulator().await;
    let named = |name: &'static str| {
        cf_queues_testkit::clients::configured_client(&emulator, |builder| builder.instance(name))
    };
    let (a, b) = (named("orders-a"), named("orders-b"));
    let numbered = [
        cf_queues_testkit::clients::configured_client(&emulator, |builder| builder),
        cf_queues_testkit::clients::configured_client(&emulator, |builder| builder),
    ];
    for _ in 0..3 {
        let queue = a.queue("apart").expect("queue");
        queue.push(Message::text("body-a")).await.expect("pushed");
    }
    let queue_b = b.queue("apart").expect("queue");
    queue_b.push(Message::text("body-b")).await.expect("pushed");
    for client in &numbered {
        let queue = client.queue("apart").expect("queue");
        queue.push(Message::text("body-n")).await.expect("pushed");
    }
    let f = figures(&snapshotter);
    let remaining = |instance: &str| {
        gauge(
            &f,
            &format!("cf_queues.client.token.remaining{{cf_queues.instance={instance}}}"),
        )
    };
    // One token: a saw 1,197 left after its third call, b 1,196 after its
    // one call, the numbered clients 1,195 and 1,194.
    assert_eq!(
        (remaining("orders-a"), remaining("orders-b")),
        (1_197.0, 1_196.0)
    );
    let mut by_number: Vec<(String, f64)> = f
        .iter()
        .filter_map(|(key, value)| {
            let instance = key
                .strip_prefix("cf_queues.client.token.remaining{cf_queues.instance=")?
                .strip_suffix('}')?;
            let DebugValue::Gauge(value) = value else {
                return None;
            };
            instance
                .parse::<u32>()
                .is_ok()
                .then(|| (instance.to_owned(), value.into_inner()))
        })
        .collect();
    by_number.sort_by(|x, y| x.1.total_cmp(&y.1));
    assert_eq!(by_number.len(), 2, "{by_number:?}");
    assert_ne!(by_number[0].0, by_number[1].0);
    assert_eq!((by_number[0].1, by_number[1].1), (1_194.0, 1_195.0));

    // Two consumers of one queue: one holds two messages, the other one.
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let first = Running::start(
        Consumer::builder(a.queue("apart").expect("queue"))
            .visibility_timeout(LONG_LEASE)
            .max_lease(LONG_LEASE)
            .max_in_flight(2)
            .batch_size(2),
        crate::support::gated(&gate),
    );
    first.until("two held", |s| s.in_flight == 2).await;
    let second = Running::start(
        Consumer::builder(b.queue("apart").expect("queue"))
            .visibility_timeout(LONG_LEASE)
            .max_lease(LONG_LEASE)
            .max_in_flight(1)
            .batch_size(1),
        crate::support::gated(&gate),
    );
    second.until("one held", |s| s.in_flight == 1).await;
    let f = figures(&snapshotter);
    let held: Vec<(&String, f64)> = f
        .iter()
        .filter(|(key, _)| {
            key.starts_with("cf_queues.consumer.messages_in_flight{cf_queues.instance=")
                && key.ends_with(",messaging.destination.name=apart}")
        })
        .map(|(key, value)| match value {
            DebugValue::Gauge(v) => (key, v.into_inner()),
            other => panic!("{key}: {other:?}"),
        })
        .collect();
    let mut levels: Vec<f64> = held.iter().map(|(_, v)| *v).collect();
    levels.sort_by(f64::total_cmp);
    assert_eq!(levels, [1.0, 2.0], "each consumer's own level: {held:?}");
    gate.add_permits(3);
    first.until("acked", |s| s.acked == 2).await;
    second.until("acked", |s| s.acked == 1).await;
    first.finish().await;
    second.finish().await;
    assert_no_secret(&f, &emulator);
}

/// A backlog reader records the queue's gauges from its first reading on
/// (absent before it, never a default 0), hands each reading out once,
/// and reads again an interval later; a consumer with `read_backlog`
/// records the same gauges.
#[tokio::test(start_paused = true)]
async fn the_backlog_gauges_tell_the_queue_s_truth_from_the_first_reading() {
    use cf_queues::consumer::{BacklogReader, MIN_BACKLOG_INTERVAL};
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let _recording = metrics::set_default_local_recorder(&recorder);
    let (_emulator, queue) = pushed("gauged", 4).await;
    let key = |name: &str| format!("{name}{{messaging.destination.name={}}}", queue.id());
    assert!(
        !figures(&snapshotter).contains_key(&key("cf_queues.queue.backlog.messages")),
        "absent before the first reading"
    );
    let mut reader = BacklogReader::start(queue.clone(), MIN_BACKLOG_INTERVAL).expect("started");
    let first = reader.next_reading().await.expect("a reading");
    assert_eq!(first.messages, 4);
    let f = figures(&snapshotter);
    assert_eq!(gauge(&f, &key("cf_queues.queue.backlog.messages")), 4.0);
    assert_eq!(
        gauge(&f, &key("cf_queues.queue.backlog.bytes")),
        first.bytes as f64
    );
    assert!(f.contains_key(&key("cf_queues.queue.oldest_message.age")));
    queue.push(Message::text("one more")).await.expect("push");
    let started = tokio::time::Instant::now();
    let second = reader.next_reading().await.expect("a second reading");
    assert_eq!(second.messages, 5);
    assert!(started.elapsed() >= MIN_BACKLOG_INTERVAL - Duration::from_millis(100));
    assert_eq!(reader.latest(), Some(second));
    assert!(
        BacklogReader::start(queue.clone(), Duration::from_secs(1)).is_err(),
        "under the minimum interval"
    );
    drop(reader);

    let (_emulator, consumed) = pushed("gaugedconsumer", 2).await;
    let consumer = Consumer::builder(consumed.clone())
        .read_backlog(MIN_BACKLOG_INTERVAL)
        .build()
        .expect("built");
    let stop = consumer.shutdown_token();
    let running = tokio::spawn(
        consumer.run(|_m: PulledMessage| async { Ok::<_, std::convert::Infallible>(Verdict::Ack) }),
    );
    let consumed_key = format!(
        "cf_queues.queue.backlog.messages{{messaging.destination.name={}}}",
        consumed.id()
    );
    until("the consumer's backlog gauge", || {
        figures(&snapshotter).contains_key(&consumed_key)
    })
    .await;
    stop.cancel();
    running.await.expect("no panic").expect("a clean stop");
}
