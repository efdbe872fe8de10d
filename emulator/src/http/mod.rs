//! The HTTP shell around the [`Broker`](super::state::Broker): routing, the
//! steps every operation shares ([`Incoming::read`]), one handler per operation
//! ([`handlers`]), and Cloudflare's response envelopes ([`wire`]).

mod auth;
mod body;
mod error_answer;
mod event_subscriptions;
mod json;
mod management;
mod messages;
mod parse;

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{FromRequestParts, Path, Query, Request, State};
use axum::http::header::{ACCEPT, CACHE_CONTROL, CONNECTION, CONTENT_TYPE};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodFilter, MethodRouter};
use serde_json::{Map, Value};

use super::Operation;
use super::clock::EmulatorClock;
use super::faults::Faults;
use super::ratelimit::{CredentialKey, QueueBucket, RateLimiter};
use super::server::Conn;
use super::state::{At, Broker};
use super::store::Store;
pub(crate) use auth::AcceptedAuth;
pub(crate) use event_subscriptions::emit::{EmitRequest, emit};
#[cfg(feature = "dashboard")]
pub(crate) use management::wire::{consumer_spec, settings_change};
#[cfg(feature = "dashboard")]
pub(crate) use messages::handlers::push_by_hand;

use body::Read;
use cf_queues::codes;
use cf_queues::limits::Limits;
pub(crate) use error_answer::ErrorAnswer;
use json::json_response;
pub(crate) use management::wire::bounds;
use messages::stream::{Listing, Streamed};
pub(crate) use parse::Object;

/// Everything the handlers share.
pub(crate) struct App {
    pub broker: Mutex<Broker>,
    pub clock: EmulatorClock,
    pub faults: Faults,
    pub auth: Option<AcceptedAuth>,
    pub limits: Limits,
    pub max_body_bytes: usize,
    pub body_timeout: Duration,
    /// The size of the pieces a pull or peek answer is written in.
    pub chunk_bytes: usize,
    /// Requests received on the served operations, faulty ones included.
    pub requests: AtomicU64,
    /// The rate limits in force, if any; switchable while serving. Locked
    /// after the broker where both are held, never before.
    pub rate_limits: Mutex<Option<RateLimiter>>,
    /// The data directory's store, if the emulator has one.
    pub store: Option<Store>,
    /// The most body bytes a queue may hold.
    pub max_backlog_bytes: u64,
    /// The last requests answered, for the dashboard; kept only while
    /// one is served, so that an emulator without it does no such work.
    #[cfg(feature = "dashboard")]
    pub request_log: Option<crate::request_log::RequestLog>,
}

/// The locked broker. Dropping it hands what changed to the store (with a
/// data directory), while the lock is still held, so that journals are
/// written in the order of their changes.
pub(crate) struct BrokerGuard<'a> {
    broker: MutexGuard<'a, Broker>,
    store: Option<&'a Store>,
}

impl std::ops::Deref for BrokerGuard<'_> {
    type Target = Broker;
    fn deref(&self) -> &Broker {
        &self.broker
    }
}

impl std::ops::DerefMut for BrokerGuard<'_> {
    fn deref_mut(&mut self) -> &mut Broker {
        &mut self.broker
    }
}

impl Drop for BrokerGuard<'_> {
    fn drop(&mut self) {
        if let Some(store) = self.store {
            store.submit(self.broker.take_journal());
        }
    }
}

impl App {
    /// Runs `operation` on the locked broker with the current time, read
    /// under the lock so that concurrent requests apply in time order.
    pub(crate) fn with_broker<T>(&self, operation: impl FnOnce(&mut Broker, u64) -> T) -> T {
        let mut broker = self.broker();
        let now = self.clock.now_ms();
        operation(&mut broker, now)
    }

    /// [`App::with_broker`] for an operation on the call's queue, which
    /// must still be there under the lock the operation runs under: the
    /// check before the body was read ran under another, and a deletion
    /// may have been answered between the two (a push must not land in a
    /// deleted queue, where no call could ever reach it).
    fn with_queue<T>(
        &self,
        call: &Incoming,
        operation: impl FnOnce(&mut Broker, u64) -> Result<T, ErrorAnswer>,
    ) -> Result<T, ErrorAnswer> {
        self.with_broker(|broker, now| {
            admit(broker, call.op, call.at(), now)?;
            operation(broker, now)
        })
    }

