//! `metrics` and `purge` (by ref, or the whole queue).

use crate::confirm::confirm;
use std::time::Duration;

use cf_queues::request::PurgeConfirmation;
use cf_queues::response::Metrics;
use cf_queues::retry::RetryClass;
use serde::Serialize;

use crate::args::{MetricsArgs, PurgeArgs};
use crate::exit::{Code, Failure};
use crate::messages::pull::{tokens, warn_about, warning_lines};
use crate::output::{age, bytes, now_ms, plural};
use crate::session::Session;
use crate::stderr::note;

#[derive(Debug, Serialize)]
struct MetricsLine<'a> {
    queue: &'a str,
    backlog_count: u64,
    backlog_bytes: u64,
    oldest_message_timestamp_ms: u64,
    /// Milliseconds since the oldest message was pushed; absent when the
    /// queue does not say (empty, or unknown).
    #[serde(skip_serializing_if = "Option::is_none")]
    oldest_message_age_ms: Option<u64>,
    /// When the figures were read, as Unix milliseconds.
    at_ms: u64,
}

/// The shortest time between two readings of a watch: a quarter of the
/// token's window (1,200 requests per 5 minutes), leaving the rest to the
/// programs that share the token.
pub const MIN_WATCH_EVERY: Duration = Duration::from_secs(1);

pub async fn metrics(session: &Session, args: &MetricsArgs) -> Result<Code, Failure> {
    if let Some(address) = args.listen {
        return crate::messages::exporter::serve(session, args, address).await;
    }
    let every = args.watch.map(|every| every.max(MIN_WATCH_EVERY));
    if let Some(every) = every
        && session.out.terminal
        && !session.out.json()
    {
        return crate::messages::watch::live(session, every).await;
    }
    loop {
        match session.queue.metrics().await {
            Ok(metrics) => print_metrics(session, &metrics)?,
            // A watch is left running on a screen: a blip of the network or
            // of the API (after the library's own retries) is told and
            // watched through; what would only fail again ends it.
            Err(e) if every.is_some() && e.retry_class() != RetryClass::Permanent => {
                let failure = session.fail(&e);
                note(format_args!("error: {} (watching on)", failure.message));
            }
            Err(e) => return Err(session.fail(&e)),
        }
        let Some(every) = every else {
            return Ok(Code::Ok);
        };
        tokio::time::sleep(every).await;
    }
}

fn print_metrics(session: &Session, m: &Metrics) -> Result<(), Failure> {
    let now = now_ms();
    let oldest = m.oldest_message_timestamp_ms;
    if session.out.json() {
        return session.out.json_line(&MetricsLine {
            queue: session.queue.id(),
            backlog_count: m.backlog_count,
            backlog_bytes: m.backlog_bytes,
            oldest_message_timestamp_ms: oldest,
            oldest_message_age_ms: (oldest > 0).then(|| now.saturating_sub(oldest)),
            at_ms: now,
        });
    }
    let oldest_text = if oldest == 0 {
        "no oldest message".to_owned()
    } else {
        format!("oldest pushed {} ago", age(oldest))
    };
    session.out.line(&format!(
        "{}: {}, {}, {oldest_text}",
        session.queue.id(),
        plural(m.backlog_count, "message"),
        bytes(m.backlog_bytes),
    ))
}

#[derive(Debug, Serialize)]
struct Purged<'a> {
    queue: &'a str,
    refs: usize,
    warnings: Vec<crate::messages::pull::WarningLine<'a>>,
    errors: &'a [String],
}

pub async fn purge(session: &Session, args: &PurgeArgs) -> Result<Code, Failure> {
    if args.all {
        return purge_all(session, args).await;
    }
    let refs = tokens(&args.refs)?;
    let outcome = session.answer(session.queue.purge(refs.iter().map(String::as_str)).await)?;
    if session.out.json() {
        session.out.json_line(&Purged {
            queue: session.queue.id(),
            refs: refs.len(),
            warnings: warning_lines(&outcome.warnings),
            errors: &outcome.errors,
        })?;
    } else {
        let missed = outcome.warnings.len();
        session.out.line(&format!(
            "purged {} of {} from {}",
            refs.len().saturating_sub(missed),
            plural(refs.len() as u64, "ref"),
            session.queue.id()
        ))?;
    }
    warn_about(&outcome.warnings, "ref");
    for error in &outcome.errors {
        note(format_args!("warning: {error}"));
    }
    Ok(
        if outcome.warnings.is_empty() && outcome.errors.is_empty() {
            Code::Ok
        } else {
            Code::Partial
        },
    )
}

async fn purge_all(session: &Session, args: &PurgeArgs) -> Result<Code, Failure> {
    let queue_id = session.queue.id();
    if !args.yes {
        confirm(
            &format!("This deletes every message of queue {queue_id}, permanently."),
            "the queue id",
            queue_id,
            "nothing was purged",
        )?;
    }
    session.answer(
        session
            .queue
            .purge_all(PurgeConfirmation::delete_messages_permanently(queue_id))
            .await,
    )?;
    if args.no_wait {
        return report_purge(session, false, None);
    }
    let started = tokio::time::Instant::now();
    let mut pause = Duration::from_millis(250);
    loop {
        let status = session.answer(session.queue.purge_status().await)?;
        if status.completed == Some(true) {
            return report_purge(session, true, status.started_at.as_deref());
        }
        // Partial, not a local failure: the purge was accepted and goes on;
        // only its end was not seen.
        if started.elapsed() >= args.timeout {
            return Err(Failure::new(
                Code::Partial,
                format_args!(
                    "the purge of {queue_id} started but did not complete within {}",
                    humantime::format_duration(args.timeout)
                ),
            )
            .with_hint(format_args!(
                "it goes on; see `cfq metrics --queue {queue_id}`"
            )));
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_secs(5));
    }
}

fn report_purge(
    session: &Session,
    completed: bool,
    started_at: Option<&str>,
) -> Result<Code, Failure> {
    let queue = session.queue.id();
    if session.out.json() {
        session.out.json_line(&serde_json::json!({
            "queue": queue,
            "purge": if completed { "completed" } else { "started" },
            "started_at": started_at,
        }))?;
    } else if completed {
        session
            .out
            .line(&format!("purged every message of {queue}"))?;
    } else {
        session.out.line(&format!(
            "purge of {queue} started; `cfq metrics --queue {queue}` shows its progress"
        ))?;
    }
    Ok(Code::Ok)
}
