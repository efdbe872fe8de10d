//! `drain` (a queue into a file) and `move` (a queue into another queue).
//!
//! Both settle a pulled message only once it is safe somewhere else: a
//! drained message after its line is flushed and synced to disk, a moved
//! one after the push holding it landed. A crash in between leaves the
//! message in both places (at least once), never in neither.
//!
//! A message the API sent without a lease id cannot be settled at all:
//! it is written or pushed like the others, reported, and left out of the
//! acknowledgement, which it would otherwise fail for the whole batch.

use std::cell::RefCell;
use std::collections::HashSet;
use std::convert::Infallible;
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead as _, BufReader, Seek as _, SeekFrom, Write as _};
use std::path::Path;
use std::time::Duration;

use cf_queues::batch::BatchPlanner;
use cf_queues::limits::MAX_PULL_BATCH_SIZE;
use cf_queues::message::LeaseId;
use cf_queues::{Acks, Message, PullOptions, PulledMessage, Queue};
use serde::Serialize;
use tokio::time::Instant;

use crate::args::{DrainArgs, MoveArgs};
use crate::exit::{Code, Failure};
use crate::messages::pull::{has_lease, warn_about};
use crate::ndjson::Received;
use crate::output::{line_ranges, plural};
use crate::session::Session;
use crate::stderr::note;

#[derive(Debug, Serialize)]
struct Drained<'a> {
    queue: &'a str,
    file: String,
    drained: u64,
    /// Line numbers of records whose body HTTP cannot push back.
    not_pushable_lines: Vec<u64>,
    /// Acknowledgements answered with a warning: those messages are in
    /// the file and may still be on the queue.
    ack_warnings: usize,
    /// Line numbers of records of messages the API sent without a lease
    /// id: in the file, but not acknowledged, so still on the queue (see
    /// [`unsettleable`]).
    unsettleable_lines: Vec<u64>,
}

pub async fn drain(session: &Session, args: &DrainArgs) -> Result<Code, Failure> {
    let path = &args.to;
    if path.as_os_str() == "-" {
        return Err(Failure::usage(
            "drain writes to a file it can sync before acknowledging; to print messages, use `cfq pull`",
        ));
    }
    let io_failure = |what: &str, e: io::Error| {
        Failure::local(format_args!("cannot {what} {}: {e}", path.display()))
    };
    let (mut file, mut line) = open_for_append(path).map_err(|e| io_failure("open", e))?;
    let mut report = Drained {
        queue: session.queue.id(),
        file: path.display().to_string(),
        drained: 0,
        not_pushable_lines: Vec::new(),
        ack_warnings: 0,
        unsettleable_lines: Vec::new(),
    };
    loop {
        let want = match args.max {
            Some(max) if report.drained >= max => break,
            Some(max) => {
                u32::try_from(max - report.drained).map_or(args.batch, |n| n.min(args.batch))
            }
            None => args.batch,
        };
        let options = PullOptions::new()
            .batch_size(want)
            .visibility_timeout(args.visibility);
        let batch = session.answer(session.queue.pull(options).await)?;
        if batch.messages.is_empty() {
            break;
        }
        let mut lines = Vec::new();
        let mut acks = Acks::new();
        let mut acking = 0u64;
        for message in &batch.messages {
            let record = Received::pulled(message).without_token().record();
            line += 1;
            if !record.pushable() {
                report.not_pushable_lines.push(line);
            }
            serde_json::to_writer(&mut lines, &record)
                .map_err(|e| Failure::local(format_args!("cannot encode a record: {e}")))?;
            lines.push(b'\n');
            if has_lease(message) {
                acks = acks.ack(message);
                acking += 1;
            } else {
                unsettleable(
                    message,
                    format_args!("written to line {line}"),
                    session.queue.id(),
                );
                report.unsettleable_lines.push(line);
            }
        }
        file.write_all(&lines)
            .and_then(|()| file.flush())
            .and_then(|()| file.sync_data())
            .map_err(|e| io_failure("write to", e))?;
        // The lines are on disk: only now may the messages leave the queue.
        let count = batch.messages.len() as u64;
        let outcome = session.queue.ack(acks).await.map_err(|e| {
            session.fail(&e).with_hint(format_args!(
                "the last {} are in {} but were not acknowledged: they come back on the queue \
                 after the visibility timeout, and a new drain appends them again",
                plural(acking, "message"),
                path.display()
            ))
        })?;
        warn_about(&outcome.warnings, "lease");
        report.ack_warnings += outcome.warnings.len();
        report.drained += count;
        note(format_args!(
            "{} drained into {} (up to line {line})",
            plural(report.drained, "message"),
            path.display()
        ));
    }
    if session.out.json() {
        session.out.json_line(&report)?;
    } else {
        let (drained, queue, file) = (plural(report.drained, "message"), report.queue, report.file);
        session
            .out
            .line(&format!("drained {drained} from {queue} into {file}"))?;
        if !report.not_pushable_lines.is_empty() {
            session.out.line(&format!(
                "{} in the file cannot be pushed back over HTTP (bytes, v8 or non-object JSON): lines {}",
                plural(report.not_pushable_lines.len() as u64, "message"),
                line_ranges(&report.not_pushable_lines)
            ))?;
        }
        if !report.unsettleable_lines.is_empty() {
            session.out.line(&format!(
                "{} came without a lease id and could not be acknowledged: they are in the file \
                 (lines {}) and still on the queue",
                plural(report.unsettleable_lines.len() as u64, "message"),
                line_ranges(&report.unsettleable_lines)
            ))?;
        }
    }
    Ok(
        if report.ack_warnings > 0 || !report.unsettleable_lines.is_empty() {
            Code::Partial
        } else {
            Code::Ok
        },
    )
}