    pub(crate) fn broker(&self) -> BrokerGuard<'_> {
        // The broker never panics mid-update; a poisoned lock still holds a consistent state.
        BrokerGuard {
            broker: self.broker.lock().unwrap_or_else(PoisonError::into_inner),
            store: self.store.as_ref(),
        }
    }

    pub(crate) fn rate_limiter(&self) -> MutexGuard<'_, Option<RateLimiter>> {
        // Every update of the limiter's maps completes or does nothing.
        self.rate_limits
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The key of the credential a request presents, when limits are on.
    fn credential_key(&self, headers: &HeaderMap) -> Option<CredentialKey> {
        let limiter = self.rate_limiter();
        let limiter = limiter.as_ref()?;
        let parts = auth::presented(headers)?;
        Some(limiter.credential_key(&parts))
    }

    /// Takes `n` tokens from a bucket of the call's queue at `now_ms`, or
    /// refuses the whole call; always passes when limits are off.
    fn limit_queue(
        &self,
        call: &Incoming,
        which: QueueBucket,
        n: usize,
        now_ms: u64,
    ) -> Result<(), ErrorAnswer> {
        match self.rate_limiter().as_mut() {
            Some(limiter) => limiter
                .take_from_queue(&call.account, &call.queue, which, n, now_ms)
                .map_err(ErrorAnswer::RateLimited),
            None => Ok(()),
        }
    }

    /// Adds `Ratelimit` and `Ratelimit-Policy` for the credential's window.
    fn add_rate_headers(&self, response: &mut Response, credential: Option<CredentialKey>) {
        let Some(credential) = credential else {
            return;
        };
        let now = self.clock.now_ms();
        let mut limiter = self.rate_limiter();
        let Some(limiter) = limiter.as_mut() else {
            return;
        };
        let left = limiter.remaining(credential, now);
        let (quota, window) = limiter.policy();
        let headers = response.headers_mut();
        let remaining = format!("\"default\";r={};t={}", left.remaining, left.reset_seconds);
        let policy = format!("\"default\";q={quota};w={window}");
        for (name, value) in [("ratelimit", remaining), ("ratelimit-policy", policy)] {
            if let Ok(value) = HeaderValue::from_str(&value) {
                headers.insert(name, value);
            }
        }
    }

    /// Why the store failed, if it did: from then on nothing changes,
    /// through the API or the dashboard (memory may hold changes the
    /// directory does not).
    pub(crate) fn store_failed(&self) -> Option<Arc<str>> {
        self.store.as_ref().and_then(Store::failed)
    }

    /// Waits until every change handed to the store so far is committed:
    /// what an answer that shows a change waits for, the dashboard's
    /// included.
    pub(crate) async fn commit(&self) -> Result<(), Arc<str>> {
        match self.store.as_ref() {
            Some(store) => store.settle().await,
            None => Ok(()),
        }
    }

    /// `answer` once every change handed to the store before it is
    /// committed: the one place every answer passes, refusals included,
    /// so that nothing an answer shows (a 404 shows a deletion) can be
    /// undone by a crash. A failed commit turns it into 503.
    async fn settled(&self, answer: Result<Answer, Refusal>) -> Result<Answer, Refusal> {
        match self.commit().await {
            Ok(()) => answer,
            Err(why) => Err(Refusal {
                failure: ErrorAnswer::storage(Some(why)),
                // A body left unread still closes the connection.
                unread: answer.as_ref().err().is_some_and(|r| r.unread),
            }),
        }
    }

    /// Reads a body that will not be used to its end, so that the
    /// connection can carry the next request; `false` if it could not be.
    async fn drain(&self, body: Body) -> bool {
        matches!(
            body::read(body, self.max_body_bytes, self.body_timeout, false).await,
            Read::Complete(_)
        )
    }
}

/// What a handler answers with.
enum Answer {
    /// A whole envelope.
    Json(Vec<u8>),
    /// An envelope listing messages, written as the client reads it.
    Listing(Listing),
    /// A whole `text/event-stream` body.
    EventStream(Vec<u8>),
}

