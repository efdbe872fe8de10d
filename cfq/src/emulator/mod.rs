//! `cfq emulator`: the local emulator, until Ctrl-C, SIGTERM or SIGHUP
//! (or, when asked, its stdin closing or its parent ending).
//!
//! What it prints on stdout when it is ready is a contract: `start_lines.rs`.

mod start_lines;

use std::path::Path;
use std::time::Duration;

use cf_queues_emulator::config::EmulatorConfig;
use cf_queues_emulator::{EMULATOR_ACCOUNT_ID, Emulator, RateLimitModel};

use crate::args::{EmulatorArgs, RateLimitsChoice};
use crate::exit::{Code, Failure};
use crate::flag_defaults::Optionally;
use crate::signals::Interrupts;
use crate::stderr::note;
use start_lines::StartLines;

/// How often `--stop-with-parent` looks for its parent: a test run's
/// emulator outlives it by at most this.
const PARENT_CHECK: Duration = Duration::from_millis(100);

pub async fn serve(args: EmulatorArgs) -> Result<Code, Failure> {
    let mut emulator = Emulator::new()
        .listen(args.listen)
        .max_retries(args.max_retries);
    // What the emulator holds at start: the account a file declares. The
    // flags after it add to it (--strict, --dead-letter) or override it
    // (--latency, --rate-limits), as later settings of the builder do.
    let declared = match &args.config {
        Some(path) => {
            let config = read_config(path)?;
            let names: Vec<String> = config.queues.iter().map(|q| q.queue_name.clone()).collect();
            emulator = emulator.config(config);
            names
        }
        None => Vec::new(),
    };
    emulator = emulator.optionally(args.token, Emulator::token);
    if let Some(dir) = &args.data_dir {
        emulator = emulator.data_dir(dir).reset_data_dir(args.reset);
        note(format_args!(
            "keeping the account in {}{}: every answered change is synced there first",
            dir.display(),
            if args.reset { ", emptied first" } else { "" }
        ));
    }
    if args.strict {
        emulator = emulator.strict_queues(args.queues);
    }
    emulator = emulator.dashboard(!args.no_dashboard);
    for (queue, dead_letter_queue) in args.dead_letter {
        emulator = emulator.dead_letter_queue(queue, dead_letter_queue);
    }
    // Unset limits keep the library's defaults, documented there once.
    emulator = emulator
        .optionally(args.max_connections, Emulator::max_connections)
        .optionally(args.header_timeout, Emulator::header_timeout)
        .optionally(args.body_timeout, Emulator::body_timeout)
        .optionally(args.idle_timeout, Emulator::idle_timeout)
        .optionally(args.write_timeout, Emulator::write_timeout)
        .optionally(args.response_buffer, Emulator::response_buffer_bytes)
        .optionally(args.max_body, Emulator::max_body_bytes)
        .optionally(args.shutdown_grace, Emulator::shutdown_grace);
    if let Some(latency) = args.latency {
        emulator = emulator.latency(latency);
        note(format_args!(
            "every request takes a round trip of {} (jitter up to {}), a new connection's first one more",
            humantime::format_duration(latency.fixed()),
            humantime::format_duration(latency.jitter()),
        ));
    }
    if let Some(RateLimitsChoice::Cloudflare) = args.rate_limits {
        emulator = emulator.rate_limits(RateLimitModel::cloudflare());
        note(format_args!(
            "enforcing Cloudflare's rate limits: 5,000 messages a second per queue, \
             1,200 requests per 5 minutes per token, 200 requests a second per address"
        ));
    }
    // The emulator checks its own configuration (dead-letter queues among
    // it) when it starts: a refusal there is the user's to fix, like a bad flag.
    let handle = emulator.start().await.map_err(|e| {
        let code = if e.kind() == std::io::ErrorKind::InvalidInput {
            Code::Usage
        } else {
            Code::Local
        };
        Failure::new(code, format_args!("cannot start the emulator: {e}"))
    })?;
    // Said on stderr, beside the other notes: a configuration that a data
    // directory holding an account did not apply, say.
    for line in handle.start_notes() {
        note(format_args!("note: {line}"));
    }
    let address = handle.local_addr();
    if !address.ip().is_loopback() {
        note(format_args!(
            "warning: listening on {address}, which is reachable from other machines; \
             the emulator is for local development"
        ));
    }
    // Listened for before the ready line: whoever reads it may stop the
    // emulator at once (a launcher passing SIGTERM on) and still see it stop
    // in order.
    let mut stop = Interrupts::watch()?;
    // A queue declared without an id has a fresh one at each start: said.
    let queues = declared
        .iter()
        .filter_map(|name| Some((name.as_str(), handle.queue_id(name)?)))
        .collect();
    let lines = StartLines {
        base_url: handle.base_url(),
        token: handle.token(),
        account_id: EMULATOR_ACCOUNT_ID,
        queues,
        dashboard: handle.dashboard_url(),
    }
    .lines();
    // Whoever started the emulator may have closed stdout: keep serving.
    let out = crate::output::Output::new(None);
    for line in &lines {
        if out.line(line).is_err() {
            break;
        }
    }

    tokio::select! {
        () = stop.reached(1) => {}
        () = stdin_closed(), if args.stop_on_stdin_close => {}
        () = parent_ended(), if args.stop_with_parent => {}
    }
    let _ = out.line("stopping");
    handle
        .shutdown()
        .await
        .map_err(|e| Failure::local(format_args!("the emulator failed: {e}")))?;
    Ok(Code::Ok)
}

