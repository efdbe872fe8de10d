//! A local emulator of the Cloudflare Queues messages API (feature `emulator`).
//!
//! It serves the six endpoints at Cloudflare's paths, with or without the
//! `/client/v4` prefix, with Cloudflare's envelopes, field names, error
//! codes and semantics: delays, leases that expire, permissive acks,
//! retries, `max_retries` with an optional dead-letter queue, peek and purge
//! by ref, and exact metrics. Any client written for Cloudflare, the official
//! SDKs included, can be pointed at its base URL.
//!
//! The queue logic is a pure state machine; this module wraps it in an axum
//! server on tokio. Time can be driven by a [`ManualClock`], and failures can
//! be injected with [`Fault`].
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use cf_queues::{Message, PullOptions};
//! use cf_queues::emulator::Emulator;
//!
//! let emulator = Emulator::new().start().await?;   // 127.0.0.1, a free port, a fresh token
//! let queue = emulator.client()?.queue("orders")?;
//! queue.push(Message::text("hello")).await?;
//! let batch = queue.pull(PullOptions::new()).await?;
//! assert_eq!(batch.messages[0].body().text()?, "hello");
//! emulator.shutdown().await?;
//! # Ok(()) }
//! ```
//!
//! From the command line: `cfq emulator --listen 127.0.0.1:8787` (feature `cli`).

mod clock;
mod faults;
mod http;
mod state;

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::hash::{BuildHasher, Hasher};
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// The operation a [`Fault`] is aimed at: the crate's own [`Operation`].
pub use crate::Operation;
pub use clock::ManualClock;
pub use faults::Fault;

use crate::{Client, ClientBuilder, Credentials, Limits, Metrics};
use clock::Clock;
use faults::Faults;
use http::{AcceptedAuth, App};
use state::{BodyKind, Broker, BrokerConfig, NewMessage};

/// The account id [`EmulatorHandle::client`] uses; the emulator accepts any valid id.
pub const EMULATOR_ACCOUNT_ID: &str = "0123456789abcdef0123456789abcdef";

/// A body only a Worker can write, for [`EmulatorHandle::push_from_worker`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum WorkerBody {
    /// Raw bytes (`CF-Content-Type: bytes`), delivered base64-encoded.
    Bytes(Vec<u8>),
    /// A V8 structured clone (`CF-Content-Type: v8`), which only Workers can decode.
    V8(Vec<u8>),
}

/// Configures and starts an emulator.
///
/// By default it listens on `127.0.0.1:0` (a free port), accepts a freshly
/// generated API token, creates queues on first use, and drops a message
/// after 3 deliveries.
#[derive(Debug, Clone)]
#[must_use]
pub struct Emulator {
    listen: SocketAddr,
    token: Option<String>,
    global_key: Option<(String, String)>,
    open: bool,
    strict_queues: Option<HashSet<String>>,
    max_retries: u32,
    dead_letter_queues: HashMap<String, String>,
    clock: Clock,
    limits: Limits,
    max_body_bytes: usize,
}

impl Default for Emulator {
    fn default() -> Self {
        Emulator::new()
    }
}

impl Emulator {
    /// The default configuration.
    pub fn new() -> Emulator {
        Emulator {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            token: None,
            global_key: None,
            open: false,
            strict_queues: None,
            max_retries: 3,
            dead_letter_queues: HashMap::new(),
            clock: Clock::System,
            limits: Limits::default(),
            max_body_bytes: 2 * 1024 * 1024,
        }
    }

    /// The address to listen on (default `127.0.0.1:0`).
    pub fn listen(mut self, address: SocketAddr) -> Emulator {
        self.listen = address;
        self
    }

    /// Accepts this API token (`Authorization: Bearer`) instead of a generated one.
    pub fn token(mut self, token: impl Into<String>) -> Emulator {
        self.token = Some(token.into());
        self
    }

    /// Also accepts this e-mail and global API key (`X-Auth-Email`, `X-Auth-Key`).
    pub fn global_api_key(mut self, email: impl Into<String>, key: impl Into<String>) -> Emulator {
        self.global_key = Some((email.into(), key.into()));
        self
    }

    /// Accepts every request, with or without credentials.
    pub fn without_auth(mut self) -> Emulator {
        self.open = true;
        self
    }

