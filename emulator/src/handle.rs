//! [`EmulatorHandle`]: a running emulator, its clients and its state.

use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::http::{App, EmitRequest, emit};
use super::latency::Latency;
use super::ratelimit::{RateLimitModel, RateLimiter};
use super::server::{ServerMonitor, ServerState, ServerStats};
use super::state::{At, BodyKind, NewMessage};
use super::{EMULATOR_ACCOUNT_ID, Fault};
use cf_queues::response::Metrics;
use cf_queues::{Client, ClientBuilder, Credentials};

/// A body only a Worker can write, for [`EmulatorHandle::push_from_worker`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum WorkerBody {
    /// Raw bytes (`CF-Content-Type: bytes`), delivered base64-encoded.
    Bytes(Vec<u8>),
    /// A V8 structured clone (`CF-Content-Type: v8`), which only Workers can decode.
    V8(Vec<u8>),
}

/// An event to emit with [`EmulatorHandle::emit_event`]: a documented
/// event of a source (see the [catalogue](crate::catalogue)), with its
/// payload as documented unless told otherwise.
///
/// ```
/// use cf_queues_emulator::EventToEmit;
/// let event = EventToEmit::new("workflows.workflow", "instance.errored")
///     .resource("checkout")
///     .field("instanceId", "inst-1");
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
pub struct EventToEmit {
    request: EmitRequest,
}

impl EventToEmit {
    /// The event `event` (`bucket.created`) of the source of type `source` (`r2`).
    pub fn new(source: impl Into<String>, event: impl Into<String>) -> EventToEmit {
        EventToEmit {
            request: EmitRequest {
                source: source.into(),
                event: event.into(),
                ..EmitRequest::default()
            },
        }
    }

    /// Only into the subscriptions to this resource of the source (a
    /// model, a Worker, a script, a Workflow); without it, into every
    /// subscription to a source of that type.
    pub fn resource(mut self, resource: impl Into<String>) -> EventToEmit {
        self.request.resource = Some(resource.into());
        self
    }

    /// The whole payload, instead of the documented example's.
    pub fn payload(mut self, payload: serde_json::Map<String, serde_json::Value>) -> EventToEmit {
        self.request.payload = Some(payload);
        self
    }

    /// One field of the payload, set over the example's (or `payload`'s).
    pub fn field(
        mut self,
        key: impl Into<String>,
        value: impl Into<serde_json::Value>,
    ) -> EventToEmit {
        self.request.fields.insert(key.into(), value.into());
        self
    }
}

/// Where an emitted event went: one message into one subscription's queue.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct EventDelivered {
    /// The subscription that delivered it (the message's `metadata.eventSubscriptionId`).
    pub subscription_id: String,
    /// The queue it went into.
    pub queue_id: String,
}

/// Why an event was not emitted (or not everywhere).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmitError {
    status: u16,
    message: String,
}

impl EmitError {
    /// The status the emulator's route answers it with: 400 for an event
    /// the catalogue does not have, 404 when no enabled subscription
    /// matches, 429 when a queue's backlog is full, 503 when the data
    /// directory failed (and any status of an injected fault).
    pub fn status(&self) -> u16 {
        self.status
    }

    /// What happened, for a person; it names what the catalogue has when
    /// the event is not in it.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for EmitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for EmitError {}

/// A running emulator. Dropping it stops the server (within the shutdown
/// grace period, in the background).
///
/// The methods that name a queue mean that queue of [`EMULATOR_ACCOUNT_ID`],
/// the account of [`EmulatorHandle::client`]; their `_in` forms name
/// another account, since queues of different accounts are different
/// queues.
pub struct EmulatorHandle {
    pub(super) base_url: String,
    pub(super) dashboard_url: Option<String>,
    pub(super) address: SocketAddr,
    pub(super) token: Option<String>,
    pub(super) global_key: Option<(String, String)>,
    pub(super) app: Arc<App>,
    pub(super) server: Arc<ServerState>,
    pub(super) stop: Option<oneshot::Sender<()>>,
    pub(super) task: Option<JoinHandle<io::Result<()>>>,
    pub(super) notes: Vec<String>,
}

impl EmulatorHandle {
    /// The API root to give a client, such as `http://127.0.0.1:8787/client/v4`.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The dashboard's link, which logs a browser in (it carries a secret
    /// of its own, never the API token; under
    /// [`Emulator::without_auth`](crate::Emulator::without_auth) none is
    /// needed); `None` when the dashboard is off. See the crate docs'
    /// [Dashboard](crate::semantics#dashboard) section.
    pub fn dashboard_url(&self) -> Option<&str> {
        self.dashboard_url.as_deref()
    }

