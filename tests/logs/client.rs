//! Logs and spans name the operation and the queue, and never a secret.
//! In a binary of its own: tracing caches callsite interest per process, and
//! a scoped subscriber must be the only one this process sees.
//!
//! This sees the `tracing` events of this crate and of hyper-util (which logs
//! through `tracing`); reqwest's `log` records are not captured here. None of
//! them carries header values: credentials are sensitive headers.

use cf_queues::{Message, PullOptions};
use cf_queues_emulator::{Fault, Operation};
use cf_queues_testkit::clients::{client, configured_queue, quick};
use cf_queues_testkit::emulators::emulator_with;
use cf_queues_testkit::logs::SharedLog;

const TOKEN: &str = "logging-secret-token";

#[tokio::test]
async fn logs_carry_operations_and_never_secrets() {
    let logs = SharedLog::default();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(logs.clone())
        .with_ansi(false)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let emulator = emulator_with(|e| e.token(TOKEN)).await;
    emulator.inject(Fault::status(500).only(Operation::Pull));
    let client = client(&emulator, quick());
    let queue = client.queue("logged").expect("id");
    queue.push(Message::text("x")).await.expect("push");
    queue
        .pull(PullOptions::new())
        .await
        .expect("pull after a retry");
    let queue = configured_queue(&emulator, "logged", |b| b.api_token("wrong-secret"));
    let error = queue.pull(PullOptions::new()).await.expect_err("403");

    let text = logs.text();
    assert!(text.contains("retrying"), "{text}");
    // A retry is routine (debug); a call that fails for good is a warning.
    let level_of = |needle: &str| {
        text.lines()
            .filter(|line| line.contains(needle))
            .map(|line| {
                line.split_whitespace()
                    .nth(1)
                    .unwrap_or_default()
                    .to_owned()
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(level_of("retrying"), ["DEBUG"], "{text}");
    assert_eq!(level_of("call failed"), ["WARN"], "{text}");
    assert!(
        text.contains("pull_messages") && text.contains("queue_id=logged"),
        "{text}"
    );
    for shown in [
        text,
        format!("{client:?}"),
        format!("{error} {error:?}"),
        format!("{emulator:?}"),
    ] {
        assert!(
            !shown.contains(TOKEN) && !shown.contains("wrong-secret"),
            "secret leaked: {shown}"
        );
    }
}
