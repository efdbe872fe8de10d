//! `cfq consumer` and the path from nothing: `cfq emulator --config`, a
//! queue created, HTTP pull enabled, messages pushed and pulled, all by
//! name; what a pull says before HTTP pull is enabled and after it is
//! disabled; a Worker consumer shown and never replaced; the help texts of
//! the new commands.

use std::process::Command;
use std::time::Duration;

use cf_queues_emulator::EmulatorHandle;
use serde_json::{Value, json};

use crate::support::{
    Run, Served, cfq, emulator_from_toml, queue_names, run, run_cfq, run_cfq_typing, temp_dir,
};

async fn cfq_run(mut command: Command, words: &[&str]) -> Run {
    command.args(words);
    run(command).await
}

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn from_nothing_to_a_running_consumer_by_name() {
    let dir = temp_dir("from-nothing");
    let config = dir.join("account.toml");
    std::fs::write(
        &config,
        r#"
        [[queues]]
        queue_name = "emails"
        queue_id = "e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1"
        consumer = { type = "worker", script_name = "mailer" }

        [[queues]]
        queue_name = "audit"
        "#,
    )
    .expect("write");
    // Strict: only the declared queues and those the API creates exist.
    let served = Served::start(&["--config".as_ref(), config.as_os_str(), "--strict".as_ref()]);
    assert_eq!(served.queues.len(), 2, "{:?}", served.queues);
    assert_eq!(
        served.queues[0],
        (
            "emails".to_owned(),
            "e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1".to_owned()
        )
    );
    assert_eq!(served.queues[1].0, "audit");
    assert_eq!(served.queues[1].1.len(), 32, "a fresh id");

    let created = cfq_run(served.cfq(), &["queues", "create", "orders"]).await;
    created.expect_code(0);
    let id = created.one()["queue_id"]
        .as_str()
        .expect("an id")
        .to_owned();

    // Before HTTP pull is enabled: the API's 405 (exit 5), and the hint.
    let early = cfq_run(served.cfq(), &["pull", "--queue", "orders"]).await;
    early.expect_stderr_all(
        5,
        &[
            "HTTP 405",
            "hint: HTTP pull is not enabled on queue orders: `cfq consumer enable --queue orders` \
         enables it (or `wrangler queues consumer http add orders`",
        ],
    );

    let enabled = cfq_run(
        served.cfq(),
        &[
            "consumer",
            "enable",
            "--queue",
            "orders",
            "--max-retries",
            "2",
            "--dead-letter-queue",
            "orders-dlq",
        ],
    )
    .await;
    enabled.expect_code(0);
    assert_eq!(
        masked(enabled.one()),
        json!({
            "queue": id, "queue_name": "orders", "http_pull": true, "action": "enabled",
            "consumer": {
                "type": "http_pull", "consumer_id": "…", "created_on": "…",
                "dead_letter_queue": "orders-dlq",
                "settings": {"batch_size": 5, "max_retries": 2, "retry_delay": 0, "visibility_timeout_ms": 30_000},
            },
        })
    );
    assert!(enabled.stderr.contains("up to a minute"), "{enabled:?}");

    let pushed = cfq_run(served.cfq(), &["push", "--queue", "orders", "hello"]).await;
    pushed.expect_code(0);
    assert_eq!(pushed.one(), json!({"pushed": 1, "queue": id}));
    // Two deliveries, the lease running out each time: then the message is
    // out of retries, and on the dead-letter queue, named.
    for attempt in 1..=2 {
        let pulled = cfq_run(
            served.cfq(),
            &["pull", "--queue", "orders", "--visibility", "300ms"],
        )
        .await;
        let message = pulled.expect_code(0).one();
        assert_eq!(
            (&message["body"], &message["attempts"]),
            (&json!("hello"), &json!(attempt))
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    let left = cfq_run(served.cfq(), &["peek", "--queue", "orders"]).await;
    left.expect_code(0);
    assert_eq!(left.stdout, "");
    let parked = cfq_run(served.cfq(), &["peek", "--queue", "orders-dlq"]).await;
    parked.expect_code(0);
    assert_eq!(parked.one()["body"], "hello");

    // The id that create printed, as CFQ_QUEUE.
    let mut by_env = served.cfq();
    by_env.env("CFQ_QUEUE", &id);
    let metrics = cfq_run(by_env, &["metrics"]).await;
    metrics.expect_code(0);
    assert_eq!(metrics.one()["queue"], id.as_str());
    // Strict: a value that is neither a name nor a declared id is unknown.
    let stray = cfq_run(served.cfq(), &["push", "--queue", "jobs", "x"]).await;
    stray.expect_code(4);
    served.stop();
}

/// An emulator with a Worker-consumed queue `emails` and a queue `orders`
/// without a consumer.
async fn with_a_worker() -> EmulatorHandle {
    emulator_from_toml(
        r#"
        [[queues]]
        queue_name = "emails"
        consumer = { type = "worker", script_name = "mailer" }

        [[queues]]
        queue_name = "orders"
        "#,
    )
    .await
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
    assert_eq!(
        none.expect_code(0).one(),
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
    let refused = run_cfq_typing(&emulator, "consumer disable --queue orders", "emails\n").await;
    refused.expect_stderr(1, "This disables HTTP pull on queue orders");
    refused.expect_stderr(1, "not confirmed; HTTP pull stays enabled");
    let still = consumer(&emulator, &["info", "-q", "orders"]).await;
    assert_eq!(still.one()["http_pull"], true);
    let disabled = run_cfq_typing(&emulator, "consumer disable --queue orders", "orders\n").await;
    disabled.expect_code(0);
    assert_eq!(
        disabled.one(),
        json!({"queue": orders, "queue_name": "orders", "disabled": true})
    );

    // Disabled: a pull gets the 405 and the hint; an ack too.
    let pulled = run_cfq(&emulator, ["pull", "--queue", "orders"]).await;
    pulled.expect_stderr(5, "`cfq consumer enable --queue orders` enables it");
    let acked = run_cfq(&emulator, ["ack", "--queue", "orders", "some-lease"]).await;
    acked.expect_stderr(5, "cfq consumer enable --queue orders");
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

/// A dead-letter queue given by its id is set by its name, which is what
/// the API takes: `--dead-letter-queue <id>` once sent the id as a name, and
/// a new queue named after it was created to receive the dead letters.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_letter_queue_given_by_its_id_is_set_by_its_name() {
    let emulator = emulator_from_toml(
        r#"
        [[queues]]
        queue_name = "orders"

        [[queues]]
        queue_name = "parked"
        "#,
    )
    .await;
    let parked = emulator.queue_id("parked").expect("declared");
    assert!(
        parked.len() == 32 && parked.bytes().all(|b| b.is_ascii_hexdigit()),
        "{parked}"
    );
    let queues = queue_names(&emulator).await;
    let dead_letter_queue = |run: &Run| run.one()["consumer"]["dead_letter_queue"].clone();

    let by_id = consumer(
        &emulator,
        &["enable", "-q", "orders", "--dead-letter-queue", &parked],
    )
    .await;
    by_id.expect_code(0);
    assert_eq!(dead_letter_queue(&by_id), "parked");
    assert_eq!(queue_names(&emulator).await, queues, "a queue was created");

    let forced = consumer(
        &emulator,
        &["enable", "-q", "orders", "--dead-letter-queue-id", &parked],
    )
    .await;
    forced.expect_code(0);
    assert_eq!(dead_letter_queue(&forced), "parked");
    let batch_size = forced.one()["consumer"]["settings"]["batch_size"].clone();

    // An id no queue has: nothing is changed, nothing created.
    let ghost = "0123456789abcdef0123456789abcdef";
    let unknown = consumer(
        &emulator,
        &[
            "enable",
            "-q",
            "orders",
            "--dead-letter-queue-id",
            ghost,
            "--batch-size",
            "9",
        ],
    )
    .await;
    unknown.expect_stderr(
        4,
        &format!("no queue has the id {ghost} given as the dead-letter queue"),
    );
    let info = consumer(&emulator, &["info", "-q", "orders"]).await;
    assert_eq!(dead_letter_queue(&info), "parked");
    assert_eq!(info.one()["consumer"]["settings"]["batch_size"], batch_size);
    assert_ne!(batch_size, json!(9));
    assert_eq!(queue_names(&emulator).await, queues, "a queue was created");

    // --dead-letter-queue-name reads even an id's shape as a name, which
    // Cloudflare creates when no queue has it.
    let named = consumer(
        &emulator,
        &["enable", "-q", "orders", "--dead-letter-queue-name", ghost],
    )
    .await;
    named.expect_code(0);
    assert_eq!(dead_letter_queue(&named), ghost);
    assert!(queue_names(&emulator).await.contains(&ghost.to_owned()));

    let both = consumer(
        &emulator,
        &[
            "enable",
            "-q",
            "orders",
            "--dead-letter-queue",
            "parked",
            "--dead-letter-queue-id",
            &parked,
        ],
    )
    .await;
    both.expect_code(2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_consumer_is_shown_and_never_replaced() {
    let emulator = with_a_worker().await;
    let emails = emulator.queue_id("emails").expect("declared");
    let shown = consumer(&emulator, &["info", "--queue", "emails"]).await;
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
    assert_eq!(masked(shown.expect_code(0).one()), worker);
    let people = consumer(&emulator, &["info", "-q", "emails", "--output", "table"]).await;
    assert!(
        people.stdout.starts_with(&format!(
            "queue emails ({emails}): consumed by the Worker \"mailer\"; HTTP pull is not enabled"
        )),
        "{people:?}"
    );

    let refused = consumer(&emulator, &["enable", "-q", "emails", "--max-retries", "1"]).await;
    refused.expect_stderr_all(
        5,
        &[
            "consumed by the Worker \"mailer\"",
            "nothing was changed",
            "hint: `cfq consumer info --queue emails` shows the queue's consumer",
        ],
    );
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

#[test]
fn emulator_config_files_that_cannot_be_used() {
    let dir = temp_dir("bad-config");
    let typo = dir.join("typo.toml");
    std::fs::write(&typo, "[[queues]]\nqueue_name = \"orders\"\nconsumr = {}\n").expect("write");
    let missing = dir.join("missing.toml");
    for (file, code, says) in [
        (&typo, 2, "unknown field `consumr`"),
        (&missing, 1, "cannot read the emulator configuration"),
    ] {
        let output = Command::new(env!("CARGO_BIN_EXE_cfq"))
            .args(["emulator", "--listen", "127.0.0.1:0", "--config"])
            .arg(file)
            .output()
            .expect("cfq runs");
        assert_eq!(output.status.code(), Some(code), "{file:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(says), "{stderr}");
        assert!(stderr.contains(&file.display().to_string()), "{stderr}");
    }
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
    let emulator = help(&["emulator", "--help"]);
    assert!(
        emulator.contains("--config <FILE>")
            && emulator
                .contains("https://docs.rs/cf-queues-emulator/latest/cf_queues_emulator/config/"),
        "{emulator}"
    );
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
