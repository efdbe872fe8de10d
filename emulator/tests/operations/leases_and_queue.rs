//! The six operations beyond push, pull, ack, peek and purge by ref, end to
//! end through our client: lease extension, preview, deleting previewed
//! messages, metrics, purging the whole queue and its status. Leases are
//! timed on tokio's paused clock, which drives the emulator's clock too.
//! Raw-HTTP checks of their codes and shapes are in `leases_and_queue_wire.rs`.

use std::time::Duration;

use cf_queues::batch::Batch;
use cf_queues::request::{PreviewedChanges, PurgeConfirmation};
use cf_queues::response::ExtendOutcome;
use cf_queues::{Acks, Message, PullOptions, PulledMessage, Queue};
use cf_queues_emulator::{Emulator, EmulatorHandle, ManualClock};
use serde_json::json;

use cf_queues_testkit::clients::queue;
use cf_queues_testkit::emulators::{START_MS, emulator_on_manual_clock, emulator_on_tokio_clock};

fn lease(seconds: u64) -> PullOptions {
    PullOptions::new()
        .batch_size(10)
        .visibility_timeout(Duration::from_secs(seconds))
}

/// Extends the leases of `messages` to `seconds` from now; the call must
/// be answered.
async fn extend(q: &Queue, messages: &[PulledMessage], seconds: u64) -> ExtendOutcome {
    let outcome = q.extend(messages, Duration::from_secs(seconds)).await;
    outcome.expect("extend")
}

/// An emulator on paused tokio time whose queue `name` holds one text
/// message, `m`.
async fn one_message(name: &str) -> (EmulatorHandle, Queue) {
    let emulator = emulator_on_tokio_clock(START_MS, |e| e).await;
    let q = queue(&emulator, name);
    q.push(Message::text("m")).await.expect("push");
    (emulator, q)
}

/// An emulator on a manual clock at [`START_MS`], its clock, and its
/// queue `name`.
async fn on_a_manual_clock(name: &str) -> (EmulatorHandle, ManualClock, Queue) {
    let (emulator, clock) = emulator_on_manual_clock(|e| e).await;
    let q = queue(&emulator, name);
    (emulator, clock, q)
}

async fn advance(by: Duration) {
    tokio::time::advance(by).await;
}

#[tokio::test(start_paused = true)]
async fn a_message_extended_twice_past_its_timeout_is_not_delivered_again() {
    let emulator = emulator_on_tokio_clock(START_MS, |e| e).await;
    let q = queue(&emulator, "work");
    q.push_batch(Batch::new([
        Message::text("acked"),
        Message::text("let go"),
    ]))
    .await
    .expect("push");
    let batch = q.pull(lease(10)).await.expect("pull");
    assert_eq!(batch.messages.len(), 2);
    assert!(batch.messages.iter().all(|m| m.attempts == 1));

    // 8 s, 16 s, 24 s after the pull: the first lease alone would have
    // ended at 10 s; each extension runs 10 s from when it is made.
    for _ in 0..2 {
        advance(Duration::from_secs(8)).await;
        let outcome = extend(&q, &batch.messages, 10).await;
        assert_eq!((outcome.extended, outcome.warnings.len()), (Some(2), 0));
    }
    advance(Duration::from_secs(8)).await;
    assert!(
        q.pull(lease(10)).await.expect("pull").messages.is_empty(),
        "still leased at 24 s"
    );
    assert!(q.peek(10).await.expect("peek").is_empty());
    assert_eq!(q.metrics().await.expect("metrics").backlog_count, 2);

    // The lease id held since the pull still acknowledges.
    let outcome = q
        .ack(Acks::new().ack(&batch.messages[0]))
        .await
        .expect("ack");
    assert_eq!((outcome.acked, outcome.warnings.len()), (Some(1), 0));
    // The other one comes back at 26 s, having used one attempt only.
    advance(Duration::from_millis(1_999)).await;
    assert!(q.pull(lease(10)).await.expect("pull").messages.is_empty());
    advance(Duration::from_millis(1)).await;
    let again = q.pull(lease(10)).await.expect("pull");
    assert_eq!(again.messages.len(), 1);
    assert_eq!(again.messages[0].body().text().expect("text"), "let go");
    assert_eq!(again.messages[0].attempts, 2, "extensions use no attempt");
    emulator.shutdown().await.expect("shutdown");
}

