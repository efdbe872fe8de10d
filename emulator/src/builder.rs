//! [`Emulator`]: the settings of an emulator, and starting it.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasher, Hasher};
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::oneshot;

use super::clock::EmulatorClock;

/// Cloudflare's per-queue backlog limit (the Queues limits page: 25 GB).
pub(crate) const DEFAULT_MAX_BACKLOG_BYTES: u64 = 25_000_000_000;
use super::config::{ConfigError, ConsumerConfig, EmulatorConfig, QueueConfig};
use super::faults::Faults;
use super::handle::EmulatorHandle;
use super::http::{self, AcceptedAuth, App};
use super::latency::{Latency, LatencyState};
use super::ratelimit::{RateLimitModel, RateLimiter};
use super::server::{self, ConnectionLimits, ServerState};
use super::state::{Broker, BrokerConfig, RandomSource, Springs};
use super::store::{DataDir, Store};
use super::{EMULATOR_ACCOUNT_ID, MAX_CHUNK_BYTES};
use cf_queues::limits::Limits;

/// Configures and starts an emulator.
///
/// By default it listens on `127.0.0.1:0` (a free port), accepts a freshly
/// generated API token, creates queues on first use, drops a message after
/// 3 deliveries, and applies the limits in the [crate docs](crate).
#[derive(Debug, Clone)]
#[must_use]
pub struct Emulator {
    listen: SocketAddr,
    token: Option<String>,
    global_key: Option<(String, String)>,
    open: bool,
    /// Whether the dashboard is served (the `dashboard` feature).
    dashboard: bool,
    strict_queues: Option<HashSet<String>>,
    max_retries: u32,
    dead_letter_queues: HashMap<String, String>,
    clock: EmulatorClock,
    limits: Limits,
    max_body_bytes: usize,
    max_connections: usize,
    header_timeout: Duration,
    body_timeout: Duration,
    idle_timeout: Duration,
    write_timeout: Duration,
    response_buffer_bytes: usize,
    shutdown_grace: Duration,
    latency: Option<Latency>,
    rate_limits: Option<RateLimitModel>,
    config: EmulatorConfig,
    data_dir: Option<std::path::PathBuf>,
    reset_data_dir: bool,
    max_backlog_bytes: u64,
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
            dashboard: true,
            strict_queues: None,
            max_retries: 3,
            dead_letter_queues: HashMap::new(),
            clock: EmulatorClock::System,
            limits: Limits::default(),
            max_body_bytes: 2 * 1024 * 1024,
            max_connections: 512,
            data_dir: None,
            reset_data_dir: false,
            max_backlog_bytes: DEFAULT_MAX_BACKLOG_BYTES,
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(120),
            write_timeout: Duration::from_secs(30),
            response_buffer_bytes: 64 * 1024,
            shutdown_grace: Duration::from_secs(5),
            latency: None,
            rate_limits: None,
            config: EmulatorConfig::default(),
        }
    }

    cf_queues::__setters! {
        /// The address to listen on (default `127.0.0.1:0`).
        listen(address: SocketAddr) => self.listen;
    }

    /// Accepts this API token (`Authorization: Bearer`) instead of a generated one.
    ///
    /// [`Emulator::start`] refuses a token no client could send as
    /// `Authorization: Bearer <token>`: an empty one, or one holding a
    /// space, a control character or anything outside visible ASCII.
    pub fn token(mut self, token: impl Into<String>) -> Emulator {
        self.token = Some(token.into());
        self
    }

    /// Also accepts this e-mail and global API key (`X-Auth-Email`, `X-Auth-Key`).
    pub fn global_api_key(mut self, email: impl Into<String>, key: impl Into<String>) -> Emulator {
        self.global_key = Some((email.into(), key.into()));
        self
    }

    /// Accepts every request, with or without credentials. The dashboard
    /// then needs no secret either (it still refuses foreign `Host`
    /// headers and other sites).
    pub fn without_auth(mut self) -> Emulator {
        self.open = true;
        self
    }

    cf_queues::__setters! {
        /// Serves the dashboard, or not (`true` by default with the
        /// `dashboard` feature; without the feature there is none to serve).
        /// See [`EmulatorHandle::dashboard_url`].
        dashboard(serve: bool) => self.dashboard;
    }

    /// Only these queues exist (and those declared or created by the API);
    /// a messages request to another id gets 404 with code 10104
    /// (QueueNotFound) instead of a new queue.
    ///
    /// A shorthand for declaring each as a queue whose id and name are the
    /// given id, with an HTTP pull consumer (of [`Emulator::max_retries`]
    /// and [`Emulator::dead_letter_queue`]), so that it can be pulled at
    /// once. They are declared in [`EMULATOR_ACCOUNT_ID`], and come into
    /// being in any other account on its first messages request.
    pub fn strict_queues<I, S>(mut self, queues: I) -> Emulator
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.strict_queues = Some(queues.into_iter().map(Into::into).collect());
        self
    }

    cf_queues::__setters! {
        /// Deliveries after which a message is dropped or dead-lettered (default 3):
        /// a message is dropped when its `attempts` reaches this number, as
        /// Cloudflare's pull-consumer page puts it.
        ///
        /// A shorthand: the `max_retries` of the HTTP pull consumer of the
        /// queues that spring into being, of the [strict
        /// queues](Emulator::strict_queues), and of the declared queues whose
        /// pull consumer leaves it out. A consumer created or updated through
        /// the API has its own.
        max_retries(max_retries: u32) => self.max_retries;
    }

    /// Moves messages that exhaust their retries on the queue of id
    /// `queue` to the queue NAMED `dead_letter_queue`, in the same account
    /// (a queue that springs into being is named after its id). A
    /// shorthand: the dead-letter queue of the HTTP pull consumer of that
    /// queue when it springs into being, is a [strict
    /// queue](Emulator::strict_queues), or is declared with a pull consumer
    /// that leaves it out. [`Emulator::start`] refuses
    /// settings that would make messages unreachable: an invalid queue id on
    /// either side, a dead-letter queue missing from the
    /// [strict queues](Emulator::strict_queues), a queue that is its own
    /// dead-letter queue.
    pub fn dead_letter_queue(
        mut self,
        queue: impl Into<String>,
        dead_letter_queue: impl Into<String>,
    ) -> Emulator {
        self.dead_letter_queues
            .insert(queue.into(), dead_letter_queue.into());
        self
    }

    /// Where time comes from (default: the system clock): a
    /// [`ManualClock`](crate::ManualClock) moved by hand, or a [`TokioClock`](crate::TokioClock) that follows
    /// tokio's clock, so that a test on paused time drives the client's
    /// timers and the emulator's expiries alike.
    pub fn clock(mut self, clock: impl Into<EmulatorClock>) -> Emulator {
        self.clock = clock.into();
        self
    }

    cf_queues::__setters! {
        /// The limits the emulator enforces (default: Cloudflare's).
        limits(limits: Limits) => self.limits;

        /// Request bodies larger than this are refused (default 2 MiB, eight
        /// times the largest legal batch, so no legal request is refused).
        max_body_bytes(max: usize) => self.max_body_bytes;
    }

    /// The most connections open at once (default 512, at least 1).
    ///
    /// At the cap, a new connection makes the connection that has waited
    /// longest without a request in progress close, so slow or silent
    /// clients cannot lock others out; when every connection is busy, new
    /// ones wait in the listen backlog. 512 leaves room under the common
    /// limit of 1,024 open files, so the server never runs out of them.
    pub fn max_connections(mut self, max: usize) -> Emulator {
        self.max_connections = max.max(1);
        self
    }

    cf_queues::__setters! {
        /// How long a client may take to send a request head (default 10 s),
        /// counted from the connect, or from the head's first byte on a
        /// keep-alive connection. Local clients send a head at once; 10 s
        /// leaves room for a loaded CI machine and closes trickling connections.
        header_timeout(timeout: Duration) => self.header_timeout;

        /// How long a client may take to send a request body (default 30 s):
        /// `max_body_bytes` arrive in that time even at well under 1 Mbit/s.
        body_timeout(timeout: Duration) => self.body_timeout;

        /// How long a keep-alive connection may wait for its next request
        /// (default 120 s). Longer than the 90 s after which reqwest's pool
        /// retires idle connections, so the client, not the server, closes them
        /// and never sends a request on a connection being closed.
        idle_timeout(timeout: Duration) => self.idle_timeout;

        /// How long a response may wait for the client to read it (default
        /// 30 s without progress), after which the connection is closed. A
        /// client that never reads holds a connection for that long, and no
        /// more than the response buffer.
        write_timeout(timeout: Duration) => self.write_timeout;

        /// Response bytes a connection may hold before the client reads them
        /// (default 64 KiB; at least 8 KiB); pull and peek answers are
        /// serialized only as this buffer drains, in pieces of a quarter of it
        /// (at most 16 KiB). It also bounds a request head: a client's heads
        /// are a few hundred bytes, and a larger one gets 431.
        response_buffer_bytes(bytes: usize) => self.response_buffer_bytes;

        /// How long [`EmulatorHandle::shutdown`] lets open requests finish
        /// before closing their connections (default 5 s): stalled faults and
        /// half-sent requests do not hold a shutdown longer than that.
        shutdown_grace(grace: Duration) => self.shutdown_grace;

        /// Adds a network round trip to every request (default: none, the
        /// loopback's), so that a client is tested and measured as it runs
        /// against Cloudflare, tens to hundreds of milliseconds away; see
        /// [`Latency`] for how the wait is split, and
        /// [`EmulatorHandle::set_latency`] to change it while serving.
        latency(latency: Latency) => self.latency = Some;

        /// Enforces Cloudflare's rate limits as [`RateLimitModel`] models them
        /// (default: no limits); see [Rate limits](crate::semantics#rate-limits), and
        /// [`EmulatorHandle::set_rate_limits`] to switch them while serving.
        rate_limits(model: RateLimitModel) => self.rate_limits = Some;
    }

    /// Declares the account's queues, their settings and consumers, and
    /// sets the round trip and the rate limits the configuration gives
    /// (see [`EmulatorConfig`] for the file format). Queues declared twice
    /// (by two configurations, or with a [strict
    /// queue](Emulator::strict_queues)) make [`Emulator::start`] fail.
    pub fn config(mut self, config: EmulatorConfig) -> Emulator {
        if let Some(latency) = config.latency {
            self.latency = Some(latency.latency());
        }
        if let Some(limits) = config.rate_limits {
            self.rate_limits = Some(limits.model());
        }
        self.config.strict |= config.strict;
        self.config.queues.extend(config.queues);
        self
    }

    /// [`Emulator::config`] from a TOML file (`cfq emulator --config FILE`).
    ///
    /// # Errors
    ///
    /// The file cannot be read or is not a valid configuration: the error
    /// names the file, and the line and field where it can.
    pub fn config_file(self, path: impl AsRef<std::path::Path>) -> Result<Emulator, ConfigError> {
        Ok(self.config(EmulatorConfig::from_file(path)?))
    }

    /// Keeps the account's queues and messages in `dir`, loaded at start
    /// (`cfq emulator --data-dir DIR`); see
    /// [Durability](crate::semantics#durability). Without it the emulator keeps
    /// everything in memory. The directory is created if needed, locked
    /// while the emulator runs, and must be of this version's
    /// [`DATA_FORMAT_VERSION`](crate::DATA_FORMAT_VERSION). A
    /// configuration ([`Emulator::config`]) and the [strict
    /// queues](Emulator::strict_queues) only seed a new directory; over one
    /// that holds an account their queues are neither applied nor checked
    /// (the directory is the truth), and [`EmulatorHandle::start_notes`]
    /// says so. See [Durability](crate::semantics#durability).
    pub fn data_dir(mut self, dir: impl Into<std::path::PathBuf>) -> Emulator {
        self.data_dir = Some(dir.into());
        self
    }

    cf_queues::__setters! {
        /// Empties the [data directory](Emulator::data_dir) at start, before
        /// anything is loaded (`cfq emulator --data-dir DIR --reset`); no
        /// effect without one. [`reset_data_dir`](crate::reset_data_dir) does
        /// the same without starting an emulator.
        reset_data_dir(reset: bool) => self.reset_data_dir;

        /// The most bytes of message bodies one queue may hold (default 25 GB,
        /// Cloudflare's per-queue backlog limit); a push beyond it is refused
        /// with 429 and code 10251 QueueStorageLimitExceeded, as Cloudflare
        /// refuses it.
        max_backlog_bytes(bytes: u64) => self.max_backlog_bytes;
    }

    /// Binds the address and starts serving in the background.
    ///
    /// # Errors
    ///
    /// The address cannot be bound, the operating system's random number
    /// generator is not available, the [token](Emulator::token) cannot be
    /// sent in a header (`ErrorKind::InvalidInput`, saying why without
    /// showing it), or the dead-letter settings would make
    /// messages unreachable or a queue is declared twice
    /// (`ErrorKind::InvalidInput`, naming the setting).
    pub async fn start(self) -> io::Result<EmulatorHandle> {
        if !self.open
            && let Some(token) = &self.token
        {
            check_token(token)?;
        }
        self.check_dead_letters()?;
        self.config
            .check()
            .map_err(|(i, why)| invalid(format!("queues[{i}]: {why}")))?;
        let (broker, store, notes) = self.open_broker()?;
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
            broker: Mutex::new(broker),
            clock: self.clock,
            faults: Faults::default(),
            auth,
            limits: self.limits,
            max_body_bytes: self.max_body_bytes,
            body_timeout: self.body_timeout,
            chunk_bytes: (self.response_buffer_bytes / 4).clamp(1024, MAX_CHUNK_BYTES),
            requests: Default::default(),
            rate_limits: Mutex::new(self.rate_limits.map(RateLimiter::new)),
            store,
            max_backlog_bytes: self.max_backlog_bytes,
            #[cfg(feature = "dashboard")]
            request_log: self.dashboard.then(Default::default),
        });
        let server = Arc::new(ServerState::new(
            ConnectionLimits {
                max_connections: self.max_connections,
                header_timeout: self.header_timeout,
                idle_timeout: self.idle_timeout,
                write_timeout: self.write_timeout,
                response_buffer_bytes: self.response_buffer_bytes,
                shutdown_grace: self.shutdown_grace,
            },
            LatencyState::new(self.latency),
        ));
        let (stop, stopped) = oneshot::channel::<()>();
        let router = http::router(Arc::clone(&app));
        #[cfg(feature = "dashboard")]
        let (router, dashboard_path) = if self.dashboard {
            let (pages, login) =
                crate::dashboard::router(Arc::clone(&app), Arc::clone(&server), self.open);
            (router.merge(pages), Some(login))
        } else {
            (router, None)
        };
        #[cfg(not(feature = "dashboard"))]
        let dashboard_path: Option<String> = None;
        let task = tokio::spawn(server::serve(
            listener,
            router,
            Arc::clone(&server),
            stopped,
        ));
        let host = match address {
            SocketAddr::V4(v4) if v4.ip().is_unspecified() => format!("127.0.0.1:{}", v4.port()),
            SocketAddr::V6(v6) if v6.ip().is_unspecified() => format!("[::1]:{}", v6.port()),
            other => other.to_string(),
        };
        Ok(EmulatorHandle {
            dashboard_url: dashboard_path.map(|path| format!("http://{host}{path}")),
            base_url: format!("http://{host}/client/v4"),
            address,
            token,
            global_key: self.global_key,
            app,
            server,
            stop: Some(stop),
            task: Some(task),
            notes,
        })
    }

    /// The broker, in memory or loaded from the data directory, with the
    /// store thread that keeps the directory.
    fn open_broker(&self) -> io::Result<(Broker, Option<Store>, Vec<String>)> {
        let seeded = self.broker(os_random()?)?;
        let Some(dir) = &self.data_dir else {
            return Ok((seeded, None, Vec::new()));
        };
        if !matches!(self.clock, EmulatorClock::System) {
            // Stored timestamps are wall-clock times; a clock moved by hand
            // would make them meaningless across a restart.
            return Err(invalid(format!(
                "data directory {}: an emulator with a data directory runs on the system clock",
                dir.display()
            )));
        }
        let data = DataDir::open(dir, self.reset_data_dir)?;
        let mut notes = Vec::new();
        let mut broker = if data.is_empty()? {
            let mut broker = seeded;
            broker.track_changes();
            let journal = broker.take_journal();
            data.write_now(&journal, broker.message_key())?;
            broker
        } else {
            let mut loaded = Broker::new(self.broker_config(), os_random()?);
            data.load(&mut loaded, self.clock.now_ms())?;
            // The directory is the truth: the queues may have been changed
            // through the API since they were declared, and checking them
            // against the declarations would refuse the same start command
            // next time, with only data-losing ways out.
            let declared =
                self.config.queues.len() + self.strict_queues.as_ref().map_or(0, HashSet::len);
            if declared > 0 {
                let note = format!(
                    "data directory {} already holds an account: the {declared} queue(s) \
                     declared by the configuration or --strict were not applied (a \
                     configuration seeds only a new directory; the directory's queues are \
                     kept as they are; --reset starts afresh from the configuration)",
                    dir.display()
                );
                tracing::info!("{note}");
                notes.push(note);
            }
            loaded
        };
        let key = broker.message_key();
        // Anything the load changed (nothing, normally) goes to the store first.
        let pending = broker.take_journal();
        let store = data.spawn(key)?;
        store.submit(pending);
        Ok((broker, Some(store), notes))
    }

    fn broker_config(&self) -> BrokerConfig {
        let springs = match (self.strict_queues.clone(), self.config.strict) {
            (Some(ids), _) => Springs::Only(ids),
            (None, true) => Springs::Only(HashSet::new()),
            (None, false) => Springs::Any,
        };
        BrokerConfig {
            max_retries: self.max_retries,
            dead_letter_queues: self.dead_letter_queues.clone(),
            springs,
        }
    }

    /// The broker, with the strict queues and the configuration's queues
    /// declared in [`EMULATOR_ACCOUNT_ID`].
    fn broker(&self, random: RandomSource) -> io::Result<Broker> {
        let strict = self.strict_queues.clone();
        let mut broker = Broker::new(self.broker_config(), random);
        let now = self.clock.now_ms();
        let mut strict: Vec<String> = strict.into_iter().flatten().collect();
        strict.sort();
        let shorthand = strict.into_iter().map(|id| QueueConfig {
            queue_name: id.clone(),
            queue_id: Some(id),
            consumer: Some(ConsumerConfig::http_pull()),
            ..QueueConfig::default()
        });
        let declared = EmulatorConfig {
            queues: shorthand
                .chain(self.config.queues.iter().cloned())
                .collect(),
            ..EmulatorConfig::default()
        };
        let declarations = declared.declarations(self.max_retries, |id| {
            self.dead_letter_queues.get(id).cloned()
        });
        for queue in declarations {
            let name = queue.name.clone();
            broker
                .declare(EMULATOR_ACCOUNT_ID, queue, now)
                .map_err(|why| invalid(format!("queue {name:?}: {why}")))?;
        }
        broker.finish_declarations(EMULATOR_ACCOUNT_ID, now);
        Ok(broker)
    }

    /// Refuses dead-letter settings under which messages could never be
    /// read again, before anything is served.
    fn check_dead_letters(&self) -> io::Result<()> {
        let mut settings: Vec<_> = self.dead_letter_queues.iter().collect();
        settings.sort();
        for (queue, dlq) in settings {
            let refuse = |why: String| {
                Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("dead-letter setting {queue:?} -> {dlq:?}: {why}"),
                ))
            };
            for (side, id) in [("queue", queue), ("dead-letter queue", dlq)] {
                if let Err(error) = self.limits.check_id("queue_id", id) {
                    return refuse(format!("the {side} id is not valid ({error})"));
                }
            }
            if queue == dlq {
                return refuse(
                    "a queue cannot be its own dead-letter queue: its exhausted messages \
                     would come back forever"
                        .into(),
                );
            }
            let declared = self.config.queues.iter().any(|q| q.queue_name == *dlq);
            if let Some(known) = &self.strict_queues
                && !known.contains(dlq)
                && !declared
            {
                return refuse(format!(
                    "{dlq:?} is not among the strict queues, so its messages could \
                     never be pulled"
                ));
            }
        }
        Ok(())
    }
}

