//! What the `cfq` tests share: an in-process emulator, the built `cfq`
//! binary run against it with std's `Command` (the scripted server for
//! answers the emulator never gives is the kit's `scripted`).
#![allow(dead_code)]

use std::ffi::OsStr;
use std::io::{BufRead as _, BufReader, Write as _};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};

use cf_queues_emulator::config::EmulatorConfig;
use cf_queues_emulator::{EMULATOR_ACCOUNT_ID, Emulator, EmulatorHandle};
use cf_queues_testkit::{emulators, wire};
use serde_json::Value;

pub const TOKEN: &str = "cfq-test-secret-token";

/// The requests a command sends before its own to resolve a `--queue`
/// value that is not 32 hex digits: one list call, which looks the value up
/// as a name (the tests' queues are named freely, as the emulator allows).
pub const LOOKUP: u64 = 1;

pub async fn emulator() -> EmulatorHandle {
    emulator_with(|emulator| emulator).await
}

/// An emulator with the test token, configured by `configure`.
pub async fn emulator_with(configure: impl FnOnce(Emulator) -> Emulator) -> EmulatorHandle {
    emulators::emulator_with(|emulator| configure(emulator.token(TOKEN))).await
}

/// An emulator with the test token and the account `toml` declares.
pub async fn emulator_from_toml(toml: &str) -> EmulatorHandle {
    let config = EmulatorConfig::from_toml(toml).expect("a valid configuration");
    emulator_with(|emulator| emulator.config(config)).await
}

/// Brings queues into being on a lax emulator, each named after its id,
/// as a first request by id does. cfq reads a `--queue` value that is not
/// 32 lowercase hex digits as a name only, and a name no queue has is an
/// error, so a test's queues exist before cfq names them.
pub async fn lax_queues(emulator: &EmulatorHandle, ids: &[&str]) {
    let client = emulator.client().expect("client");
    for id in ids {
        let queue = client.queue(*id).expect("an id");
        queue.metrics().await.expect("the queue springs into being");
    }
}

/// An emulator ([`emulator`]) with the queues of [`lax_queues`].
pub async fn emulator_with_queues(ids: &[&str]) -> EmulatorHandle {
    let emulator = emulator().await;
    lax_queues(&emulator, ids).await;
    emulator
}

/// One of the emulator's queues, through the library.
pub fn queue_of(emulator: &EmulatorHandle, name: &str) -> cf_queues::Queue {
    emulator.client().expect("client").queue(name).expect("id")
}

/// Pushes each body as a text message of its own, in order.
pub async fn push_each(queue: &cf_queues::Queue, bodies: &[&str]) {
    for body in bodies {
        queue
            .push(cf_queues::Message::text(*body))
            .await
            .expect("push");
    }
}

/// The account's queues by name, sorted, read through the library.
pub async fn queue_names(emulator: &EmulatorHandle) -> Vec<String> {
    let client = emulator.client().expect("client");
    let mut names: Vec<String> = client
        .queues()
        .await
        .expect("list")
        .into_iter()
        .filter_map(|q| q.queue_name)
        .collect();
    names.sort();
    names
}

/// `cfq` aimed at `base_url` with the test token, and nothing from the
/// developer's own environment.
pub fn cfq_at(base_url: &str) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_cfq"));
    command
        .env_remove("CLOUDFLARE_API_KEY")
        .env_remove("CLOUDFLARE_EMAIL")
        .env_remove("CFQ_QUEUE")
        .env("CLOUDFLARE_BASE_URL", base_url)
        .env("CLOUDFLARE_API_TOKEN", TOKEN)
        .env("CLOUDFLARE_ACCOUNT_ID", EMULATOR_ACCOUNT_ID)
        .stdin(Stdio::null());
    command
}