/// A refused request.
struct Refusal {
    failure: ErrorAnswer,
    /// The body was not read to its end, so the connection cannot carry
    /// another request: the answer says `Connection: close`.
    unread: bool,
}

impl From<ErrorAnswer> for Refusal {
    fn from(failure: ErrorAnswer) -> Refusal {
        Refusal {
            failure,
            unread: false,
        }
    }
}

/// What an operation's handler runs on: a request that passed every shared step.
type Handler = fn(&App, Incoming) -> Result<Answer, ErrorAnswer>;

pub(crate) fn router(app: Arc<App>) -> Router {
    let routes: [(Operation, Handler); 28] = [
        (Operation::Push, messages::handlers::push),
        (Operation::Batch, messages::handlers::batch),
        (Operation::Pull, messages::handlers::pull),
        (Operation::Ack, messages::handlers::ack),
        (Operation::Peek, messages::handlers::peek),
        (Operation::Purge, messages::handlers::purge),
        (Operation::Extend, messages::handlers::extend),
        (Operation::Preview, messages::handlers::preview),
        (
            Operation::DeletePreviewed,
            messages::handlers::delete_previewed,
        ),
        (Operation::Metrics, messages::handlers::metrics),
        (Operation::PurgeQueue, messages::handlers::purge_queue),
        (Operation::PurgeStatus, messages::handlers::purge_status),
        (Operation::ListQueues, management::handlers::list_queues),
        (Operation::CreateQueue, management::handlers::create_queue),
        (Operation::GetQueue, management::handlers::get_queue),
        (Operation::UpdateQueue, management::handlers::update_queue),
        (Operation::EditQueue, management::handlers::edit_queue),
        (Operation::DeleteQueue, management::handlers::delete_queue),
        (
            Operation::ListConsumers,
            management::handlers::list_consumers,
        ),
        (
            Operation::CreateConsumer,
            management::handlers::create_consumer,
        ),
        (Operation::GetConsumer, management::handlers::get_consumer),
        (
            Operation::UpdateConsumer,
            management::handlers::update_consumer,
        ),
        (
            Operation::DeleteConsumer,
            management::handlers::delete_consumer,
        ),
        (
            Operation::ListEventSubscriptions,
            event_subscriptions::handlers::list_event_subscriptions,
        ),
        (
            Operation::CreateEventSubscription,
            event_subscriptions::handlers::create_event_subscription,
        ),
        (
            Operation::GetEventSubscription,
            event_subscriptions::handlers::get_event_subscription,
        ),
        (
            Operation::UpdateEventSubscription,
            event_subscriptions::handlers::update_event_subscription,
        ),
        (
            Operation::DeleteEventSubscription,
            event_subscriptions::handlers::delete_event_subscription,
        ),
    ];
    // One method router per path: `/purge`, a queue's path and its
    // consumers' serve several operations.
    let mut paths: BTreeMap<&str, MethodRouter<Arc<App>>> = BTreeMap::new();
    for (op, handler) in routes {
        let methods = paths.remove(op.path()).unwrap_or_default();
        paths.insert(op.path(), operation(methods, op, handler));
    }
    let operations = paths
        .into_iter()
        .fold(Router::new(), |router, (path, methods)| {
            let methods =
                methods.fallback(|State(app): State<Arc<App>>, request: Request| async move {
                    refuse(&app, ErrorAnswer::method_not_allowed(), request.into_body()).await
                });
            router.route(path, methods)
        });
    let operations = operations.route(
        event_subscriptions::emit::ROUTE,
        axum::routing::post(event_subscriptions::emit::route),
    );
    Router::new()
        .merge(operations.clone())
        .nest("/client/v4", operations)
        .fallback(|State(app): State<Arc<App>>, request: Request| async move {
            refuse(&app, ErrorAnswer::no_route(), request.into_body()).await
        })
        .with_state(app)
}

