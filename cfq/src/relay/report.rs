//! What the relay tells: its counters, the failure lines on stderr (at
//! most one per kind every [`LINE_INTERVAL`], the network's text escaped
//! by `stderr::note`), and the summary at the end.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use cf_queues::consumer::Summary;
use serde::Serialize;
use tokio::time::Instant;

use crate::exit::Failure;
use crate::output::Output;
use crate::stderr::note;

/// The least time between two failure lines of one kind: a service down
/// for an hour writes a few hundred lines, not one per message.
const LINE_INTERVAL: Duration = Duration::from_secs(10);

/// The most of an answer's text a line quotes.
const QUOTED_CHARS: usize = 200;

/// The relay's own counts, beside the consumer's.
#[derive(Debug, Default)]
pub struct RelayCounters {
    /// Messages the service answered with 2xx (then acked).
    pub delivered: AtomicU64,
    /// Messages the service refused (any other answer, or named in a
    /// batch answer's `retry`, or in an unreadable one): retried.
    pub refused: AtomicU64,
    /// Ids a batch answer named that its batch did not hold.
    pub unknown_ids: AtomicU64,
    /// Answers that said the service is down or busy (the message held).
    pub busy_answers: AtomicU64,
    /// Pauses of the whole relay those answers started.
    pub pauses: AtomicU64,
    /// Messages held longer than `--hold`: retried with a delay.
    pub held_too_long: AtomicU64,
    /// Messages given back to the queue unsent at the stop.
    pub released: AtomicU64,
    /// Messages past `--max-age`: acked or retried towards the dead-letter queue, unsent.
    pub expired: AtomicU64,
    /// POSTs on their way now.
    pub posting: AtomicU64,
}

/// The kinds of failure line, each with its own rate.
#[derive(Debug, Clone, Copy)]
pub enum Kind {
    Busy = 0,
    Refused = 1,
    HeldTooLong = 2,
    /// A batch answer that cannot be read, or names ids it did not get.
    Unreadable = 3,
}

/// Failure lines, rate-bounded per kind.
#[derive(Debug, Default)]
pub struct Lines {
    last: Mutex<[Option<Instant>; 4]>,
    unsaid: [AtomicU64; 4],
}

impl Lines {
    /// Writes `line` (with the count of the lines of its kind left unsaid
    /// since the last one) unless one of its kind went out within the
    /// interval, which it then counts.
    pub fn say(&self, kind: Kind, line: impl FnOnce() -> String) {
        let now = Instant::now();
        let index = kind as usize;
        {
            let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
            if last[index].is_some_and(|at| now.duration_since(at) < LINE_INTERVAL) {
                self.unsaid[index].fetch_add(1, Ordering::Relaxed);
                return;
            }
            last[index] = Some(now);
        }
        let unsaid = self.unsaid[index].swap(0, Ordering::Relaxed);
        let line = line();
        if unsaid > 0 {
            note(format_args!(
                "{line} ({unsaid} more like it since the last line)"
            ));
        } else {
            note(line);
        }
    }
}

/// An answer's text cut for a line (escaping is `note`'s).
pub fn quoted(detail: &str) -> String {
    let mut chars = detail.chars();
    let mut cut: String = chars.by_ref().take(QUOTED_CHARS).collect();
    if chars.next().is_some() {
        cut.push('…');
    }
    cut
}

/// The summary printed at the end: the relay's counts and the consumer's.
#[derive(Debug, Serialize)]
pub struct RelaySummary {
    pub queue: String,
    pub delivered: u64,
    pub refused: u64,
    pub busy_answers: u64,
    pub pauses: u64,
    pub held_too_long: u64,
    pub released: u64,
    pub expired: u64,
    pub unknown_ids: u64,
    pub received: u64,
    pub acked: u64,
    pub retried: u64,
    pub extended: u64,
    pub leases_lost: u64,
    pub unflushed: u64,
    /// The signal that stopped the relay, if one did.
    pub stopped_by: Option<&'static str>,
}

impl RelaySummary {
    pub fn new(
        queue: &str,
        counters: &RelayCounters,
        consumer: &Summary,
        stopped_by: Option<&'static str>,
    ) -> RelaySummary {
        let get = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        RelaySummary {
            queue: queue.to_owned(),
            delivered: get(&counters.delivered),
            refused: get(&counters.refused),
            busy_answers: get(&counters.busy_answers),
            pauses: get(&counters.pauses),
            held_too_long: get(&counters.held_too_long),
            released: get(&counters.released),
            expired: get(&counters.expired),
            unknown_ids: get(&counters.unknown_ids),
            received: consumer.received,
            acked: consumer.acked,
            retried: consumer.retried,
            extended: consumer.extended,
            leases_lost: consumer.leases_lost,
            unflushed: consumer.unflushed,
            stopped_by,
        }
    }

    pub fn print(&self, out: Output) -> Result<(), Failure> {
        if out.json() {
            return out.json_line(self);
        }
        let rows: Vec<Vec<String>> = [
            ("delivered (acked on 2xx)", self.delivered),
            ("refused (retried with their delay)", self.refused),
            ("down or busy answers", self.busy_answers),
            ("pauses", self.pauses),
            ("held too long (retried)", self.held_too_long),
            ("given back at the stop", self.released),
            ("past --max-age (not sent)", self.expired),
            ("unknown ids in batch answers", self.unknown_ids),
            ("received", self.received),
            ("acked", self.acked),
            ("retried", self.retried),
            ("lease extensions", self.extended),
            ("leases lost", self.leases_lost),
            ("acks and retries unsent", self.unflushed),
        ]
        .into_iter()
        .map(|(what, count)| vec![what.to_owned(), count.to_string()])
        .collect();
        out.table(&["RELAYED FROM", &self.queue], &rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_cuts_long_answers() {
        assert_eq!(quoted("short"), "short");
        let long = "x".repeat(300);
        assert_eq!(quoted(&long).chars().count(), QUOTED_CHARS + 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_kind_speaks_once_per_interval_and_counts_the_rest() {
        let lines = Lines::default();
        let said = std::sync::atomic::AtomicU64::new(0);
        let say = |kind| {
            lines.say(kind, || {
                said.fetch_add(1, Ordering::Relaxed);
                String::new()
            })
        };
        say(Kind::Busy);
        say(Kind::Busy);
        say(Kind::Refused);
        assert_eq!(said.load(Ordering::Relaxed), 2);
        assert_eq!(lines.unsaid[Kind::Busy as usize].load(Ordering::Relaxed), 1);
        tokio::time::advance(LINE_INTERVAL).await;
        say(Kind::Busy);
        assert_eq!(said.load(Ordering::Relaxed), 3);
        assert_eq!(lines.unsaid[Kind::Busy as usize].load(Ordering::Relaxed), 0);
    }
}