/// `cfq` aimed at `base_url` as [`cfq_at`], on the wire tests' account
/// ([`wire::ACCOUNT`]), for a server pinned to the kit's [`wire::path`]s.
pub fn cfq_on_wire(base_url: &str) -> Command {
    let mut command = cfq_at(base_url);
    command.env("CLOUDFLARE_ACCOUNT_ID", wire::ACCOUNT);
    command
}

pub fn cfq(emulator: &EmulatorHandle) -> Command {
    cfq_at(emulator.base_url())
}

/// [`cfq`] with these arguments.
pub fn cfq_with<I, S>(emulator: &EmulatorHandle, args: I) -> Command
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut command = cfq(emulator);
    command.args(args);
    command
}

/// [`cfq_with`] these arguments, run to the end.
pub async fn run_cfq<I, S>(emulator: &EmulatorHandle, args: I) -> Run
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    run(cfq_with(emulator, args)).await
}

/// What a finished `cfq` did.
#[derive(Debug)]
pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn json(&self) -> Vec<Value> {
        self.stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l:?}\n{self:?}")))
            .collect()
    }

    pub fn one(&self) -> Value {
        let mut lines = self.json();
        assert_eq!(lines.len(), 1, "{self:?}");
        lines.remove(0)
    }

    #[track_caller]
    pub fn expect_code(&self, code: i32) -> &Run {
        assert_eq!(self.code, Some(code), "{self:#?}");
        self
    }

    /// Exited with `code`, saying `said` on stderr.
    #[track_caller]
    pub fn expect_stderr(&self, code: i32, said: &str) -> &Run {
        self.expect_code(code);
        assert!(self.stderr.contains(said), "{self:?}");
        self
    }

    /// Exited with `code`, saying every one of `needed` on stderr.
    #[track_caller]
    pub fn expect_stderr_all(&self, code: i32, needed: &[&str]) -> &Run {
        self.expect_code(code);
        for needed in needed {
            assert!(self.stderr.contains(needed), "{needed}: {self:?}");
        }
        self
    }
}

