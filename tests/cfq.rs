//! The `cfq` binary: the standalone emulator starts, prints how to reach it,
//! serves the real API, and stops cleanly on SIGTERM.
#![cfg(feature = "cli")]

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use cf_queues::{Client, Message, PullOptions};

fn cfq() -> Command {
    Command::new(env!("CARGO_BIN_EXE_cfq"))
}

#[tokio::test]
async fn emulator_serves_until_sigterm() {
    let mut child = cfq()
        .args([
            "emulator",
            "--listen",
            "127.0.0.1:0",
            "--token",
            "cli-token",
            "--strict",
            "--queue",
            "jobs",
        ])
        .stdout(Stdio::piped())
        .spawn()
        .expect("cfq starts");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    let mut printed = Vec::new();
    while printed.len() < 4 {
        printed.push(lines.next().expect("a line").expect("utf-8"));
    }
    let export = |name: &str| {
        printed
            .iter()
            .find_map(|l| {
                l.trim()
                    .strip_prefix(&format!("export {name}="))
                    .map(str::to_owned)
            })
            .unwrap_or_else(|| panic!("{name} not printed in {printed:?}"))
    };
    assert_eq!(export("CLOUDFLARE_API_TOKEN"), "cli-token");
    let client = Client::builder()
        .base_url(export("CLOUDFLARE_BASE_URL"))
        .api_token("cli-token")
        .account_id(export("CLOUDFLARE_ACCOUNT_ID"))
        .build()
        .expect("client");
    let jobs = client.queue("jobs").expect("id");
    jobs.push(Message::text("from the cli test"))
        .await
        .expect("push");
    let pulled = jobs.pull(PullOptions::new()).await.expect("pull");
    assert_eq!(
        pulled.messages[0].body().text().expect("text"),
        "from the cli test"
    );
    let unknown = client
        .queue("other")
        .expect("id")
        .push(Message::text("x"))
        .await
        .expect_err("strict");
    assert_eq!(unknown.codes(), vec![10104]);

    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success());
    let exit = child.wait().expect("cfq exits");
    assert!(exit.success(), "cfq exited with {exit}");
}

#[test]
fn bad_arguments_exit_2_with_usage() {
    for args in [
        vec!["emulator", "--listen", "nowhere"],
        vec!["emulator", "--strict"],
        vec!["frobnicate"],
        vec![],
    ] {
        let output = cfq().args(&args).output().expect("cfq runs");
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        assert!(
            String::from_utf8_lossy(&output.stderr)
                .to_lowercase()
                .contains("usage: cfq"),
            "{args:?}"
        );
    }
    let help = cfq()
        .args(["emulator", "--help"])
        .output()
        .expect("cfq runs");
    assert!(help.status.success());
}
