//! `push` (one message, or a file) and `replay` (a file to another queue).
//!
//! A file is read line by line and cut into batches by the library's
//! `BatchPlanner`, tagged with line numbers. Batches go one at a time, in
//! file order, and the run stops at the first one that fails: every line
//! before it is then settled (pushed, or reported as refused), so
//! `--skip FIRST_LINE_OF_THE_BATCH - 1` resumes exactly there. The hint
//! that says so is a whole command, shell-quoted, with every flag that
//! shapes the run: pasted elsewhere, a `--skip` alone would push the rest
//! of the file to the wrong queue, or without its delay.
//!
//! A read error and SIGINT, SIGTERM or SIGHUP stop the run the same way, with the
//! summary and the resume command: the file is read on a thread of its
//! own (see [`read_ahead`]) so that a signal is seen even while a read
//! blocks, and the batch in flight when the first signal comes is awaited,
//! since abandoning it would leave its fate unknown.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read as _};
use std::path::Path;
use std::time::Duration;

use cf_queues::batch::{BatchPlanner, PlannedBatch};
use cf_queues::limits::Limits;
use cf_queues::{Message, Queue};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::Serialize;
use tokio::sync::mpsc;

use crate::args::{PushArgs, ReplayArgs};
use crate::exit::{Code, Context, Failure, may_have_landed};
use crate::ndjson::{Line, Lines, NumberedLine};
use crate::output::{line_ranges, plural};
use crate::session::Session;
use crate::shell_words::command_line;
use crate::shell_words::{QueueFlag, queue_id_words};
use crate::signals::Interrupts;
use crate::stderr::note;

pub async fn push(session: &Session, args: &PushArgs) -> Result<Code, Failure> {
    if let Some(file) = &args.file {
        let mut command = words(["cfq", "push"]);
        command.extend(queue_id_words(QueueFlag::Queue, session.queue.id()));
        command.extend(session.flags.iter().cloned());
        command.extend(words(["--file"]));
        command.push(file.to_string_lossy().into_owned());
        if args.text {
            command.extend(words(["--text"]));
        }
        command.extend(delay_flag(args.delay));
        let options = FileOptions {
            text_only: args.text,
            skip: args.skip,
            delay: args.delay,
            command,
        };
        return push_file(session, file, &options).await;
    }
    let body = match args.body.as_deref() {
        Some("-") => {
            let mut body = String::new();
            io::stdin().read_to_string(&mut body).map_err(|e| {
                Failure::local(format_args!("cannot read the body from stdin: {e}"))
            })?;
            without_one_line_ending(body)
        }
        Some(body) => body.to_owned(),
        None => return Err(Failure::usage("give a BODY, - for stdin, or --file")),
    };
    let mut message = if args.json {
        let value: serde_json::Value = serde_json::from_str(&body)
            .map_err(|e| Failure::usage(format_args!("--json: the body is not JSON: {e}")))?;
        session.answer(Message::json(&value))?
    } else {
        Message::text(body)
    };
    if let Some(delay) = args.delay {
        message = message.with_delay(delay);
    }
    session.answer(session.queue.push(message).await)?;
    if session.out.json() {
        session.out.json_line(&serde_json::json!({
            "queue": session.queue.id(),
            "pushed": 1,
        }))?;
    } else {
        session
            .out
            .line(&format!("pushed 1 message to {}", session.queue.id()))?;
    }
    Ok(Code::Ok)
}

/// `echo x | cfq push -q Q -` means the body "x": the newline is echo's,
/// not the user's. One line ending goes, as `$(...)` would take it; only
/// one, so that a body meant to end with a blank line keeps it.
fn without_one_line_ending(mut body: String) -> String {
    if body.ends_with('\n') {
        body.pop();
        if body.ends_with('\r') {
            body.pop();
        }
    }
    body
}

pub async fn replay(session: &Session, args: &ReplayArgs) -> Result<Code, Failure> {
    let mut command = words(["cfq", "replay"]);
    command.push(args.file.to_string_lossy().into_owned());
    command.extend(queue_id_words(QueueFlag::To, session.queue.id()));
    command.extend(session.flags.iter().cloned());
    command.extend(delay_flag(args.delay));
    let options = FileOptions {
        text_only: false,
        skip: args.skip,
        delay: args.delay,
        command,
    };
    push_file(session, &args.file, &options).await
}

