//! `cfq consumer`: HTTP pull enabled, changed, shown and disabled; what a
//! pull says after it is disabled; a Worker consumer shown and never
//! replaced; the help texts of the new commands.

use std::process::Command;

use cf_queues_emulator::{Emulator, EmulatorConfig, EmulatorHandle};
use serde_json::{Value, json};

use crate::support::{Run, TOKEN, cfq, run, run_with_stdin};

/// The fields of a line that are the server's to choose (ids, times),
/// replaced by their kind, so that the rest compares exactly.
fn masked(mut value: Value) -> Value {
    if let Some(consumer) = value.get_mut("consumer").and_then(Value::as_object_mut) {
        for key in ["consumer_id", "created_on"] {
            if let Some(field) = consumer.get_mut(key) {
                assert!(field.is_string(), "{key}: {field}");
                *field = json!("…");
            }
        }
    }
    value
}

/// An emulator with a Worker-consumed queue `emails` and a queue `orders`
/// without a consumer.
async fn with_a_worker() -> EmulatorHandle {
    let config = EmulatorConfig::from_toml(
        r#"
        [[queues]]
        queue_name = "emails"
        consumer = { type = "worker", script_name = "mailer" }

        [[queues]]
        queue_name = "orders"
        "#,
    )
    .expect("a valid configuration");
    Emulator::new()
        .token(TOKEN)
        .config(config)
        .start()
        .await
        .expect("emulator starts")
}