/// Adds `op` to the method router of its path.
fn operation(
    methods: MethodRouter<Arc<App>>,
    op: Operation,
    handler: Handler,
) -> MethodRouter<Arc<App>> {
    let method = match op.method() {
        "GET" => MethodFilter::GET,
        "PUT" => MethodFilter::PUT,
        "PATCH" => MethodFilter::PATCH,
        "DELETE" => MethodFilter::DELETE,
        _ => MethodFilter::POST,
    };
    methods.on(
        method,
        move |State(app): State<Arc<App>>, request: Request| async move {
            #[cfg(feature = "dashboard")]
            let seen = Seen::new(&app, &request);
            let credential = app.credential_key(request.headers());
            let failed = app.store_failed();
            let answer = match Incoming::read(&app, op, request, credential).await {
                // A store that failed once answers nothing more: memory may
                // hold changes the directory does not.
                Ok(_) if failed.is_some() => Err(Refusal::from(ErrorAnswer::storage(failed))),
                Ok(call) => {
                    let conn = call.conn.clone();
                    let answer = handler(&app, call).map_err(Refusal::from);
                    if let (Some(conn), Ok(Answer::Json(body) | Answer::EventStream(body))) =
                        (&conn, &answer)
                    {
                        // Built whole, so held whole until the client reads
                        // it: counted like the pieces of a listing.
                        conn.produced(body.len());
                    }
                    answer
                }
                Err(refused) => Err(refused),
            };
            let answer = app.settled(answer).await;
            #[cfg(feature = "dashboard")]
            let code = answer.as_ref().err().and_then(|r| r.failure.code());
            let mut response = respond(answer);
            app.add_rate_headers(&mut response, credential);
            #[cfg(feature = "dashboard")]
            if let Some(seen) = seen {
                seen.answered(&app, op, response.status(), code);
            }
            response
        },
    )
}

/// A request as it came, until it is answered and logged for the dashboard.
#[cfg(feature = "dashboard")]
struct Seen {
    started: std::time::Instant,
    method: String,
    path: String,
    credential: Option<String>,
}

#[cfg(feature = "dashboard")]
impl Seen {
    /// `None` when no dashboard reads the log.
    fn new(app: &App, request: &Request) -> Option<Seen> {
        let log = app.request_log.as_ref()?;
        Some(Seen {
            started: std::time::Instant::now(),
            method: request.method().as_str().to_owned(),
            path: request.uri().path().to_owned(),
            credential: log.fingerprint(request.headers()),
        })
    }

    fn answered(self, app: &App, op: Operation, status: StatusCode, code: Option<u32>) {
        let Some(log) = app.request_log.as_ref() else {
            return;
        };
        let queue = crate::request_log::queue_of(&self.path).to_owned();
        log.record(crate::request_log::Entry {
            at_ms: app.clock.now_ms(),
            method: self.method,
            operation: op.operation_id(),
            queue,
            status: status.as_u16(),
            code,
            took_us: u64::try_from(self.started.elapsed().as_micros()).unwrap_or(u64::MAX),
            credential: self.credential,
            path: self.path,
        });
    }
}

async fn refuse(app: &App, failure: ErrorAnswer, body: Body) -> Response {
    let unread = !app.drain(body).await;
    respond(app.settled(Err(Refusal { failure, unread })).await)
}

fn respond(answer: Result<Answer, Refusal>) -> Response {
    match answer {
        Ok(Answer::Json(body)) => json_response(StatusCode::OK, body),
        Ok(Answer::EventStream(body)) => (
            [
                (CONTENT_TYPE, HeaderValue::from_static("text/event-stream")),
                (CACHE_CONTROL, HeaderValue::from_static("no-cache")),
            ],
            body,
        )
            .into_response(),
        Ok(Answer::Listing(mut listing)) => {
            let first = listing.next_chunk();
            if listing.is_done() {
                // Small enough for one piece: sent with its length.
                return json_response(StatusCode::OK, first.unwrap_or_default());
            }
            (
                [(CONTENT_TYPE, HeaderValue::from_static("application/json"))],
                Body::new(Streamed::new(first, listing)),
            )
                .into_response()
        }
        Err(Refusal { failure, unread }) => {
            let mut response = failure.into_response();
            if unread {
                response
                    .headers_mut()
                    .insert(CONNECTION, HeaderValue::from_static("close"));
            }
            response
        }
    }
}

