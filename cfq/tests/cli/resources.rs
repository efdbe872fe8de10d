//! Queues by name or id, and `cfq queues`: the readings of `--queue`
//! (32 hex digits an id, anything else a name, then an id), the flags that
//! force one, a name resolved once per command; and listing, showing,
//! creating, updating and deleting queues, with their exit codes and
//! their JSON lines exactly.

use cf_queues_emulator::EmulatorHandle;
use serde_json::{Value, json};

use crate::support::{
    LOOKUP, cfq, emulator_from_toml, emulator_with, queue_names, queue_of, run, run_cfq,
    run_cfq_typing,
};

const ORDERS_ID: &str = "9a7806061c88ada191ed06f989cc3dac";
/// A valid queue name that is also 32 hex digits.
const HEX_NAME: &str = "0123456789abcdef0123456789abcdef";

/// An emulator whose account declares queues whose names and ids cross:
/// `alpha` has the id `beta`, and `beta` the id `gamma`.
async fn crossed() -> EmulatorHandle {
    emulator_from_toml(&format!(
        r#"
        [[queues]]
        queue_name = "orders"
        queue_id = "{ORDERS_ID}"
        consumer = {{ type = "http_pull" }}

        [[queues]]
        queue_name = "alpha"
        queue_id = "beta"

        [[queues]]
        queue_name = "beta"
        queue_id = "gamma"

        [[queues]]
        queue_name = "{HEX_NAME}"
        queue_id = "hexnamed"
        "#
    ))
    .await
}

/// `cfq queues info` with these words, as JSON.
async fn info(emulator: &EmulatorHandle, words: &[&str]) -> crate::support::Run {
    let mut command = cfq(emulator);
    command.args(["queues", "info"]).args(words);
    run(command).await
}