/// Says on stderr that `message` came without a lease id, so that it
/// cannot be acknowledged: `done` is what happened to it all the same
/// (written, pushed). Nothing can settle it, so the queue delivers it
/// again after the visibility timeout, and each delivery is written (or
/// pushed) again, until its attempts run out (`max_retries`): at most
/// that many copies, each reported. Acknowledging the others with it
/// would fail the whole call, which would duplicate all of them on every
/// run instead.
fn unsettleable(message: &PulledMessage, done: std::fmt::Arguments<'_>, queue: &str) {
    note(format_args!(
        "warning: message {} came without a lease id: {done}, but it cannot be acknowledged; \
         it stays on {queue} and comes back after the visibility timeout (attempt {})",
        message.id, message.attempts
    ));
}

/// Opens a drain file for appending; gives it with the number of lines it
/// already holds, so that reports name the lines as the file numbers them.
///
/// A file that does not end with a line ending (a drain killed mid-write)
/// gets one first: the torn line stays alone, and readers refuse it
/// instead of gluing it to the next record.
fn open_for_append(path: &Path) -> io::Result<(File, u64)> {
    let existed = path.exists();
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .read(true)
        .open(path)?;
    let mut lines = 0;
    let mut last = None;
    let mut reader = BufReader::new(&file);
    let mut buffer = Vec::new();
    loop {
        buffer.clear();
        if reader.read_until(b'\n', &mut buffer)? == 0 {
            break;
        }
        lines += 1;
        last = buffer.last().copied();
    }
    if last.is_some_and(|byte| byte != b'\n') {
        file.write_all(b"\n")?;
        file.sync_data()?;
    }
    if !existed {
        sync_parent(path);
    }
    file.seek(SeekFrom::End(0))?;
    Ok((file, lines))
}

/// A new file's directory entry is durable only once its directory is
/// synced. Best effort: not every platform can open a directory.
fn sync_parent(path: &Path) {
    let parent = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    if let Ok(dir) = File::open(parent) {
        let _ = dir.sync_all();
    }
}

#[derive(Debug, Serialize)]
struct MoveOutcome<'a> {
    from: &'a str,
    to: &'a str,
    moved: u64,
    /// Messages left on their queue, with why: one entry per message, since
    /// a run pulls each message at most once (see [`keep_leased`]).
    left: Vec<Left>,
    /// Why the run stopped before the queue was empty, if it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    stopped: Option<String>,
    /// Messages pushed to the destination that the API sent without a
    /// lease id: they cannot be acknowledged, so they are on both queues
    /// (see [`unsettleable`]).
    unsettleable: Vec<Unsettleable>,
}

#[derive(Debug, Serialize)]
struct Unsettleable {
    id: String,
    attempts: u32,
    timestamp_ms: u64,
}

#[derive(Debug, Serialize)]
struct Left {
    /// The id of the delivery that left it. Cloudflare does not promise
    /// ids stable across deliveries: it names the message in this report,
    /// not for a later run.
    id: String,
    attempts: u32,
    timestamp_ms: u64,
    content_type: String,
    reason: String,
}

/// The lease of a message `move` left behind, kept until the run ends.
struct Held {
    lease: LeaseId,
    /// The earliest its lease may run out: when the request that set it
    /// was sent, plus the visibility timeout. The server started counting
    /// when the request arrived, later, so its lease lasts at least this.
    until: Instant,
}

