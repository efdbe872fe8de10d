//! `pull`, `ack`, `retry`, `extend` and `peek`: one call each.

use std::io::{self, Read as _};

use cf_queues::response::Warning;
use cf_queues::{Acks, PullOptions, PulledMessage};
use serde::Serialize;

use crate::args::{AckArgs, ExtendArgs, PeekArgs, PullArgs, RetryArgs};
use crate::exit::{Code, Failure};
use crate::flag_defaults::Optionally;
use crate::ndjson::Received;
use crate::output::plural;
use crate::session::Session;
use crate::stderr::note;

pub async fn pull(session: &Session, args: &PullArgs) -> Result<Code, Failure> {
    let options = PullOptions::new()
        .batch_size(args.batch)
        .optionally(args.visibility, PullOptions::visibility_timeout);
    let batch = session.answer(session.queue.pull(options).await)?;
    let received: Vec<Received<'_>> = batch.messages.iter().map(Received::pulled).collect();
    // Settle only what reached stdout: a message whose line could not be
    // written (stdout closed) is left to come back after its lease.
    let printed = print_settling(session, &received);
    let count = printed.as_ref().map_or_else(|(n, _)| *n, |n| *n);
    let settling = args.ack || args.retry_after.is_some();
    let mut acks = Acks::new();
    let mut leases = 0u64;
    let mut unsettleable = 0u64;
    for message in &batch.messages[..count] {
        if !settling {
            break;
        }
        // The API sent it without a lease: nothing can acknowledge it, and
        // asking would fail the call for every other message.
        if !has_lease(message) {
            unsettleable += 1;
            note(format_args!(
                "warning: message {} came without a lease id: it was printed but cannot be {}; \
                 it comes back after the visibility timeout",
                message.id,
                if args.ack {
                    "acknowledged"
                } else {
                    "given back"
                }
            ));
            continue;
        }
        leases += 1;
        acks = match (args.ack, args.retry_after) {
            (true, _) => acks.ack(message),
            (false, Some(delay)) if delay.is_zero() => acks.retry(message),
            (false, Some(delay)) => acks.retry_after(message, delay),
            (false, None) => acks,
        };
    }
    let outcome = session.answer(session.queue.ack(acks).await)?;
    if let Err((_, failure)) = printed {
        return Err(failure);
    }
    if args.ack {
        note(format_args!(
            "{}",
            applied("acknowledged", "acknowledge", outcome.acked, leases)
        ));
    } else if args.retry_after.is_some() {
        note(format_args!(
            "{}",
            applied("gave back", "give back", outcome.retried, leases)
        ));
    } else if !batch.messages.is_empty() {
        note(format_args!(
            "warning: {} used an attempt and stay leased; they come back after the visibility \
             timeout unless settled with `cfq ack` or `cfq retry` (or pull with --ack / --retry-after)",
            plural(batch.messages.len() as u64, "message")
        ));
    }
    warn_about(&outcome.warnings, "lease");
    Ok(if outcome.warnings.is_empty() && unsettleable == 0 {
        Code::Ok
    } else {
        Code::Partial
    })
}

/// Whether a pulled message can be settled: the API sent its lease id.
pub fn has_lease(message: &PulledMessage) -> bool {
    !message.lease_id.as_str().is_empty()
}

/// What a settling call did, as far as the API said: `done` messages
/// when it gave a count, otherwise the leases sent and that it did not
/// say how many it applied.
fn applied(done: &str, to_do: &str, count: Option<u32>, sent: u64) -> String {
    match count {
        Some(n) => format!("{done} {}", plural(n, "message")),
        None => format!(
            "sent {} to {to_do}; the API did not say how many it applied",
            plural(sent, "lease")
        ),
    }
}

/// Prints messages one by one; gives how many were printed, with the
/// failure that stopped the printing, if any.
fn print_settling(session: &Session, received: &[Received<'_>]) -> Result<usize, (usize, Failure)> {
    if !session.out.json() {
        return match session.out.messages(received, "LEASE") {
            Ok(()) => Ok(received.len()),
            Err(failure) => Err((0, failure)),
        };
    }
    for (i, message) in received.iter().enumerate() {
        session
            .out
            .json_line(&message.record())
            .map_err(|failure| (i, failure))?;
    }
    Ok(received.len())
}

pub async fn peek(session: &Session, args: &PeekArgs) -> Result<Code, Failure> {
    let messages = session.answer(session.queue.peek(args.batch).await)?;
    let received: Vec<Received<'_>> = messages.iter().map(Received::peeked).collect();
    session.out.messages(&received, "REF")?;
    Ok(Code::Ok)
}

/// The report of `ack`, `retry` and `extend`. Each count is there for the
/// command that asks for it, and `null` when the API's answer left it out
/// (it may: absent means unknown, not 0); `leases` is how many were sent.
#[derive(Debug, Serialize)]
struct Settled<'a> {
    queue: &'a str,
    leases: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    acked: Option<Option<u32>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    retried: Option<Option<u32>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    extended: Option<Option<u32>>,
    warnings: Vec<WarningLine<'a>>,
}