fn id_of(run: &crate::support::Run) -> Value {
    run.one()["queue_id"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queue_is_named_by_its_name_or_its_id() {
    let emulator = crossed().await;

    // 32 hex digits are an id: no lookup, one request.
    let before = emulator.requests_received();
    let by_id = info(&emulator, &["--queue", ORDERS_ID]).await;
    by_id.expect_code(0);
    assert_eq!(by_id.one()["queue_name"], "orders");
    assert_eq!(emulator.requests_received(), before + 1);

    // Any other value is a name first: the lookup, then the call.
    let before = emulator.requests_received();
    let by_name = info(&emulator, &["--queue", "orders"]).await;
    by_name.expect_code(0);
    assert_eq!(id_of(&by_name), ORDERS_ID);
    assert_eq!(emulator.requests_received(), before + LOOKUP + 1);

    // A name wins over an id of the same letters; --queue-id forces the id.
    assert_eq!(id_of(&info(&emulator, &["--queue", "beta"]).await), "gamma");
    let forced = info(&emulator, &["--queue-id", "beta"]).await;
    forced.expect_code(0);
    assert_eq!(forced.one()["queue_name"], "alpha");

    // A name of 32 hex digits is read as an id by --queue; --queue-name
    // forces the name.
    let as_id = info(&emulator, &["--queue", HEX_NAME]).await;
    as_id.expect_stderr(4, "10104");
    let as_name = info(&emulator, &["--queue-name", HEX_NAME]).await;
    as_name.expect_code(0);
    assert_eq!(id_of(&as_name), "hexnamed");

    // --queue-id takes any value as an id: the emulator's free-form ids
    // spring into being on their first push.
    run_cfq(&emulator, ["push", "--queue-id", "jobs", "free-form"])
        .await
        .expect_code(0);
    assert_eq!(emulator.metrics("jobs").backlog_count, 1);
    // --queue-name never reads an id.
    let unknown = info(&emulator, &["--queue-name", "ghost"]).await;
    unknown.expect_stderr(4, "no queue is named \"ghost\"");
    // An unknown name: exit 4, with the command that lists and the one
    // that creates.
    let neither = info(&emulator, &["--queue", "no-such-queue"]).await;
    neither.expect_stderr_all(
        4,
        &[
            "error: no queue is named \"no-such-queue\" in this account",
            "`cfq queues list` shows its queues",
            "`cfq queues create no-such-queue` creates it",
        ],
    );
    assert!(!neither.stderr.contains("did you mean"), "{neither:?}");

    // Before the command, and from CFQ_QUEUE (the --queue reading).
    let mut before_command = cfq(&emulator);
    before_command.args(["--queue-name", "beta", "queues", "info"]);
    assert_eq!(id_of(&run(before_command).await), "gamma");
    let mut from_env = cfq(&emulator);
    from_env.env("CFQ_QUEUE", "orders").args(["queues", "info"]);
    assert_eq!(id_of(&run(from_env).await), ORDERS_ID);
    // After the command wins over before it.
    let mut both = cfq(&emulator);
    both.args(["--queue", "beta", "queues", "info", "--queue-id", "beta"]);
    assert_eq!(run(both).await.one()["queue_name"], "alpha");
}

/// A typo is an error, never a new queue: `cfq push --queue Orders` once
/// found no queue named so, sent `Orders` as an id, the lax emulator made
/// it spring into being, and the push succeeded where nobody reads. Now
/// every command that names a queue (`--queue`, `CFQ_QUEUE`, `--to`)
/// exits 4 naming the queues with a near name, and the account's queues
/// are what they were.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_typo_is_an_error_naming_the_near_queues_and_creates_no_queue() {
    let emulator = crossed().await;
    let queues = queue_names(&emulator).await;
    let dir = crate::support::temp_dir("typo");
    let file = dir.join("messages.txt");
    std::fs::write(&file, "one\ntwo\n").expect("write");
    let file = file.to_str().expect("UTF-8 path");

    let typed = |words: &[&str]| {
        let mut command = cfq(&emulator);
        command.args(words);
        command
    };
    let upper = ORDERS_ID.to_uppercase();
    let by_upper_id = format!("the queue of id \"{ORDERS_ID}\" (ids are lowercase)");
    let mut from_env = typed(&["push", "x"]);
    from_env.env("CFQ_QUEUE", "Orders");
    let cases = [
        (
            typed(&["push", "--queue", "Orders", "x"]),
            "Orders",
            "\"orders\"",
        ),
        (from_env, "Orders", "\"orders\""),
        (
            typed(&["pull", "--queue", "ordres"]),
            "ordres",
            "\"orders\"",
        ),
        (
            typed(&["drain", "--queue", "order", "--to", "/dev/null"]),
            "order",
            "\"orders\"",
        ),
        (
            typed(&["replay", file, "--to", "Alpha"]),
            "Alpha",
            "\"alpha\"",
        ),
        (
            typed(&["move", "--queue", "orders", "--to", "betta"]),
            "betta",
            "\"beta\"",
        ),
        (
            typed(&["push", "--queue", &upper, "x"]),
            upper.as_str(),
            by_upper_id.as_str(),
        ),
    ];
    for (command, name, near) in cases {
        let failed = run(command).await;
        failed.expect_stderr(
            4,
            &format!("error: no queue is named \"{name}\" in this account"),
        );
        assert!(
            failed
                .stderr
                .contains(&format!("hint: did you mean {near}?")),
            "{near}: {failed:?}"
        );
        assert!(failed.stdout.is_empty(), "{failed:?}");
    }
    assert_eq!(queue_names(&emulator).await, queues, "a queue was created");
    assert_eq!(emulator.metrics(ORDERS_ID).backlog_count, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readings_conflict_and_nothing_is_sent() {
    let emulator = crossed().await;
    let before = emulator.requests_received();
    for (words, says) in [
        (
            vec!["pull", "--queue", "orders", "--queue-id", ORDERS_ID],
            "cannot be used with",
        ),
        (
            vec!["pull", "--queue-id", ORDERS_ID, "--queue-name", "orders"],
            "cannot be used with",
        ),
        (
            vec!["move", "--queue", "a", "--to", "b", "--to-id", "c"],
            "cannot be used with",
        ),
        (vec!["move", "--queue", "a"], "--to"),
        (vec!["replay", "file.ndjson"], "--to"),
        (vec!["--queue", "orders", "queues", "list"], "do not apply"),
        (
            vec!["--queue-id", "x", "queues", "create", "new"],
            "do not apply",
        ),
        (vec!["--queue-name", "x", "emulator"], "do not apply"),
        (
            vec!["queues", "list", "--queue", "orders"],
            "unexpected argument",
        ),
        (
            vec!["queues", "info", "--queue-id", "not an id"],
            "letters and digits",
        ),
    ] {
        let mut command = cfq(&emulator);
        command.args(&words);
        let refused = run(command).await;
        refused.expect_code(2);
        assert!(refused.stderr.contains(says), "{words:?}: {refused:?}");
    }
    assert_eq!(emulator.requests_received(), before, "nothing was sent");
}

/// `drain`, `move` and `replay` look a name up once, then work on the
/// handle: the requests are the lookups and the run's own, nothing more.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_name_is_resolved_once_per_command() {
    let emulator = crossed().await;
    let queue = emulator
        .client()
        .expect("client")
        .queue_by_name("alpha")
        .await
        .expect("alpha");
    queue
        .enable_http_pull(Default::default())
        .await
        .expect("enabled");
    let bodies: Vec<cf_queues::Message> = (0..25)
        .map(|i| cf_queues::Message::text(format!("m{i}")))
        .collect();
    queue.push_batch(bodies).await.expect("pushed");
    let dir = crate::support::temp_dir("resolved-once");
    let file = dir.join("alpha.ndjson");

    // 25 messages by 10: pulls of 10, 10, 5 and 0, and three acks.
    let before = emulator.requests_received();
    let mut drain = cfq(&emulator);
    drain
        .args(["drain", "--queue", "alpha", "--batch", "10", "--to"])
        .arg(&file);
    let drained = run(drain).await;
    drained.expect_code(0);
    assert_eq!(drained.one()["drained"], 25);
    assert_eq!(emulator.requests_received(), before + LOOKUP + 7);

    // Three batches of 10 at most; beta is the queue of that name (gamma).
    let before = emulator.requests_received();
    let mut replay = cfq(&emulator);
    replay
        .arg("replay")
        .arg(&file)
        .args(["--to", "beta", "--output", "json"]);
    let replayed = run(replay).await;
    replayed.expect_code(0);
    assert_eq!(replayed.one()["queue"], "gamma");
    assert!(emulator.requests_received() <= before + LOOKUP + 3);
    assert_eq!(emulator.metrics("gamma").backlog_count, 25);

    // Both ends by name: gamma (named beta) has HTTP pull from here.
    let beta = queue_of(&emulator, "gamma");
    beta.enable_http_pull(Default::default())
        .await
        .expect("enabled");
    let before = emulator.requests_received();
    let moved = run_cfq(
        &emulator,
        ["move", "--queue", "beta", "--to", "orders", "--batch", "10"],
    )
    .await;
    let report = moved.expect_code(0).one();
    assert_eq!(
        (&report["from"], &report["to"], &report["moved"]),
        (&json!("gamma"), &json!(ORDERS_ID), &json!(25))
    );
    // Pulls of 10, 10, 5, 0; a push and an ack per batch.
    assert_eq!(emulator.requests_received(), before + 2 * LOOKUP + 10);
    assert_eq!(emulator.metrics(ORDERS_ID).backlog_count, 25);
}

/// The exact keys of a queue's JSON line.
const QUEUE_KEYS: [&str; 8] = [
    "consumer",
    "consumers_total_count",
    "created_on",
    "modified_on",
    "producers_total_count",
    "queue_id",
    "queue_name",
    "settings",
];

fn keys(value: &Value) -> Vec<&str> {
    let mut keys: Vec<&str> = value
        .as_object()
        .map(|o| o.keys().map(String::as_str).collect())
        .unwrap_or_default();
    keys.sort_unstable();
    keys
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queues_are_created_listed_shown_updated_and_deleted() {
    let emulator = emulator_with(|emulator| emulator.strict_queues(Vec::<String>::new())).await;

    let created = run_cfq(
        &emulator,
        "queues create orders --delivery-delay 30s --retention 1d --paused".split_whitespace(),
    )
    .await;
    let line = created.expect_code(0).one();
    assert_eq!(keys(&line), QUEUE_KEYS);
    let id = line["queue_id"].as_str().expect("an id").to_owned();
    assert_eq!(Some(id.as_str()), emulator.queue_id("orders").as_deref());
    assert_eq!(
        (
            &line["queue_name"],
            &line["consumer"],
            &line["consumers_total_count"],
            &line["producers_total_count"],
        ),
        (&json!("orders"), &Value::Null, &json!(0), &json!(0))
    );
    assert_eq!(
        line["settings"],
        json!({"delivery_delay": 30, "delivery_paused": true, "message_retention_period": 86_400})
    );
    assert!(
        created
            .stderr
            .contains("`cfq consumer enable --queue orders` enables HTTP pull"),
        "{created:?}"
    );

    // For people: the id and the line to paste.
    let shown = run_cfq(
        &emulator,
        ["queues", "create", "emails", "--output", "table"],
    )
    .await;
    shown.expect_code(0);
    let emails = emulator.queue_id("emails").expect("created");
    assert_eq!(
        shown.stdout,
        format!("created queue emails: {emails}\n  export CFQ_QUEUE={emails}\n")
    );

    // Refused before anything is sent (exit 2), or by the API (exit 5).
    let before = emulator.requests_received();
    for words in [
        vec!["queues", "create", "Orders"],
        vec!["queues", "create", "bad", "--retention", "30s"],
        vec!["queues", "create", "bad", "--delivery-delay", "25h"],
        vec!["queues", "update", "--queue", "orders"],
        vec![
            "queues", "update", "--queue", "orders", "--paused", "--resume",
        ],
    ] {
        let mut command = cfq(&emulator);
        command.args(&words);
        run(command).await.expect_code(2);
    }
    assert_eq!(emulator.requests_received(), before, "nothing was sent");
    let taken = run_cfq(&emulator, ["queues", "create", "orders"]).await;
    taken.expect_stderr(5, "11009");
    assert!(
        taken
            .stderr
            .contains("`cfq queues info --queue orders` shows it"),
        "{taken:?}"
    );

    // Every page of the list: 25 queues at 20 a page.
    for i in 0..23 {
        run_cfq(&emulator, ["queues", "create", &format!("q{i:02}")])
            .await
            .expect_code(0);
    }
    let listed = run_cfq(&emulator, ["queues", "list"]).await;
    let lines = listed.expect_code(0).json();
    assert_eq!(lines.len(), 25);
    assert!(lines.iter().all(|l| keys(l) == QUEUE_KEYS));
    assert_eq!(lines[0]["queue_name"], "orders");
    assert_eq!(lines[24]["queue_name"], "q22");
    let table = run_cfq(&emulator, ["queues", "list", "--output", "table"]).await;
    table.expect_code(0);
    let mut rows = table.stdout.lines();
    assert_eq!(
        rows.next(),
        Some("ID                                NAME    CONSUMER  DELAY  RETENTION  PAUSED")
    );
    assert_eq!(
        rows.next(),
        Some(format!("{id}  orders  -         30s    1day       yes").as_str())
    );

    // Update: the settings given change, the others stay.
    let updated = run_cfq(
        &emulator,
        ["queues", "update", "--queue", "orders", "--resume"],
    )
    .await;
    updated.expect_code(0);
    assert_eq!(
        updated.one()["settings"],
        json!({"delivery_delay": 30, "delivery_paused": false, "message_retention_period": 86_400})
    );
    let shown = run_cfq(
        &emulator,
        ["queues", "info", "-q", "orders", "--output", "table"],
    )
    .await;
    shown.expect_code(0);
    for needed in [
        "name            orders\n",
        &format!("id              {id}\n"),
        "consumer        -\n",
        "delivery        active\n",
        "delivery delay  30s\n",
        "retention       1day\n",
    ] {
        assert!(shown.stdout.contains(needed), "{needed:?}: {shown:?}");
    }

    // Delete asks to type the name, as purge --all asks the id.
    let refused = run_cfq_typing(&emulator, "queues delete --queue orders", "emails\n").await;
    refused.expect_code(1);
    assert!(
        refused.stderr.contains("Type the queue's name to confirm")
            && refused
                .stderr
                .contains("not confirmed; nothing was deleted")
            && refused
                .stderr
                .contains("type the queue's name exactly, or pass --yes"),
        "{refused:?}"
    );
    assert!(emulator.queue_id("orders").is_some(), "not deleted");
    // Named by its id, it asks for the name all the same.
    let confirmed = run_cfq_typing(
        &emulator,
        &format!("queues delete --queue-id {id}"),
        "orders\n",
    )
    .await;
    confirmed.expect_code(0);
    assert_eq!(
        confirmed.one(),
        json!({"queue": id, "queue_name": "orders", "deleted": true})
    );
    assert!(emulator.queue_id("orders").is_none(), "deleted");
    let unattended = run_cfq(
        &emulator,
        [
            "queues", "delete", "-q", "emails", "--yes", "--output", "table",
        ],
    )
    .await;
    unattended.expect_code(0);
    assert_eq!(
        unattended.stdout,
        format!("deleted queue emails ({emails})\n")
    );
    // Gone: by id, 404 (exit 4); by name, an unknown name (exit 4).
    run_cfq(&emulator, ["queues", "delete", "--queue", &id, "--yes"])
        .await
        .expect_code(4);
    run_cfq(&emulator, ["queues", "info", "--queue", "orders"])
        .await
        .expect_code(4);

    // No queues: nothing on stdout, a note on stderr, exit 0.
    let empty = crate::support::emulator().await;
    let mut list = cfq(&empty);
    list.args(["queues", "list", "--output", "table"]);
    let listed = run(list).await;
    listed.expect_code(0);
    assert_eq!(listed.stdout, "");
    assert!(listed.stderr.contains("no queues"), "{listed:?}");
}
