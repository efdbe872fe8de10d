//! `pull`, `ack`, `retry`, `extend` and `peek`: one call each.

use std::io::{self, Read as _};

use cf_queues::{Acks, PullOptions, Warning};
use serde::Serialize;

use crate::Session;
use crate::args::{AckArgs, ExtendArgs, PeekArgs, PullArgs, RetryArgs};
use crate::exit::{Code, Failure};
use crate::ndjson::Received;
use crate::output::{note, plural};

pub async fn pull(session: &Session, args: &PullArgs) -> Result<Code, Failure> {
    let mut options = PullOptions::new().batch_size(args.batch);
    if let Some(visibility) = args.visibility {
        options = options.visibility_timeout(visibility);
    }
    let batch = session
        .queue
        .pull(options)
        .await
        .map_err(|e| session.fail(&e))?;
    let received: Vec<Received<'_>> = batch.messages.iter().map(Received::pulled).collect();
    // Settle only what reached stdout: a message whose line could not be
    // written (stdout closed) is left to come back after its lease.
    let printed = print_settling(session, &received);
    let count = printed.as_ref().map_or_else(|(n, _)| *n, |n| *n);
    let settled = &batch.messages[..count];
    let mut acks = Acks::new();
    for message in settled {
        acks = match (args.ack, args.retry_after) {
            (true, _) => acks.ack(message),
            (false, Some(delay)) if delay.is_zero() => acks.retry(message),
            (false, Some(delay)) => acks.retry_after(message, delay),
            (false, None) => acks,
        };
    }
    let outcome = session
        .queue
        .ack(acks)
        .await
        .map_err(|e| session.fail(&e))?;
    if let Err((_, failure)) = printed {
        return Err(failure);
    }
    if args.ack {
        note(format_args!(
            "acknowledged {}",
            plural(outcome.acked, "message")
        ));
    } else if args.retry_after.is_some() {
        note(format_args!(
            "gave back {}",
            plural(outcome.retried, "message")
        ));
    } else if !batch.messages.is_empty() {
        note(format_args!(
            "warning: {} used an attempt and stay leased; they come back after the visibility \
             timeout unless settled with `cfq ack` or `cfq retry` (or pull with --ack / --retry-after)",
            plural(batch.messages.len() as u64, "message")
        ));
    }
    warn_about(&outcome.warnings, "lease");
    Ok(if outcome.warnings.is_empty() {
        Code::Ok
    } else {
        Code::Partial
    })
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
    let messages = session
        .queue
        .peek(args.batch)
        .await
        .map_err(|e| session.fail(&e))?;
    let received: Vec<Received<'_>> = messages.iter().map(Received::peeked).collect();
    session.out.messages(&received, "REF")?;
    Ok(Code::Ok)
}

#[derive(Debug, Serialize)]
struct Settled<'a> {
    queue: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    acked: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    retried: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    extended: Option<u32>,
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
    let outcome = session
        .queue
        .ack(acks)
        .await
        .map_err(|e| session.fail(&e))?;
    settled(
        session,
        Settled {
            queue: session.queue.id(),
            acked: Some(outcome.acked),
            retried: None,
            extended: None,
            warnings: warning_lines(&outcome.warnings),
        },
        &outcome.warnings,
    )
}

pub async fn retry(session: &Session, args: &RetryArgs) -> Result<Code, Failure> {
    let leases = tokens(&args.leases)?;
    let acks = leases.iter().fold(Acks::new(), |acks, l| match args.delay {
        Some(delay) if !delay.is_zero() => acks.retry_after(l.as_str(), delay),
        _ => acks.retry(l.as_str()),
    });
    let outcome = session
        .queue
        .ack(acks)
        .await
        .map_err(|e| session.fail(&e))?;
    settled(
        session,
        Settled {
            queue: session.queue.id(),
            acked: None,
            retried: Some(outcome.retried),
            extended: None,
            warnings: warning_lines(&outcome.warnings),
        },
        &outcome.warnings,
    )
}

pub async fn extend(session: &Session, args: &ExtendArgs) -> Result<Code, Failure> {
    let leases = tokens(&args.leases)?;
    let outcome = session
        .queue
        .extend(leases, args.visibility)
        .await
        .map_err(|e| session.fail(&e))?;
    settled(
        session,
        Settled {
            queue: session.queue.id(),
            acked: None,
            retried: None,
            extended: Some(outcome.extended),
            warnings: warning_lines(&outcome.warnings),
        },
        &outcome.warnings,
    )
}

fn settled(session: &Session, report: Settled<'_>, warnings: &[Warning]) -> Result<Code, Failure> {
    if session.out.json() {
        session.out.json_line(&report)?;
    } else {
        let mut parts = Vec::new();
        if let Some(n) = report.acked {
            parts.push(format!("acknowledged {}", plural(n, "message")));
        }
        if let Some(n) = report.retried {
            parts.push(format!("gave back {}", plural(n, "message")));
        }
        if let Some(n) = report.extended {
            parts.push(format!("extended {}", plural(n, "lease")));
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