/// Refuses a token that no client can send as `Authorization: Bearer
/// <token>`, which would start an emulator no one can call. The error says
/// what is wrong and where, never the token itself: it is a secret.
fn check_token(token: &str) -> io::Result<()> {
    let problem = if token.is_empty() {
        Some("it is empty".to_owned())
    } else {
        token.chars().enumerate().find_map(|(at, c)| {
            let what = match c {
                ' ' => "a space",
                c if c.is_whitespace() => "white space",
                c if c.is_control() => "a control character",
                c if !c.is_ascii() => "a character outside ASCII",
                _ => return None,
            };
            Some(format!("character {} is {what}", at + 1))
        })
    };
    match problem {
        None => Ok(()),
        Some(problem) => Err(invalid(format!(
            "the API token cannot be sent as `Authorization: Bearer <token>` ({problem}); \
             a token is visible ASCII (letters, digits, punctuation), without spaces"
        ))),
    }
}

fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, message)
}

/// 128 bits from the operating system for the generated API token.
fn generate_token() -> String {
    format!("cfq_{}", crate::random::random_hex())
}

/// The operating system's CSPRNG, checked once here so that the broker's
/// later draws do not fail. Should it fail later anyway, SipHash with the
/// standard library's random keys over a counter fills in: still keyed by
/// a secret, so tokens stay unguessable.
fn os_random() -> io::Result<RandomSource> {
    let mut probe = [0u8; 16];
    getrandom::fill(&mut probe).map_err(io::Error::other)?;
    let fallback = std::collections::hash_map::RandomState::new();
    let mut counter = 0u64;
    Ok(RandomSource::new(move |buf: &mut [u8]| {
        if getrandom::fill(buf).is_ok() {
            return;
        }
        for chunk in buf.chunks_mut(8) {
            let mut hasher = fallback.build_hasher();
            hasher.write_u64(counter);
            counter = counter.wrapping_add(1);
            chunk.copy_from_slice(&hasher.finish().to_le_bytes()[..chunk.len()]);
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(emulator: &Emulator) -> Option<String> {
        emulator.check_dead_letters().err().map(|e| e.to_string())
    }

    #[test]
    fn dead_letter_settings_that_strand_messages_are_refused() {
        let ok = Emulator::new().dead_letter_queue("work", "dlq");
        assert_eq!(refused(&ok), None);
        let strict = ok.clone().strict_queues(["work", "dlq"]);
        assert_eq!(refused(&strict), None);
        for (emulator, says) in [
            (Emulator::new().dead_letter_queue("", ""), "not valid"),
            (
                Emulator::new().dead_letter_queue("work", ""),
                "dead-letter queue id",
            ),
            (
                Emulator::new().dead_letter_queue("wo-rk", "dlq"),
                "the queue id",
            ),
            (
                Emulator::new().dead_letter_queue("work", &*"d".repeat(33)),
                "not valid",
            ),
            (Emulator::new().dead_letter_queue("work", "work"), "its own"),
            (ok.strict_queues(["work"]), "strict"),
        ] {
            let message = refused(&emulator).unwrap_or_default();
            assert!(message.contains(says), "{message:?} should say {says:?}");
        }
    }

    #[test]
    fn tokens_no_client_can_send_are_refused_without_being_shown() {
        assert!(check_token("cfq_0123-abc.XYZ~!").is_ok());
        for (token, says) in [
            ("", "it is empty"),
            ("a b", "character 2 is a space"),
            ("secret\t", "character 7 is white space"),
            ("sec\u{7f}ret", "character 4 is a control character"),
            ("sécret", "character 2 is a character outside ASCII"),
        ] {
            let error = check_token(token)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(error.contains(says), "{error:?} should say {says:?}");
            if token.len() > 2 {
                assert!(!error.contains(token), "{error:?} shows the token");
            }
        }
    }

    #[tokio::test]
    async fn start_refuses_a_token_with_a_space() {
        let refused = Emulator::new().token("a b").start().await;
        let error = refused.err().map(|e| (e.kind(), e.to_string()));
        let (kind, text) = error.unwrap_or((io::ErrorKind::Other, String::new()));
        assert_eq!(kind, io::ErrorKind::InvalidInput);
        assert!(
            text.contains("is a space") && !text.contains("a b"),
            "{text}"
        );
        let open = Emulator::new().token("a b").without_auth().start().await;
        assert!(open.is_ok(), "no token is checked when none is asked for");
    }

    #[test]
    fn generated_tokens_differ() {
        let (a, b) = (generate_token(), generate_token());
        assert_ne!(a, b);
        assert_eq!(a.len(), 4 + 32);
    }
}