/// A request's whole body, or its refusal: too large (413 with
/// `too_large`, the code of the operation's size), too slow (408) or cut
/// short (400), each with the body left unread.
async fn read_body(app: &App, body: Body, too_large: u32) -> Result<bytes::Bytes, Refusal> {
    let failure = match body::read(body, app.max_body_bytes, app.body_timeout, true).await {
        Read::Complete(bytes) => return Ok(bytes),
        Read::TooLarge => {
            let message = format!("request body exceeds {} bytes", app.max_body_bytes);
            ErrorAnswer::new(StatusCode::PAYLOAD_TOO_LARGE, too_large, message)
        }
        Read::TimedOut => ErrorAnswer::new(
            StatusCode::REQUEST_TIMEOUT,
            codes::CLIENT_DISCONNECTED,
            format!(
                "ClientDisconnected: the request body did not arrive within {:?}",
                app.body_timeout
            ),
        ),
        Read::Broken => ErrorAnswer::bad_request(
            codes::CLIENT_DISCONNECTED,
            "ClientDisconnected: the request body was cut short",
        ),
    };
    Err(Refusal {
        failure,
        unread: true,
    })
}

/// A request that passed the steps every operation shares.
struct Incoming {
    /// The operation asked for.
    op: Operation,
    /// The account named in the path.
    account: String,
    /// The queue named in the path; empty for the account's list and create.
    queue: String,
    /// The consumer named in the path, if any.
    consumer: Option<String>,
    /// The event subscription named in the path, if any.
    subscription: Option<String>,
    /// The query parameters (the lists of queues and of event subscriptions read them).
    query: HashMap<String, String>,
    /// The JSON body; `{}` when the body was empty.
    request: Object,
    /// The connection it came on, whose response buffer a streamed answer
    /// counts against.
    conn: Option<Arc<Conn>>,
    /// Whether the client accepts `text/event-stream` (only metrics offers it).
    event_stream: bool,
}

impl Incoming {
    /// The shared steps, in order: count the request, serve an injected
    /// fault, check credentials, ids, the strict queue list and the rate
    /// limits, then read and parse the body. A request refused before its
    /// body is read still has it drained.
    async fn read(
        app: &App,
        op: Operation,
        request: Request,
        credential: Option<CredentialKey>,
    ) -> Result<Incoming, Refusal> {
        app.requests.fetch_add(1, Ordering::Relaxed);
        let (mut parts, body) = request.into_parts();
        let ids = match Incoming::check(app, op, &mut parts, credential).await {
            Ok(ids) => ids,
            Err(failure) => {
                let unread = !app.drain(body).await;
                return Err(Refusal { failure, unread });
            }
        };
        let too_large = if op == Operation::Batch {
            codes::BATCH_SIZE_OUT_OF_BOUNDS
        } else {
            codes::MESSAGE_SIZE_OUT_OF_BOUNDS
        };
        let bytes = read_body(app, body, too_large).await?;
        // An absent body reads as `{}`: every field of pull, peek and ack is optional.
        let request: Value = if bytes.iter().all(u8::is_ascii_whitespace) {
            Value::Object(Map::new())
        } else {
            serde_json::from_slice(&bytes).map_err(|e| {
                ErrorAnswer::bad_request(
                    codes::JSON_REQUEST_BODY_MALFORMED,
                    format!("JSONRequestBodyMalformed: {e}"),
                )
            })?
        };
        let Value::Object(request) = request else {
            return Err(ErrorAnswer::invalid("", "the request body must be a JSON object").into());
        };
        let query = Query::<HashMap<String, String>>::try_from_uri(&parts.uri)
            .map(|Query(query)| query)
            .unwrap_or_default();
        Ok(Incoming {
            op,
            account: ids.account,
            queue: ids.queue,
            consumer: ids.consumer,
            subscription: ids.subscription,
            query,
            request,
            conn: parts.extensions.get::<Arc<Conn>>().cloned(),
            event_stream: accepts_event_stream(&parts.headers),
        })
    }

