//! [`Queue`]: the handle on one queue that both areas of the API use; its
//! operations are written by area, the messages' in `messages/` and the
//! management's in `management/`.
//!
//! Every method takes the same path: check the input against the client's
//! [`Limits`](crate::limits::Limits), build the generated request, run it through
//! the one call path (`retry_loop.rs`: the caps, the pacing, attempts,
//! retries, deadline), unwrap the envelope into a typed result.

use std::time::Duration;

use crate::client::Client;
use crate::error::{Error, Result};
use crate::limits::check_token;
use crate::operation::Operation;
use crate::retry::RetryPolicy;
use crate::retry_loop::{Call, QueueRefusal};

/// One attempt of a generated request on this handle's account and queue,
/// with an optional body cloned per attempt: `send!(self, pull_messages, body)`,
/// and for a consumer's operations its id in brackets:
/// `send!(self, delete_consumer[id])`. Each operation has its own generated
/// builder type, so a function cannot name them all.
macro_rules! send {
    ($queue:expr, $operation:ident $([$consumer:expr])? $(, $body:expr)?) => {
        || {
            $queue
                .client
                .raw()
                .$operation()
                .account_id($queue.client.account_id())
                .queue_id(&$queue.queue_id)
                $(.consumer_id($consumer))?
                $(.body($body.clone()))?
                .send()
        }
    };
}
pub(crate) use send;

/// The batch size Cloudflare pulls and peeks when none is given.
const SERVER_DEFAULT_BATCH_SIZE: u32 = 5;

/// A handle on one queue of a [`Client`]'s account.
///
/// Cheap to clone. Every method checks its input against the client's
/// [`Limits`](crate::limits::Limits) before sending anything, then unwraps the API's
/// envelope. [`Queue::with_retry`] and [`Queue::with_deadline`] give a
/// handle with its own retry policy or deadline, for one call or many.
///
/// # Cancellation
///
/// Dropping a call's future stops it at once, between or during attempts.
/// What was already sent may still take effect: a push may have landed
/// (see [`Queue::push`]), and a pull may have leased messages, which come
/// back after their visibility timeout with an attempt used.
#[derive(Clone, Debug)]
pub struct Queue {
    pub(crate) client: Client,
    pub(crate) queue_id: String,
    /// The name, when the handle was obtained by name or by creating it.
    name: Option<String>,
    retry: Option<RetryPolicy>,
    deadline: Option<Option<Duration>>,
}

// The client hands out queues here, beside the queue it makes: the
// client's own file then needs nothing of the queue's.
impl Client {
    /// A handle on one queue.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`](crate::Error::InvalidInput) if `queue_id` is
    /// empty, longer than 32 characters or not alphanumeric.
    pub fn queue(&self, queue_id: impl Into<String>) -> Result<Queue> {
        let queue_id = queue_id.into();
        self.limits().check_id("queue_id", &queue_id)?;
        Ok(Queue::new(self.clone(), queue_id))
    }
}

impl Queue {
    pub(crate) fn new(client: Client, queue_id: String) -> Queue {
        Queue {
            client,
            queue_id,
            name: None,
            retry: None,
            deadline: None,
        }
    }

    /// This handle, remembering the queue's name.
    pub(crate) fn named(mut self, name: String) -> Queue {
        self.name = Some(name);
        self
    }

    /// The queue's id.
    pub fn id(&self) -> &str {
        &self.queue_id
    }

    /// The queue's name, when this handle knows it: obtained with
    /// [`Client::queue_by_name`] or [`Client::create_queue`]. A handle from
    /// [`Client::queue`] knows only the id ([`Queue::info`] reads the name).
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// The client this handle belongs to.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// This handle with its own retry policy, in place of the client's.
    ///
    /// ```no_run
    /// # async fn demo(queue: cf_queues::Queue) -> cf_queues::Result<()> {
    /// use cf_queues::Message;
    /// use cf_queues::retry::RetryPolicy;
    /// // Exactly one request for this call.
    /// queue.with_retry(RetryPolicy::none()).push(Message::text("once")).await?;
    /// # Ok(()) }
    /// ```
    pub fn with_retry(mut self, retry: RetryPolicy) -> Queue {
        self.retry = Some(retry);
        self
    }

    /// This handle with its own overall deadline per call, in place of the
    /// client's: the rate-limit wait, every attempt and every retry wait of
    /// one call end within it.
    pub fn with_deadline(mut self, deadline: Duration) -> Queue {
        self.deadline = Some(Some(deadline));
        self
    }

    /// This handle with no overall deadline, whatever the client's.
    pub fn without_deadline(mut self) -> Queue {
        self.deadline = Some(None);
        self
    }

    /// The retry policy calls on this handle follow.
    pub fn retry_policy(&self) -> &RetryPolicy {
        self.retry.as_ref().unwrap_or(self.client.retry_policy())
    }

    /// The overall deadline of each call on this handle, if any.
    pub fn deadline(&self) -> Option<Duration> {
        self.deadline.unwrap_or(self.client.deadline())
    }

