//! `cfq emulator --data-dir`: the account and its messages kept across a
//! stop, the directory locked while one emulator uses it, and `--reset`.

use std::ffi::OsStr;
use std::process::Command;

use serde_json::json;

use crate::support::{Served, TOKEN, run, temp_dir};

async fn cfq_run(served: &Served, words: &[&str]) -> crate::support::Run {
    let mut command = served.cfq();
    command.args(words);
    run(command).await
}

fn on(dir: &std::path::Path, extra: &[&str]) -> Served {
    let mut args: Vec<&OsStr> = vec!["--data-dir".as_ref(), dir.as_os_str()];
    args.extend(extra.iter().map(|a| OsStr::new(*a)));
    Served::start(&args)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_data_dir_keeps_the_account_and_its_messages_across_a_stop() {
    let dir = temp_dir("data-dir-kept");
    let served = on(&dir, &[]);
    cfq_run(&served, &["queues", "create", "orders"])
        .await
        .expect_code(0);
    cfq_run(
        &served,
        &[
            "consumer",
            "enable",
            "--queue",
            "orders",
            "--max-retries",
            "7",
        ],
    )
    .await
    .expect_code(0);
    cfq_run(&served, &["push", "--queue", "orders", "kept"])
        .await
        .expect_code(0);

    // A second emulator on the same directory is refused while it is used.
    let second = Command::new(env!("CARGO_BIN_EXE_cfq"))
        .args([
            "emulator",
            "--listen",
            "127.0.0.1:0",
            "--token",
            TOKEN,
            "--data-dir",
        ])
        .arg(&dir)
        .output()
        .expect("cfq runs");
    assert_eq!(second.status.code(), Some(1), "{second:?}");
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(stderr.contains("cannot start the emulator"), "{stderr}");
    served.stop();

    let again = on(&dir, &[]);
    let info = cfq_run(&again, &["consumer", "info", "--queue", "orders"]).await;
    info.expect_code(0);
    assert_eq!(info.one()["consumer"]["settings"]["max_retries"], json!(7));
    let pulled = cfq_run(&again, &["pull", "--queue", "orders"]).await;
    let message = pulled.expect_code(0).one();
    assert_eq!(
        (&message["body"], &message["attempts"]),
        (&json!("kept"), &json!(1))
    );
    again.stop();

    // --reset empties it: the queue is gone.
    let reset = on(&dir, &["--reset"]);
    let gone = cfq_run(&reset, &["queues", "info", "--queue", "orders"]).await;
    gone.expect_code(4);
    reset.stop();
}

#[test]
fn reset_needs_a_data_dir() {
    let output = Command::new(env!("CARGO_BIN_EXE_cfq"))
        .args(["emulator", "--reset"])
        .output()
        .expect("cfq runs");
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    assert!(String::from_utf8_lossy(&output.stderr).contains("--data-dir"));
}