#[derive(Debug, Serialize)]
pub struct WarningLine<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    subject: Option<&'a str>,
    message: &'a str,
}

pub fn warning_lines(warnings: &[Warning]) -> Vec<WarningLine<'_>> {
    warnings
        .iter()
        .map(|w| WarningLine {
            subject: w.subject.as_deref(),
            message: &w.message,
        })
        .collect()
}

/// One stderr line per warning: the API did not apply the call to these.
pub fn warn_about(warnings: &[Warning], what: &str) {
    for warning in warnings {
        match &warning.subject {
            Some(subject) => note(format_args!(
                "warning: {what} {subject}: {}",
                warning.message
            )),
            None => note(format_args!("warning: {}", warning.message)),
        }
    }
}

pub async fn ack(session: &Session, args: &AckArgs) -> Result<Code, Failure> {
    let leases = tokens(&args.leases)?;
    let acks = leases
        .iter()
        .fold(Acks::new(), |acks, l| acks.ack(l.as_str()));
    let outcome = session.answer(session.queue.ack(acks).await)?;
    let done = Done::Acked(outcome.acked);
    settled(session, leases.len(), done, &outcome.warnings)
}

pub async fn retry(session: &Session, args: &RetryArgs) -> Result<Code, Failure> {
    let leases = tokens(&args.leases)?;
    let acks = leases.iter().fold(Acks::new(), |acks, l| match args.delay {
        Some(delay) if !delay.is_zero() => acks.retry_after(l.as_str(), delay),
        _ => acks.retry(l.as_str()),
    });
    let outcome = session.answer(session.queue.ack(acks).await)?;
    let done = Done::Retried(outcome.retried);
    settled(session, leases.len(), done, &outcome.warnings)
}

pub async fn extend(session: &Session, args: &ExtendArgs) -> Result<Code, Failure> {
    let leases = tokens(&args.leases)?;
    let outcome = session.answer(
        session
            .queue
            .extend(leases.iter().map(String::as_str), args.visibility)
            .await,
    )?;
    let done = Done::Extended(outcome.extended);
    settled(session, leases.len(), done, &outcome.warnings)
}

/// What a settling command did, by the count the API answered.
enum Done {
    Acked(Option<u32>),
    Retried(Option<u32>),
    Extended(Option<u32>),
}

fn settled(
    session: &Session,
    leases: usize,
    done: Done,
    warnings: &[Warning],
) -> Result<Code, Failure> {
    let (acked, retried, extended) = match done {
        Done::Acked(n) => (Some(n), None, None),
        Done::Retried(n) => (None, Some(n), None),
        Done::Extended(n) => (None, None, Some(n)),
    };
    let report = Settled {
        queue: session.queue.id(),
        leases,
        acked,
        retried,
        extended,
        warnings: warning_lines(warnings),
    };
    if session.out.json() {
        session.out.json_line(&report)?;
    } else {
        let mut parts = Vec::new();
        let sent = report.leases as u64;
        if let Some(n) = report.acked {
            parts.push(applied("acknowledged", "acknowledge", n, sent));
        }
        if let Some(n) = report.retried {
            parts.push(applied("gave back", "give back", n, sent));
        }
        if let Some(n) = report.extended {
            parts.push(match n {
                Some(n) => format!("extended {}", plural(n, "lease")),
                None => applied("", "extend", None, sent),
            });
        }
        session
            .out
            .line(&format!("{} on {}", parts.join(", "), report.queue))?;
    }
    warn_about(warnings, "lease");
    Ok(if warnings.is_empty() {
        Code::Ok
    } else {
        Code::Partial
    })
}

/// Lease ids or refs from the arguments, or from stdin for `-`.
pub fn tokens(args: &[String]) -> Result<Vec<String>, Failure> {
    if args != ["-"] {
        return Ok(args.to_vec());
    }
    let mut text = String::new();
    io::stdin()
        .read_to_string(&mut text)
        .map_err(|e| Failure::local(format_args!("cannot read stdin: {e}")))?;
    let tokens: Vec<String> = text.split_whitespace().map(str::to_owned).collect();
    if tokens.is_empty() {
        return Err(Failure::usage("no lease ids or refs on stdin"));
    }
    Ok(tokens)
}
