//! `cfq push --file` stopped by SIGINT or SIGTERM: the first signal lets
//! the batch in flight finish, a second abandons it; either way the run
//! prints its summary and the whole command that resumes it.
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use cf_queues_emulator::{EmulatorHandle, Fault, Operation};

use crate::support::{
    LOOKUP, assert_resumed, cfq, emulator_with_queues, finish, numbered, pasted, resume_command,
    run, signal, temp_dir,
};
use serde_json::json;

/// A file of `count` numbered text lines, and the bodies they make.
fn numbered_file(dir: &std::path::Path, count: usize) -> (std::path::PathBuf, Vec<String>) {
    let bodies = numbered("line", count);
    let file = dir.join("lines.txt");
    std::fs::write(&file, bodies.join("\n") + "\n").expect("write");
    (file, bodies)
}

/// Starts `cfq push --file` with the first batch answered at once and the
/// second held by the emulator for `hold`; gives the child once the
/// second batch is held.
async fn push_until_the_second_batch_is_held(
    emulator: &EmulatorHandle,
    queue: &str,
    file: &std::path::Path,
    hold: Duration,
) -> (Command, Child) {
    emulator.inject(Fault::stall_only(Duration::from_millis(1)).only(Operation::Batch));
    emulator.inject(Fault::stall_only(hold).only(Operation::Batch));
    let before = emulator.requests_received();
    let mut command = cfq(emulator);
    command.args(["push", "--queue", queue, "--file"]).arg(file);
    let mut child = cfq(emulator)
        .args(["push", "--queue", queue, "--file"])
        .arg(file)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("cfq starts");
    let started = Instant::now();
    while emulator.requests_received() < before + LOOKUP + 2 {
        assert!(started.elapsed() < Duration::from_secs(30), "never held");
        assert!(child.try_wait().expect("wait").is_none(), "cfq ended early");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    (command, child)
}

/// SIGINT while the second batch is in flight: that batch is awaited and
/// lands, nothing after it is sent, and the printed command pushes the
/// rest, so that every line lands once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigint_lets_the_batch_in_flight_land_and_prints_the_resume_command() {
    stopped_in_order_by("INT").await;
}

/// SIGHUP (a closing terminal, the npm launcher passing it on) stops the
/// run in order as SIGINT does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_stops_in_order_as_sigint_does() {
    stopped_in_order_by("HUP").await;
}

/// A `push --file` stopped by `SIG{name}` while its second batch is in
/// flight, then resumed with the command it printed.
async fn stopped_in_order_by(name: &str) {
    let queue = format!("interrupted{}", name.to_lowercase());
    let emulator = emulator_with_queues(&[queue.as_str()]).await;
    let dir = temp_dir(&format!("sig{}", name.to_lowercase()));
    let (file, bodies) = numbered_file(&dir, 300);
    let (like, child) =
        push_until_the_second_batch_is_held(&emulator, &queue, &file, Duration::from_secs(2)).await;
    signal(&child, name);
    let stopped = finish(child).await;
    let summary = stopped.expect_code(7).one();
    assert_eq!(summary["pushed"], 200, "the batch in flight landed");
    assert_eq!(summary.get("failed"), None, "{stopped:?}");
    let resume = resume_command(&stopped.stderr);
    let skip = format!("--skip {}", 200);
    assert!(resume.ends_with(&skip), "{resume}");
    let reason = format!("stopped by SIG{name}");
    assert_eq!(
        summary["stopped"],
        json!({"reason": reason, "resume_skip": 200, "resume_command": resume})
    );
    assert!(
        stopped.stderr.contains(&format!("error: {reason}")),
        "{stopped:?}"
    );

    let resumed = run(pasted(&like, &resume)).await;
    assert_resumed(&resumed, 100, (&emulator, &queue, "line"), &bodies).await;
}

/// A second signal stops at once: the batch held by the server is
/// abandoned and reported as one that may have landed, and the command
/// resumes at its first line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_signal_abandons_the_batch_in_flight_as_one_that_may_have_landed() {
    let emulator = emulator_with_queues(&["abandoned"]).await;
    let dir = temp_dir("sigterm-twice");
    let (file, _) = numbered_file(&dir, 300);
    let (_, child) =
        push_until_the_second_batch_is_held(&emulator, "abandoned", &file, Duration::from_secs(60))
            .await;
    let started = Instant::now();
    signal(&child, "TERM");
    tokio::time::sleep(Duration::from_millis(200)).await;
    signal(&child, "INT");
    let stopped = finish(child).await;
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "did not wait for the held batch"
    );
    let summary = stopped.expect_code(7).one();
    assert_eq!(summary["pushed"], 100);
    let failed = &summary["failed"];
    assert_eq!(failed["may_have_landed"], true);
    assert_eq!(failed["resume_skip"], 100);
    let lines: Vec<u64> = (101..=200).collect();
    assert_eq!(failed["lines"], json!(lines));
    let resume = resume_command(&stopped.stderr);
    assert!(resume.ends_with("--skip 100"), "{resume}");
    assert_eq!(failed["resume_command"], resume);
    assert_eq!(summary["stopped"]["resume_skip"], 100);
    assert!(
        stopped.stderr.contains(
            "error: stopped by SIGTERM and a second signal, with a batch in flight that may have landed"
        ),
        "{stopped:?}"
    );
}
