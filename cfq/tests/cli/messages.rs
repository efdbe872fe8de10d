//! `cfq push`, `pull`, `ack`, `retry`, `peek` and `purge REF` against the
//! in-process emulator, with the output formats, exit codes and hints.

use std::path::Path;
use std::time::Duration;

use crate::support::{
    Run, TOKEN, assert_resumed, cfq, cfq_at, cfq_with, emulator, emulator_with,
    emulator_with_queues, pasted, pull_all_texts, push_each, queue_of, resume_command, run,
    run_cfq, run_with_stdin, temp_dir, text_bodies,
};
use cf_queues_emulator::{EMULATOR_ACCOUNT_ID, EmulatorHandle, Fault, Operation};
use serde_json::json;

/// `cfq push` with `flags` and `--file FILE`, run to the end.
/// `cfq push` with the words of `flags` and `--file file`.
async fn push_file(emulator: &EmulatorHandle, file: &Path, flags: &str) -> Run {
    let mut push = cfq(emulator);
    push.arg("push")
        .args(flags.split_whitespace())
        .arg("--file")
        .arg(file);
    run(push).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_text_json_stdin_and_delayed() {
    let emulator = emulator_with_queues(&["jobs", "piped"]).await;
    let pushed = run_cfq(&emulator, ["push", "--queue", "jobs", "hello"]).await;
    pushed.expect_code(0);
    assert_eq!(pushed.one(), json!({"queue": "jobs", "pushed": 1}));

    run_cfq(
        &emulator,
        ["--queue", "jobs", "push", "--json", r#"{"order": 42}"#],
    )
    .await
    .expect_code(0);

    let mut push = cfq(&emulator);
    push.env("CFQ_QUEUE", "jobs").args(["push", "-"]);
    run_with_stdin(push, "from stdin\nsecond line")
        .await
        .expect_code(0);

    run_cfq(&emulator, ["push", "-q", "jobs", "--delay", "1h", "later"])
        .await
        .expect_code(0);

    let peeked = run_cfq(&emulator, ["peek", "--queue", "jobs", "--batch", "10"]).await;
    let records = peeked.expect_code(0).json();
    let bodies: Vec<_> = records.iter().map(|r| r["body"].clone()).collect();
    assert_eq!(
        bodies,
        [
            json!("hello"),
            json!({"order": 42}),
            json!("from stdin\nsecond line")
        ],
        "the delayed message is not visible yet"
    );
    assert_eq!(records[1]["content_type"], "json");
    assert_eq!(records[0]["cfq"], 1);
    assert!(records[0]["ref"].is_string());

    let piped = run_with_stdin(
        cfq_with(&emulator, ["push", "--queue", "piped", "--file", "-"]),
        "first\n{\"second\": 2}\n",
    )
    .await;
    piped.expect_code(0);
    assert_eq!(piped.one()["pushed"], 2);
    assert_eq!(emulator.metrics("piped").backlog_count, 2);

    let refused = run_cfq(&emulator, ["push", "--queue", "jobs", "--json", "[1, 2]"]).await;
    refused.expect_stderr(2, "JSON object");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_file_reports_bad_lines_by_number_and_pushes_the_rest() {
    let emulator = emulator_with_queues(&["astext", "files"]).await;
    let dir = temp_dir("mixed");
    let file = dir.join("mixed.ndjson");
    let mut content: Vec<u8> = Vec::new();
    for i in 1..=150 {
        content.extend(format!("line {i}\n").as_bytes());
    }
    content.extend(b"\n"); // 151: blank, skipped
    content.extend(b"{\"cfq\":1,\"content_type\":\"bytes\",\"body_raw\":\"AAE=\"}\n"); // 152
    content.extend(b"\xff\xfe not utf-8\n"); // 153
    content.extend(format!("{}\n", "x".repeat(200_000)).as_bytes()); // 154: over 128 KB
    content.extend(b"{\"cfq\":1,\"content_type\":\"te\n"); // 155: torn record
    content.extend(b"{\"cfq\":1,\"content_type\":\"text\",\"body\":\"a record\"}\r\n"); // 156
    content.extend(b"{\"kind\":\"plain object\"}\n"); // 157
    content.extend(b"last line without a newline"); // 158
    std::fs::write(&file, &content).expect("write");

    let pushed = push_file(&emulator, &file, "--queue files").await;
    let summary = pushed.expect_code(7).one();
    assert_eq!(summary["lines"], 158);
    assert_eq!(summary["blank"], 1);
    assert_eq!(summary["pushed"], 153);
    let refused: Vec<u64> = summary["refused"]
        .as_array()
        .expect("refused")
        .iter()
        .map(|r| r["line"].as_u64().expect("line"))
        .collect();
    assert_eq!(refused, [152, 153, 154, 155]);
    for line in [152, 153, 154, 155] {
        assert!(
            pushed.stderr.contains(&format!("line {line} not pushed")),
            "{pushed:?}"
        );
    }

    let client = emulator.client().expect("client");
    let queue = client.queue("files").expect("id");
    let mut texts = Vec::new();
    let mut objects = Vec::new();
    loop {
        let batch = queue
            .pull(
                cf_queues::PullOptions::new()
                    .batch_size(100)
                    .visibility_timeout(Duration::from_secs(600)),
            )
            .await
            .expect("pull");
        if batch.messages.is_empty() {
            break;
        }
        for m in &batch.messages {
            match m.body().text() {
                Ok(text) => texts.push(text.to_owned()),
                Err(_) => objects.push(m.body().json::<serde_json::Value>().expect("json")),
            }
        }
    }
    assert_eq!(texts.len(), 152);
    assert_eq!(texts[0], "line 1");
    assert!(
        texts.contains(&"a record".to_owned()),
        "CRLF dropped, record read"
    );
    assert!(texts.contains(&"last line without a newline".to_owned()));
    assert_eq!(objects, [json!({"kind": "plain object"})]);

    // --text: every line is text, records and objects included; --skip resumes.
    let pushed = push_file(&emulator, &file, "--queue astext --text --skip 155").await;
    assert_eq!(pushed.expect_code(0).one()["skipped"], 155);
    let texts = pull_all_texts(&emulator, "astext").await;
    assert_eq!(
        texts,
        [
            r#"{"cfq":1,"content_type":"text","body":"a record"}"#,
            r#"{"kind":"plain object"}"#,
            "last line without a newline"
        ]
    );
}

/// The case of issue 15: 250 JSON events, line 100 broken. Before, the
/// broken line went out as a text message (251 messages for 250 lines,
/// and a summary that refused nothing); now it is refused by number, the
/// other 249 go, and the run exits 7. `--text` still pushes every line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_json_line_is_refused_by_number_and_the_rest_still_goes() {
    let emulator = emulator_with_queues(&["astext", "events"]).await;
    let dir = temp_dir("broken-json");
    let file = dir.join("events.ndjson");
    let lines: Vec<String> = (1..=250)
        .map(|i| match i {
            100 => r#"{"broken": "#.to_owned(),
            _ => json!({"event": i}).to_string(),
        })
        .collect();
    std::fs::write(&file, lines.join("\n") + "\n").expect("write");

    let pushed = push_file(&emulator, &file, "--queue events").await;
    let summary = pushed.expect_code(7).one();
    assert_eq!(
        (summary["lines"].clone(), summary["pushed"].clone()),
        (json!(250), json!(249))
    );
    assert_eq!(
        summary["refused"],
        json!([{"line": 100, "reason": "starts with { but is not a JSON object: it ends before the object does"}])
    );
    assert!(pushed.stderr.contains("line 100 not pushed"), "{pushed:?}");
    assert_eq!(emulator.metrics("events").backlog_count, 249);
    let queue = queue_of(&emulator, "events");
    let mut events = Vec::new();
    loop {
        let options = cf_queues::PullOptions::new()
            .batch_size(100)
            .visibility_timeout(Duration::from_secs(600));
        let batch = queue.pull(options).await.expect("pull");
        if batch.messages.is_empty() {
            break;
        }
        for m in &batch.messages {
            let event: serde_json::Value = m.body().json().expect("every message is an object");
            events.push(event["event"].as_u64().expect("numbered"));
        }
    }
    events.sort_unstable();
    let expected: Vec<u64> = (1..=250).filter(|&i| i != 100).collect();
    assert_eq!(events, expected);

    let pushed = push_file(&emulator, &file, "--queue astext --text --skip 99").await;
    assert_eq!(pushed.expect_code(0).one()["pushed"], 151);
    let texts = pull_all_texts(&emulator, "astext").await;
    assert_eq!(texts[0], r#"{"broken": "#);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_batch_stops_the_run_and_skip_resumes_it() {
    let emulator = emulator_with_queues(&["resume"]).await;
    let dir = temp_dir("resume");
    let file = dir.join("lines.txt");
    let lines: Vec<String> = (1..=250).map(|i| format!("message {i}")).collect();
    std::fs::write(&file, lines.join("\n")).expect("write");
    // The first batch lands, the second fails with a 500 (not retried: a
    // push after a 500 may duplicate).
    emulator.inject(Fault::stall_only(Duration::from_millis(1)).only(Operation::Batch));
    emulator.inject(Fault::status(500).only(Operation::Batch));

    let failed = push_file(&emulator, &file, "--queue resume").await;
    let summary = failed.expect_code(5).one();
    assert_eq!(summary["pushed"], 100);
    assert_eq!(summary["failed"]["resume_skip"], 100);
    assert_eq!(summary["failed"]["may_have_landed"], true);
    assert_eq!(
        summary["failed"]["lines"].as_array().map(Vec::len),
        Some(100)
    );
    assert!(
        failed.stderr.contains("lines 101-200 were not pushed"),
        "{failed:?}"
    );
    assert!(failed.stderr.contains("--skip 100"), "{failed:?}");

    let resumed = push_file(&emulator, &file, "--queue resume --skip 100").await;
    assert_resumed(&resumed, 150, (&emulator, "resume", "message"), &lines).await;
}

/// The hint of a failed run is a whole command: pasted into a shell where
/// the account and base URL are not in the environment (they were flags),
/// it pushes the rest of the file to the same queue, as text, with the same
/// delay, and every line lands once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_resume_hint_is_a_command_that_resumes_the_same_run() {
    let emulator = emulator_with_queues(&["resume"]).await;
    let dir = temp_dir("it's a $resume");
    let file = dir.join("lines of mine.ndjson");
    let lines: Vec<String> = (1..=250).map(|i| json!({"n": i}).to_string()).collect();
    std::fs::write(&file, lines.join("\n")).expect("write");
    emulator.inject(Fault::stall_only(Duration::from_millis(1)).only(Operation::Batch));
    emulator.inject(Fault::status(500).only(Operation::Batch));
    let flags_only = || {
        let mut command = cfq(&emulator);
        command
            .env_remove("CLOUDFLARE_BASE_URL")
            .env_remove("CLOUDFLARE_ACCOUNT_ID");
        command
    };

    let mut push = flags_only();
    push.args(["--account", EMULATOR_ACCOUNT_ID, "push", "-q", "resume"])
        .args(["--base-url", emulator.base_url(), "--text", "--delay", "3s"])
        .arg("--file")
        .arg(&file);
    let failed = run(push).await;
    failed.expect_code(5);
    let command = resume_command(&failed.stderr);
    let quoted = format!("'{}'", file.display().to_string().replace('\'', r"'\''"));
    assert_eq!(
        command,
        format!(
            "cfq push --queue-id resume --account {EMULATOR_ACCOUNT_ID} --base-url {} --file {quoted} \
             --text --delay 3s --skip 100",
            emulator.base_url()
        )
    );
    assert_eq!(failed.one()["failed"]["resume_command"], command.as_str());

    let resumed = run(pasted(&flags_only(), &command)).await;
    let summary = resumed.expect_code(0).one();
    assert_eq!(
        (&summary["skipped"], &summary["pushed"]),
        (&json!(100), &json!(150))
    );
    // The delay was repeated: none of the resumed lines is visible yet.
    let queue = queue_of(&emulator, "resume");
    let visible = queue.peek(100).await.expect("peek");
    for message in &visible {
        let body = message.body().text().expect("pushed as text");
        assert!(lines[..100].iter().any(|l| l == body), "{body} not delayed");
    }
    tokio::time::sleep(Duration::from_millis(3_200)).await;
    let mut texts = pull_all_texts(&emulator, "resume").await;
    texts
        .sort_by_key(|t| serde_json::from_str::<serde_json::Value>(t).expect("json")["n"].as_u64());
    assert_eq!(texts, lines, "every line once, as text");
}

/// Over Cloudflare's 24 h, a delay is refused while the flags are read:
/// no line is read, no request is sent, and the exit says usage.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delays_over_24h_are_refused_before_anything_is_sent() {
    let emulator = emulator().await;
    let dir = temp_dir("long-delays");
    let file = dir.join("two.ndjson");
    std::fs::write(&file, "first\nsecond\n").expect("write");
    let queue = queue_of(&emulator, "waiting");
    push_each(&queue, &["waiting"]).await;
    let path = file.to_str().expect("utf-8 path");
    let before = emulator.requests_received();
    for args in [
        vec!["push", "-q", "waiting", "--delay", "48h", "--file", path],
        vec!["push", "-q", "waiting", "--delay", "24h 1s", "body"],
        vec!["replay", path, "--to", "waiting", "--delay", "25h"],
        vec!["pull", "-q", "waiting", "--retry-after", "48h"],
        vec!["retry", "-q", "waiting", "--delay", "2days", "some-lease"],
    ] {
        let mut command = cfq(&emulator);
        command.args(&args);
        let refused = run(command).await;
        refused.expect_code(2);
        assert!(
            refused.stderr.contains("over the limit of 24h on delays"),
            "{args:?}: {refused:?}"
        );
    }
    assert_eq!(emulator.requests_received(), before, "nothing was sent");
    let peeked = queue.peek(10).await.expect("peek");
    assert_eq!(peeked.len(), 1);
    assert_eq!(peeked[0].attempts, 0, "not pulled");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_from_stdin_loses_one_line_ending() {
    let emulator = emulator_with_queues(&["stdin"]).await;
    for input in ["x\n", "crlf\r\n", "two\n\n", "none"] {
        run_with_stdin(cfq_with(&emulator, ["push", "-q", "stdin", "-"]), input)
            .await
            .expect_code(0);
    }
    assert_eq!(
        text_bodies(&emulator, "stdin").await,
        ["x", "crlf", "two\n", "none"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pull_prints_a_table_whose_leases_settle() {
    let emulator = emulator().await;
    let queue = queue_of(&emulator, "tabled");
    push_each(&queue, &["hello"]).await;
    let table = run_cfq(
        &emulator,
        "pull -q tabled --visibility 10m --output table".split_whitespace(),
    )
    .await;
    table.expect_code(0);
    let rows: Vec<Vec<&str>> = table
        .stdout
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows.len(), 2, "{table:?}");
    assert_eq!(rows[0], ["ID", "ATTEMPTS", "AGE", "TYPE", "BODY", "LEASE"]);
    assert_eq!(rows[1].len(), 6, "{table:?}");
    assert_eq!(rows[1][1..5], ["1", "0s", "text", "hello"]);
    assert!(table.stderr.contains("used an attempt"), "{table:?}");
    // The lease column is whole: it settles the message.
    let acked = run_cfq(&emulator, ["ack", "-q", "tabled", rows[1][5]]).await;
    acked.expect_code(0);
    assert_eq!(acked.one()["acked"], 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_with_a_delay_keeps_the_message_away_until_then() {
    let emulator = emulator().await;
    let queue = queue_of(&emulator, "later");
    push_each(&queue, &["again"]).await;
    let pulled = run_cfq(&emulator, ["pull", "-q", "later", "--visibility", "10m"])
        .await
        .one();
    let lease = pulled["lease_id"].as_str().expect("lease").to_owned();
    let retried = run_cfq(&emulator, ["retry", "-q", "later", "--delay", "2s", &lease]).await;
    retried.expect_code(0);
    assert_eq!(retried.one()["retried"], 1);
    assert!(text_bodies(&emulator, "later").await.is_empty(), "delayed");
    tokio::time::sleep(Duration::from_millis(2_300)).await;
    assert_eq!(text_bodies(&emulator, "later").await, ["again"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pull_warns_and_ack_retry_settle_by_lease() {
    let emulator = emulator().await;
    let queue = queue_of(&emulator, "work");
    push_each(&queue, &["one", "two", "three", "four"]).await;

    let pulled = run_cfq(
        &emulator,
        "pull --queue work --batch 2 --visibility 10m".split_whitespace(),
    )
    .await;
    let records = pulled.expect_code(0).json();
    assert_eq!(records.len(), 2);
    assert_eq!(records[0]["body"], "one");
    assert_eq!(records[0]["attempts"], 1);
    assert!(pulled.stderr.contains("used an attempt"), "{pulled:?}");
    let lease = |i: usize| records[i]["lease_id"].as_str().expect("lease").to_owned();

    let acked = run_cfq(&emulator, ["ack", "--queue", "work", &lease(0)]).await;
    acked.expect_code(0);
    assert_eq!(
        acked.one(),
        json!({"queue": "work", "leases": 1, "acked": 1, "warnings": []})
    );

    let retried = run_cfq(
        &emulator,
        ["retry", "--queue", "work", "--delay", "0s", &lease(1)],
    )
    .await;
    retried.expect_code(0);
    assert_eq!(retried.one()["retried"], 1);

    // A lease the queue does not know comes back as a warning: exit 7.
    let stale = run_cfq(&emulator, ["ack", "--queue", "work", "no-such-lease"]).await;
    stale.expect_code(7);
    assert_eq!(stale.one()["warnings"][0]["subject"], "no-such-lease");
    assert!(
        stale.stderr.contains("warning: lease no-such-lease"),
        "{stale:?}"
    );

    // Lease ids from stdin, as from `cfq pull | jq -r .lease_id`.
    let pulled = run_cfq(&emulator, ["pull", "--queue", "work", "--batch", "1"]).await;
    let leases = pulled.one()["lease_id"].as_str().expect("lease").to_owned();
    let acked = run_with_stdin(
        cfq_with(&emulator, ["ack", "--queue", "work", "-"]),
        &format!("{leases}\n"),
    )
    .await;
    acked.expect_code(0);
    assert_eq!(acked.one()["acked"], 1);

    // --ack acknowledges what was printed; --retry-after gives it back.
    let given = run_cfq(
        &emulator,
        "pull --queue work --batch 10 --retry-after 0s".split_whitespace(),
    )
    .await;
    given.expect_stderr(0, "gave back");
    let taken = run_cfq(
        &emulator,
        ["pull", "--queue", "work", "--batch", "10", "--ack"],
    )
    .await;
    taken.expect_code(0);
    let bodies: Vec<_> = taken.json().iter().map(|r| r["body"].clone()).collect();
    assert_eq!(bodies.len(), 2, "{taken:?}");
    assert!(!taken.stderr.contains("used an attempt"));
    assert!(pull_all_texts(&emulator, "work").await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn peek_then_purge_by_ref_and_tables_for_people() {
    let emulator = emulator().await;
    let queue = queue_of(&emulator, "look");
    push_each(&queue, &["poison", "fine"]).await;

    let table = run_cfq(&emulator, ["peek", "--queue", "look", "--output", "table"]).await;
    table.expect_code(0);
    let header = table.stdout.lines().next().expect("header");
    for column in ["ID", "ATTEMPTS", "AGE", "TYPE", "BODY", "REF"] {
        assert!(header.contains(column), "{header}");
    }
    assert!(table.stdout.contains("poison"));

    let first = run_cfq(&emulator, ["peek", "--queue", "look", "--batch", "1"])
        .await
        .one();
    assert_eq!(first["body"], "poison");
    let purged = run_cfq(
        &emulator,
        [
            "purge",
            "--queue",
            "look",
            first["ref"].as_str().expect("ref"),
        ],
    )
    .await;
    purged.expect_code(0);
    assert_eq!(purged.one()["refs"], 1);
    assert_eq!(pull_all_texts(&emulator, "look").await, ["fine"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_stdout_ends_quietly() {
    let emulator = emulator().await;
    let queue = queue_of(&emulator, "pipe");
    // Well over a pipe's buffer, so that the writes meet the closed end.
    let body = "b".repeat(2_000);
    let batch = cf_queues::batch::Batch::new(
        (0..100).map(|i| cf_queues::Message::text(format!("{i}{body}"))),
    );
    queue.push_batch(batch).await.expect("push");
    let binary = env!("CARGO_BIN_EXE_cfq");
    for args in [
        "peek --queue pipe --batch 100",
        "peek --queue pipe --batch 100 --output table",
        "--help",
        "completions bash",
    ] {
        let mut shell = cfq(&emulator);
        shell.program_is_shell(binary, args);
        let ran = run(shell).await;
        assert_eq!(ran.code, Some(0), "{args}: {ran:?}");
        assert!(!ran.stderr.contains("panicked"), "{args}: {ran:?}");
    }
}

/// `bash -c 'cfq ARGS | head -1'`, exiting with cfq's own status.
trait ShellPipe {
    fn program_is_shell(&mut self, binary: &str, args: &str);
}

impl ShellPipe for std::process::Command {
    fn program_is_shell(&mut self, binary: &str, args: &str) {
        let mut shell = std::process::Command::new("bash");
        shell.arg("-c").arg(format!(
            "'{binary}' {args} | head -c 1 >/dev/null; exit ${{PIPESTATUS[0]}}"
        ));
        for (key, value) in self.get_envs() {
            match value {
                Some(value) => shell.env(key, value),
                None => shell.env_remove(key),
            };
        }
        *self = shell;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_have_their_exit_codes_and_hints() {
    let emulator = emulator_with(|emulator| emulator.strict_queues(["known"])).await;

    let mut wrong_token = cfq(&emulator);
    wrong_token
        .env("CLOUDFLARE_API_TOKEN", "not-the-token")
        .args(["peek", "--queue", "known"]);
    let auth = run(wrong_token).await;
    auth.expect_code(3);
    assert!(
        auth.stderr.contains("HTTP 403") || auth.stderr.contains("HTTP 401"),
        "{auth:?}"
    );
    assert!(
        auth.stderr.contains("hint:") && auth.stderr.contains("Queues"),
        "{auth:?}"
    );
    assert!(!auth.stderr.contains("not-the-token"));

    // Not a queue's name, and not an id's shape: an unknown name, with the
    // near one, and no request that names it as an id.
    let missing = run_cfq(&emulator, ["push", "--queue", "unknown", "x"]).await;
    missing.expect_stderr(4, "no queue is named \"unknown\" in this account");
    assert!(
        missing.stderr.contains("did you mean \"known\"?"),
        "{missing:?}"
    );

    // Not an id either: the unknown name it is.
    let unnamed = run_cfq(&emulator, ["push", "--queue", "not a queue id", "x"]).await;
    unnamed.expect_stderr(4, "no queue is named \"not a queue id\"");
    run_cfq(&emulator, ["push", "--queue-id", "not a queue id", "x"])
        .await
        .expect_code(2);

    let no_queue = run_cfq(&emulator, ["peek"]).await;
    no_queue.expect_stderr(2, "--queue");

    let mut no_account = cfq(&emulator);
    no_account
        .env_remove("CLOUDFLARE_ACCOUNT_ID")
        .args(["peek", "--queue", "known"]);
    run(no_account).await.expect_code(2);

    let mut no_token = cfq(&emulator);
    no_token
        .env_remove("CLOUDFLARE_API_TOKEN")
        .args(["peek", "--queue", "known"]);
    let no_token = run(no_token).await;
    no_token.expect_stderr(2, "CLOUDFLARE_API_TOKEN");

    // What Cloudflare answers a pull on a queue without HTTP pull is not
    // documented; one public report saw a 405. Any 4xx of a pull hints at it.
    emulator.inject(
        Fault::status(405)
            .cloudflare_error(7001, "Method not allowed")
            .only(Operation::Pull),
    );
    let not_enabled = run_cfq(&emulator, ["pull", "--queue", "known"]).await;
    not_enabled.expect_stderr(5, "HTTP pull");
    assert!(
        not_enabled
            .stderr
            .contains("wrangler queues consumer http add")
    );
    assert!(
        not_enabled
            .stderr
            .contains("`cfq consumer enable --queue known` enables it"),
        "{not_enabled:?}"
    );

    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let closed = format!("http://{}/client/v4", listener.local_addr().expect("addr"));
    drop(listener);
    let mut unreachable = cfq_at(&closed);
    unreachable.args(["peek", "--queue", "known"]);
    let network = run(unreachable).await;
    network.expect_stderr(6, "could not reach");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verbose_traces_requests_without_the_token() {
    let emulator = emulator_with_queues(&["traced"]).await;
    let traced = run_cfq(&emulator, ["-v", "push", "--queue", "traced", "hello"]).await;
    traced.expect_stderr(0, "push_message");
    assert!(traced.stderr.contains("status=200"), "{traced:?}");
    assert!(!traced.stderr.contains(TOKEN));
    assert!(!traced.stdout.contains(TOKEN));
}