    /// The address the server listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.address
    }

    /// What the start did that its caller may not expect, one line each,
    /// for a command line to print (`cfq emulator` does): for now, that a
    /// [data directory](crate::Emulator::data_dir) already held an account,
    /// so the queues a configuration declares were not applied. Also
    /// logged with `tracing` at the info level.
    pub fn start_notes(&self) -> &[String] {
        &self.notes
    }

    /// The API token the emulator accepts, `None` when it accepts anything.
    pub fn token(&self) -> Option<&str> {
        self.token.as_deref()
    }

    /// Credentials the emulator accepts, for [`ClientBuilder::credentials`].
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`](cf_queues::Error::InvalidInput) when the token or
    /// key set with [`Emulator::token`](super::Emulator::token) or
    /// [`Emulator::global_api_key`](super::Emulator::global_api_key) cannot be
    /// sent as a header value.
    pub fn credentials(&self) -> cf_queues::Result<Credentials> {
        match (&self.token, &self.global_key) {
            (Some(token), _) => Credentials::api_token(token),
            (None, Some((email, key))) => Credentials::global_api_key(email, key),
            (None, None) => Credentials::api_token("emulator-accepts-any-token"),
        }
    }

    /// A client builder aimed at this emulator, with its credentials and
    /// [`EMULATOR_ACCOUNT_ID`].
    ///
    /// # Errors
    ///
    /// As [`EmulatorHandle::credentials`].
    pub fn client_builder(&self) -> cf_queues::Result<ClientBuilder> {
        Ok(Client::builder()
            .base_url(&self.base_url)
            .credentials(self.credentials()?)
            .account_id(EMULATOR_ACCOUNT_ID))
    }

    /// A client aimed at this emulator.
    ///
    /// # Errors
    ///
    /// As [`EmulatorHandle::credentials`], and as
    /// [`ClientBuilder::build`].
    pub fn client(&self) -> cf_queues::Result<Client> {
        self.client_builder()?.build()
    }

    /// Changes the round trip added to every request (`None`: none); the
    /// requests already waiting keep theirs.
    pub fn set_latency(&self, latency: Option<Latency>) {
        self.server.latency.set(latency);
    }

    /// The round trip added to every request now, if any.
    pub fn latency(&self) -> Option<Latency> {
        self.server.latency.get()
    }

    /// Switches the rate limits on (with every bucket full and every window
    /// empty) or off (`None`), so that a benchmark can fill a queue first
    /// and then measure under the limits.
    pub fn set_rate_limits(&self, model: Option<RateLimitModel>) {
        *self.app.rate_limiter() = model.map(RateLimiter::new);
    }

    /// Makes upcoming requests fail or stall; faults apply in the order injected.
    pub fn inject(&self, fault: Fault) {
        self.app.faults.push(fault);
    }

    /// Drops every pending fault.
    pub fn clear_faults(&self) {
        self.app.faults.clear();
    }

    /// How many requests the served operations have received, faulty ones included.
    pub fn requests_received(&self) -> u64 {
        self.app.requests.load(Ordering::Relaxed)
    }

    /// What the connection limits have done so far: connections open,
    /// timed out and evicted, and response bytes held unsent; this
    /// handle's [monitor](EmulatorHandle::monitor)'s snapshot now.
    pub fn server_stats(&self) -> ServerStats {
        self.server.stats()
    }

    /// A handle that reads the server's counters while it serves, as
    /// `ConsumerMonitor` and `ProducerMonitor` read a consumer's and a
    /// producer's; cheap to clone.
    pub fn monitor(&self) -> ServerMonitor {
        ServerMonitor {
            server: Arc::clone(&self.server),
        }
    }

    /// The id of the queue of this name (in [`EMULATOR_ACCOUNT_ID`]): a
    /// queue the API created or a configuration declared without an id
    /// has a fresh one, which the client needs.
    pub fn queue_id(&self, name: &str) -> Option<String> {
        self.app.broker().queue_id(EMULATOR_ACCOUNT_ID, name)
    }

    /// A queue's exact metrics, as the server sees them now.
    pub fn metrics(&self, queue: &str) -> Metrics {
        self.metrics_in(EMULATOR_ACCOUNT_ID, queue)
    }

    /// [`EmulatorHandle::metrics`] of a queue of another account.
    pub fn metrics_in(&self, account: &str, queue: &str) -> Metrics {
        let now = self.app.clock.now_ms();
        let m = self.app.broker().metrics(At { account, queue }, now);
        // `Metrics` is non-exhaustive: filled in, not built by a literal.
        let mut metrics = Metrics::default();
        metrics.backlog_count = m.backlog_count;
        metrics.backlog_bytes = m.backlog_bytes;
        metrics.oldest_message_timestamp_ms = m.oldest_message_timestamp_ms;
        metrics
    }

    /// How many messages a queue has dropped or moved to its dead-letter queue.
    pub fn dead_lettered(&self, queue: &str) -> u64 {
        self.dead_lettered_in(EMULATOR_ACCOUNT_ID, queue)
    }

    /// [`EmulatorHandle::dead_lettered`] for a queue of another account.
    pub fn dead_lettered_in(&self, account: &str, queue: &str) -> u64 {
        let now = self.app.clock.now_ms();
        let at = At { account, queue };
        let mut broker = self.app.broker();
        // Expired leases are processed lazily: bring the queue up to date first.
        broker.metrics(at, now);
        broker.dead_lettered(at)
    }

    /// Enqueues a message as a Worker would, with a body the HTTP API cannot
    /// write (`bytes` or `v8`), to test how consumers decode it. The queue
    /// comes into being as on a push; a queue that cannot (deleted, or
    /// outside the strict queues) gets nothing.
    pub fn push_from_worker(&self, queue: &str, body: WorkerBody) {
        self.push_from_worker_in(EMULATOR_ACCOUNT_ID, queue, body);
    }

    /// [`EmulatorHandle::push_from_worker`] into a queue of another account.
    pub fn push_from_worker_in(&self, account: &str, queue: &str, body: WorkerBody) {
        let (kind, body) = match body {
            WorkerBody::Bytes(bytes) => (BodyKind::Bytes, bytes),
            WorkerBody::V8(bytes) => (BodyKind::V8, bytes),
        };
        let message = NewMessage {
            kind,
            body,
            delay_ms: 0,
        };
        self.app.with_broker(|broker, now| {
            let at = At { account, queue };
            if broker.open_for_messages(at, now).is_ok() {
                broker.push(at, vec![message], now);
            }
        });
    }

    /// Emits an event into [`EMULATOR_ACCOUNT_ID`]: one message, in the
    /// shape Cloudflare documents, into the queue of every enabled event
    /// subscription to its source whose events list it, through the path
    /// of a push (kept in a data directory, counted, within the queue's
    /// backlog limit: every queue's room is checked first, and the emit
    /// delivers everywhere or nowhere). The message's
    /// `metadata.eventSubscriptionId` names the subscription that
    /// delivered it. Like the handle's other methods, it hands its change
    /// to a data directory's store without waiting for the commit (the
    /// route `cfq events emit` uses answers after it).
    ///
    /// ```no_run
    /// # async fn demo(emulator: cf_queues_emulator::EmulatorHandle) -> Result<(), Box<dyn std::error::Error>> {
    /// use cf_queues_emulator::EventToEmit;
    /// let delivered = emulator.emit_event(EventToEmit::new("r2", "bucket.created").field("name", "photos"))?;
    /// println!("into {} queue(s)", delivered.len());
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`EmitError`]: an event the [catalogue](crate::catalogue) does not
    /// have (the error names the source's events), no enabled subscription
    /// that it reaches, or a queue whose backlog is full: nothing was
    /// emitted; a data directory that failed.
    pub fn emit_event(&self, event: EventToEmit) -> Result<Vec<EventDelivered>, EmitError> {
        self.emit_event_in(EMULATOR_ACCOUNT_ID, event)
    }

    /// [`EmulatorHandle::emit_event`] in another account.
    ///
    /// # Errors
    ///
    /// As [`EmulatorHandle::emit_event`].
    pub fn emit_event_in(
        &self,
        account: &str,
        event: EventToEmit,
    ) -> Result<Vec<EventDelivered>, EmitError> {
        if let Some(why) = self.app.store_failed() {
            return Err(EmitError {
                status: 503,
                message: format!(
                    "the emulator's data directory failed ({why}); nothing changes any more"
                ),
            });
        }
        match emit(&self.app, account, &event.request) {
            Ok(emitted) => Ok(emitted
                .delivered
                .into_iter()
                .map(|d| EventDelivered {
                    subscription_id: d.subscription_id,
                    queue_id: d.queue_id,
                })
                .collect()),
            Err(failure) => Err(EmitError {
                status: failure.status(),
                message: failure.text(),
            }),
        }
    }

    /// Stops accepting connections, lets the requests in flight finish
    /// within the shutdown grace period, closes what is left, and waits for
    /// the server. Returns even while a client holds a half-sent request.
    ///
    /// # Errors
    ///
    /// The I/O error the server stopped with, if it stopped with one (its
    /// listener failed), or a panic of its task as an
    /// [`io::ErrorKind::Other`] error.
    ///
    /// # Cancellation
    ///
    /// The future owns the handle: dropped, it drops the handle, which stops
    /// the server as well; only the wait for it ends early.
    pub async fn shutdown(mut self) -> io::Result<()> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let served = self.wait_for_task().await;
        if let Some(store) = &self.app.store {
            // Writes what it was handed, then releases the directory's lock,
            // so that another emulator can open it at once.
            store.close();
        }
        served
    }

    /// Synced commits of the [data directory](crate::Emulator::data_dir)
    /// so far (0 without one): with group commit, one for many changing
    /// requests. Each changing request's answer waited for the commit that
    /// holds its change.
    pub fn data_commits(&self) -> u64 {
        self.app
            .store
            .as_ref()
            .map_or(0, |s| s.counters.commits.load(Ordering::Relaxed))
    }

    /// Changing requests (and other changes, such as expiries seen by a
    /// read) written to the data directory so far, each in one of the
    /// [`data_commits`](EmulatorHandle::data_commits).
    pub fn data_changes(&self) -> u64 {
        self.app
            .store
            .as_ref()
            .map_or(0, |s| s.counters.journals.load(Ordering::Relaxed))
    }

    /// Makes every later commit of the data directory fail, as a full disk
    /// would, to test that no unwritten change is answered as a success.
    #[doc(hidden)]
    pub fn fail_data_writes(&self) {
        if let Some(store) = &self.app.store {
            store.counters.fail.store(true, Ordering::Relaxed);
        }
    }

    /// Holds every commit of the data directory while `hold` is true (a
    /// slow disk), to test that no answer leaves before the commit of the
    /// changes handed in before it.
    #[doc(hidden)]
    pub fn hold_data_writes(&self, hold: bool) {
        if let Some(store) = &self.app.store {
            store.counters.hold.store(hold, Ordering::Relaxed);
        }
    }

    /// Serves until the task ends (after [`EmulatorHandle::shutdown`] from elsewhere, or an error).
    ///
    /// # Errors
    ///
    /// As [`EmulatorHandle::shutdown`]. Dropping the future drops the
    /// handle, which stops the server.
    pub async fn wait(mut self) -> io::Result<()> {
        self.wait_for_task().await
    }

    async fn wait_for_task(&mut self) -> io::Result<()> {
        match self.task.take() {
            Some(task) => task.await.map_err(io::Error::other)?,
            None => Ok(()),
        }
    }
}

impl Drop for EmulatorHandle {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

impl fmt::Debug for EmulatorHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EmulatorHandle")
            .field("base_url", &self.base_url)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .finish_non_exhaustive()
    }
}
