//! `drain` (a queue into a file) and `move` (a queue into another queue).
//!
//! Both settle a pulled message only once it is safe somewhere else: a
//! drained message after its line is flushed and synced to disk, a moved
//! one after the push holding it landed. A crash in between leaves the
//! message in both places (at least once), never in neither.

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead as _, BufReader, Seek as _, SeekFrom, Write as _};
use std::path::Path;

use cf_queues::{Acks, BatchPlanner, Message, PullOptions, PulledMessage, Queue};
use serde::Serialize;

use crate::Session;
use crate::args::{DrainArgs, MoveArgs};
use crate::exit::{Code, Failure};
use crate::ndjson::Received;
use crate::output::{line_ranges, note, plural};
use crate::pull::warn_about;

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
        let batch = session
            .queue
            .pull(options)
            .await
            .map_err(|e| session.fail(&e))?;
        if batch.messages.is_empty() {
            break;
        }
        let mut lines = Vec::new();
        let mut acks = Acks::new();
        for message in &batch.messages {
            let record = Received::pulled(message).without_token().record();
            line += 1;
            if !record.pushable() {
                report.not_pushable_lines.push(line);
            }
            serde_json::to_writer(&mut lines, &record)
                .map_err(|e| Failure::local(format_args!("cannot encode a record: {e}")))?;
            lines.push(b'\n');
            acks = acks.ack(message);
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
                plural(count, "message"),
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
        session.out.line(&format!(
            "drained {} from {} into {}",
            plural(report.drained, "message"),
            report.queue,
            report.file
        ))?;
        if !report.not_pushable_lines.is_empty() {
            session.out.line(&format!(
                "{} in the file cannot be pushed back over HTTP (bytes, v8 or non-object JSON): lines {}",
                plural(report.not_pushable_lines.len() as u64, "message"),
                line_ranges(&report.not_pushable_lines)
            ))?;
        }
    }
    Ok(if report.ack_warnings > 0 {
        Code::Partial
    } else {
        Code::Ok
    })
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
struct Moved<'a> {
    from: &'a str,
    to: &'a str,
    moved: u64,
    /// Messages left on their queue, with why.
    left: Vec<Left>,
}

#[derive(Debug, Serialize)]
struct Left {
    id: String,
    attempts: u32,
    timestamp_ms: u64,
    content_type: String,
    reason: String,
}

pub async fn move_messages(session: &Session, args: &MoveArgs) -> Result<Code, Failure> {
    let source = &session.queue;
    let destination = session
        .client
        .queue(&args.to)
        .map_err(|e| session.fail(&e))?;
    if destination.id() == source.id() {
        return Err(Failure::usage(
            "--to names the queue the messages are already on",
        ));
    }
    let mut report = Moved {
        from: source.id(),
        to: destination.id(),
        moved: 0,
        left: Vec::new(),
    };
    // Messages left behind stay leased until the visibility timeout, so a
    // later pull does not see them again; if one does (a long run), the
    // run has gone round the queue and stops.
    let mut left_seen: HashSet<(u64, String)> = HashSet::new();
    let mut pulled: u64 = 0;
    loop {
        let want = match args.max {
            Some(max) if pulled >= max => break,
            Some(max) => u32::try_from(max - pulled).map_or(args.batch, |n| n.min(args.batch)),
            None => args.batch,
        };
        let options = PullOptions::new()
            .batch_size(want)
            .visibility_timeout(args.visibility);
        let batch = source.pull(options).await.map_err(|e| session.fail(&e))?;
        if batch.messages.is_empty() {
            break;
        }
        pulled += batch.messages.len() as u64;
        let mut planner = BatchPlanner::new(*session.client.limits());
        let mut planned = Vec::new();
        let mut seen_again = 0;
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
            if !left_seen.insert(fingerprint(message)) {
                seen_again += 1;
                continue;
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
        if planned.is_empty() && seen_again == batch.messages.len() {
            break;
        }
        for full in planned {
            let (indices, result) = destination.push_planned(full).await;
            let moving: Vec<&PulledMessage> = indices
                .iter()
                .filter_map(|&i| batch.messages.get(i))
                .collect();
            if let Err(e) = result {
                return Err(Failure::call(&e, &session.context_for(&destination)).with_hint(
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
            settle(session, source, &moving).await?;
            report.moved += moving.len() as u64;
        }
    }
    print_moved(session, &report)?;
    Ok(if report.left.is_empty() {
        Code::Ok
    } else {
        Code::Partial
    })
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

/// What tells a message apart across deliveries: ids are not stable.
fn fingerprint(message: &PulledMessage) -> (u64, String) {
    (message.timestamp_ms, message.body().raw().to_owned())
}

fn print_moved(session: &Session, report: &Moved<'_>) -> Result<(), Failure> {
    if session.out.json() {
        return session.out.json_line(report);
    }
    session.out.line(&format!(
        "moved {} from {} to {}",
        plural(report.moved, "message"),
        report.from,
        report.to
    ))?;
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