fn words<const N: usize>(words: [&str; N]) -> Vec<String> {
    words.iter().map(|w| (*w).to_owned()).collect()
}

/// `--delay D` as a resume command repeats it: `humantime`'s form, which
/// `parse_duration` reads back to the same duration.
fn delay_flag(delay: Option<Duration>) -> Vec<String> {
    delay.map_or_else(Vec::new, |delay| {
        vec![
            "--delay".to_owned(),
            humantime::format_duration(delay).to_string(),
        ]
    })
}

struct FileOptions {
    text_only: bool,
    skip: u64,
    delay: Option<Duration>,
    /// The command that resumes the run, as words, without its `--skip`.
    command: Vec<String>,
}

/// The summary of a file pushed, printed however the run ends.
#[derive(Debug, Default, Serialize)]
struct PushSummary {
    file: String,
    queue: String,
    /// Lines read, skipped ones included.
    lines: u64,
    skipped: u64,
    blank: u64,
    pushed: u64,
    /// Lines that were not pushed and stay in the file, by number.
    refused: Vec<RefusedLine>,
    /// The batch the run stopped at, if any: one that failed, or that a
    /// second signal abandoned in flight.
    #[serde(skip_serializing_if = "Option::is_none")]
    failed: Option<FailedBatch>,
    /// Why the run stopped before the end of the file, and how to resume
    /// it; absent when it read the whole file.
    #[serde(skip_serializing_if = "Option::is_none")]
    stopped: Option<Stopped>,
}

#[derive(Debug, Serialize)]
struct RefusedLine {
    line: u64,
    reason: String,
}

#[derive(Debug, Serialize)]
struct FailedBatch {
    lines: Vec<u64>,
    error: String,
    /// Whether the batch may have landed all the same (a 5xx, a timeout,
    /// a request abandoned in flight).
    may_have_landed: bool,
    /// `--skip` this to resume at the batch.
    resume_skip: u64,
    /// The whole command that resumes at the batch, shell-quoted.
    resume_command: String,
}

#[derive(Debug, Serialize)]
struct Stopped {
    /// What stopped the run, in a few words.
    reason: String,
    /// `--skip` this to resume at the first line not settled.
    resume_skip: u64,
    /// The whole command that resumes there, shell-quoted.
    resume_command: String,
}

/// Why a run ended before the end of its file.
#[derive(Debug)]
enum Stop {
    /// A batch failed.
    Failed(cf_queues::Error),
    /// The file could not be read at this line.
    Read { line: u64, error: io::Error },
    /// A signal asked to stop; `abandoned` when a second one dropped the
    /// batch in flight.
    Interrupted {
        signal: &'static str,
        abandoned: bool,
    },
}

/// How many lines a reader may read ahead of the pushes.
const READ_AHEAD: usize = 256;

/// A line, or the error met reading the line of that number.
type ReadLine = Result<NumberedLine, (u64, io::Error)>;

/// Reads `reader` on a thread of its own, into a bounded channel: a read
/// that blocks (stdin, a stalled network file system) must not keep the
/// run from seeing a signal, and the process may exit while it blocks. The
/// thread ends at the end of the file, at the first error, or when the
/// run stops listening.
fn read_ahead<R: BufRead + Send + 'static>(reader: R) -> mpsc::Receiver<ReadLine> {
    let (sender, receiver) = mpsc::channel(READ_AHEAD);
    std::thread::spawn(move || {
        let mut lines = Lines::new(reader);
        loop {
            let next = match lines.next_line() {
                Ok(Some(line)) => Ok(line),
                Ok(None) => return,
                Err(error) => Err((lines.number() + 1, error)),
            };
            let failed = next.is_err();
            if sender.blocking_send(next).is_err() || failed {
                return;
            }
        }
    });
    receiver
}