async fn consumer(emulator: &EmulatorHandle, words: &[&str]) -> Run {
    let mut command = cfq(emulator);
    command.arg("consumer").args(words);
    run(command).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_pull_is_enabled_changed_shown_and_disabled() {
    let emulator = with_a_worker().await;
    let orders = emulator.queue_id("orders").expect("declared");

    let none = consumer(&emulator, &["info", "--queue", "orders"]).await;
    none.expect_code(0);
    assert_eq!(
        none.one(),
        json!({"queue": orders, "queue_name": "orders", "http_pull": false, "consumer": null})
    );
    let people = consumer(&emulator, &["info", "-q", "orders", "--output", "table"]).await;
    assert_eq!(
        people.stdout,
        format!(
            "queue orders ({orders}): no consumer; HTTP pull is not enabled (`cfq consumer \
             enable --queue orders` enables it)\n"
        )
    );

    let enabled = consumer(
        &emulator,
        &[
            "enable",
            "-q",
            "orders",
            "--batch-size",
            "20",
            "--retry-delay",
            "10s",
            "--visibility-timeout",
            "1500ms",
        ],
    )
    .await;
    enabled.expect_code(0);
    let settings = json!({"batch_size": 20, "max_retries": 3, "retry_delay": 10, "visibility_timeout_ms": 1500});
    assert_eq!(masked(enabled.one())["consumer"]["settings"], settings);
    // Enabled already: the settings given change, the others are kept.
    let changed = consumer(&emulator, &["enable", "-q", "orders", "--max-retries", "7"]).await;
    changed.expect_code(0);
    let line = masked(changed.one());
    assert_eq!(line["action"], "updated");
    assert_eq!(line["consumer"]["settings"]["max_retries"], 7);
    assert_eq!(line["consumer"]["settings"]["batch_size"], 20);
    assert_eq!(line["consumer"]["settings"]["visibility_timeout_ms"], 1500);
    assert!(
        !changed.stderr.contains("up to a minute"),
        "not new: {changed:?}"
    );
    let table = consumer(
        &emulator,
        &[
            "enable",
            "-q",
            "orders",
            "--dead-letter-queue",
            "parked",
            "--output",
            "table",
        ],
    )
    .await;
    table.expect_code(0);
    assert_eq!(
        table.stdout,
        format!(
            "HTTP pull settings changed on queue orders ({orders})\n  batch size         20\n  \
             max retries        7\n  retry delay        10s\n  visibility timeout 1s 500ms\n  \
             dead-letter queue  parked\n"
        )
    );
    let shown = consumer(&emulator, &["info", "--queue-id", &orders]).await;
    shown.expect_code(0);
    assert_eq!(
        masked(shown.one()),
        json!({
            "queue": orders, "queue_name": "orders", "http_pull": true,
            "consumer": {
                "type": "http_pull", "consumer_id": "…", "created_on": "…",
                "dead_letter_queue": "parked",
                "settings": {"batch_size": 20, "max_retries": 7, "retry_delay": 10, "visibility_timeout_ms": 1500},
            },
        })
    );

    // Refused before anything is sent.
    let before = emulator.requests_received();
    for words in [
        ["enable", "-q", "orders", "--batch-size", "0"],
        ["enable", "-q", "orders", "--batch-size", "101"],
        ["enable", "-q", "orders", "--max-retries", "101"],
        ["enable", "-q", "orders", "--retry-delay", "25h"],
        ["enable", "-q", "orders", "--visibility-timeout", "0s"],
        ["enable", "-q", "orders", "--visibility-timeout", "13h"],
    ] {
        consumer(&emulator, &words).await.expect_code(2);
    }
    assert_eq!(emulator.requests_received(), before, "nothing was sent");

    // Disabling asks to type the name.
    let refused = run_with_stdin(
        {
            let mut command = cfq(&emulator);
            command.args(["consumer", "disable", "--queue", "orders"]);
            command
        },
        "emails\n",
    )
    .await;
    refused.expect_code(1);
    assert!(
        refused
            .stderr
            .contains("This disables HTTP pull on queue orders")
            && refused
                .stderr
                .contains("not confirmed; HTTP pull stays enabled"),
        "{refused:?}"
    );
    let still = consumer(&emulator, &["info", "-q", "orders"]).await;
    assert_eq!(still.one()["http_pull"], true);
    let disabled = run_with_stdin(
        {
            let mut command = cfq(&emulator);
            command.args(["consumer", "disable", "--queue", "orders"]);
            command
        },
        "orders\n",
    )
    .await;
    disabled.expect_code(0);
    assert_eq!(
        disabled.one(),
        json!({"queue": orders, "queue_name": "orders", "disabled": true})
    );

    // Disabled: a pull gets the 405 and the hint; an ack too.
    let mut pull = cfq(&emulator);
    pull.args(["pull", "--queue", "orders"]);
    let pulled = run(pull).await;
    pulled.expect_code(5);
    assert!(
        pulled
            .stderr
            .contains("`cfq consumer enable --queue orders` enables it"),
        "{pulled:?}"
    );
    let mut ack = cfq(&emulator);
    ack.args(["ack", "--queue", "orders", "some-lease"]);
    let acked = run(ack).await;
    acked.expect_code(5);
    assert!(
        acked.stderr.contains("cfq consumer enable --queue orders"),
        "{acked:?}"
    );
    // Nothing left to disable: no question, exit 0, said so.
    let again = consumer(&emulator, &["disable", "-q", "orders", "--output", "table"]).await;
    again.expect_code(0);
    assert_eq!(
        again.stdout,
        format!("HTTP pull was not enabled on queue orders ({orders}); nothing was changed\n")
    );
    assert!(!again.stderr.contains("Type"), "{again:?}");
    consumer(&emulator, &["enable", "-q", "orders"])
        .await
        .expect_code(0);
    let unattended = consumer(&emulator, &["disable", "-q", "orders", "--yes"]).await;
    unattended.expect_code(0);
    assert_eq!(unattended.one()["disabled"], true);

    // An unknown queue.
    consumer(&emulator, &["info", "-q", "no-such-queue"])
        .await
        .expect_code(4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_consumer_is_shown_and_never_replaced() {
    let emulator = with_a_worker().await;
    let emails = emulator.queue_id("emails").expect("declared");
    let shown = consumer(&emulator, &["info", "--queue", "emails"]).await;
    shown.expect_code(0);
    let worker = json!({
        "queue": emails, "queue_name": "emails", "http_pull": false,
        "consumer": {
            "type": "worker", "consumer_id": "…", "created_on": "…",
            "script_name": "mailer", "dead_letter_queue": null,
            "settings": {
                "batch_size": 10, "max_retries": 3, "retry_delay": 0,
                "max_concurrency": null, "max_wait_time_ms": 5000,
            },
        },
    });
    assert_eq!(masked(shown.one()), worker);
    let people = consumer(&emulator, &["info", "-q", "emails", "--output", "table"]).await;
    assert!(
        people.stdout.starts_with(&format!(
            "queue emails ({emails}): consumed by the Worker \"mailer\"; HTTP pull is not enabled"
        )),
        "{people:?}"
    );

    let refused = consumer(&emulator, &["enable", "-q", "emails", "--max-retries", "1"]).await;
    refused.expect_code(5);
    for needed in [
        "consumed by the Worker \"mailer\"",
        "nothing was changed",
        "hint: `cfq consumer info --queue emails` shows the queue's consumer",
    ] {
        assert!(refused.stderr.contains(needed), "{needed}: {refused:?}");
    }
    let kept = consumer(&emulator, &["disable", "-q", "emails"]).await;
    kept.expect_code(0);
    assert_eq!(kept.one()["disabled"], false);
    assert!(
        kept.stderr.contains("which cfq does not remove"),
        "{kept:?}"
    );
    let after = consumer(&emulator, &["info", "-q", "emails"]).await;
    assert_eq!(masked(after.one()), worker, "unchanged");
}

/// The help of every new command: exit 0, its usage, lines of at most 100
/// characters, words for each option.
#[test]
fn the_new_commands_explain_themselves() {
    for command in [
        vec!["queues"],
        vec!["queues", "list"],
        vec!["queues", "info"],
        vec!["queues", "create"],
        vec!["queues", "update"],
        vec!["queues", "delete"],
        vec!["consumer"],
        vec!["consumer", "enable"],
        vec!["consumer", "disable"],
        vec!["consumer", "info"],
    ] {
        for flag in ["--help", "-h"] {
            let output = Command::new(env!("CARGO_BIN_EXE_cfq"))
                .args(&command)
                .arg(flag)
                .output()
                .expect("cfq runs");
            assert!(output.status.success(), "{command:?} {flag}");
            let text = String::from_utf8_lossy(&output.stdout);
            assert!(
                text.contains(&format!("Usage: cfq {}", command.join(" "))),
                "{command:?}: {text}"
            );
            for line in text.lines() {
                assert!(line.chars().count() <= 100, "{command:?}: too wide: {line}");
                if flag == "-h" && line.trim_start().starts_with("--") {
                    assert!(
                        line.trim().contains("  "),
                        "{command:?}: {line:?} has no help"
                    );
                }
            }
        }
    }
    let help = |words: &[&str]| {
        let output = Command::new(env!("CARGO_BIN_EXE_cfq"))
            .args(words)
            .output()
            .expect("cfq runs");
        String::from_utf8_lossy(&output.stdout)
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    let enable = help(&["consumer", "enable", "--help"]);
    assert!(
        enable
            .contains("when it is enabled already, change the settings given and keep the others"),
        "{enable}"
    );
    let pull = help(&["pull", "-h"]);
    for flag in [
        "--queue <QUEUE>",
        "--queue-id <QUEUE_ID>",
        "--queue-name <NAME>",
    ] {
        assert!(pull.contains(flag), "{flag}: {pull}");
    }
}