#[tokio::test(start_paused = true)]
async fn a_lease_expires_when_paused_tokio_time_passes_it() {
    let (emulator, q) = one_message("expiry").await;
    let first = q.pull(lease(5)).await.expect("pull");
    assert_eq!(first.messages[0].attempts, 1);
    advance(Duration::from_millis(4_999)).await;
    assert!(q.pull(lease(5)).await.expect("pull").messages.is_empty());
    advance(Duration::from_millis(1)).await;
    let second = q.pull(lease(5)).await.expect("pull");
    assert_eq!(second.messages[0].attempts, 2);
    // Sleeping moves both clocks too: the runtime jumps to the timer.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let third = q.pull(lease(5)).await.expect("pull");
    assert_eq!(third.messages[0].attempts, 3);
    emulator.shutdown().await.expect("shutdown");
}

#[tokio::test(start_paused = true)]
async fn a_stale_extension_gets_a_warning() {
    let (emulator, q) = one_message("stale").await;
    let first = q.pull(lease(1)).await.expect("pull");
    // Expired but not delivered again: the extension takes it back.
    advance(Duration::from_secs(2)).await;
    let outcome = extend(&q, &first.messages, 1).await;
    assert_eq!((outcome.extended, outcome.warnings.len()), (Some(1), 0));
    assert!(q.pull(lease(1)).await.expect("pull").messages.is_empty());
    // Expired and delivered to someone else: a warning for the old lease.
    advance(Duration::from_secs(2)).await;
    let second = q.pull(lease(30)).await.expect("pull");
    assert_eq!(second.messages.len(), 1);
    let outcome = extend(&q, &first.messages, 60).await;
    assert_eq!(outcome.extended, Some(0));
    assert_eq!(outcome.warnings.len(), 1);
    let warning = &outcome.warnings[0];
    assert_eq!(
        warning.subject.as_deref(),
        Some(first.messages[0].lease_id.as_str())
    );
    assert!(warning.message.contains("delivered again"), "{warning:?}");
    // Deleted: a warning too; the current holder's lease is untouched.
    let outcome = extend(&q, &second.messages, 60).await;
    assert_eq!(outcome.extended, Some(1));
    q.ack(Acks::new().ack(&second.messages[0]))
        .await
        .expect("ack");
    let outcome = extend(&q, &second.messages, 60).await;
    assert_eq!((outcome.extended, outcome.warnings.len()), (Some(0), 1));
    emulator.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn a_preview_leases_nothing() {
    let emulator = Emulator::new().start().await.expect("emulator starts");
    let q = queue(&emulator, "preview");
    q.push_batch(Batch::new(["a", "b", "c"].map(Message::text)))
        .await
        .expect("push");
    let previewed = q.preview(10).await.expect("preview");
    assert_eq!(previewed.len(), 3);
    assert!(previewed.iter().all(|m| m.attempts == 0));
    assert_eq!(q.preview(2).await.expect("preview").len(), 2, "batch size");
    let before = q.metrics().await.expect("metrics");

    let pulled = q.pull(lease(30)).await.expect("pull");
    let pulled_ids: Vec<_> = pulled.messages.iter().map(|m| m.id.clone()).collect();
    let previewed_ids: Vec<_> = previewed.iter().map(|m| m.id.clone()).collect();
    assert_eq!(pulled_ids, previewed_ids, "the same messages, in order");
    assert!(pulled.messages.iter().all(|m| m.attempts == 1));
    for (p, m) in previewed.iter().zip(&pulled.messages) {
        assert_eq!(p.body().text().ok(), m.body().text().ok());
        assert_eq!(p.timestamp_ms, m.timestamp_ms);
        assert_eq!(p.metadata, m.metadata);
    }
    assert_eq!(q.metrics().await.expect("metrics"), before);
    assert!(
        q.preview(10).await.expect("preview").is_empty(),
        "now leased"
    );
    // A preview id is no lease id: acking with it changes nothing.
    let outcome = q
        .delete_previewed(PreviewedChanges::new().delete(&previewed[0]))
        .await
        .expect("delete");
    assert_eq!(
        outcome.warnings.len(),
        1,
        "delivered since it was previewed"
    );
    assert_eq!(q.metrics().await.expect("metrics").backlog_count, 3);
    emulator.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn deleting_previewed_messages_is_at_once_and_metrics_stay_exact() {
    let (emulator, clock, q) = on_a_manual_clock("poison").await;
    q.push(Message::text("a")).await.expect("push");
    clock.advance(Duration::from_millis(10));
    q.push_batch(Batch::new([Message::text("bb"), Message::text("ccc")]))
        .await
        .expect("push");
    let previewed = q.preview(10).await.expect("preview");
    let changes = PreviewedChanges::new()
        .delete(&previewed[0])
        .retry_after(&previewed[2], Duration::from_secs(60));
    let outcome = q.delete_previewed(changes).await.expect("delete");
    assert!(outcome.warnings.is_empty(), "{:?}", outcome.warnings);

    let metrics = q.metrics().await.expect("metrics");
    assert_eq!(
        (
            metrics.backlog_count,
            metrics.backlog_bytes,
            metrics.oldest_message_timestamp_ms
        ),
        (2, 5, START_MS + 10),
        "gone at once, from the backlog and its oldest timestamp"
    );
    assert_eq!(emulator.dead_lettered("poison"), 0);
    let pulled = q.pull(lease(30)).await.expect("pull");
    assert_eq!(pulled.messages.len(), 1, "the retried one is delayed");
    assert_eq!(pulled.messages[0].body().text().expect("text"), "bb");
    q.ack(Acks::new().ack(&pulled.messages[0]))
        .await
        .expect("ack");
    clock.advance(Duration::from_secs(60));
    let later = q.pull(lease(30)).await.expect("pull");
    assert_eq!(later.messages[0].body().text().expect("text"), "ccc");
    assert_eq!(
        later.messages[0].attempts, 1,
        "a preview retry is no delivery"
    );

    // Used, or changed since: warnings, nothing applied.
    let outcome = q
        .delete_previewed(
            PreviewedChanges::new()
                .delete(&previewed[0])
                .delete(&previewed[2]),
        )
        .await
        .expect("delete");
    assert_eq!(outcome.warnings.len(), 2);
    assert_eq!(q.metrics().await.expect("metrics").backlog_count, 1);
    emulator.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn purging_the_whole_queue_empties_it_and_its_status_says_so() {
    let (emulator, clock, q) = on_a_manual_clock("doomed").await;
    let status = q.purge_status().await.expect("status");
    assert_eq!((status.completed, status.started_at), (Some(false), None));

    q.push(Message::text("leased")).await.expect("push");
    let leased = q.pull(lease(300)).await.expect("pull");
    q.push(Message::text("visible")).await.expect("push");
    q.push(Message::text("delayed").with_delay(Duration::from_secs(600)))
        .await
        .expect("push");
    assert_eq!(q.metrics().await.expect("metrics").backlog_count, 3);

    clock.advance(Duration::from_secs(1));
    let confirm = PurgeConfirmation::delete_messages_permanently("doomed");
    let info = q.purge_all(confirm).await.expect("purge all");
    assert_eq!(info.queue_id.as_deref(), Some("doomed"));
    assert_eq!(info.queue_name.as_deref(), Some("doomed"));
    assert_eq!(info.created_on.as_deref(), Some("2024-03-20T16:09:14.154Z"));
    assert_eq!(
        info.modified_on.as_deref(),
        Some("2024-03-20T16:09:15.154Z")
    );
    // A lax queue has one HTTP pull consumer, and no producers.
    assert_eq!(
        (info.consumers_total_count, info.producers_total_count),
        (1, 0)
    );

    let metrics = q.metrics().await.expect("metrics");
    assert_eq!(
        (
            metrics.backlog_count,
            metrics.backlog_bytes,
            metrics.oldest_message_timestamp_ms
        ),
        (0, 0, 0)
    );
    // Past the delayed message's delay, within the hour a status is kept.
    clock.advance(Duration::from_secs(3_000));
    assert!(q.pull(lease(30)).await.expect("pull").messages.is_empty());
    let outcome = q
        .ack(Acks::new().ack(&leased.messages[0]))
        .await
        .expect("ack");
    assert_eq!(
        (outcome.acked, outcome.warnings.len()),
        (Some(0), 1),
        "lease gone"
    );

    let status = q.purge_status().await.expect("status");
    assert_eq!(status.completed, Some(true));
    assert_eq!(
        status.started_at.as_deref(),
        Some("2024-03-20T16:09:15.154Z")
    );
    q.push(Message::text("after")).await.expect("push");
    assert_eq!(q.metrics().await.expect("metrics").backlog_count, 1);
    // An hour after the purge its status is forgotten.
    clock.advance(Duration::from_secs(600));
    let status = q.purge_status().await.expect("status");
    assert_eq!((status.completed, status.started_at), (Some(false), None));
    emulator.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn metrics_match_the_backlog_exactly() {
    let (emulator, clock, q) = on_a_manual_clock("counted").await;
    let empty = q.metrics().await.expect("metrics");
    assert_eq!(
        (
            empty.backlog_count,
            empty.backlog_bytes,
            empty.oldest_message_timestamp_ms
        ),
        (0, 0, 0)
    );
    q.push(Message::text("first")).await.expect("push"); // 5 bytes at +0
    clock.advance(Duration::from_millis(250));
    q.push(Message::json(&json!({"n": 1})).expect("json"))
        .await
        .expect("push"); // {"n":1}: 7 bytes at +250
    clock.advance(Duration::from_millis(250));
    q.push_batch(Batch::new([Message::text("xx"), Message::text("yyy")]))
        .await
        .expect("push"); // 5 bytes at +500
    q.push(Message::text("later").with_delay(Duration::from_secs(30)))
        .await
        .expect("push"); // 5 bytes at +500, delayed
    let expect = |count, bytes, oldest| (count, bytes, oldest);
    let got = |m: cf_queues::response::Metrics| {
        (
            m.backlog_count,
            m.backlog_bytes,
            m.oldest_message_timestamp_ms,
        )
    };
    assert_eq!(
        got(q.metrics().await.expect("metrics")),
        expect(5, 22, START_MS)
    );

    // Pulled (leased) messages are still in the backlog; acked ones leave it.
    let pulled = q
        .pull(PullOptions::new().batch_size(2))
        .await
        .expect("pull");
    assert_eq!(
        got(q.metrics().await.expect("metrics")),
        expect(5, 22, START_MS)
    );
    q.ack(
        Acks::new()
            .ack(&pulled.messages[0])
            .retry(&pulled.messages[1]),
    )
    .await
    .expect("ack");
    assert_eq!(
        got(q.metrics().await.expect("metrics")),
        expect(4, 17, START_MS + 250),
        "the oldest was acked"
    );
    assert_eq!(
        got(emulator.metrics("counted")),
        expect(4, 17, START_MS + 250)
    );
    emulator.shutdown().await.expect("shutdown");
}
