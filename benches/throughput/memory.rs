//! Memory: the process's RSS while a backlog is filled and drained, twice.
//!
//! Once in this process with the default allocator settings, then again in a
//! child process (this executable, same arguments, [`MEMORY_ONLY_ENV`] set)
//! whose glibc is tuned to hand free heap back to the kernel: what the second
//! run returns and the first does not is free heap that glibc keeps by
//! default. The child reports on stdout in one `MEMORY key=value ...` line.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use cf_queues::batch::Batch;
use cf_queues::{Client, Message, Queue};
use cf_queues_emulator::{Emulator, EmulatorHandle};

use cf_queues_testkit::bench::{BATCH, Result, drain, env_count};

/// Set to `1` in the child that only measures memory.
pub(crate) const MEMORY_ONLY_ENV: &str = "CFQ_BENCH_MEMORY_ONLY";
/// One malloc arena, blocks of 128 KiB and more in their own mappings, and
/// the heap's top trimmed once 128 KiB of it are free: free heap goes back to
/// the kernel instead of staying in the process.
pub(crate) const GLIBC_TUNABLES: &str = "glibc.malloc.arena_max=1:glibc.malloc.mmap_threshold=131072:glibc.malloc.trim_threshold=131072";
/// Body size of the memory backlog's messages.
pub(crate) const BACKLOG_BODY_BYTES: usize = 100;
const DEFAULT_BACKLOG: usize = 100_000;
/// How the child reports, on stdout.
const MEMORY_LINE_TAG: &str = "MEMORY";
const STATUS_FILE: &str = "/proc/self/status";

/// Messages in the memory backlog (`CFQ_BENCH_BACKLOG`), read by the parent
/// and the child alike.
pub(crate) fn backlog_from_env() -> Result<usize> {
    env_count("CFQ_BENCH_BACKLOG", DEFAULT_BACKLOG)
}

/// This process's resident set (client and emulator together), in bytes.
///
/// Read from `VmRSS` in `/proc/self/status`, which the kernel gives in kB
/// (units of 1024 bytes). It is the same count of resident pages that
/// `/proc/self/statm` gives, already multiplied by the page size, so figures
/// stay comparable with the earlier statm-based ones while no page size has
/// to be assumed (it is 16 or 64 KiB on some arm64 and ppc64 kernels).
/// Asking for the page size instead would take `sysconf`, which needs
/// `unsafe`, or a `getconf` child process per reading; `smaps_rollup` has no
/// page-size line.
fn rss_bytes() -> Result<u64, String> {
    let status = std::fs::read_to_string(STATUS_FILE)
        .map_err(|e| format!("cannot read {STATUS_FILE}: {e}"))?;
    let value = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .ok_or_else(|| format!("{STATUS_FILE} has no VmRSS line"))?;
    let mut fields = value.split_whitespace();
    match (
        fields.next().map(str::parse::<u64>),
        fields.next(),
        fields.next(),
    ) {
        (Some(Ok(kib)), Some("kB"), None) => Ok(kib.saturating_mul(1024)),
        _ => Err(format!(
            "{STATUS_FILE}: VmRSS is {:?}, expected a number of kB",
            value.trim()
        )),
    }
}

/// What the memory measurement found.
#[expect(
    clippy::large_enum_variant,
    reason = "one value per run, so its size does not matter"
)]
pub(crate) enum Figures {
    /// RSS cannot be read on this system; why.
    Skipped(String),
    Measured {
        /// In this process, default allocator settings.
        default: Memory,
        /// In the child with [`GLIBC_TUNABLES`], or why there is none.
        tuned: Result<Memory, String>,
    },
}

