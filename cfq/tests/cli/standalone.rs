//! The `cfq` binary itself: the standalone emulator starts, prints how to
//! reach it, serves the real API, and stops cleanly on SIGTERM; bad
//! arguments exit 2; every help text reads well; completions print.

use std::io::{BufRead, BufReader, Lines};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use cf_queues::{Client, Message, PullOptions};

use crate::support::{StartLines, signal};

fn cfq() -> Command {
    Command::new(env!("CARGO_BIN_EXE_cfq"))
}

/// `cfq emulator --listen 127.0.0.1:0` with `args`, its stderr to
/// `stderr`, and the lines it prints.
fn serve(args: &[&str], stderr: Stdio) -> (Child, Lines<BufReader<ChildStdout>>) {
    let mut child = cfq()
        .args(["emulator", "--listen", "127.0.0.1:0"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .expect("cfq starts");
    let stdout = child.stdout.take().expect("stdout");
    (child, BufReader::new(stdout).lines())
}

/// How `child` exits, within `limit` (else the test fails, saying `late`).
fn exit_within(child: &mut Child, limit: Duration, late: &str) -> std::process::ExitStatus {
    let started = Instant::now();
    loop {
        if let Some(exit) = child.try_wait().expect("wait") {
            return exit;
        }
        assert!(started.elapsed() < limit, "{late}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[tokio::test]
async fn emulator_serves_until_sigterm() {
    let (mut child, mut lines) = serve(
        &["--token", "cli-token", "--strict", "--queue", "jobs"],
        Stdio::inherit(),
    );
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

    signal(&child, "TERM");
    let exit = child.wait().expect("cfq exits");
    assert!(exit.success(), "cfq exited with {exit}");
}

/// `--latency` and `--rate-limits`: a request takes the round trip, and
/// answers carry Cloudflare's rate-limit headers.
#[tokio::test]
async fn emulator_at_a_distance_under_cloudflares_limits() {
    let (child, mut lines) = serve(
        &[
            "--token",
            "far-token",
            "--latency",
            "150ms,10ms",
            "--rate-limits",
            "cloudflare",
        ],
        Stdio::piped(),
    );
    let base_url = StartLines::read(&mut lines).base_url;
    let http = reqwest::Client::new();
    let url = format!(
        "{base_url}/accounts/{}/queues/jobs/metrics",
        cf_queues_emulator::EMULATOR_ACCOUNT_ID
    );
    let mut taken = Vec::new();
    let mut ratelimits = Vec::new();
    for _ in 0..2 {
        let started = Instant::now();
        let response = http
            .get(&url)
            .bearer_auth("far-token")
            .send()
            .await
            .expect("answer");
        taken.push(started.elapsed());
        assert_eq!(response.status(), 200);
        let header = |name| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        assert_eq!(
            header("ratelimit-policy").as_deref(),
            Some("\"default\";q=1200;w=300")
        );
        ratelimits.extend(header("ratelimit"));
    }
    assert_eq!(
        ratelimits,
        ["\"default\";r=1199;t=300", "\"default\";r=1198;t=300"]
    );
    let ms = |d: Duration| d.as_millis();
    assert!(
        ms(taken[0]) >= 300,
        "a new connection pays two round trips: {taken:?}"
    );
    assert!(ms(taken[1]) >= 150, "{taken:?}");
    assert!(
        ms(taken[1]) < 300,
        "a reused connection pays one: {taken:?}"
    );

    signal(&child, "TERM");
    let output = child.wait_with_output().expect("cfq exits");
    assert!(output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("round trip of 150ms (jitter up to 10ms)"),
        "{stderr}"
    );
    assert!(stderr.contains("Cloudflare's rate limits"), "{stderr}");
}

#[test]
fn bad_arguments_exit_2() {
    for (args, says) in [
        (
            vec!["emulator", "--listen", "nowhere"],
            "expected an address",
        ),
        (vec!["emulator", "--strict"], "Usage: cfq emulator"),
        (vec!["emulator", "--queue", "jobs"], "--strict"),
        (vec!["emulator", "--dead-letter", "jobs"], "QUEUE=DLQ"),
        (vec!["emulator", "--token", ""], "--token is empty"),
        (vec!["emulator", "--latency", "far"], "expected a duration"),
        (
            vec!["emulator", "--latency", "100ms,"],
            "expected a duration",
        ),
        (vec!["emulator", "--rate-limits", "aws"], "cloudflare"),
        (
            vec!["emulator", "--max-connections", "many"],
            "invalid digit",
        ),
        (
            vec!["emulator", "--header-timeout", "soon"],
            "expected a duration",
        ),
        // Checked by the emulator itself when it starts.
        (
            vec![
                "emulator",
                "--listen",
                "127.0.0.1:0",
                "--dead-letter",
                "jobs=jobs",
            ],
            "its own dead-letter queue",
        ),
        (vec!["frobnicate"], "Usage: cfq"),
        (vec![], "Usage: cfq"),
        (vec!["pull", "--batch", "500"], "1..=100"),
        (
            vec!["pull", "--ack", "--retry-after", "1s"],
            "cannot be used with",
        ),
        (vec!["push"], "BODY"),
        (vec!["push", "--file", "x", "body"], "cannot be used with"),
        (vec!["push", "--text", "body"], "cannot be used with"),
        (vec!["push", "--skip", "3", "body"], "cannot be used with"),
        (vec!["extend", "lease"], "--visibility"),
        (vec!["purge", "--yes", "ref"], "cannot be used with"),
        (vec!["drain"], "--to"),
        (vec!["pull", "--visibility", "soon"], "expected a duration"),
    ] {
        let output = cfq().args(&args).output().expect("cfq runs");
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
}

/// A token no client can send in `Authorization: Bearer TOKEN` is refused
/// before anything listens, with the problem named and the token never
/// shown: `--token "a b"` used to start an emulator nobody could use.
#[test]
fn tokens_no_client_can_send_are_refused_unshown() {
    use std::os::unix::ffi::OsStrExt as _;
    let secret = "s3cret-PART";
    let cases: [(std::ffi::OsString, &str); 6] = [
        (format!("{secret} x").into(), "has a space at character 12"),
        (format!("{secret}\tx").into(), "has a control character"),
        (format!("{secret}\u{7f}").into(), "has a control character"),
        (format!("{secret}\u{a0}").into(), "a white space character"),
        (
            format!("{secret}é").into(),
            "a character outside visible ASCII",
        ),
        (
            std::ffi::OsStr::from_bytes(b"s3cret-PART\xff").to_owned(),
            "is not UTF-8",
        ),
    ];
    for (token, says) in cases {
        // Under `timeout`: an emulator that accepted the token would serve
        // until stopped.
        let output = Command::new("timeout")
            .arg("20")
            .arg(env!("CARGO_BIN_EXE_cfq"))
            .args(["emulator", "--listen", "127.0.0.1:0", "--token"])
            .arg(&token)
            .stdin(Stdio::null())
            .output()
            .expect("cfq runs");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{token:?}: {stderr}");
        assert!(stderr.contains(says), "{token:?}: {stderr}");
        assert!(stderr.contains("Authorization: Bearer"), "{stderr}");
        assert!(!stderr.contains("s3cret"), "the token echoed: {stderr}");
        assert!(!stderr.contains("PART"), "the token echoed: {stderr}");
        assert!(output.stdout.is_empty(), "it started: {output:?}");
    }
}

/// Every command's help: it exits 0, shows its usage, and says something
/// about each of its options.
#[test]
fn every_help_reads_well() {
    let commands = [
        "push",
        "pull",
        "ack",
        "retry",
        "extend",
        "peek",
        "metrics",
        "purge",
        "drain",
        "replay",
        "move",
        "queues",
        "consumer",
        "emulator",
        "completions",
    ];
    let top = cfq().arg("--help").output().expect("cfq runs");
    assert!(top.status.success());
    let top = String::from_utf8_lossy(&top.stdout);
    for needed in [
        "CLOUDFLARE_API_TOKEN",
        "Exit codes:",
        "7  partial",
        "\"cfq\":1",
        "body_raw",
        "wrangler queues consumer http add",
    ] {
        assert!(top.contains(needed), "cfq --help lacks {needed:?}");
    }
    for command in commands {
        assert!(
            top.contains(&format!("  {command} ")),
            "{command} not listed"
        );
        for flag in ["--help", "-h"] {
            let output = cfq().args([command, flag]).output().expect("cfq runs");
            assert!(output.status.success(), "{command} {flag}");
            let text = String::from_utf8_lossy(&output.stdout);
            assert!(
                text.contains(&format!("Usage: cfq {command}")),
                "{command}: {text}"
            );
            for line in text.lines() {
                assert!(
                    line.chars().count() <= 100,
                    "{command} {flag}: too wide: {line}"
                );
            }
            // Every option comes with words, not just its name.
            for line in text.lines().filter(|l| l.trim_start().starts_with("--")) {
                if flag == "-h" {
                    assert!(
                        line.trim().contains("  "),
                        "{command}: {line:?} has no help"
                    );
                }
            }
        }
    }
    let drain = cfq().args(["drain", "--help"]).output().expect("cfq runs");
    let drain = String::from_utf8_lossy(&drain.stdout);
    assert!(
        drain.contains("fsync") && drain.contains("At least once"),
        "{drain}"
    );
}

/// A help text with its line wrapping undone, to find phrases in it.
fn help(args: &[&str]) -> String {
    let output = cfq().args(args).output().expect("cfq runs");
    assert!(output.status.success(), "{args:?}");
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn help_says_what_each_option_is_for_where_it_applies() {
    assert!(
        help(&["move", "--help"])
            .contains("-q, --queue <QUEUE> The queue to move messages from, by name or id"),
        "{}",
        help(&["move", "--help"])
    );
    // The options of commands that talk to the API are not the emulator's.
    let emulator = help(&["emulator", "--help"]);
    for flag in [
        "--account",
        "--base-url",
        "--output",
        "--verbose",
        "Global options",
    ] {
        assert!(!emulator.contains(flag), "emulator --help offers {flag}");
    }
    assert!(!help(&["completions", "--help"]).contains("--account"));
    for command in ["pull", "peek", "drain", "move"] {
        assert!(help(&[command, "-h"]).contains("--batch <N>"), "{command}");
        assert!(
            help(&[command, "-h"]).contains("--account <ACCOUNT_ID>"),
            "{command}"
        );
    }
    for command in ["ack", "retry", "extend"] {
        assert!(
            help(&[command, "-h"]).contains(
                "<LEASE>... Lease ids from pull; - reads them from stdin, separated by white space"
            ),
            "{command}"
        );
    }
    assert!(help(&["--help"]).contains(
        "Tokens are never taken on the command line, where other users of the machine could \
         read them; the one exception is `cfq emulator --token`, the token the local emulator \
         accepts, not one cfq sends."
    ));
    assert!(help(&["push", "--help"]).contains(
        "A body read from stdin loses one trailing line ending (a newline, or CR LF), as the \
         shell's $(...) does"
    ));
    assert!(
        help(&["--help"])
            .contains("a purge --all that started but did not complete within --timeout")
    );
    // From nothing to a running consumer, by name; cfq enables HTTP pull.
    let top = help(&["--help"]);
    for needed in [
        "`cfq queues create orders`, then `cfq consumer enable --queue orders`",
        "--queue-id and --queue-name force one reading",
    ] {
        assert!(top.contains(needed), "cfq --help lacks {needed:?}");
    }
    for command in ["pull", "drain"] {
        assert!(
            help(&[command, "--help"]).contains("`cfq consumer enable --queue QUEUE`"),
            "{command}"
        );
    }
}

/// Given before `emulator`, the options of the API commands are refused,
/// not ignored: the emulator's own --queue goes after its name.
#[test]
fn api_options_before_the_emulator_are_refused() {
    for args in [
        vec!["--queue", "jobs", "emulator", "--listen", "127.0.0.1:0"],
        vec!["--account", "abc", "emulator", "--listen", "127.0.0.1:0"],
        vec!["-v", "emulator", "--listen", "127.0.0.1:0"],
        vec!["--output", "json", "completions", "bash"],
    ] {
        let mut child = cfq()
            .args(&args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("cfq starts");
        // An emulator that took the options would serve until stopped.
        let started = Instant::now();
        while child.try_wait().expect("wait").is_none() {
            if started.elapsed() > Duration::from_secs(10) {
                child.kill().expect("kill");
                panic!("{args:?} started");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let output = child.wait_with_output().expect("cfq exits");
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains("do not apply to `cfq emulator`"),
            "{args:?}: {stderr}"
        );
    }
}

/// `cfq emulator | head -1`: the reader takes the first line and goes
/// away. The emulator keeps serving, and stops cleanly, without a panic.
#[tokio::test]
async fn emulator_keeps_serving_once_its_stdout_is_closed() {
    let mut child = cfq()
        .args(["emulator", "--listen", "127.0.0.1:0"])
        .args(["--token", "pipe-token"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("cfq starts");
    let mut reader = BufReader::new(child.stdout.take().expect("stdout"));
    let mut first = String::new();
    reader.read_line(&mut first).expect("the first line");
    drop(reader);
    let base_url = first
        .split_whitespace()
        .last()
        .expect("the base URL")
        .to_owned();
    assert!(base_url.starts_with("http://127.0.0.1:"), "{first}");

    let client = Client::builder()
        .base_url(base_url)
        .api_token("pipe-token")
        .account_id(cf_queues_emulator::EMULATOR_ACCOUNT_ID)
        .build()
        .expect("client");
    let queue = client.queue("piped").expect("id");
    queue.push(Message::text("still here")).await.expect("push");
    let pulled = queue.pull(PullOptions::new()).await.expect("pull");
    assert_eq!(
        pulled.messages[0].body().text().expect("text"),
        "still here"
    );

    // Its "stopping" line meets the closed pipe.
    signal(&child, "TERM");
    let output = tokio::task::spawn_blocking(move || child.wait_with_output().expect("cfq exits"))
        .await
        .expect("no panic");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn completions_for_each_shell() {
    for shell in ["bash", "zsh", "fish"] {
        let output = cfq()
            .args(["completions", shell])
            .output()
            .expect("cfq runs");
        assert!(output.status.success(), "{shell}");
        let script = String::from_utf8_lossy(&output.stdout);
        for word in ["cfq", "drain", "replay", "visibility"] {
            assert!(script.contains(word), "{shell} completion lacks {word}");
        }
    }
    let output = cfq()
        .args(["completions", "tcsh"])
        .output()
        .expect("cfq runs");
    assert_eq!(output.status.code(), Some(2));
}

/// The whole dead-letter story from a shell: `cfq emulator` with a
/// dead-letter queue, a message that runs out of attempts, and `cfq move`
/// redriving it.
#[test]
fn dead_letter_redrive_end_to_end() {
    let (mut emulator, mut lines) = serve(
        &[
            "--token",
            "dlq-token",
            "--max-retries",
            "1",
            "--dead-letter",
            "jobs=parked",
        ],
        Stdio::inherit(),
    );
    let mut exports = Vec::new();
    while exports.len() < 3 {
        let line = lines.next().expect("a line").expect("utf-8");
        if let Some(export) = line.trim().strip_prefix("export ") {
            let (name, value) = export.split_once('=').expect("NAME=value");
            exports.push((name.to_owned(), value.to_owned()));
        }
    }
    let against = |args: &[&str]| {
        let output = cfq()
            .envs(exports.iter().map(|(n, v)| (n.as_str(), v.as_str())))
            .env_remove("CFQ_QUEUE")
            .args(args)
            .output()
            .expect("cfq runs");
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stdout).into_owned(),
        )
    };
    // The lax emulator's queues spring into being by id, named after it.
    assert_eq!(
        against(&["push", "--queue-id", "jobs", "poison"]).0,
        Some(0)
    );
    let (code, pulled) = against(&["pull", "--queue", "jobs", "--visibility", "200ms"]);
    assert_eq!(code, Some(0));
    assert!(pulled.contains("poison"));
    std::thread::sleep(Duration::from_millis(400));
    // The lease ran out on the last allowed attempt: the message is parked.
    let (_, peeked) = against(&["peek", "--queue", "jobs"]);
    assert!(peeked.is_empty(), "{peeked}");
    let (code, moved) = against(&["move", "--queue", "parked", "--to", "jobs"]);
    assert_eq!(code, Some(0), "{moved}");
    assert!(moved.contains("\"moved\":1"), "{moved}");
    let (_, back) = against(&["pull", "--queue", "jobs", "--ack"]);
    assert!(
        back.contains("poison") && back.contains("\"attempts\":1"),
        "{back}"
    );

    signal(&emulator, "TERM");
    assert!(emulator.wait().expect("cfq exits").success());
}

/// The server limits reach the emulator: with a short shutdown grace, a
/// half-sent request does not hold SIGTERM for the default 5 s.
#[test]
fn emulator_limits_are_flags() {
    use std::io::Write as _;
    let (mut emulator, mut lines) = serve(
        &[
            "--token",
            "limits-token",
            "--max-connections",
            "8",
            "--header-timeout",
            "30s",
            "--body-timeout",
            "30s",
            "--idle-timeout",
            "30s",
            "--write-timeout",
            "5s",
            "--response-buffer",
            "32768",
            "--max-body",
            "2048",
            "--shutdown-grace",
            "200ms",
        ],
        Stdio::inherit(),
    );
    let first = lines.next().expect("a line").expect("utf-8");
    let address = first
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .expect("the base URL")
        .to_owned();
    // A body over --max-body is refused with 413.
    let mut big = std::net::TcpStream::connect(&address).expect("connect");
    let body = format!(
        "{{\"body\":\"{}\",\"content_type\":\"text\"}}",
        "x".repeat(4096)
    );
    write!(
        big,
        "POST /client/v4/accounts/{}/queues/q/messages HTTP/1.1\r\nhost: e\r\n\
         authorization: Bearer limits-token\r\ncontent-type: application/json\r\n\
         content-length: {}\r\n\r\n{body}",
        cf_queues_emulator::EMULATOR_ACCOUNT_ID,
        body.len()
    )
    .expect("write");
    let mut answer = String::new();
    let _ = std::io::Read::read_to_string(&mut big, &mut answer);
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    let mut half = std::net::TcpStream::connect(&address).expect("connect");
    half.write_all(b"POST /client/v4/accounts/").expect("write");
    std::thread::sleep(Duration::from_millis(100));
    signal(&emulator, "TERM");
    let exit = exit_within(
        &mut emulator,
        Duration::from_secs(3),
        "the grace of 200ms was not applied",
    );
    assert!(exit.success(), "cfq exited with {exit}");
}

/// The standalone emulator stops on SIGTERM even while a client holds a
/// half-sent request (the in-process shutdown is tested with the emulator).
#[cfg(unix)]
#[test]
fn cfq_exits_on_sigterm_while_a_client_holds_a_half_sent_request() {
    use std::io::Write as _;

    let (mut child, mut lines) = serve(&[], Stdio::inherit());
    let url = lines
        .next()
        .and_then(Result::ok)
        .and_then(|line| line.split("http://").nth(1).map(str::to_owned))
        .expect("cfq prints its base URL");
    let address = url.split('/').next().expect("host and port").to_owned();
    let mut half = std::net::TcpStream::connect(&address).expect("connect");
    half.write_all(b"POST /client/v4/accounts/").expect("write");
    std::thread::sleep(Duration::from_millis(100));
    signal(&child, "TERM");
    let exit = exit_within(&mut child, Duration::from_secs(15), "cfq did not exit");
    assert!(exit.success(), "cfq exited with {exit}");
    drop(lines);
}

/// `cfq emulator` prints the dashboard's link (a secret of its own, not the
/// token), which logs a browser in; `--no-dashboard` serves none.
#[tokio::test]
async fn emulator_prints_the_dashboards_link_unless_told_not_to() {
    let (mut child, mut lines) = serve(&["--token", "cli-token"], Stdio::inherit());
    let printed = StartLines::read(&mut lines);
    let link = printed
        .dashboard
        .unwrap_or_else(|| panic!("no dashboard link in {:?}", printed.lines));
    assert!(link.contains("/_dashboard/login?key="), "{link}");
    assert!(!link.contains("cli-token"), "{link}");
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("http client");
    let login = http.get(&link).send().await.expect("answered");
    assert_eq!(login.status(), 303);
    assert!(login.headers().contains_key("set-cookie"));
    signal(&child, "TERM");
    assert!(child.wait().expect("cfq exits").success());

    let (mut child, mut lines) = serve(&["--no-dashboard"], Stdio::inherit());
    let printed = StartLines::read(&mut lines);
    assert!(
        !printed.lines.iter().any(|l| l.contains("dashboard")),
        "{printed:?}"
    );
    let root = printed.base_url.trim_end_matches("/client/v4");
    let page = http
        .get(format!("{root}/_dashboard/"))
        .send()
        .await
        .expect("answered");
    assert_eq!(page.status(), 404, "no dashboard served");
    signal(&child, "TERM");
    assert!(child.wait().expect("cfq exits").success());
}

/// `--stop-on-stdin-close`: the emulator stops in order when whoever held
/// its standard input goes away; without the flag, a closed stdin (as a
/// service manager gives) changes nothing.
#[tokio::test]
async fn the_emulator_stops_when_its_stdin_closes_if_asked() {
    let start = |flag: Option<&str>| {
        let mut child = cfq()
            .args(["emulator", "--listen", "127.0.0.1:0"])
            .args(flag)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("cfq starts");
        let stdout = child.stdout.take().expect("stdout");
        let mut lines = BufReader::new(stdout).lines();
        StartLines::read(&mut lines);
        (child, lines)
    };
    let (mut asked, lines) = start(Some("--stop-on-stdin-close"));
    drop(asked.stdin.take());
    let exit = exit_within(
        &mut asked,
        Duration::from_secs(10),
        "still running with stdin closed",
    );
    assert!(exit.success(), "{exit}");
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    assert_eq!(rest, ["stopping"], "stopped in order");

    let (mut not_asked, _lines) = start(None);
    drop(not_asked.stdin.take());
    std::thread::sleep(Duration::from_secs(1));
    assert!(
        not_asked.try_wait().expect("wait").is_none(),
        "still serving"
    );
    signal(&not_asked, "TERM");
    assert!(
        exit_within(
            &mut not_asked,
            Duration::from_secs(10),
            "no stop on SIGTERM"
        )
        .success()
    );
}

/// The start-up lines, version 1 of their contract (cfq's README): every
/// line, in order, exactly; SIGHUP then stops the emulator in order.
#[tokio::test]
async fn the_start_up_lines_are_version_1_and_sighup_stops_in_order() {
    let dir = std::env::temp_dir().join(format!("cfq-start-lines-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a directory");
    let config = dir.join("account.toml");
    std::fs::write(
        &config,
        "[[queues]]\nqueue_name = \"jobs\"\nqueue_id = \"0123456789abcdef0123456789abcd01\"\n",
    )
    .expect("written");
    let (mut child, mut lines) = serve(
        &[
            "--token",
            "lines-token",
            "--config",
            &config.display().to_string(),
        ],
        Stdio::null(),
    );
    let printed = StartLines::read(&mut lines);
    let base = &printed.base_url;
    let dashboard = printed.dashboard.clone().expect("a dashboard link");
    assert_eq!(
        printed.lines,
        [
            format!("cf-queues emulator listening on {base}"),
            format!("  export CLOUDFLARE_BASE_URL={base}"),
            "  export CLOUDFLARE_API_TOKEN=lines-token".to_owned(),
            format!(
                "  export CLOUDFLARE_ACCOUNT_ID={}",
                cf_queues_emulator::EMULATOR_ACCOUNT_ID
            ),
            "  queue jobs: 0123456789abcdef0123456789abcd01".to_owned(),
            format!("  dashboard: {dashboard}"),
            "  start-up lines: version 1".to_owned(),
            "press Ctrl-C to stop".to_owned(),
        ]
    );
    assert!(base.starts_with("http://127.0.0.1:") && base.ends_with("/client/v4"));
    signal(&child, "HUP");
    let exit = exit_within(
        &mut child,
        Duration::from_secs(10),
        "SIGHUP did not stop it",
    );
    assert!(exit.success(), "{exit}");
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    assert_eq!(rest, ["stopping"], "stopped in order");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--stop-with-parent`: the emulator stops when the process that started
/// it dies, though a child of that process still holds its stdin.
#[tokio::test]
async fn the_emulator_stops_with_its_parent_whatever_holds_its_stdin() {
    // The shell starts the emulator with the shell's stdin, forks a
    // child that keeps it, and is then killed.
    let mut shell = Command::new("sh")
        .arg("-c")
        // A background command's stdin is /dev/null unless redirected:
        // the pipe goes to both through fd 3.
        .arg(r#"exec 3<&0; "$0" emulator --listen 127.0.0.1:0 --no-dashboard --stop-on-stdin-close --stop-with-parent <&3 >/dev/null 2>&1 & echo $!; sleep 20 <&3 & wait"#)
        .arg(env!("CARGO_BIN_EXE_cfq"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("sh starts");
    let stdout = shell.stdout.take().expect("stdout");
    let pid: u32 = BufReader::new(stdout)
        .lines()
        .next()
        .and_then(Result::ok)
        .and_then(|l| l.trim().parse().ok())
        .expect("the emulator's pid");
    let running = |pid: u32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|stat| stat.rsplit(") ").next().map(|rest| !rest.starts_with('Z')))
            .unwrap_or(false)
    };
    std::thread::sleep(Duration::from_millis(500));
    assert!(running(pid), "the emulator serves");
    shell.kill().expect("killed");
    shell.wait().expect("reaped");
    let started = Instant::now();
    while running(pid) {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the emulator outlived its parent while its stdin was held"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