pub async fn move_messages(session: &Session, args: &MoveArgs) -> Result<Code, Failure> {
    let source = &session.queue;
    let Some(to) = args.destination.given() else {
        return Err(Failure::usage("no destination: pass --to QUEUE"));
    };
    // Resolved once: every push of the run goes to this handle.
    let destination = session.other(&to).await?;
    if destination.id() == source.id() {
        return Err(Failure::usage(
            "--to names the queue the messages are already on",
        ));
    }
    let mut report = MoveOutcome {
        from: source.id(),
        to: destination.id(),
        moved: 0,
        left: Vec::new(),
        stopped: None,
        unsettleable: Vec::new(),
    };
    let held = RefCell::new(Vec::new());
    // The leases are kept in the same task as the run, beside it: when the
    // run ends, so does the keeping, and the leases run out on their own.
    tokio::select! {
        result = redrive(session, &destination, args, &held, &mut report) => result?,
        never = keep_leased(source, &held, args.visibility) => match never {},
    }
    print_moved(session, &report)?;
    Ok(
        if report.left.is_empty() && report.stopped.is_none() && report.unsettleable.is_empty() {
            Code::Ok
        } else {
            Code::Partial
        },
    )
}

/// Pulls, pushes and acknowledges until a pull comes back empty.
///
/// A message it cannot push stays leased, and [`keep_leased`] extends its
/// lease while the run goes: a second pull of it would use a second
/// attempt, and enough of them make the queue drop it. Should its lease
/// be about to run out anyway (the extensions failed), the run stops
/// before its next pull rather than pull that message again.
async fn redrive(
    session: &Session,
    destination: &Queue,
    args: &MoveArgs,
    held: &RefCell<Vec<Held>>,
    report: &mut MoveOutcome<'_>,
) -> Result<(), Failure> {
    let source = &session.queue;
    // Room for the pull to reach the server before a lease runs out.
    let margin = args.visibility / 4;
    let mut pulled: u64 = 0;
    loop {
        let want = match args.max {
            Some(max) if pulled >= max => break,
            Some(max) => u32::try_from(max - pulled).map_or(args.batch, |n| n.min(args.batch)),
            None => args.batch,
        };
        let earliest = held.borrow().iter().map(|h| h.until).min();
        if earliest.is_some_and(|until| until <= Instant::now() + margin) {
            let reason = "the leases of the messages left behind could not be extended; \
                          a further pull could take them again, using another of their attempts";
            note(format_args!("stopping early: {reason}"));
            report.stopped = Some(reason.to_owned());
            break;
        }
        let options = PullOptions::new()
            .batch_size(want)
            .visibility_timeout(args.visibility);
        let sent = Instant::now();
        let batch = session.answer(source.pull(options).await)?;
        if batch.messages.is_empty() {
            break;
        }
        pulled += batch.messages.len() as u64;
        let mut planner = BatchPlanner::new(*session.client.limits());
        let mut planned = Vec::new();
        for (index, message) in batch.messages.iter().enumerate() {
            let refused = match Message::try_from(message) {
                Ok(pushable) => match planner.add(index, pushable) {
                    Ok(full) => {
                        planned.extend(full);
                        continue;
                    }
                    Err(rejected) => rejected.error.to_string(),
                },
                Err(e) => e.to_string(),
            };
            // Without a lease id there is nothing to extend: such a message
            // comes back after the visibility timeout, and may be pulled again.
            if has_lease(message) {
                held.borrow_mut().push(Held {
                    lease: message.lease_id.clone(),
                    until: sent + args.visibility,
                });
            }
            note(format_args!(
                "message {} left on {}: {refused}",
                message.id,
                source.id()
            ));
            report.left.push(Left {
                id: message.id.clone(),
                attempts: message.attempts,
                timestamp_ms: message.timestamp_ms,
                content_type: message.content_type().to_string(),
                reason: refused,
            });
        }
        planned.extend(planner.finish());
        for full in planned {
            let (indices, result) = destination.push_planned(full).await;
            let moving: Vec<&PulledMessage> = indices
                .iter()
                .filter_map(|&i| batch.messages.get(i))
                .collect();
            if let Err(e) = result {
                return Err(Failure::call(&e, &session.context_for(destination)).with_hint(
                    format_args!(
                        "{} not moved: {}; they stay on {} and come back after the visibility timeout",
                        plural(moving.len() as u64, "message"),
                        if crate::exit::may_have_landed(&e) {
                            "the push may have landed all the same, so they may be on both queues"
                        } else {
                            "the push did not land"
                        },
                        source.id()
                    ),
                ));
            }
            // The push landed: only now may the messages leave their queue.
            let (settling, unsettled): (Vec<&PulledMessage>, Vec<&PulledMessage>) =
                moving.into_iter().partition(|m| has_lease(m));
            for message in unsettled {
                unsettleable(
                    message,
                    format_args!("pushed to {}", destination.id()),
                    source.id(),
                );
                report.unsettleable.push(Unsettleable {
                    id: message.id.clone(),
                    attempts: message.attempts,
                    timestamp_ms: message.timestamp_ms,
                });
            }
            settle(session, source, &settling).await?;
            report.moved += settling.len() as u64;
        }
    }
    Ok(())
}