    /// Only these queues exist; others get 404 with code 10104 (QueueNotFound).
    pub fn strict_queues<I, S>(mut self, queues: I) -> Emulator
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.strict_queues = Some(queues.into_iter().map(Into::into).collect());
        self
    }

    /// Deliveries after which a message is dropped or dead-lettered (default 3).
    pub fn max_retries(mut self, max_retries: u32) -> Emulator {
        self.max_retries = max_retries;
        self
    }

    /// Moves messages that exhaust their retries on `queue` to `dead_letter_queue`.
    pub fn dead_letter_queue(
        mut self,
        queue: impl Into<String>,
        dead_letter_queue: impl Into<String>,
    ) -> Emulator {
        self.dead_letter_queues
            .insert(queue.into(), dead_letter_queue.into());
        self
    }

    /// Drives time by hand instead of the system clock.
    pub fn clock(mut self, clock: ManualClock) -> Emulator {
        self.clock = Clock::Manual(clock);
        self
    }

    /// The limits the emulator enforces (default: Cloudflare's).
    pub fn limits(mut self, limits: Limits) -> Emulator {
        self.limits = limits;
        self
    }

    /// Request bodies larger than this are refused unread (default 2 MiB).
    pub fn max_body_bytes(mut self, max: usize) -> Emulator {
        self.max_body_bytes = max;
        self
    }

    /// Binds the address and starts serving in the background.
    pub async fn start(self) -> io::Result<EmulatorHandle> {
        let listener = tokio::net::TcpListener::bind(self.listen).await?;
        let address = listener.local_addr()?;
        if !address.ip().is_loopback() {
            tracing::warn!(%address, "the emulator listens beyond loopback; it is meant for local development");
        }
        let token = if self.open {
            None
        } else {
            Some(self.token.unwrap_or_else(generate_token))
        };
        let auth = (!self.open).then(|| AcceptedAuth {
            token: token.clone(),
            global_key: self.global_key.clone(),
        });
        let app = Arc::new(App {
            broker: Mutex::new(Broker::new(BrokerConfig {
                max_retries: self.max_retries,
                dead_letter_queues: self.dead_letter_queues,
                seed: generate_seed(),
            })),
            clock: self.clock,
            faults: Faults::default(),
            auth,
            strict_queues: self.strict_queues,
            limits: self.limits,
            max_body_bytes: self.max_body_bytes,
            requests: Default::default(),
        });
        let (stop, stopped) = oneshot::channel::<()>();
        let router = http::router(Arc::clone(&app));
        let task = tokio::spawn(async move {
            axum::serve(listener, router)
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .await
        });
        let host = match address {
            SocketAddr::V4(v4) if v4.ip().is_unspecified() => format!("127.0.0.1:{}", v4.port()),
            SocketAddr::V6(v6) if v6.ip().is_unspecified() => format!("[::1]:{}", v6.port()),
            other => other.to_string(),
        };
        Ok(EmulatorHandle {
            base_url: format!("http://{host}/client/v4"),
            address,
            token,
            global_key: self.global_key,
            app,
            stop: Some(stop),
            task: Some(task),
        })
    }
}

/// A running emulator. Dropping it stops the server.
pub struct EmulatorHandle {
    base_url: String,
    address: SocketAddr,
    token: Option<String>,
    global_key: Option<(String, String)>,
    app: Arc<App>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<io::Result<()>>>,
}

impl EmulatorHandle {
    /// The API root to give a client, such as `http://127.0.0.1:8787/client/v4`.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The address the server listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.address
    }

    /// The API token the emulator accepts, `None` when it accepts anything.
    pub fn token(&self) -> Option<&str> {
        self.token.as_deref()
    }

    /// Credentials the emulator accepts, for [`ClientBuilder::credentials`].
    pub fn credentials(&self) -> crate::Result<Credentials> {
        match (&self.token, &self.global_key) {
            (Some(token), _) => Credentials::api_token(token),
            (None, Some((email, key))) => Credentials::global_api_key(email, key),
            (None, None) => Credentials::api_token("emulator-accepts-any-token"),
        }
    }

    /// A client builder aimed at this emulator, with its credentials and
    /// [`EMULATOR_ACCOUNT_ID`].
    pub fn client_builder(&self) -> crate::Result<ClientBuilder> {
        Ok(Client::builder()
            .base_url(&self.base_url)
            .credentials(self.credentials()?)
            .account_id(EMULATOR_ACCOUNT_ID))
    }

    /// A client aimed at this emulator.
    pub fn client(&self) -> crate::Result<Client> {
        self.client_builder()?.build()
    }

    /// Makes upcoming requests fail or stall; faults apply in the order injected.
    pub fn inject(&self, fault: Fault) {
        self.app.faults.push(fault);
    }

    /// Drops every pending fault.
    pub fn clear_faults(&self) {
        self.app.faults.clear();
    }

    /// How many requests the six operations have received, faulty ones included.
    pub fn requests_received(&self) -> u64 {
        self.app.requests.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// A queue's exact metrics, as the server sees them now.
    pub fn metrics(&self, queue: &str) -> Metrics {
        let now = self.app.clock.now_ms();
        let m = self.app.broker().metrics(queue, now);
        Metrics {
            backlog_count: m.backlog_count,
            backlog_bytes: m.backlog_bytes,
            oldest_message_timestamp_ms: m.oldest_message_timestamp_ms,
        }
    }

    /// How many messages a queue has dropped or moved to its dead-letter queue.
    pub fn dead_lettered(&self, queue: &str) -> u64 {
        let now = self.app.clock.now_ms();
        let mut broker = self.app.broker();
        // Expired leases are processed lazily: bring the queue up to date first.
        broker.metrics(queue, now);
        broker.dead_lettered(queue)
    }

    /// Enqueues a message as a Worker would, with a body the HTTP API cannot
    /// write (`bytes` or `v8`), to test how consumers decode it.
    pub fn push_from_worker(&self, queue: &str, body: WorkerBody) {
        let (kind, body) = match body {
            WorkerBody::Bytes(bytes) => (BodyKind::Bytes, bytes),
            WorkerBody::V8(bytes) => (BodyKind::V8, bytes),
        };
        let now = self.app.clock.now_ms();
        self.app.broker().push(
            queue,
            vec![NewMessage {
                kind,
                body,
                delay_ms: 0,
            }],
            now,
        );
    }

    /// Stops accepting connections, finishes requests in flight, and waits for the server.
    pub async fn shutdown(mut self) -> io::Result<()> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match self.task.take() {
            Some(task) => task.await.map_err(io::Error::other)?,
            None => Ok(()),
        }
    }

    /// Serves until the task ends (after [`EmulatorHandle::shutdown`] from elsewhere, or an error).
    pub async fn wait(mut self) -> io::Result<()> {
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

/// 128 bits from the standard library's per-process random hash keys: no
/// extra dependency, and unguessable enough for a loopback emulator.
fn generate_token() -> String {
    let random = || {
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos()),
        );
        hasher.finish()
    };
    format!("cfq_{:016x}{:016x}", random(), random())
}

fn generate_seed() -> u64 {
    std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish()
}