/// The account a TOML file declares. Read here rather than by
/// `Emulator::config_file`, which reads and checks alike, so that the two
/// failures keep cfq's exit codes: a file that cannot be read is a local
/// failure (1), one that is not a valid configuration a usage error (2).
fn read_config(path: &Path) -> Result<EmulatorConfig, Failure> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        Failure::local(format_args!(
            "cannot read the emulator configuration {}: {e}",
            path.display()
        ))
    })?;
    EmulatorConfig::from_toml(&text).map_err(|e| {
        Failure::usage(format_args!("{}: {}", path.display(), e.message())).with_hint(
            "the format is in the cf-queues-emulator crate docs, module `config`: \
             https://docs.rs/cf-queues-emulator/latest/cf_queues_emulator/config/",
        )
    })
}

/// Returns once standard input is closed (or fails): the end of whoever
/// held it, when `--stop-on-stdin-close` asks for that. What is written
/// to it is read and dropped.
async fn stdin_closed() {
    // A thread of its own: reading a pipe blocks, and tokio's stdin would
    // keep a blocking-pool thread that delays the runtime's shutdown.
    let (closed, wait) = tokio::sync::oneshot::channel::<()>();
    let spawned = std::thread::Builder::new()
        .name("cfq-stdin".into())
        .spawn(move || {
            use std::io::Read as _;
            let mut buffer = [0u8; 512];
            let mut stdin = std::io::stdin();
            while matches!(stdin.read(&mut buffer), Ok(n) if n > 0) {}
            let _ = closed.send(());
        });
    match spawned {
        Ok(_) => {
            let _ = wait.await;
        }
        // Without the thread, the option cannot be kept: say so, and
        // stop on signals only.
        Err(e) => {
            note(format_args!(
                "warning: cannot watch standard input ({e}): stopping on Ctrl-C or SIGTERM only"
            ));
            std::future::pending::<()>().await;
        }
    }
}

/// Returns once the process that started the emulator has ended, for
/// `--stop-with-parent`: its children may keep the stdin pipe open (a
/// test's forked worker), but an orphan is adopted by another process, so
/// the parent's id changes.
async fn parent_ended() {
    #[cfg(unix)]
    {
        let parent = std::os::unix::process::parent_id();
        loop {
            tokio::time::sleep(PARENT_CHECK).await;
            if std::os::unix::process::parent_id() != parent {
                return;
            }
        }
    }
    #[cfg(not(unix))]
    {
        note("warning: --stop-with-parent works on Unix only: stopping on Ctrl-C or stdin only");
        std::future::pending::<()>().await;
    }
}