/// Extends the leases of the messages left behind, every third of the
/// visibility timeout, for as long as it is polled. An extension uses no
/// attempt. A lease the API did not extend keeps its old `until`, which
/// [`redrive`] watches.
async fn keep_leased(queue: &Queue, held: &RefCell<Vec<Held>>, visibility: Duration) -> Infallible {
    loop {
        tokio::time::sleep(visibility / 3).await;
        let leases: Vec<LeaseId> = held.borrow().iter().map(|h| h.lease.clone()).collect();
        // As many as a pull returns: a size every server takes.
        for chunk in leases.chunks(MAX_PULL_BATCH_SIZE as usize) {
            let sent = Instant::now();
            match queue.extend(chunk, visibility).await {
                Ok(outcome) => {
                    warn_about(&outcome.warnings, "lease");
                    // A warning without a subject could be about any of them.
                    if outcome.warnings.iter().any(|w| w.subject.is_none()) {
                        continue;
                    }
                    let kept: HashSet<&LeaseId> = chunk
                        .iter()
                        .filter(|lease| {
                            !outcome
                                .warnings
                                .iter()
                                .any(|w| w.subject.as_deref() == Some(lease.as_str()))
                        })
                        .collect();
                    for h in held.borrow_mut().iter_mut() {
                        if kept.contains(&h.lease) {
                            h.until = sent + visibility;
                        }
                    }
                }
                Err(e) => note(format_args!(
                    "warning: could not extend the leases of the messages left behind: {e}"
                )),
            }
        }
    }
}

async fn settle(
    session: &Session,
    source: &Queue,
    moved: &[&PulledMessage],
) -> Result<(), Failure> {
    let acks = moved.iter().fold(Acks::new(), |acks, m| acks.ack(*m));
    let outcome = source.ack(acks).await.map_err(|e| {
        session.fail(&e).with_hint(format_args!(
            "{} were pushed to the destination but not acknowledged: they are on both queues \
             (at least once) until the visibility timeout brings them back on the source",
            plural(moved.len() as u64, "message")
        ))
    })?;
    warn_about(&outcome.warnings, "lease");
    Ok(())
}

fn print_moved(session: &Session, report: &MoveOutcome<'_>) -> Result<(), Failure> {
    if session.out.json() {
        return session.out.json_line(report);
    }
    let (moved, from, to) = (plural(report.moved, "message"), report.from, report.to);
    session
        .out
        .line(&format!("moved {moved} from {from} to {to}"))?;
    if let Some(reason) = &report.stopped {
        session.out.line(&format!("stopped early: {reason}"))?;
    }
    if !report.unsettleable.is_empty() {
        let ids: Vec<&str> = report.unsettleable.iter().map(|u| u.id.as_str()).collect();
        session.out.line(&format!(
            "{} pushed to {} came without a lease id and could not be acknowledged: they are \
             on both queues ({})",
            plural(ids.len() as u64, "message"),
            report.to,
            ids.join(", ")
        ))?;
    }
    if !report.left.is_empty() {
        session.out.line(&format!(
            "{} left on {} (HTTP cannot push their bodies):",
            plural(report.left.len() as u64, "message"),
            report.from
        ))?;
        let rows: Vec<Vec<String>> = report
            .left
            .iter()
            .map(|l| {
                vec![
                    l.id.clone(),
                    l.content_type.clone(),
                    l.attempts.to_string(),
                    l.reason.clone(),
                ]
            })
            .collect();
        session
            .out
            .table(&["ID", "TYPE", "ATTEMPTS", "REASON"], &rows)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read as _;

    #[test]
    fn a_torn_tail_gets_its_own_line() {
        let dir = std::env::temp_dir().join(format!("cfq-drain-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("torn.ndjson");
        std::fs::write(&path, "{\"cfq\":1}\n{\"cfq\":1,\"con").unwrap();
        let (mut file, lines) = open_for_append(&path).unwrap();
        assert_eq!(lines, 2);
        file.write_all(b"next\n").unwrap();
        let mut text = String::new();
        File::open(&path)
            .unwrap()
            .read_to_string(&mut text)
            .unwrap();
        assert_eq!(text, "{\"cfq\":1}\n{\"cfq\":1,\"con\nnext\n");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
