//! `cfq drain`, `replay` and `move` against the in-process emulator: round
//! trips, bodies HTTP cannot push, and runs killed midway (SIGKILL while a
//! request is held by an injected stall) that lose nothing.

use std::collections::BTreeSet;
use std::io::{BufRead as _, BufReader};
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use cf_queues::batch::Batch;
use cf_queues::{Message, PullOptions};
use cf_queues_emulator::{EmulatorHandle, Fault, ManualClock, Operation, WorkerBody};

use crate::support::{
    LOOKUP, assert_resumed, cfq, cfq_at, emulator, emulator_with, emulator_with_queues, lax_queues,
    numbered, pasted, pull_all_numbered, pull_all_texts, queue_of, resume_command, run, run_cfq,
    temp_dir,
};
use cf_queues_testkit::scripted::{Scripted, scripted};
use cf_queues_testkit::wire::{acked, failure, lease_ids, pulled_once, success};
use serde_json::{Value, json};

async fn push_texts(emulator: &EmulatorHandle, queue: &str, bodies: &[String]) {
    let queue = queue_of(emulator, queue);
    for chunk in bodies.chunks(100) {
        let batch = Batch::new(chunk.iter().map(|b| Message::text(b.as_str())));
        queue.push_batch(batch).await.expect("push");
    }
}

/// A file of cfq text records of `bodies`, each with the fields of `extra`.
fn write_text_records(file: &Path, bodies: &[String], extra: Value) {
    let lines: Vec<String> = bodies
        .iter()
        .map(|b| {
            let mut record = json!({"cfq": 1, "content_type": "text", "body": b});
            if let (Value::Object(record), Value::Object(extra)) = (&mut record, &extra) {
                record.extend(extra.clone());
            }
            record.to_string()
        })
        .collect();
    std::fs::write(file, lines.join("\n") + "\n").expect("write");
}

fn records(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .expect("read")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a record per line"))
        .collect()
}

