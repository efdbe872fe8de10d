//! The HTTP shell around the [`Broker`](super::state::Broker): routing, the
//! steps every operation shares ([`Call::read`]), one handler per operation
//! ([`handlers`]), and Cloudflare's response envelopes ([`wire`]).

mod auth;
mod failure;
mod handlers;
mod parse;
mod wire;

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use axum::Router;
use axum::body::Body;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::routing::{MethodRouter, post};
use serde_json::{Map, Value};

use super::Operation;
use super::clock::Clock;
use super::faults::Faults;
use super::state::Broker;
use crate::limits::Limits;
pub(crate) use auth::AcceptedAuth;
use failure::Failure;
use parse::Object;
use wire::json_response;

/// Everything the handlers share.
pub(crate) struct App {
    pub broker: Mutex<Broker>,
    pub clock: Clock,
    pub faults: Faults,
    pub auth: Option<AcceptedAuth>,
    pub strict_queues: Option<HashSet<String>>,
    pub limits: Limits,
    pub max_body_bytes: usize,
    /// Requests received on the served operations, faulty ones included.
    pub requests: AtomicU64,
}

impl App {
    /// Runs `operation` on the locked broker with the current time, read
    /// under the lock so that concurrent requests apply in time order.
    pub(crate) fn with_broker<T>(&self, operation: impl FnOnce(&mut Broker, u64) -> T) -> T {
        let mut broker = self.broker();
        let now = self.clock.now_ms();
        operation(&mut broker, now)
    }

    pub(crate) fn broker(&self) -> MutexGuard<'_, Broker> {
        // The broker never panics mid-update; a poisoned lock still holds a consistent state.
        self.broker.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// What an operation's handler runs on: a request that passed every shared step.
type Handler = fn(&App, Call) -> Result<Vec<u8>, Failure>;

pub(crate) fn router(app: Arc<App>) -> Router {
    const QUEUE: &str = "/accounts/{account_id}/queues/{queue_id}";
    // Extend, preview, delete previewed, metrics and both purges of the whole
    // queue are not served yet: they fall through to Cloudflare's 7003.
    let routes: [(Operation, Handler); 6] = [
        (Operation::Push, handlers::push),
        (Operation::Batch, handlers::batch),
        (Operation::Pull, handlers::pull),
        (Operation::Ack, handlers::ack),
        (Operation::Peek, handlers::peek),
        (Operation::Purge, handlers::purge),
    ];
    let operations = routes
        .into_iter()
        .fold(Router::new(), |router, (op, handler)| {
            router.route(&format!("{QUEUE}{}", op.path()), operation(op, handler))
        });
    Router::new()
        .merge(operations.clone())
        .nest("/client/v4", operations)
        .fallback(|| async { Failure::no_route().into_response() })
        .with_state(app)
}

fn operation(op: Operation, handler: Handler) -> MethodRouter<Arc<App>> {
    post(
        move |State(app): State<Arc<App>>,
              path: Result<Path<(String, String)>, PathRejection>,
              headers: HeaderMap,
              body: Body| async move {
            let answer = match Call::read(&app, op, path, &headers, body).await {
                Ok(call) => handler(&app, call),
                Err(failure) => Err(failure),
            };
            match answer {
                Ok(body) => json_response(StatusCode::OK, body),
                Err(failure) => failure.into_response(),
            }
        },
    )
    .fallback(|| async {
        Failure::new(StatusCode::METHOD_NOT_ALLOWED, 7001, "Method not allowed").into_response()
    })
}

/// A request that passed the steps every operation shares.
pub(super) struct Call {
    /// The queue named in the path.
    pub(super) queue: String,
    /// The JSON body; `{}` when the body was empty.
    pub(super) request: Object,
}

impl Call {
    /// The shared steps, in order: count the request, serve an injected
    /// fault, check credentials, ids and the strict queue list, then read
    /// and parse the body.
    async fn read(
        app: &App,
        op: Operation,
        path: Result<Path<(String, String)>, PathRejection>,
        headers: &HeaderMap,
        body: Body,
    ) -> Result<Call, Failure> {
        app.requests.fetch_add(1, Ordering::Relaxed);
        if let Some(fault) = app.faults.take(op) {
            if let Some(stall) = fault.stall {
                tokio::time::sleep(stall).await;
            }
            if fault.status.is_some() {
                return Err(Failure::Injected(fault));
            }
        }
        let Ok(Path((account_id, queue_id))) = path else {
            return Err(Failure::no_route());
        };
        auth::authenticate(app.auth.as_ref(), headers)?;
        for (field, id) in [("account_id", &account_id), ("queue_id", &queue_id)] {
            app.limits
                .check_id(field, id)
                .map_err(|e| Failure::bad_request(10107, format!("QueueIDMalformed: {e}")))?;
        }
        if app
            .strict_queues
            .as_ref()
            .is_some_and(|known| !known.contains(&queue_id))
        {
            return Err(Failure::new(StatusCode::NOT_FOUND, 10104, "QueueNotFound"));
        }

        let bytes = axum::body::to_bytes(body, app.max_body_bytes)
            .await
            .map_err(|_| {
                let code = if op == Operation::Batch { 10205 } else { 10204 };
                Failure::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    code,
                    format!("request body exceeds {} bytes", app.max_body_bytes),
                )
            })?;
        // An absent body reads as `{}`: every field of pull, peek and ack is optional.
        let request: Value = if bytes.iter().all(u8::is_ascii_whitespace) {
            Value::Object(Map::new())
        } else {
            serde_json::from_slice(&bytes).map_err(|e| {
                Failure::bad_request(10208, format!("JSONRequestBodyMalformed: {e}"))
            })?
        };
        let Value::Object(request) = request else {
            return Err(Failure::invalid(
                "",
                "the request body must be a JSON object",
            ));
        };
        Ok(Call {
            queue: queue_id,
            request,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
