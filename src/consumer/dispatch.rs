//! Where pulled messages go: to a handler each, to a batch handler, or to
//! a stream, and undecodable ones to the poison callback; what the driver
//! sets up and the puller hands over, in a file that needs neither.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::state::ConsumerState;
use super::stream::Leased;
use crate::counters::add;
use crate::error::BodyError;
use crate::message::{ContentType, PulledMessage};

/// Spawns the handler of one message; the handle cancels it. It spawns
/// itself so that the handler's future is not boxed on top of its task.
pub(crate) type EachFn = Arc<dyn Fn(Leased) -> tokio::task::AbortHandle + Send + Sync>;
/// Handles the messages of one pull.
pub(crate) type BatchFn = Arc<dyn Fn(Vec<Leased>) -> BoxFuture<'static, ()> + Send + Sync>;
/// Handles a message whose body cannot be decoded.
pub(crate) type PoisonFn = Arc<dyn Fn(Leased, BodyError) -> BoxFuture<'static, ()> + Send + Sync>;

/// Where pulled messages go.
pub(crate) enum Mode {
    Each(EachFn),
    Batch(BatchFn),
    Stream(mpsc::UnboundedSender<Leased>),
}

/// The messages that can be settled: those with a lease id. One without
/// can be neither acked, retried nor extended (and would make the API
/// refuse every ack sent with it), so it is counted, logged and left to
/// come back when the lease it was pulled with expires.
pub(super) fn settleable(
    shared: &ConsumerState,
    mut messages: Vec<PulledMessage>,
) -> Vec<PulledMessage> {
    let before = messages.len();
    messages.retain(|message| {
        let has_lease = !message.lease_id.as_str().is_empty();
        if !has_lease {
            tracing::error!(
                queue = shared.queue.id(),
                message_id = %message.id,
                attempts = message.attempts,
                "a pulled message has no lease id: it cannot be settled, so it is not handled and comes back after the visibility timeout"
            );
        }
        has_lease
    });
    add(
        &shared.counters.unsettleable,
        (before - messages.len()) as u64,
    );
    messages
}

/// Why a body cannot be decoded, if it cannot.
fn undecodable(message: &PulledMessage) -> Option<BodyError> {
    let body = message.body();
    match body.content_type() {
        ContentType::Text => None,
        ContentType::Json => body.json::<serde::de::IgnoredAny>().err(),
        _ => body.bytes().err(),
    }
}

/// Hands pulled messages to their handlers (or the stream), also during
/// the grace period of a shutdown: a message leased then is handled if it
/// can be, rather than given back unseen. Returns their body bytes in all.
pub(super) fn dispatch(
    shared: &Arc<ConsumerState>,
    mode: &Mode,
    poison: &PoisonFn,
    messages: Vec<PulledMessage>,
    sent: Instant,
) -> u64 {
    if messages.is_empty() {
        return 0;
    }
    let (registered, bytes) = shared.register(messages, sent);
    let mut batch = Vec::new();
    let mut tasks = Vec::with_capacity(registered.len());
    for (message, ticket) in registered {
        let key = ticket.key;
        if let Some(error) = undecodable(&message) {
            add(&shared.counters.poisoned, 1);
            tracing::warn!(
                queue = shared.queue.id(),
                message_id = %message.id,
                content_type = %message.content_type(),
                %error,
                "a message body cannot be decoded; it goes to the poison callback"
            );
            let task = tokio::spawn(poison(Leased::new(message, ticket), error));
            tasks.push((key, task.abort_handle()));
            continue;
        }
        let leased = Leased::new(message, ticket);
        match mode {
            Mode::Each(spawn_handler) => tasks.push((key, spawn_handler(leased))),
            Mode::Batch(_) => batch.push((key, leased)),
            Mode::Stream(sender) => {
                // A stream that is gone drops the message, which releases it.
                let _ = sender.send(leased);
            }
        }
    }
    if let Mode::Batch(handler) = mode
        && !batch.is_empty()
    {
        let (keys, leased): (Vec<u64>, Vec<Leased>) = batch.into_iter().unzip();
        let task = tokio::spawn(handler(leased));
        tasks.extend(keys.into_iter().map(|key| (key, task.abort_handle())));
    }
    let mut table = shared.table();
    for (key, abort) in tasks {
        table.set_abort(key, abort);
    }
    bytes
}