impl From<Output> for Run {
    fn from(output: Output) -> Run {
        Run {
            code: output.status.code(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }
}

/// Runs to the end off the runtime's threads: the emulator serving the
/// child lives on them.
pub async fn run(mut command: Command) -> Run {
    tokio::task::spawn_blocking(move || command.output().expect("cfq runs").into())
        .await
        .expect("no panic")
}

/// Sends the signal `name` (`TERM`, `INT`, `KILL`) to `child`.
pub fn signal(child: &Child, name: &str) {
    let status = Command::new("kill")
        .arg(format!("-{name}"))
        .arg(child.id().to_string())
        .status()
        .expect("kill runs");
    assert!(status.success());
}

/// What a started child did, once it ends (off the runtime's threads).
pub async fn finish(child: Child) -> Run {
    tokio::task::spawn_blocking(move || child.wait_with_output().expect("cfq ends").into())
        .await
        .expect("no panic")
}

/// Runs with `input` on stdin.
pub async fn run_with_stdin(mut command: Command, input: &str) -> Run {
    let input = input.to_owned();
    tokio::task::spawn_blocking(move || {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("cfq starts");
        let mut stdin = child.stdin.take().expect("stdin");
        stdin.write_all(input.as_bytes()).expect("write stdin");
        drop(stdin);
        child.wait_with_output().expect("cfq ends").into()
    })
    .await
    .expect("no panic")
}

/// Runs `cfq` on `emulator` with the words of `line`, a user typing
/// `typed` at its prompt.
pub async fn run_cfq_typing(emulator: &EmulatorHandle, line: &str, typed: &str) -> Run {
    run_with_stdin(cfq_with(emulator, line.split_whitespace()), typed).await
}

/// A fresh directory for one test's files, removed when the test ends
/// (passing or failing: the guard is dropped while unwinding too).
pub fn temp_dir(name: &str) -> TempDir {
    let dir = std::env::temp_dir().join(format!("cfq-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    TempDir(dir)
}

/// A directory [`temp_dir`] made, a path for as long as it lives.
pub struct TempDir(PathBuf);

impl std::ops::Deref for TempDir {
    type Target = std::path::Path;
    fn deref(&self) -> &std::path::Path {
        &self.0
    }
}

impl AsRef<OsStr> for TempDir {
    fn as_ref(&self) -> &OsStr {
        self.0.as_os_str()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Every text body of a queue, read by peeking (nothing is leased).
pub async fn text_bodies(emulator: &EmulatorHandle, queue: &str) -> Vec<String> {
    let queue = queue_of(emulator, queue);
    let mut bodies = Vec::new();
    let peeked = queue.peek(100).await.expect("peek");
    for message in &peeked {
        bodies.push(message.body().text().expect("text").to_owned());
    }
    assert!(peeked.len() < 100, "text_bodies reads at most 99 messages");
    bodies
}

/// Every text body on a queue, by pulling with a long lease until the
/// queue answers empty (leased messages are not delivered twice).
/// Messages still leased by someone else are not seen: wait for their
/// lease to run out first.
pub async fn pull_all_texts(emulator: &EmulatorHandle, queue: &str) -> Vec<String> {
    let queue = queue_of(emulator, queue);
    let mut bodies = Vec::new();
    loop {
        let options = cf_queues::PullOptions::new()
            .batch_size(100)
            .visibility_timeout(std::time::Duration::from_secs(3600));
        let batch = queue.pull(options).await.expect("pull");
        if batch.messages.is_empty() {
            return bodies;
        }
        for message in &batch.messages {
            bodies.push(message.body().text().expect("text").to_owned());
        }
    }
}

/// `count` bodies numbered from 1: `"{prefix} 1"`, `"{prefix} 2"`, ...
pub fn numbered(prefix: &str, count: usize) -> Vec<String> {
    (1..=count).map(|i| format!("{prefix} {i}")).collect()
}

/// Every text body on a queue as [`pull_all_texts`] reads them, in the
/// order of the number after `prefix` (the bodies of [`numbered`]).
pub async fn pull_all_numbered(
    emulator: &EmulatorHandle,
    queue: &str,
    prefix: &str,
) -> Vec<String> {
    let mut bodies = pull_all_texts(emulator, queue).await;
    let prefix = format!("{prefix} ");
    bodies.sort_by_key(|b| b.trim_start_matches(&prefix).parse::<u32>().unwrap_or(0));
    bodies
}

/// A resumed run exited 0 having pushed `pushed` lines, and `queue` then
/// holds `expected`, every numbered line of the run once.
pub async fn assert_resumed(
    resumed: &Run,
    pushed: u64,
    (emulator, queue, prefix): (&EmulatorHandle, &str, &str),
    expected: &[String],
) {
    assert_eq!(
        resumed.expect_code(0).one()["pushed"],
        pushed,
        "{resumed:?}"
    );
    let on_queue = pull_all_numbered(emulator, queue, prefix).await;
    assert_eq!(on_queue, expected, "every line once, in order");
}

/// The command a hint says to resume with: what stands between the
/// backticks of "resume with `…`".
pub fn resume_command(stderr: &str) -> String {
    const START: &str = "resume with `";
    let start = stderr
        .find(START)
        .unwrap_or_else(|| panic!("no resume hint in {stderr}"))
        + START.len();
    let length = stderr[start..].find('`').expect("the closing backtick");
    stderr[start..start + length].to_owned()
}

/// A printed command line run as a user pasting it into bash would: with
/// `cfq` found on the PATH, and the environment of `like`.
pub fn pasted(like: &Command, line: &str) -> Command {
    let binary = PathBuf::from(env!("CARGO_BIN_EXE_cfq"));
    let dir = binary.parent().expect("the binary's directory");
    let path = match std::env::var_os("PATH") {
        Some(path) => {
            let mut dirs = vec![dir.to_path_buf()];
            dirs.extend(std::env::split_paths(&path));
            std::env::join_paths(dirs).expect("a PATH")
        }
        None => dir.as_os_str().to_owned(),
    };
    let mut shell = Command::new("bash");
    shell.arg("-c").arg(line).stdin(Stdio::null());
    for (key, value) in like.get_envs() {
        match value {
            Some(value) => shell.env(key, value),
            None => shell.env_remove(key),
        };
    }
    shell.env("PATH", path);
    shell
}

/// What `cfq emulator`'s start-up lines tell, read as version 1 of their
/// contract (cfq's README, "The emulator's start-up lines"): the one
/// reader of them in Rust.
#[derive(Debug, Default)]
pub struct StartLines {
    pub base_url: String,
    pub token: Option<String>,
    pub account_id: String,
    /// The `queue NAME: ID` lines.
    pub queues: Vec<(String, String)>,
    pub dashboard: Option<String>,
    /// Every line read, the ready line included, as printed.
    pub lines: Vec<String>,
}

impl StartLines {
    /// Reads `lines` up to the ready line (`press Ctrl-C to stop`); a
    /// version other than 1, or no ready line, fails the test.
    pub fn read(lines: &mut impl Iterator<Item = std::io::Result<String>>) -> StartLines {
        let mut read = StartLines::default();
        loop {
            let line = match lines.next() {
                Some(Ok(line)) => line,
                other => panic!("no ready line after {:?}: {other:?}", read.lines),
            };
            read.lines.push(line.clone());
            let line = line.trim();
            let after = |prefix: &str| line.strip_prefix(prefix).map(str::to_owned);
            if let Some(url) = after("export CLOUDFLARE_BASE_URL=") {
                read.base_url = url;
            } else if let Some(token) = after("export CLOUDFLARE_API_TOKEN=") {
                read.token = Some(token);
            } else if let Some(account) = after("export CLOUDFLARE_ACCOUNT_ID=") {
                read.account_id = account;
            } else if let Some((name, id)) = line
                .strip_prefix("queue ")
                .and_then(|rest| rest.split_once(": "))
            {
                read.queues.push((name.to_owned(), id.to_owned()));
            } else if let Some(link) = after("dashboard: ") {
                read.dashboard = Some(link);
            } else if let Some(version) = after("start-up lines: version ") {
                assert_eq!(version, "1", "a version this reader does not know");
            } else if line == "press Ctrl-C to stop" {
                assert!(!read.base_url.is_empty(), "no base URL in {:?}", read.lines);
                return read;
            }
        }
    }
}

/// A `cfq emulator` child, stopped when dropped (a failed test too).
pub struct Served {
    child: Child,
    pub base_url: String,
    /// The `queue NAME: ID` lines it printed.
    pub queues: Vec<(String, String)>,
    /// The dashboard's link it printed, if it serves one.
    pub dashboard: Option<String>,
}

impl Served {
    /// Starts `cfq emulator` on a free port with the test token and `extra`
    /// flags, and reads what it prints until it serves.
    pub fn start(extra: &[&std::ffi::OsStr]) -> Served {
        let mut child = Command::new(env!("CARGO_BIN_EXE_cfq"))
            .args(["emulator", "--listen", "127.0.0.1:0", "--token", TOKEN])
            .args(extra)
            .stdout(Stdio::piped())
            .spawn()
            .expect("cfq starts");
        let stdout = child.stdout.take().expect("stdout");
        let printed = StartLines::read(&mut BufReader::new(stdout).lines());
        Served {
            child,
            base_url: printed.base_url,
            queues: printed.queues,
            dashboard: printed.dashboard,
        }
    }

    /// The most memory it held at once so far (`VmHWM`), in bytes.
    pub fn peak_memory(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .expect("its /proc status");
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .expect("VmHWM")
            * 1024
    }

    /// SIGKILL: no shutdown, as a crash.
    pub fn kill(mut self) {
        self.child.kill().expect("killed");
        self.child.wait().expect("reaped");
    }

    pub fn cfq(&self) -> Command {
        cfq_at(&self.base_url)
    }

    /// SIGTERM, and a clean exit.
    pub fn stop(mut self) {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success());
        assert!(self.child.wait().expect("cfq exits").success());
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `cfq` on a pseudo-terminal made by util-linux's `script`, as a person
/// runs it: what it drew, keys typed at it, and how it ended.
pub struct Pty {
    child: Child,
    seen: std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
}

impl Pty {
    /// Runs `cfq ARGS` (`args` as a shell reads them) with `like`'s
    /// environment on a terminal `columns` wide. `script` runs the line in
    /// `$SHELL -c`; Ctrl-C reaches the terminal's whole foreground group,
    /// so a shell left waiting (dash does not exec the last command) would
    /// die of it and `script` report 130 whatever cfq did: the shell is
    /// pinned and replaced by cfq.
    pub fn start(like: &Command, args: &str, columns: u16) -> Pty {
        let mut script = Command::new("script");
        for (key, value) in like.get_envs() {
            match value {
                Some(value) => script.env(key, value),
                None => script.env_remove(key),
            };
        }
        let line = format!(
            "stty cols {columns} rows 40; exec '{}' {args}",
            env!("CARGO_BIN_EXE_cfq")
        );
        let mut child = script
            .env("SHELL", "/bin/sh")
            .args(["-q", "-f", "-e", "-c", &line, "/dev/null"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("script starts (util-linux's, in Debian's essential bsdutils)");
        let mut stdout = child.stdout.take().expect("stdout");
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let kept = std::sync::Arc::clone(&seen);
        std::thread::spawn(move || {
            use std::io::Read as _;
            let mut chunk = [0u8; 4096];
            while let Ok(n) = stdout.read(&mut chunk) {
                if n == 0 {
                    return;
                }
                kept.lock()
                    .expect("not poisoned")
                    .extend_from_slice(&chunk[..n]);
            }
        });
        Pty { child, seen }
    }

    /// Everything drawn so far.
    pub fn seen(&self) -> String {
        String::from_utf8_lossy(&self.seen.lock().expect("not poisoned")).into_owned()
    }

    /// Waits until `text` was drawn, at most `limit`; everything drawn.
    pub fn wait_for(&mut self, text: &str, limit: std::time::Duration) -> String {
        let started = std::time::Instant::now();
        loop {
            let seen = self.seen();
            if seen.contains(text) {
                return seen;
            }
            assert!(
                self.child.try_wait().expect("wait").is_none(),
                "ended before drawing {text:?}: {seen:?}"
            );
            assert!(
                started.elapsed() < limit,
                "{text:?} not drawn within {limit:?}: {seen:?}"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }

    /// Types `keys` (`b"\x03"` is Ctrl-C).
    pub fn type_keys(&mut self, keys: &[u8]) {
        let stdin = self.child.stdin.as_mut().expect("stdin");
        stdin.write_all(keys).expect("typed");
        stdin.flush().expect("typed");
    }

    /// How it ends, within `limit` (killed, and the test failed, past it):
    /// its exit, everything it drew, and how long it took.
    pub fn exit_within(
        mut self,
        limit: std::time::Duration,
    ) -> (std::process::ExitStatus, String, std::time::Duration) {
        let started = std::time::Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                // What it drew last reaches the reader soon after.
                std::thread::sleep(std::time::Duration::from_millis(50));
                return (status, self.seen(), started.elapsed());
            }
            if started.elapsed() > limit {
                let _ = self.child.kill();
                panic!("still running {limit:?} later: {:?}", self.seen());
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }
}

impl Drop for Pty {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A TCP server that accepts every connection and never answers, for as
/// long as the test runs: `http://127.0.0.1:PORT/client/v4`.
pub fn silent_server() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let address = listener.local_addr().expect("address");
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().flatten() {
            held.push(stream);
        }
    });
    format!("http://{address}/client/v4")
}