    /// The call settings of this handle for one operation.
    pub(crate) fn call(
        &self,
        operation: Operation,
        messages: usize,
        response_cap: usize,
    ) -> Call<'_> {
        let pull_grace_until = (operation == Operation::Pull)
            .then(|| self.client.recently_enabled().until(&self.queue_id))
            .flatten();
        Call {
            operation,
            queue_id: &self.queue_id,
            retry: self.retry_policy(),
            deadline: self.deadline(),
            caps: self.client.caps(),
            pacer: self.client.pacer(),
            first_pass: None,
            observe: None,
            queue_refusal: QueueRefusal::Retried,
            messages,
            response_cap,
            pull_grace_until,
            server_clock: None,
            #[cfg(feature = "metrics")]
            token_gauge: self.client.token_gauge(),
        }
    }

    /// Checks a pull's, peek's or preview's batch size (1 to 100, or the
    /// server's default when none is given), with the response cap of the
    /// largest answer to it.
    pub(crate) fn messages_batch(&self, batch_size: Option<u32>) -> Result<(Option<u32>, usize)> {
        let batch_size = batch_size
            .map(|n| self.client.limits().batch_size(&"batch_size", n))
            .transpose()?;
        Ok((batch_size, self.messages_response_cap(batch_size)?))
    }

    /// The response cap of a call returning up to `batch_size` messages:
    /// the largest legal answer, so that leased messages are never dropped
    /// unread. A cap set by the user that is lower fails here, before the
    /// messages are leased.
    fn messages_response_cap(&self, batch_size: Option<u32>) -> Result<usize> {
        let batch_size = batch_size.unwrap_or(SERVER_DEFAULT_BATCH_SIZE);
        let needed = self.client.limits().max_messages_response_bytes(batch_size);
        match self.client.max_response_bytes() {
            None => Ok(needed),
            Some(cap) if cap >= needed => Ok(cap),
            Some(cap) => Err(Error::invalid(
                "batch_size",
                format!(
                    "an answer of {batch_size} messages can legally take {needed} bytes, over the client's max_response_bytes of {cap}: \
                     the messages would be leased and then not read; lower batch_size or raise max_response_bytes"
                ),
            )),
        }
    }

    /// The response cap of a call whose answer carries no messages or tokens.
    pub(crate) fn small_response_cap(&self) -> usize {
        self.client
            .max_response_bytes()
            .unwrap_or(crate::response_cap::SMALL_RESPONSE_BYTES)
    }

    pub(crate) fn tokens_response_cap<'a>(&self, tokens: impl Iterator<Item = &'a str>) -> usize {
        self.client
            .max_response_bytes()
            .unwrap_or_else(|| self.client.limits().tokens_response_bytes(tokens))
    }

    /// Checks and builds the two lists of an ack-shaped request (ids to
    /// settle, named `acks[i]`; ids to give back with an optional delay,
    /// `retries[i]`), with the response cap of an answer that names them all.
    pub(crate) fn settle_entries<'a, A, R>(
        &self,
        settle: impl Iterator<Item = &'a str> + Clone,
        retries: impl Iterator<Item = (&'a str, Option<Duration>)> + Clone,
        settle_entry: impl Fn(String) -> Result<A>,
        retry_entry: impl Fn(String, Option<u32>) -> Result<R>,
    ) -> Result<(Vec<A>, Vec<R>, usize)> {
        let settled = self.lease_entries("acks", settle.clone(), settle_entry)?;
        let retried = self.retry_entries(retries.clone(), retry_entry)?;
        let cap = self.tokens_response_cap(settle.chain(retries.map(|(id, _)| id)));
        Ok((settled, retried, cap))
    }

    /// Checks lease ids (or preview ids) and builds their wire entries:
    /// `{field}[i].lease_id` names the one at fault.
    pub(crate) fn lease_entries<'a, W>(
        &self,
        field: &str,
        ids: impl IntoIterator<Item = &'a str>,
        entry: impl Fn(String) -> Result<W>,
    ) -> Result<Vec<W>> {
        ids.into_iter()
            .enumerate()
            .map(|(i, id)| {
                check_token(&format_args!("{field}[{i}].lease_id"), id)?;
                entry(id.to_owned())
            })
            .collect()
    }

    /// Checks retries (an id and an optional delay, at most 24 hours) and
    /// builds their wire entries, with the delay in whole seconds.
    fn retry_entries<'a, W>(
        &self,
        retries: impl IntoIterator<Item = (&'a str, Option<Duration>)>,
        entry: impl Fn(String, Option<u32>) -> Result<W>,
    ) -> Result<Vec<W>> {
        let limits = self.client.limits();
        retries
            .into_iter()
            .enumerate()
            .map(|(i, (id, delay))| {
                check_token(&format_args!("retries[{i}].lease_id"), id)?;
                let delay_seconds = delay
                    .map(|d| limits.delay_seconds(&format_args!("retries[{i}].delay"), d))
                    .transpose()?;
                entry(id.to_owned(), delay_seconds)
            })
            .collect()
    }
}