    /// The steps that need only the head of the request. The queue of the
    /// path must exist: a messages request may bring it into being (the lax
    /// mode), a management request never does.
    async fn check(
        app: &App,
        op: Operation,
        parts: &mut Parts,
        credential: Option<CredentialKey>,
    ) -> Result<PathIds, ErrorAnswer> {
        if let Some(fault) = app.faults.take(op) {
            if let Some(stall) = fault.stall {
                tokio::time::sleep(stall).await;
            }
            if fault.status.is_some() {
                return Err(ErrorAnswer::Injected(fault));
            }
        }
        let Ok(Path(mut params)) =
            Path::<HashMap<String, String>>::from_request_parts(parts, &()).await
        else {
            return Err(ErrorAnswer::no_route());
        };
        let ids = PathIds {
            account: params.remove("account_id").unwrap_or_default(),
            queue: params.remove("queue_id").unwrap_or_default(),
            consumer: params.remove("consumer_id"),
            subscription: params.remove("subscription_id"),
        };
        auth::authenticate(app.auth.as_ref(), &parts.headers)?;
        let has_queue = op.path().contains("{queue_id}");
        let named = [
            Some(("account_id", &ids.account)),
            has_queue.then_some(("queue_id", &ids.queue)),
            ids.consumer.as_ref().map(|c| ("consumer_id", c)),
            ids.subscription.as_ref().map(|s| ("subscription_id", s)),
        ];
        for (field, id) in named.into_iter().flatten() {
            app.limits.check_id(field, id).map_err(|e| {
                ErrorAnswer::bad_request(
                    codes::QUEUE_ID_MALFORMED,
                    format!("QueueIDMalformed: {e}"),
                )
            })?;
        }
        if has_queue {
            let at = At {
                account: &ids.account,
                queue: &ids.queue,
            };
            app.with_broker(|broker, now| admit(broker, op, at, now))?;
        }
        if let Some(limiter) = app.rate_limiter().as_mut() {
            let address = parts.extensions.get::<Arc<Conn>>().map(|c| c.peer_ip());
            limiter
                .admit(address, credential, op, app.clock.now_ms())
                .map_err(ErrorAnswer::RateLimited)?;
        }
        Ok(ids)
    }

    /// The queue the call applies to.
    fn at(&self) -> At<'_> {
        At {
            account: &self.account,
            queue: &self.queue,
        }
    }
}

/// Whether the queue of the path is there for `op`: a messages request may
/// bring it into being (the lax mode), a management request never does.
/// The one place that decides it, before the body is read and again under
/// the lock each operation runs under ([`App::with_queue`]).
fn admit(broker: &mut Broker, op: Operation, at: At<'_>, now: u64) -> Result<(), ErrorAnswer> {
    if op.is_messages() {
        broker.open_for_messages(at, now).map_err(ErrorAnswer::from)
    } else {
        broker.get_queue(at).map(drop).map_err(ErrorAnswer::from)
    }
}

/// The ids a path names.
struct PathIds {
    account: String,
    queue: String,
    consumer: Option<String>,
    subscription: Option<String>,
}

/// Whether `Accept` lists `text/event-stream` with a quality above 0.
/// The metrics answer offers it; what else the header lists does not
/// matter, since the JSON answer is the fallback anyway.
fn accepts_event_stream(headers: &HeaderMap) -> bool {
    headers
        .get_all(ACCEPT)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .any(|range| {
            let mut parts = range.split(';').map(str::trim);
            let is_stream = parts
                .next()
                .is_some_and(|media| media.eq_ignore_ascii_case("text/event-stream"));
            let refused = parts.any(|param| {
                param
                    .strip_prefix("q=")
                    .and_then(|q| q.trim().parse::<f64>().ok())
                    .is_some_and(|q| q <= 0.0)
            });
            is_stream && !refused
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_stream_is_asked_for_by_accept() {
        let accept = |values: &[&str]| {
            let mut headers = HeaderMap::new();
            for v in values {
                headers.append(ACCEPT, HeaderValue::from_str(v).expect("valid header"));
            }
            accepts_event_stream(&headers)
        };
        assert!(accept(&["text/event-stream"]));
        assert!(accept(&["application/json, Text/Event-Stream;q=0.5"]));
        assert!(accept(&["application/json", "text/event-stream"]));
        assert!(!accept(&[]));
        assert!(!accept(&["application/json"]));
        assert!(!accept(&["*/*"]));
        assert!(!accept(&["text/event-stream; q=0"]));
    }

    #[test]
    fn ids() {
        let limits = Limits::default();
        let valid_id = |id: &str, limits: &Limits| limits.check_id("queue_id", id).is_ok();
        assert!(valid_id("abc123", &limits));
        assert!(!valid_id("", &limits));
        assert!(!valid_id(&"a".repeat(33), &limits));
        assert!(!valid_id("a-b", &limits));
    }
}