/// Fills and drains a backlog of `backlog` messages twice in this process,
/// then again in the child; prints what it is doing.
pub(crate) async fn measure(
    emulator: &EmulatorHandle,
    client: &Client,
    backlog: usize,
) -> Result<Figures> {
    println!("filling and draining a backlog of {backlog} messages, twice...");
    let started = Instant::now();
    if let Err(e) = rss_bytes() {
        return Ok(Figures::Skipped(e));
    }
    let default = fill_drain_twice(emulator, &client.queue("memory")?, backlog).await?;
    println!("again in a child process with GLIBC_TUNABLES={GLIBC_TUNABLES}...");
    // The child repeats this work from a cold start on a noisy machine; only
    // a child that hangs should hit this.
    let timeout = started.elapsed() * 10 + Duration::from_secs(60);
    let tuned = in_child_with_tunables(timeout).await;
    if let Err(e) = &tuned {
        println!("  note: no memory figures with glibc tunables: {e}");
    }
    Ok(Figures::Measured {
        default,
        tuned: tuned.map_err(|e| e.to_string()),
    })
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct FillDrain {
    pub before: u64,
    pub filled: u64,
    pub drained: u64,
    pub backlog_bytes: u64,
    pub fill_time: Duration,
    pub drain_time: Duration,
}

impl FillDrain {
    pub(crate) fn growth(&self) -> u64 {
        self.filled.saturating_sub(self.before)
    }

    pub(crate) fn returned(&self) -> u64 {
        self.filled.saturating_sub(self.drained)
    }
}

pub(crate) struct Memory {
    /// Messages in the backlog.
    pub messages: usize,
    pub cycles: [FillDrain; 2],
}

impl Memory {
    /// The child's report: `MEMORY messages=.. before=.. full=.. drained=..
    /// full2=.. drained2=.. ...`, byte counts and microseconds.
    fn to_line(&self) -> String {
        let mut line = format!("{MEMORY_LINE_TAG} messages={}", self.messages);
        for (c, n) in self.cycles.iter().zip(["", "2"]) {
            let _ = write!(
                line,
                " before{n}={} full{n}={} drained{n}={} body_bytes{n}={} fill_us{n}={} drain_us{n}={}",
                c.before,
                c.filled,
                c.drained,
                c.backlog_bytes,
                c.fill_time.as_micros(),
                c.drain_time.as_micros()
            );
        }
        line
    }

    /// Reads what [`Memory::to_line`] wrote.
    fn from_line(line: &str) -> Result<Memory> {
        let fields = line
            .strip_prefix(MEMORY_LINE_TAG)
            .ok_or_else(|| format!("not a {MEMORY_LINE_TAG} line: {line:?}"))?
            .split_whitespace()
            .map(|field| {
                let (key, value) = field
                    .split_once('=')
                    .ok_or_else(|| format!("{field:?} is not key=value"))?;
                let value: u64 = value
                    .parse()
                    .map_err(|e| format!("{field:?} is not key=number: {e}"))?;
                Ok((key, value))
            })
            .collect::<Result<HashMap<&str, u64>>>()?;
        let get = |key: String| {
            fields
                .get(key.as_str())
                .copied()
                .ok_or_else(|| format!("no {key}= in {line:?}"))
        };
        let cycle = |n: &str| -> Result<FillDrain> {
            Ok(FillDrain {
                before: get(format!("before{n}"))?,
                filled: get(format!("full{n}"))?,
                drained: get(format!("drained{n}"))?,
                backlog_bytes: get(format!("body_bytes{n}"))?,
                fill_time: Duration::from_micros(get(format!("fill_us{n}"))?),
                drain_time: Duration::from_micros(get(format!("drain_us{n}"))?),
            })
        };
        Ok(Memory {
            messages: usize::try_from(get("messages".to_owned())?)?,
            cycles: [cycle("")?, cycle("2")?],
        })
    }
}

/// Fills `queue` with `backlog` messages of ~100 bytes and drains it, twice,
/// reading RSS before, when full and when empty.
async fn fill_drain_twice(
    emulator: &EmulatorHandle,
    queue: &Queue,
    backlog: usize,
) -> Result<Memory> {
    let mut cycles = Vec::with_capacity(2);
    for _ in 0..2 {
        let before = rss_bytes()?;
        let started = Instant::now();
        let mut pushed = 0;
        while pushed < backlog {
            let n = BATCH.min(backlog - pushed);
            let batch = Batch::new(
                (pushed..pushed + n)
                    .map(|i| Message::text(format!("{i:0>width$}", width = BACKLOG_BODY_BYTES))),
            );
            queue
                .push_batch(batch)
                .await
                .map_err(|e| format!("push_batch to {}: {e}", queue.id()))?;
            pushed += n;
        }
        let fill_time = started.elapsed();
        let full = emulator.metrics(queue.id());
        if full.backlog_count != backlog as u64 {
            return Err(format!(
                "backlog holds {} messages, expected {backlog}",
                full.backlog_count
            )
            .into());
        }
        let filled = rss_bytes()?;

        let started = Instant::now();
        let drained_count = drain(queue).await?;
        let drain_time = started.elapsed();
        if drained_count != backlog {
            return Err(format!("drained {drained_count} messages, expected {backlog}").into());
        }
        let empty = emulator.metrics(queue.id());
        if empty.backlog_count != 0 || empty.backlog_bytes != 0 {
            return Err(format!("after draining, metrics show {empty:?}").into());
        }
        let drained = rss_bytes()?;
        cycles.push(FillDrain {
            before,
            filled,
            drained,
            backlog_bytes: full.backlog_bytes,
            fill_time,
            drain_time,
        });
    }
    Ok(Memory {
        messages: backlog,
        cycles: [cycles[0], cycles[1]],
    })
}

/// The child's whole run ([`MEMORY_ONLY_ENV`]): the fill / drain memory
/// measurement alone, printed as one `MEMORY ...` line on stdout.
pub(crate) async fn child_run() -> Result<()> {
    let backlog = backlog_from_env()?;
    let emulator = Emulator::new().start().await?;
    let client = emulator.client()?;
    let memory = fill_drain_twice(&emulator, &client.queue("memory")?, backlog).await?;
    println!("{}", memory.to_line());
    emulator.shutdown().await?;
    Ok(())
}

/// Runs the memory measurement again in a child process, this executable with
/// the same arguments, whose glibc gives free heap back to the kernel
/// ([`GLIBC_TUNABLES`]); stops it after `timeout`.
async fn in_child_with_tunables(timeout: Duration) -> Result<Memory> {
    if !cfg!(all(target_os = "linux", target_env = "gnu")) {
        return Err("not a glibc system".into());
    }
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this executable: {e}"))?;
    let mut child = Command::new(&exe)
        .args(std::env::args_os().skip(1))
        .env(MEMORY_ONLY_ENV, "1")
        .env("GLIBC_TUNABLES", GLIBC_TUNABLES)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", exe.display()))?;
    let stdout = read_to_end_in_background(child.stdout.take());
    let stderr = read_to_end_in_background(child.stderr.take());
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() < timeout => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Ok(None) => {
                // Our own child, stopped through its handle.
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "the child ran longer than {} s and was stopped",
                    timeout.as_secs()
                )
                .into());
            }
            Err(e) => return Err(format!("waiting for the child: {e}").into()),
        }
    };
    let stdout = stdout.join().unwrap_or_default();
    let stderr = stderr.join().unwrap_or_default();
    if !status.success() {
        let said = stderr.lines().rev().find(|l| !l.trim().is_empty());
        return Err(format!(
            "the child exited with {status}: {}",
            said.unwrap_or("(nothing on stderr)")
        )
        .into());
    }
    let line = stdout
        .lines()
        .find(|l| l.starts_with(&format!("{MEMORY_LINE_TAG} ")))
        .ok_or_else(|| format!("the child printed no {MEMORY_LINE_TAG} line"))?;
    Memory::from_line(line)
}

/// Reads a child's pipe on a thread so that it cannot fill up and block it.
fn read_to_end_in_background(
    pipe: Option<impl Read + Send + 'static>,
) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut text = String::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_string(&mut text);
        }
        text
    })
}