async fn push_file(session: &Session, path: &Path, options: &FileOptions) -> Result<Code, Failure> {
    let (reader, size) = open(path)?;
    let interrupts = Interrupts::watch()?;
    let progress = progress_bar(size);
    let mut summary = PushSummary {
        file: path.display().to_string(),
        queue: session.queue.id().to_owned(),
        ..PushSummary::default()
    };
    let stop = push_lines(
        &session.queue,
        *session.client.limits(),
        read_ahead(reader),
        options,
        interrupts,
        &mut summary,
        &progress,
    )
    .await;
    progress.finish_and_clear();
    print_summary(session, &summary)?;
    ending(stop, &summary, &session.context())
}

/// Pushes the lines `lines` brings, in batches, one batch at a time, until
/// the end of the file or a [`Stop`]; fills `summary` in either way, its
/// resume command included.
async fn push_lines(
    queue: &Queue,
    limits: Limits,
    mut lines: mpsc::Receiver<ReadLine>,
    options: &FileOptions,
    mut interrupts: Interrupts,
    summary: &mut PushSummary,
    progress: &ProgressBar,
) -> Option<Stop> {
    let mut planner = BatchPlanner::new(limits);
    let mut stop = None;
    while stop.is_none() {
        let next = tokio::select! {
            biased;
            () = interrupts.reached(1) => {
                stop = Some(interrupted(&interrupts, false));
                break;
            }
            next = lines.recv() => next,
        };
        let NumberedLine {
            number,
            text,
            bytes,
        } = match next {
            None => break,
            Some(Ok(line)) => line,
            Some(Err((line, error))) => {
                stop = Some(Stop::Read { line, error });
                break;
            }
        };
        progress.inc(bytes as u64);
        summary.lines = number;
        if number <= options.skip {
            summary.skipped += 1;
            continue;
        }
        let parsed = match text {
            Ok(text) => crate::ndjson::parse_line(&text, options.text_only),
            Err(reason) => Line::Bad(reason),
        };
        let message = match parsed {
            Line::Blank => {
                summary.blank += 1;
                continue;
            }
            Line::Bad(reason) | Line::NotPushable(reason) => {
                refuse(summary, progress, number, reason);
                continue;
            }
            Line::Message(message) => match options.delay {
                Some(delay) => message.with_delay(delay),
                None => message,
            },
        };
        match planner.add(number, message) {
            Ok(None) => {}
            Ok(Some(full)) => stop = send(queue, full, summary, progress, &mut interrupts).await,
            Err(rejected) => refuse(summary, progress, rejected.tag, rejected.error.to_string()),
        }
    }
    // A read error ends the file early, but the lines before it are good:
    // they go, as they would have. A signal or a failed batch sends no more.
    if matches!(stop, None | Some(Stop::Read { .. }))
        && let Some(last) = planner.take()
    {
        match send(queue, last, summary, progress, &mut interrupts).await {
            // The last batch landed: a signal that came meanwhile has
            // nothing left to stop.
            None
            | Some(Stop::Interrupted {
                abandoned: false, ..
            }) => {}
            failed => stop = failed,
        }
    }
    if let Some(stop) = &stop {
        let unsettled = planner.take().and_then(|b| b.tags().first().copied());
        summary.stopped = Some(stopped(stop, summary, unsettled, &options.command));
    }
    stop
}

fn refuse(summary: &mut PushSummary, progress: &ProgressBar, line: u64, reason: String) {
    progress.suspend(|| note(format_args!("line {line} not pushed: {reason}")));
    summary.refused.push(RefusedLine { line, reason });
}

fn interrupted(interrupts: &Interrupts, abandoned: bool) -> Stop {
    Stop::Interrupted {
        signal: interrupts.first().unwrap_or("a signal"),
        abandoned,
    }
}