/// Every message on a queue, whatever its type: (content type, raw body).
async fn pull_everything(emulator: &EmulatorHandle, queue: &str) -> Vec<(String, String)> {
    let queue = queue_of(emulator, queue);
    let mut all = Vec::new();
    loop {
        let options = PullOptions::new()
            .batch_size(100)
            .visibility_timeout(Duration::from_secs(3600));
        let batch = queue.pull(options).await.expect("pull");
        if batch.messages.is_empty() {
            return all;
        }
        for m in &batch.messages {
            all.push((m.content_type().to_string(), m.body().raw().to_owned()));
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drain_then_replay_round_trips_and_keeps_what_http_cannot_push() {
    let emulator = emulator_with_queues(&["source", "target"]).await;
    let dir = temp_dir("roundtrip");
    let file = dir.join("drained.ndjson");
    let client = emulator.client().expect("client");
    let source = client.queue("source").expect("id");
    source
        .push(Message::text("plain text"))
        .await
        .expect("push");
    source
        .push(Message::json(&json!({"order": 42, "items": ["a", "b"]})).expect("object"))
        .await
        .expect("push");
    emulator.push_from_worker("source", WorkerBody::Bytes(vec![0, 1, 2, 255]));
    emulator.push_from_worker("source", WorkerBody::V8(vec![255, 15, 34, 1]));
    source.push(Message::text("last")).await.expect("push");

    let mut drain = cfq(&emulator);
    drain
        .args(["drain", "--queue", "source", "--to"])
        .arg(&file);
    let drained = run(drain).await;
    let summary = drained.expect_code(0).one();
    assert_eq!(summary["drained"], 5);
    assert_eq!(summary["not_pushable_lines"], json!([3, 4]));
    assert_eq!(emulator.metrics("source").backlog_count, 0, "acknowledged");

    let lines = records(&file);
    assert_eq!(lines.len(), 5);
    assert_eq!(lines[0]["cfq"], 1);
    assert_eq!(lines[0]["content_type"], "text");
    assert_eq!(lines[0]["body"], "plain text");
    assert_eq!(lines[0]["attempts"], 1);
    assert!(lines[0]["timestamp_ms"].as_u64().is_some_and(|t| t > 0));
    assert!(lines[0]["id"].is_string());
    assert!(
        lines[0].get("lease_id").is_none(),
        "a drained lease is worthless"
    );
    assert_eq!(lines[1]["body"], json!({"order": 42, "items": ["a", "b"]}));
    assert_eq!(lines[2]["content_type"], "bytes");
    assert_eq!(lines[2]["body_raw"], "AAEC/w==");
    assert_eq!(lines[3]["content_type"], "v8");
    assert!(lines[3]["body_raw"].is_string());

    let mut replay = cfq(&emulator);
    replay.arg("replay").arg(&file).args(["--to", "target"]);
    let replayed = run(replay).await;
    let summary = replayed.expect_code(7).one();
    assert_eq!(summary["pushed"], 3);
    let refused: Vec<&Value> = summary["refused"]
        .as_array()
        .expect("refused")
        .iter()
        .map(|r| &r["line"])
        .collect();
    assert_eq!(refused, [&json!(3), &json!(4)]);
    assert!(
        replayed.stderr.contains("line 3 not pushed"),
        "{replayed:?}"
    );

    let target = client.queue("target").expect("id");
    let batch = target
        .pull(PullOptions::new().batch_size(10))
        .await
        .expect("pull");
    assert_eq!(batch.messages.len(), 3);
    assert_eq!(batch.messages[0].body().text().expect("text"), "plain text");
    assert_eq!(
        batch.messages[1].body().json::<Value>().expect("json"),
        json!({"order": 42, "items": ["a", "b"]})
    );
    assert_eq!(
        batch.messages[1].attempts, 1,
        "a replayed message starts afresh"
    );

    // A second drain appends, numbering lines as the file does.
    emulator.push_from_worker("source", WorkerBody::Bytes(vec![7]));
    let mut again = cfq(&emulator);
    again
        .args(["drain", "--queue", "source", "--to"])
        .arg(&file);
    let again = run(again).await;
    again.expect_code(0);
    assert_eq!(again.one()["not_pushable_lines"], json!([6]));
    assert_eq!(records(&file).len(), 6);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drain_max_stops_early() {
    let emulator = emulator().await;
    let dir = temp_dir("max");
    let file = dir.join("some.ndjson");
    push_texts(&emulator, "many", &numbered("m", 30)).await;
    let mut drain = cfq(&emulator);
    drain
        .args([
            "drain", "--queue", "many", "--max", "25", "--batch", "10", "--to",
        ])
        .arg(&file);
    let drained = run(drain).await;
    drained.expect_code(0);
    assert_eq!(drained.one()["drained"], 25);
    assert_eq!(records(&file).len(), 25);
    assert_eq!(pull_all_texts(&emulator, "many").await.len(), 5);
}

/// Starts `cfq` in the background, its stderr piped.
fn spawn(mut command: std::process::Command) -> Child {
    command
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("cfq starts")
}

/// Waits until `ready` holds, then kills the child with SIGKILL: no
/// handler, no cleanup, as a crash or an OOM kill would.
async fn kill_when(mut child: Child, ready: impl Fn() -> bool) {
    let started = Instant::now();
    while !ready() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "never got ready"
        );
        assert!(child.try_wait().expect("wait").is_none(), "cfq ended early");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    child.kill().expect("SIGKILL");
    tokio::task::spawn_blocking(move || child.wait().expect("reaped"))
        .await
        .expect("no panic");
}

fn line_count(path: &Path) -> usize {
    std::fs::read_to_string(path).map_or(0, |text| text.lines().count())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drain_killed_midway_loses_nothing() {
    let emulator = emulator().await;
    let dir = temp_dir("killed-drain");
    let file = dir.join("drained.ndjson");
    let all = numbered("message", 250);
    push_texts(&emulator, "doomed", &all).await;
    // The first ack goes through; the second is held until the kill.
    emulator.inject(Fault::stall_only(Duration::from_millis(1)).only(Operation::Ack));
    emulator.inject(Fault::stall_only(Duration::from_secs(120)).only(Operation::Ack));

    let mut drain = cfq(&emulator);
    drain
        .args(["drain", "--queue", "doomed", "--visibility", "2s", "--to"])
        .arg(&file);
    let before = emulator.requests_received();
    let child = spawn(drain);
    // The lookup of the name, pull, ack, pull, and the held ack: the
    // process is paused there.
    kill_when(child, || {
        line_count(&file) >= 200 && emulator.requests_received() >= before + LOOKUP + 4
    })
    .await;

    // The second batch is synced to the file but was never acknowledged.
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    let in_file: Vec<String> = records(&file)
        .iter()
        .map(|r| r["body"].as_str().expect("text").to_owned())
        .collect();
    assert_eq!(in_file.len(), 200);
    let on_queue = pull_all_texts(&emulator, "doomed").await;
    let file_set: BTreeSet<&String> = in_file.iter().collect();
    let queue_set: BTreeSet<&String> = on_queue.iter().collect();
    for message in &all {
        assert!(
            file_set.contains(message) || queue_set.contains(message),
            "{message} is in neither the file nor the queue"
        );
    }
    // At least once, as documented: the unacknowledged batch is in both.
    assert_eq!(file_set.intersection(&queue_set).count(), 100);
    assert!(
        !queue_set.contains(&all[0]),
        "the acknowledged batch left the queue"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replay_killed_midway_resumes_from_its_log() {
    let emulator = emulator_with_queues(&["restored"]).await;
    let dir = temp_dir("killed-replay");
    let file = dir.join("saved.ndjson");
    let all = numbered("saved", 250);
    write_text_records(&file, &all, json!({"attempts": 3}));
    emulator.inject(Fault::stall_only(Duration::from_millis(1)).only(Operation::Batch));
    emulator.inject(Fault::stall_only(Duration::from_secs(120)).only(Operation::Batch));

    let mut replay = cfq(&emulator);
    replay.arg("replay").arg(&file).args(["--to", "restored"]);
    let before = emulator.requests_received();
    let mut child = spawn(replay);
    let stderr = child.stderr.take().expect("stderr");
    // The log line after each landed batch says where to resume.
    let skip = tokio::task::spawn_blocking(move || {
        let mut reader = BufReader::new(stderr).lines();
        loop {
            let line = reader.next().expect("a log line").expect("utf-8");
            if let Some(rest) = line.split("--skip ").nth(1) {
                return rest.trim().parse::<u64>().expect("a line number");
            }
        }
    })
    .await
    .expect("no panic");
    assert_eq!(skip, 100);
    // Kill while the second batch is held by the server (after the lookup
    // of the name and the first batch).
    kill_when(child, || {
        emulator.requests_received() >= before + LOOKUP + 2
    })
    .await;
    assert_eq!(emulator.metrics("restored").backlog_count, 100);

    let mut resume = cfq(&emulator);
    resume
        .arg("replay")
        .arg(&file)
        .args(["--to", "restored", "--skip", &skip.to_string()]);
    let resumed = run(resume).await;
    assert_resumed(&resumed, 150, (&emulator, "restored", "saved"), &all).await;
}

/// A replay whose batch fails prints the command that resumes it, with
/// its --delay and its file quoted; run as printed, it pushes the rest,
/// delayed, and every record lands once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_replay_prints_the_command_that_resumes_it_delayed() {
    let emulator = emulator_with_queues(&["restored"]).await;
    let dir = temp_dir("replay resume");
    let file = dir.join("dead letters.ndjson");
    let all = numbered("kept", 250);
    write_text_records(&file, &all, json!({}));
    emulator.inject(Fault::stall_only(Duration::from_millis(1)).only(Operation::Batch));
    emulator.inject(Fault::status(500).only(Operation::Batch));

    let mut replay = cfq(&emulator);
    replay
        .arg("replay")
        .arg(&file)
        .args(["--to", "restored", "--delay", "1m 30s"]);
    let failed = run(replay).await;
    failed.expect_code(5);
    let command = resume_command(&failed.stderr);
    assert_eq!(
        command,
        format!(
            "cfq replay '{}' --to-id restored --delay '1m 30s' --skip 100",
            file.display()
        )
    );
    // Shorter, to wait for it here; the rest of the command as printed.
    let command = command.replace("'1m 30s'", "3s");
    let resumed = run(pasted(&cfq(&emulator), &command)).await;
    resumed.expect_code(0);
    assert_eq!(resumed.one()["pushed"], 150);
    assert_eq!(emulator.metrics("restored").backlog_count, 250);
    let queue = queue_of(&emulator, "restored");
    assert!(queue.peek(10).await.expect("peek").is_empty(), "delayed");
    tokio::time::sleep(Duration::from_millis(3_200)).await;
    let on_queue = pull_all_numbered(&emulator, "restored", "kept").await;
    assert_eq!(
        on_queue.len(),
        150,
        "the first 100 are still delayed by 90 s"
    );
    assert_eq!(on_queue, all[100..], "every resumed record, once");
}

/// What `move` leaves behind is pulled once per run, however long the run:
/// its lease is kept while the run goes (an extension uses no attempt), so
/// a run that lasts several visibility timeouts neither burns its attempts
/// nor lets the queue drop it. Identical messages are reported one by one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn move_keeps_the_attempts_of_what_it_leaves_and_reports_each() {
    // A hand-moved clock, so that identical bodies share a timestamp too;
    // it then follows the wall clock, for the leases to run out in time.
    let clock = ManualClock::starting_now();
    let emulator = emulator_with(|emulator| emulator.max_retries(2).clock(clock.clone())).await;
    lax_queues(&emulator, &["parked", "live"]).await;
    for _ in 0..3 {
        emulator.push_from_worker("parked", WorkerBody::Bytes(vec![9, 9]));
    }
    for _ in 0..2 {
        emulator.push_from_worker("parked", WorkerBody::V8(vec![255, 15, 73]));
    }
    push_texts(&emulator, "parked", &numbered("parked", 300)).await;
    let ticking = tokio::spawn(async move {
        let started = Instant::now();
        let from = clock.now_ms();
        loop {
            tokio::time::sleep(Duration::from_millis(5)).await;
            let now = from + started.elapsed().as_millis() as u64;
            clock.advance(Duration::from_millis(now.saturating_sub(clock.now_ms())));
        }
    });
    // Six pushes of 50 held 400 ms each: the run lasts over twice the
    // visibility of 1 s, and the left messages are in its first pull.
    emulator.inject(
        Fault::stall_only(Duration::from_millis(400))
            .times(6)
            .only(Operation::Batch),
    );
    let mut redrive = cfq(&emulator);
    redrive.args([
        "move",
        "-q",
        "parked",
        "--to",
        "live",
        "--batch",
        "50",
        "--visibility",
        "1s",
    ]);
    let started = Instant::now();
    let moved = run(redrive).await;
    assert!(started.elapsed() > Duration::from_secs(2), "a long run");
    let report = moved.expect_code(7).one();
    assert_eq!(report["moved"], 300);
    let left: Vec<(&str, u64)> = report["left"]
        .as_array()
        .expect("left")
        .iter()
        .map(|l| {
            (
                l["content_type"].as_str().expect("type"),
                l["attempts"].as_u64().expect("attempts"),
            )
        })
        .collect();
    assert_eq!(
        left,
        [
            ("bytes", 1),
            ("bytes", 1),
            ("bytes", 1),
            ("v8", 1),
            ("v8", 1)
        ]
    );

    // Once the run's last extension runs out, they are back, having used
    // the one attempt of the run's one pull.
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let parked = queue_of(&emulator, "parked");
    let back = parked.peek(100).await.expect("peek");
    let back: Vec<(String, u32)> = back
        .iter()
        .map(|m| (m.content_type().to_string(), m.attempts))
        .collect();
    assert_eq!(
        back,
        [
            ("bytes".to_owned(), 1),
            ("bytes".to_owned(), 1),
            ("bytes".to_owned(), 1),
            ("v8".to_owned(), 1),
            ("v8".to_owned(), 1)
        ],
        "none dropped, none pulled twice"
    );
    ticking.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn move_redrives_and_leaves_what_http_cannot_push() {
    let emulator = emulator_with_queues(&["dead", "live"]).await;
    let client = emulator.client().expect("client");
    let dead = client.queue("dead").expect("id");
    push_texts(&emulator, "dead", &numbered("dead letter", 120)).await;
    dead.push(Message::json(&json!({"id": 7})).expect("object"))
        .await
        .expect("push");
    emulator.push_from_worker("dead", WorkerBody::Bytes(vec![1, 2, 3]));
    emulator.push_from_worker("dead", WorkerBody::V8(vec![255, 15]));

    let moved = run_cfq(
        &emulator,
        "move --queue dead --to live --visibility 1s".split_whitespace(),
    )
    .await;
    let report = moved.expect_code(7).one();
    assert_eq!(report["moved"], 121);
    let left: Vec<&str> = report["left"]
        .as_array()
        .expect("left")
        .iter()
        .map(|l| l["content_type"].as_str().expect("type"))
        .collect();
    assert_eq!(left, ["bytes", "v8"]);
    assert!(moved.stderr.contains("left on dead"), "{moved:?}");

    let live = pull_everything(&emulator, "live").await;
    assert_eq!(live.len(), 121);
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let still_dead = pull_everything(&emulator, "dead").await;
    let types: Vec<&str> = still_dead.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(types, ["bytes", "v8"], "left on its queue, not dropped");

    run_cfq(&emulator, ["move", "--queue", "live", "--to", "live"])
        .await
        .expect_code(2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_move_killed_before_its_ack_duplicates_but_never_loses() {
    let emulator = emulator_with_queues(&["from", "into"]).await;
    let all = numbered("redrive", 100);
    push_texts(&emulator, "from", &all).await;
    // The push to the destination lands; the acknowledgement is held.
    emulator.inject(Fault::stall_only(Duration::from_secs(120)).only(Operation::Ack));
    let mut redrive = cfq(&emulator);
    redrive.args([
        "move",
        "--queue",
        "from",
        "--to",
        "into",
        "--visibility",
        "1s",
    ]);
    let before = emulator.requests_received();
    let child = spawn(redrive);
    // The lookups of both names, pull, push (landed), and the held ack.
    kill_when(child, || {
        emulator.metrics("into").backlog_count == 100
            && emulator.requests_received() >= before + 2 * LOOKUP + 3
    })
    .await;
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let moved: BTreeSet<String> = pull_all_texts(&emulator, "into")
        .await
        .into_iter()
        .collect();
    let back: BTreeSet<String> = pull_all_texts(&emulator, "from")
        .await
        .into_iter()
        .collect();
    for message in &all {
        assert!(
            moved.contains(message) || back.contains(message),
            "{message} lost"
        );
    }
    assert_eq!(moved.len(), 100);
}

/// A drain killed inside its last record, then a power loss that left
/// zeros at the end of the file: the next drain gives each torn tail a
/// line of its own, and replay pushes every whole record and none of the
/// fragments. Before, the healed fragment went out as a text message.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drained_file_cut_inside_its_last_record_replays_without_the_fragment() {
    let emulator = emulator_with_queues(&["torn", "restored"]).await;
    let dir = temp_dir("torn-tail");
    let file = dir.join("drained.ndjson");
    push_texts(&emulator, "torn", &numbered("whole", 3)).await;
    let drain = |emulator: &EmulatorHandle| {
        let mut drain = cfq(emulator);
        drain.args(["drain", "--queue", "torn", "--to"]).arg(&file);
        drain
    };
    run(drain(&emulator)).await.expect_code(0);
    let text = std::fs::read_to_string(&file).expect("read");
    // Cut the third record in its body, as a crash mid-write would.
    let cut = text.trim_end().len() - 12;
    std::fs::write(&file, &text[..cut]).expect("cut");
    let healed = run(drain(&emulator)).await;
    healed.expect_code(0);
    assert_eq!(healed.one()["drained"], 0);
    // Zeros where the file system had not written yet, then healed again.
    let mut bytes = std::fs::read(&file).expect("read");
    assert_eq!(
        bytes.last(),
        Some(&b'\n'),
        "the torn record got its line ending"
    );
    bytes.extend([0u8; 16]);
    std::fs::write(&file, &bytes).expect("zeros");
    run(drain(&emulator)).await.expect_code(0);
    assert_eq!(line_count(&file), 4);

    let mut replay = cfq(&emulator);
    replay.arg("replay").arg(&file).args(["--to", "restored"]);
    let replayed = run(replay).await;
    let summary = replayed.expect_code(7).one();
    assert_eq!(
        (summary["lines"].clone(), summary["pushed"].clone()),
        (json!(4), json!(2))
    );
    assert_eq!(
        summary["refused"],
        json!([
            {"line": 3, "reason": "starts like a cfq record but is not a whole one (a torn line?)"},
            {"line": 4, "reason": "contains a NUL byte (a crash can leave zeros where a line was being written)"},
        ])
    );
    assert_eq!(
        pull_all_texts(&emulator, "restored").await,
        ["whole 1", "whole 2"]
    );
}

/// A pull whose answer has a message without a lease id (the emulator
/// never sends one; a scripted server does): `drain`, `move` and `pull
/// --ack` write, push or print it, report it as unsettleable (exit 7) and
/// acknowledge the others. Before, the empty lease id failed the whole
/// ack, after the file was synced or the push landed, so every run
/// duplicated the batch again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_without_a_lease_id_never_keeps_the_others_from_being_acked() {
    let script = || {
        let mut pulls = 0;
        move |operation: &str, body: &Value| match operation {
            "pull" => {
                let messages = [("a", Some("lease-a")), ("b", None), ("c", Some("lease-c"))];
                (200, pulled_once(&mut pulls, &messages))
            }
            "ack" => (200, acked(body, &[])),
            "batch" => (200, success(json!({}))),
            _ => (404, failure(7003, "No route for the URI")),
        }
    };
    let acks_of = |server: &Scripted| -> Vec<(Vec<String>, Vec<String>)> {
        server
            .bodies("ack")
            .iter()
            .map(|body| (lease_ids(body, "acks"), lease_ids(body, "retries")))
            .collect()
    };
    let acked_a_and_c = vec![(vec!["lease-a".to_owned(), "lease-c".to_owned()], vec![])];
    let dir = temp_dir("leaseless");
    let file = dir.join("drained.ndjson");

    let server = scripted(script()).await;
    let mut drain = cfq_at(&server.base_url);
    drain
        .args(["drain", "--queue-id", "leaseless", "--to"])
        .arg(&file);
    let drained = run(drain).await;
    let report = drained.expect_code(7).one();
    assert_eq!(
        (
            report["drained"].clone(),
            report["unsettleable_lines"].clone()
        ),
        (json!(3), json!([2]))
    );
    let ids: Vec<Value> = records(&file).iter().map(|r| r["id"].clone()).collect();
    assert_eq!(ids, [json!("a"), json!("b"), json!("c")]);
    assert_eq!(acks_of(&server), acked_a_and_c);
    assert!(
        drained
            .stderr
            .contains("message b came without a lease id: written to line 2"),
        "{drained:?}"
    );

    let server = scripted(script()).await;
    let mut moving = cfq_at(&server.base_url);
    moving.args(["move", "--queue-id", "leaseless", "--to-id", "elsewhere"]);
    let moved = run(moving).await;
    let report = moved.expect_code(7).one();
    assert_eq!(report["moved"], 2);
    assert_eq!(report["unsettleable"][0]["id"], "b");
    assert_eq!(report["unsettleable"].as_array().map(Vec::len), Some(1));
    let pushed: Vec<usize> = server
        .bodies("batch")
        .iter()
        .map(|b| b["messages"].as_array().map_or(0, Vec::len))
        .collect();
    assert_eq!(pushed, [3], "b is pushed too: it is on both queues");
    assert_eq!(acks_of(&server), acked_a_and_c);

    let server = scripted(script()).await;
    let mut pull = cfq_at(&server.base_url);
    pull.args(["pull", "--queue-id", "leaseless", "--batch", "3", "--ack"]);
    let taken = run(pull).await;
    taken.expect_code(7);
    let printed: Vec<Value> = taken.json().iter().map(|r| r["id"].clone()).collect();
    assert_eq!(printed, [json!("a"), json!("b"), json!("c")]);
    assert!(taken.json()[1].get("lease_id").is_none(), "{taken:?}");
    assert_eq!(acks_of(&server), acked_a_and_c);
    assert!(
        taken.stderr.contains("acknowledged 2 messages"),
        "{taken:?}"
    );
}

/// An ack answered without `ackCount`: `cfq ack` says how many leases it
/// sent and that the API did not say how many it applied, never "0".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ack_answered_without_counts_is_reported_as_unknown() {
    let server = scripted(|operation, _| match operation {
        "ack" => (200, success(json!({}))),
        _ => (404, failure(7003, "No route for the URI")),
    })
    .await;
    let mut ack = cfq_at(&server.base_url);
    ack.args(["ack", "--queue-id", "uncounted", "lease-1", "lease-2"]);
    let acked = run(ack).await;
    acked.expect_code(0);
    assert_eq!(
        acked.one(),
        json!({"queue": "uncounted", "leases": 2, "acked": null, "warnings": []})
    );
    let mut table = cfq_at(&server.base_url);
    table.args([
        "ack",
        "--queue-id",
        "uncounted",
        "--output",
        "table",
        "lease-1",
    ]);
    let shown = run(table).await;
    shown.expect_code(0);
    assert_eq!(
        shown.stdout,
        "sent 1 lease to acknowledge; the API did not say how many it applied on uncounted\n"
    );
    assert_eq!(server.bodies("ack").len(), 2);
}
