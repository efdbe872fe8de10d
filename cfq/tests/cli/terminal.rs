//! `cfq` on a terminal (a pseudo-terminal made by `script`): Ctrl-C ends a
//! command within a second whatever it waits on, the live view stays whole
//! when its lines are longer than the screen, a late reading is not caught
//! up in a burst, and text from the network reaches the screen escaped.

use std::process::Stdio;
use std::time::{Duration, Instant};

use cf_queues_emulator::{Fault, Operation};

use crate::support::{Pty, cfq, cfq_at, emulator_with_queues, run, silent_server};

/// A queue id (32 hex digits: no name to look up first).
const QUEUE_ID: &str = "0123456789abcdef0123456789abcdef";
/// Text no server should send: an OSC 52 clipboard write, a bell, a
/// screen clear, a forged line, a C1 CSI, a bidirectional override.
const HOSTILE: &str =
    "boom \u{1b}]52;c;aGVsbG8=\u{7}\u{1b}[2J\r\ncfq: all good\u{9b}31m \u{202e}gnp.exe";

/// No byte of `HOSTILE`'s controls reached the screen raw; each is shown
/// escaped.
fn assert_escaped(seen: &str) {
    for raw in [
        "\u{1b}]52",
        "\u{7}",
        "\u{1b}[2J",
        "\u{9b}",
        "\u{202e}",
        "\r\ncfq: all good",
    ] {
        assert!(
            !seen.contains(raw),
            "{raw:?} reached the terminal: {seen:?}"
        );
    }
    assert!(seen.contains("\\u{1b}]52;c;aGVsbG8=\\u{7}"), "{seen:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_ends_a_watch_waiting_for_an_answer_within_a_second() {
    let server = silent_server();
    let watch = cfq_at(&server);
    let (status, seen, took) = tokio::task::spawn_blocking(move || {
        let args = format!("metrics --queue {QUEUE_ID} --watch");
        let mut pty = Pty::start(&watch, &args, 80);
        // The cursor is hidden as the view starts; its first reading waits.
        pty.wait_for("\u{1b}[?25l", Duration::from_secs(10));
        std::thread::sleep(Duration::from_millis(300));
        pty.type_keys(b"\x03");
        pty.exit_within(Duration::from_secs(10))
    })
    .await
    .expect("no panic");
    assert!(status.success(), "{status:?}: {seen:?}");
    assert!(took < Duration::from_secs(1), "ended {took:?} after Ctrl-C");
    assert!(
        seen.trim_end().ends_with("\u{1b}[?25h"),
        "the cursor shown again: {seen:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_ends_a_plain_command_waiting_for_an_answer_within_a_second() {
    let server = silent_server();
    let pull = cfq_at(&server);
    let (status, seen, took) = tokio::task::spawn_blocking(move || {
        let mut pty = Pty::start(&pull, &format!("pull --queue {QUEUE_ID}"), 80);
        std::thread::sleep(Duration::from_millis(500));
        pty.type_keys(b"\x03");
        pty.exit_within(Duration::from_secs(10))
    })
    .await
    .expect("no panic");
    assert!(!status.success(), "interrupted: {status:?}: {seen:?}");
    assert!(took < Duration::from_secs(1), "ended {took:?} after Ctrl-C");
}

/// An error line of 250 characters on a screen 40 wide: every line drawn
/// is one row (cut, with `…`), and each redraw moves up over exactly the
/// rows of the frame before, so no stale line is left behind; the
/// server's text is escaped inside the frame.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_live_view_stays_whole_when_its_lines_are_wider_than_the_screen() {
    let emulator = emulator_with_queues(&["wide"]).await;
    let message = format!("{HOSTILE} {}", "x".repeat(250));
    emulator.inject(
        Fault::status(503)
            .cloudflare_error(15000, message)
            .times(1_000)
            .only(Operation::Metrics),
    );
    let watch = cfq(&emulator);
    let seen = tokio::task::spawn_blocking(move || {
        let mut pty = Pty::start(&watch, "metrics --queue wide --watch 1s", 40);
        // Three frames: each drawn after a call and its retries failed.
        let started = Instant::now();
        while pty.seen().matches("\u{1b}[3A").count() < 2 {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "{:?}",
                pty.seen()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        pty.type_keys(b"\x03");
        let (status, seen, _) = pty.exit_within(Duration::from_secs(10));
        assert!(status.success(), "{status:?}: {seen:?}");
        seen
    })
    .await
    .expect("no panic");
    let lines: Vec<&str> = seen
        .split("\r\u{1b}[2K")
        .skip(1)
        .map(|l| {
            l.split('\n')
                .next()
                .unwrap_or_default()
                .trim_end_matches('\r')
        })
        .collect();
    assert!(lines.len() >= 9, "{seen:?}");
    for line in &lines {
        assert!(
            line.chars().count() < 40,
            "a line wider than the screen: {line:?}"
        );
    }
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("error: ") && l.ends_with('…')),
        "{lines:?}"
    );
    // Three lines a frame (title, waiting, the error), three rows up each time.
    assert!(
        !seen.contains("\u{1b}[1A") && !seen.contains("\u{1b}[8A"),
        "{seen:?}"
    );
    assert!(!seen.contains("\u{1b}]52"), "{seen:?}");
}