/// Where a stopped run resumes: at its failed (or abandoned) batch, at
/// the line it could not read, or at the first line it had not sent
/// (`unsettled`); every line before that is pushed or listed as refused.
fn stopped(
    stop: &Stop,
    summary: &mut PushSummary,
    unsettled: Option<u64>,
    command: &[String],
) -> Stopped {
    let after = |line: u64| {
        unsettled
            .map_or(line, |first| first.min(line))
            .saturating_sub(1)
    };
    let (reason, resume_skip) = match stop {
        Stop::Failed(error) => (
            format!("a batch failed: {error}"),
            summary
                .failed
                .as_ref()
                .map_or(summary.lines, |f| f.resume_skip),
        ),
        Stop::Read { line, error } => (format!("cannot read line {line}: {error}"), after(*line)),
        Stop::Interrupted {
            signal,
            abandoned: true,
        } => (
            format!(
                "stopped by {signal}, then a second signal: the batch in flight may have landed"
            ),
            summary
                .failed
                .as_ref()
                .map_or(summary.lines, |f| f.resume_skip),
        ),
        Stop::Interrupted { signal, .. } => {
            (format!("stopped by {signal}"), after(summary.lines + 1))
        }
    };
    let mut words = command.to_vec();
    words.extend(["--skip".to_owned(), resume_skip.to_string()]);
    let resume_command = command_line(&words);
    if let Some(failed) = &mut summary.failed {
        failed.resume_command.clone_from(&resume_command);
    }
    Stopped {
        reason,
        resume_skip,
        resume_command,
    }
}

/// The exit code of a run, or the failure to report, with the command
/// that resumes the run as its hint.
fn ending(stop: Option<Stop>, summary: &PushSummary, context: &Context) -> Result<Code, Failure> {
    let Some(stop) = stop else {
        return Ok(if summary.refused.is_empty() {
            Code::Ok
        } else {
            Code::Partial
        });
    };
    let mut failure = match &stop {
        Stop::Failed(error) => Failure::call(error, context),
        Stop::Read { line, error } => Failure::local(format_args!(
            "cannot read {} at line {line}: {error}",
            summary.file
        )),
        Stop::Interrupted { signal, abandoned } => Failure::new(
            Code::Partial,
            format_args!(
                "stopped by {signal}{}",
                if *abandoned {
                    " and a second signal, with a batch in flight that may have landed"
                } else {
                    ""
                }
            ),
        ),
    };
    let resume = summary
        .stopped
        .as_ref()
        .map_or("", |s| s.resume_command.as_str());
    let resume_hint = format!("resume with `{resume}`");
    failure.hint = Some(match failure.hint {
        Some(hint) => format!("{hint}; then {resume_hint}"),
        None => resume_hint,
    });
    Err(failure)
}

/// Pushes one planned batch; on failure records it in the summary and
/// returns why the run stops. A first signal lets the batch finish (the
/// client's deadline bounds it); a second abandons it, and since it may
/// have reached the API, it is reported as one that may have landed.
async fn send(
    queue: &Queue,
    batch: PlannedBatch<u64>,
    summary: &mut PushSummary,
    progress: &ProgressBar,
    interrupts: &mut Interrupts,
) -> Option<Stop> {
    let lines = batch.tags().to_vec();
    let first = lines.first().copied().unwrap_or(1);
    let result = tokio::select! {
        biased;
        (_, result) = queue.push_planned(batch) => result,
        () = interrupts.reached(2) => {
            progress.suspend(|| {
                note(format_args!(
                    "lines {} were abandoned in flight: they may have been pushed",
                    line_ranges(&lines)
                ))
            });
            summary.failed = Some(FailedBatch {
                error: "abandoned in flight on a second signal".to_owned(),
                lines,
                may_have_landed: true,
                resume_skip: first.saturating_sub(1),
                resume_command: String::new(),
            });
            return Some(interrupted(interrupts, true));
        }
    };
    match result {
        Ok(_) => {
            summary.pushed += lines.len() as u64;
            if let Some(last) = lines.last() {
                // Without a progress bar, this log line is what lets a killed
                // run be resumed: everything up to `last` is settled.
                if progress.is_hidden() {
                    note(format_args!(
                        "lines {first}-{last} pushed ({}); to resume after them: --skip {last}",
                        plural(lines.len() as u64, "message")
                    ));
                }
                progress.set_message(format!("{} pushed", summary.pushed));
            }
            // A signal that came while the batch was in flight stops the
            // run now that its batch has settled.
            (interrupts.count() > 0).then(|| interrupted(interrupts, false))
        }
        Err(error) => {
            let landed = may_have_landed(&error);
            progress.suspend(|| {
                note(format_args!(
                    "lines {} were not pushed{}: {error}",
                    line_ranges(&lines),
                    if landed {
                        " (or may have been: the answer was lost)"
                    } else {
                        ""
                    }
                ))
            });
            summary.failed = Some(FailedBatch {
                lines,
                error: error.to_string(),
                may_have_landed: landed,
                resume_skip: first.saturating_sub(1),
                // Filled in with the run's command once it stops.
                resume_command: String::new(),
            });
            Some(Stop::Failed(error))
        }
    }
}

