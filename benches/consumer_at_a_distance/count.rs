//! Counting the 429s a client gets, from the client's own events: the
//! emulator counts the requests it receives but not what it refused, and
//! the `Summary` of the consumers it is compared with (the callgrind
//! parent's) counts failed calls, not 429s.
//!
//! Every failed attempt of a call ends in exactly one event of
//! `cf_queues::call`: "retrying" (its `reason`) or "call failed" (its
//! `error`). An error answered with a 429 says "(HTTP 429)" in its text.
//! Every other callsite is disabled for good, so spans and events cost what
//! they cost without a subscriber.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::subscriber::Interest;
use tracing::{Event, Metadata, Subscriber};

/// The 429s seen so far, by every client of the process.
#[derive(Clone, Default)]
pub(crate) struct RateLimited(Arc<AtomicU64>);

impl RateLimited {
    /// Installs a subscriber that counts them; once per process.
    pub(crate) fn install() -> Result<RateLimited, tracing::subscriber::SetGlobalDefaultError> {
        let counter = RateLimited::default();
        tracing::subscriber::set_global_default(Counting(counter.clone()))?;
        Ok(counter)
    }

    pub(crate) fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

struct Counting(RateLimited);

const CALL_TARGET: &str = "cf_queues::call";

fn counted(metadata: &Metadata<'_>) -> bool {
    metadata.is_event() && metadata.target() == CALL_TARGET
}

impl Subscriber for Counting {
    fn register_callsite(&self, metadata: &'static Metadata<'static>) -> Interest {
        if counted(metadata) {
            Interest::always()
        } else {
            Interest::never()
        }
    }

    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        counted(metadata)
    }

    fn max_level_hint(&self) -> Option<tracing::level_filters::LevelFilter> {
        Some(tracing::level_filters::LevelFilter::DEBUG)
    }

    fn new_span(&self, _span: &Attributes<'_>) -> Id {
        // Never called for a disabled span; any id will do.
        Id::from_u64(1)
    }

    fn record(&self, _span: &Id, _values: &Record<'_>) {}

    fn record_follows_from(&self, _span: &Id, _follows: &Id) {}

    fn event(&self, event: &Event<'_>) {
        let mut found = Finds429(false);
        event.record(&mut found);
        if found.0 {
            (self.0).0.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn enter(&self, _span: &Id) {}

    fn exit(&self, _span: &Id) {}
}

/// Whether the event's error says the answer was a 429.
struct Finds429(bool);

impl Visit for Finds429 {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if matches!(field.name(), "reason" | "error") {
            // An API error's text starts so, with its status; a timeout's
            // names its last error further on, which is no 429 of its own.
            let text = format!("{value:?}");
            if text.starts_with("Cloudflare API error") && text.contains("(HTTP 429)") {
                self.0 = true;
            }
        }
    }
}