/// A reading held 10 s by the server: the view's next reading comes at
/// once, and then one a second, instead of the ten it missed in a burst.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_reading_is_not_caught_up_in_a_burst() {
    let emulator = emulator_with_queues(&["late"]).await;
    let watch = cfq(&emulator);
    let mut pty = tokio::task::spawn_blocking(move || {
        let mut pty = Pty::start(&watch, "metrics --queue late --watch 1s", 80);
        pty.wait_for("the last 1 readings", Duration::from_secs(10));
        pty
    })
    .await
    .expect("no panic");
    emulator.inject(Fault::stall_only(Duration::from_secs(10)).only(Operation::Metrics));
    let before = emulator.requests_received();
    tokio::time::sleep(Duration::from_secs(12)).await;
    let during = emulator.requests_received() - before;
    // The held one (sent within the second), the one after it at once,
    // and one a second for the two seconds left: four, give or take one
    // for where the seconds fall.
    assert!(
        during <= 5,
        "{during} readings in 12 s: a burst after the stall"
    );
    pty.type_keys(b"\x03");
    let (status, seen, _) =
        tokio::task::spawn_blocking(move || pty.exit_within(Duration::from_secs(10)))
            .await
            .expect("no panic");
    assert!(status.success(), "{status:?}: {seen:?}");
}

/// An API error whose message holds terminal controls: `cfq`'s report on
/// stderr shows them escaped, never raw, wherever stderr goes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_from_the_network_is_escaped_before_it_is_printed() {
    let emulator = emulator_with_queues(&["hostile"]).await;
    emulator.inject(
        Fault::status(400)
            .cloudflare_error(10000, HOSTILE)
            .only(Operation::Push),
    );
    let mut push = cfq(&emulator);
    push.args(["push", "--queue", "hostile", "hello"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let pushed = run(push).await;
    assert_escaped(&pushed.stderr);
    assert!(
        pushed.stderr.contains("\\u{202e}gnp.exe"),
        "{}",
        pushed.stderr
    );

    // On a terminal, a listed body's bidirectional override too.
    emulator.clear_faults();
    let queue = crate::support::queue_of(&emulator, "hostile");
    queue
        .push(cf_queues::Message::text(HOSTILE))
        .await
        .expect("pushed");
    let peek = cfq(&emulator);
    let seen = tokio::task::spawn_blocking(move || {
        let pty = Pty::start(&peek, "peek --queue hostile", 200);
        pty.exit_within(Duration::from_secs(20)).1
    })
    .await
    .expect("no panic");
    // The table cuts the body; what it shows is escaped.
    assert!(seen.contains("\\u{202e}g…"), "{seen:?}");
    assert!(
        !seen.contains('\u{202e}') && !seen.contains("\u{1b}]52"),
        "{seen:?}"
    );
}
