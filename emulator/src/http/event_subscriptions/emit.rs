//! Events emitted on request into the subscribed queues: for tests
//! ([`EmulatorHandle::emit_event`](crate::EmulatorHandle::emit_event)),
//! `cfq events emit` (the emulator's own route, `POST
//! /_emulator/accounts/{account_id}/events`, with the API's credentials)
//! and the dashboard. Every message goes through the path of a push: its
//! queue's limits, the journal, the counts.

use std::sync::Arc;

use axum::extract::{FromRequestParts, Path, Request, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde::Serialize;
use serde_json::{Map, Value, json};

use super::super::body::{self, Read};
use super::super::messages::handlers::push_by_hand;
use super::super::messages::wire::success;
use super::super::{Answer, App, Refusal, auth, refuse, respond};
use crate::catalogue;
use crate::http::error_answer::ErrorAnswer;
use crate::http::management::wire::string;
use crate::http::parse::Object;
use crate::state::{At, event_message};
use cf_queues::codes;

/// The emulator's route, beside Cloudflare's paths.
pub(crate) const ROUTE: &str = "/_emulator/accounts/{account_id}/events";

/// An event to emit.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct EmitRequest {
    /// The source's `type`: `r2`, `workflows.workflow`, ...
    pub source: String,
    /// Only the subscriptions to this resource (a model, a Worker, a
    /// script, a Workflow), when given.
    pub resource: Option<String>,
    /// The event's name: `bucket.created`, ...
    pub event: String,
    /// The payload, instead of the documented example's.
    pub payload: Option<Map<String, Value>>,
    /// Fields set in the payload, over the example's or `payload`.
    pub fields: Map<String, Value>,
}

/// Where one message went.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Delivered {
    pub subscription_id: String,
    pub queue_id: String,
}

/// Emits `request` in `account`: one message into the queue of every
/// enabled subscription it reaches, in the order of their ids. A queue
/// that refuses its message (its backlog full) stops the emit there, and
/// the messages already delivered stay delivered.
pub(crate) fn emit(
    app: &App,
    account: &str,
    request: &EmitRequest,
) -> Result<Vec<Delivered>, ErrorAnswer> {
    let documented = catalogue::find(&request.source, &request.event)
        .map_err(|why| ErrorAnswer::invalid("/event", why))?;
    let mut payload = match &request.payload {
        Some(payload) => payload.clone(),
        None => match documented.example_payload() {
            Value::Object(fields) => fields,
            _ => Map::new(),
        },
    };
    payload.extend(request.fields.clone());
    let resource = request.resource.as_deref();
    let targets = app.with_broker(|broker, _| {
        broker.event_targets(account, &request.source, resource, &request.event)
    });
    if targets.enabled.is_empty() {
        let of = match resource {
            Some(resource) => format!("{} {resource}", request.source),
            None => request.source.clone(),
        };
        let disabled = match targets.disabled {
            0 => String::new(),
            n => format!(" ({n} disabled: a disabled subscription delivers nothing)"),
        };
        return Err(ErrorAnswer::new(
            StatusCode::NOT_FOUND,
            codes::NO_ROUTE,
            format!(
                "no enabled event subscription of the account has the source {of} and the \
                 event {}{disabled}; nothing was emitted",
                request.event
            ),
        ));
    }
    let mut delivered = Vec::with_capacity(targets.enabled.len());
    for subscription in &targets.enabled {
        let now = app.clock.now_ms();
        let message = event_message(
            documented,
            subscription,
            account,
            Value::Object(payload.clone()),
            now,
        );
        let item = match json!({"body": message, "content_type": "json"}) {
            Value::Object(item) => item,
            _ => Object::new(),
        };
        let at = At {
            account,
            queue: &subscription.queue_id,
        };
        push_by_hand(app, at, std::iter::once(Ok(item)))?;
        delivered.push(Delivered {
            subscription_id: subscription.id.clone(),
            queue_id: subscription.queue_id.clone(),
        });
    }
    Ok(delivered)
}

/// The body of the route: `{source, event, resource?, payload?, fields?}`.
fn emit_request(request: &Object) -> Result<EmitRequest, ErrorAnswer> {
    let required = |key: &str| -> Result<String, ErrorAnswer> {
        match string(request, key, &format!("/{key}"))? {
            Some(value) if !value.is_empty() => Ok(value.to_owned()),
            _ => Err(ErrorAnswer::invalid(
                &format!("/{key}"),
                format!("{key} is required"),
            )),
        }
    };
    let object = |key: &str| -> Result<Option<Map<String, Value>>, ErrorAnswer> {
        match request.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Object(fields)) => Ok(Some(fields.clone())),
            Some(_) => Err(ErrorAnswer::invalid(
                &format!("/{key}"),
                format!("{key} must be an object"),
            )),
        }
    };
    Ok(EmitRequest {
        source: required("source")?,
        event: required("event")?,
        resource: string(request, "resource", "/resource")?.map(str::to_owned),
        payload: object("payload")?,
        fields: object("fields")?.unwrap_or_default(),
    })
}

/// `{type, delivered: [{subscription_id, queue_id}]}`.
#[derive(Serialize)]
struct EmitResult<'a> {
    #[serde(rename = "type")]
    message_type: String,
    delivered: &'a [Delivered],
}

/// `POST /_emulator/accounts/{account_id}/events`, with the API's
/// credentials: the emulator's own route, for `cfq events emit`.
pub(crate) async fn route(State(app): State<Arc<App>>, request: Request) -> Response {
    let (mut parts, body) = request.into_parts();
    let head = async {
        let Ok(Path(account)) = Path::<String>::from_request_parts(&mut parts, &()).await else {
            return Err(ErrorAnswer::no_route());
        };
        auth::authenticate(app.auth.as_ref(), &parts.headers)?;
        app.limits.check_id("account_id", &account).map_err(|e| {
            ErrorAnswer::bad_request(codes::QUEUE_ID_MALFORMED, format!("QueueIDMalformed: {e}"))
        })?;
        if let Some(why) = app.store_failed() {
            return Err(ErrorAnswer::storage(Some(why)));
        }
        Ok(account)
    };
    let account = match head.await {
        Ok(account) => account,
        Err(failure) => return refuse(&app, failure, body).await,
    };
    let answer = match body::read(body, app.max_body_bytes, app.body_timeout, true).await {
        Read::Complete(bytes) => answer(&app, &account, &bytes).map_err(Refusal::from),
        _ => Err(Refusal {
            failure: ErrorAnswer::bad_request(
                codes::CLIENT_DISCONNECTED,
                "ClientDisconnected: the request body did not arrive whole",
            ),
            unread: true,
        }),
    };
    respond(app.settled(answer).await)
}

fn answer(app: &App, account: &str, bytes: &[u8]) -> Result<Answer, ErrorAnswer> {
    let request = match serde_json::from_slice(bytes) {
        Ok(Value::Object(request)) => request,
        Ok(_) => {
            return Err(ErrorAnswer::invalid(
                "",
                "the request body must be a JSON object",
            ));
        }
        Err(e) => {
            return Err(ErrorAnswer::bad_request(
                codes::JSON_REQUEST_BODY_MALFORMED,
                format!("JSONRequestBodyMalformed: {e}"),
            ));
        }
    };
    let request = emit_request(&request)?;
    let delivered = emit(app, account, &request)?;
    success(&EmitResult {
        message_type: format!("cf.{}.{}", request.source, request.event),
        delivered: &delivered,
    })
    .map(Answer::Json)
}