fn print_summary(session: &Session, summary: &PushSummary) -> Result<(), Failure> {
    let out = &session.out;
    if out.json() {
        return out.json_line(summary);
    }
    let mut text = format!(
        "pushed {} to {} from {}",
        plural(summary.pushed, "message"),
        summary.queue,
        summary.file
    );
    if summary.skipped > 0 {
        text.push_str(&format!(
            "; skipped the first {}",
            plural(summary.skipped, "line")
        ));
    }
    if summary.blank > 0 {
        text.push_str(&format!("; {} blank", plural(summary.blank, "line")));
    }
    out.line(&text)?;
    if !summary.refused.is_empty() {
        let numbers: Vec<u64> = summary.refused.iter().map(|r| r.line).collect();
        out.line(&format!(
            "{} not pushed, still in the file: {}",
            plural(numbers.len() as u64, "line"),
            line_ranges(&numbers)
        ))?;
    }
    if let Some(failed) = &summary.failed {
        out.line(&format!(
            "stopped at the batch of lines {}{}",
            line_ranges(&failed.lines),
            if failed.may_have_landed {
                " (it may have landed)"
            } else {
                ""
            },
        ))?;
    }
    if let Some(stopped) = &summary.stopped {
        out.line(&format!(
            "{}; resume with `{}`",
            stopped.reason, stopped.resume_command
        ))?;
    }
    Ok(())
}

fn open(path: &Path) -> Result<(Box<dyn BufRead + Send>, Option<u64>), Failure> {
    if path.as_os_str() == "-" {
        return Ok((Box::new(BufReader::new(io::stdin())), None));
    }
    let file = File::open(path)
        .map_err(|e| Failure::local(format_args!("cannot open {}: {e}", path.display())))?;
    let size = file.metadata().ok().map(|m| m.len());
    Ok((Box::new(BufReader::new(file)), size))
}

/// A progress bar over the file's bytes, on a terminal only.
fn progress_bar(size: Option<u64>) -> ProgressBar {
    if !crate::stderr::is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = match size {
        Some(size) => ProgressBar::with_draw_target(Some(size), ProgressDrawTarget::stderr()),
        None => ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr()),
    };
    let style = ProgressStyle::with_template("{bar:30} {bytes}/{total_bytes} {msg}")
        .unwrap_or_else(|_| ProgressStyle::default_bar());
    bar.set_style(style);
    bar
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Gives `good` bytes, then fails as a disk or a network file system
    /// can (EIO, ESTALE) in the middle of a file.
    struct FailingAfter {
        good: io::Cursor<Vec<u8>>,
    }

    impl io::Read for FailingAfter {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            match self.good.read(buf)? {
                0 => Err(io::Error::other("injected EIO")),
                n => Ok(n),
            }
        }
    }

    fn options(command: &[&str]) -> FileOptions {
        FileOptions {
            text_only: false,
            skip: 0,
            delay: None,
            command: command.iter().map(|w| (*w).to_owned()).collect(),
        }
    }

    async fn run_lines(
        queue: &Queue,
        lines: mpsc::Receiver<ReadLine>,
        interrupts: Interrupts,
    ) -> (PushSummary, Option<Stop>) {
        let mut summary = PushSummary {
            file: "events.ndjson".into(),
            queue: queue.id().to_owned(),
            ..PushSummary::default()
        };
        let command = options(&[
            "cfq",
            "push",
            "--queue",
            queue.id(),
            "--file",
            "events.ndjson",
        ]);
        let stop = push_lines(
            queue,
            cf_queues::limits::Limits::default(),
            lines,
            &command,
            interrupts,
            &mut summary,
            &ProgressBar::hidden(),
        )
        .await;
        (summary, stop)
    }

    /// A read error in the middle of line 151: the 150 lines before it are
    /// pushed, and the run stops with exit 1, the summary and the whole
    /// command that resumes at line 151. Before, it exited with neither.
    #[tokio::test]
    async fn a_read_error_mid_file_stops_with_the_resume_command() {
        let emulator = cf_queues_testkit::emulators::emulator().await;
        let queue = emulator.client().expect("client").queue("eio").expect("id");
        let mut good: Vec<u8> = (1..=150)
            .flat_map(|i| format!("m{i}\n").into_bytes())
            .collect();
        good.extend(b"m15");
        let reader = io::BufReader::with_capacity(
            64,
            FailingAfter {
                good: io::Cursor::new(good),
            },
        );
        let (interrupts, _never) = Interrupts::none();
        let (summary, stop) = run_lines(&queue, read_ahead(reader), interrupts).await;
        assert!(
            matches!(&stop, Some(Stop::Read { line: 151, error }) if error.to_string() == "injected EIO"),
            "{stop:?}"
        );
        assert_eq!((summary.lines, summary.pushed), (150, 150));
        let stopped = summary.stopped.as_ref().expect("stopped");
        assert_eq!(stopped.resume_skip, 150);
        assert_eq!(
            stopped.resume_command,
            "cfq push --queue eio --file events.ndjson --skip 150"
        );
        assert_eq!(stopped.reason, "cannot read line 151: injected EIO");
        let failure = ending(stop, &summary, &Context::default()).expect_err("stopped");
        assert_eq!(failure.code, Code::Local);
        assert_eq!(
            failure.message,
            "cannot read events.ndjson at line 151: injected EIO"
        );
        assert_eq!(
            failure.hint.as_deref(),
            Some("resume with `cfq push --queue eio --file events.ndjson --skip 150`")
        );
        assert_eq!(emulator.metrics("eio").backlog_count, 150);
    }

    /// A signal before the run sends anything stops it with exit 7 and a
    /// command that resumes at the first line not pushed.
    #[tokio::test]
    async fn a_signal_stops_the_run_where_it_can_resume() {
        let emulator = cf_queues_testkit::emulators::emulator().await;
        let queue = emulator.client().expect("client").queue("sig").expect("id");
        let reader = io::Cursor::new(b"a\nb\n".to_vec());
        let (interrupts, signal) = Interrupts::none();
        signal.send_replace((1, "SIGTERM"));
        let (summary, stop) = run_lines(&queue, read_ahead(reader), interrupts).await;
        assert!(
            matches!(
                stop,
                Some(Stop::Interrupted {
                    signal: "SIGTERM",
                    abandoned: false
                })
            ),
            "{stop:?}"
        );
        assert_eq!((summary.lines, summary.pushed), (0, 0));
        let failure = ending(stop, &summary, &Context::default()).expect_err("stopped");
        assert_eq!(
            (failure.code, failure.message.as_str()),
            (Code::Partial, "stopped by SIGTERM")
        );
        assert_eq!(
            failure.hint.as_deref(),
            Some("resume with `cfq push --queue sig --file events.ndjson --skip 0`")
        );
    }

    #[test]
    fn stdin_loses_one_line_ending() {
        for (read, body) in [
            ("x\n", "x"),
            ("x\r\n", "x"),
            ("x\n\n", "x\n"),
            ("x", "x"),
            ("\n", ""),
            ("x\r", "x\r"),
        ] {
            assert_eq!(without_one_line_ending(read.to_owned()), body, "{read:?}");
        }
    }

    #[test]
    fn delays_are_repeated_as_parse_duration_reads_them() {
        for delay in [
            Duration::from_secs(30),
            Duration::from_millis(1_500),
            Duration::from_secs(86_400),
        ] {
            let flag = delay_flag(Some(delay));
            assert_eq!(flag[0], "--delay");
            assert_eq!(crate::args::parse_delay(&flag[1]), Ok(delay));
        }
        assert!(delay_flag(None).is_empty());
    }
}
