//! Events emitted on request into the subscribed queues: for tests
//! ([`EmulatorHandle::emit_event`](crate::EmulatorHandle::emit_event)),
//! `cfq events emit` (the emulator's own route, `POST
//! /_emulator/accounts/{account_id}/events`, with the API's credentials)
//! and the dashboard. Every message goes through the path of a push: its
//! queue's limits, the journal, the counts.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{FromRequestParts, Path, Request, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde::Serialize;
use serde_json::{Map, Value};

use super::super::messages::handlers::{check_room, parse_by_hand, store};
use super::super::messages::wire::success;
use super::super::{Answer, App, Refusal, auth, read_body, refuse, respond};
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

/// What an emit did: the messages' `type`, and where each went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Emitted {
    pub message_type: String,
    pub delivered: Vec<Delivered>,
}

/// Emits `request` in `account`: one message into the queue of every
/// enabled subscription it reaches, in the order of their ids, all under
/// one lock of the broker: a subscription deleted, disabled or moved, or a
/// queue deleted, is seen before or after the whole emit, never in its
/// middle; and every queue's room is checked before anything is pushed,
/// so that an emit delivers everywhere or nowhere.
pub(crate) fn emit(
    app: &App,
    account: &str,
    request: &EmitRequest,
) -> Result<Emitted, ErrorAnswer> {
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
    let delivered = app.with_broker(|broker, now| {
        let targets = broker.event_targets(account, &request.source, resource, &request.event);
        if targets.enabled.is_empty() {
            return Err(nothing_reached(request, targets.disabled));
        }
        let mut parsed = Vec::with_capacity(targets.enabled.len());
        let mut incoming: HashMap<&str, u64> = HashMap::new();
        for subscription in &targets.enabled {
            let message = event_message(
                documented,
                subscription,
                account,
                Value::Object(payload.clone()),
                now,
            );
            let mut item = Object::new();
            item.insert("body".to_owned(), message);
            item.insert("content_type".to_owned(), Value::from("json"));
            let (pushed, bytes) = parse_by_hand(app, std::iter::once(Ok(item)))?;
            let queue = subscription.queue_id.as_str();
            let total = incoming.entry(queue).or_default();
            *total = total.saturating_add(bytes);
            parsed.push((subscription, pushed, bytes));
        }
        for (&queue, &bytes) in &incoming {
            check_room(app, broker, At { account, queue }, bytes, now)?;
        }
        let mut delivered = Vec::with_capacity(parsed.len());
        for (subscription, pushed, bytes) in parsed {
            let at = At {
                account,
                queue: &subscription.queue_id,
            };
            store(app, broker, at, pushed, bytes, now)?;
            delivered.push(Delivered {
                subscription_id: subscription.id.clone(),
                queue_id: subscription.queue_id.clone(),
            });
        }
        Ok(delivered)
    })?;
    Ok(Emitted {
        message_type: documented.message_type(),
        delivered,
    })
}

/// 404 for an emit that reaches no queue, saying how many disabled
/// subscriptions would have matched.
fn nothing_reached(request: &EmitRequest, disabled: usize) -> ErrorAnswer {
    let of = match &request.resource {
        Some(resource) => {
            let shown: String = resource.chars().take(80).collect();
            format!("{} {shown}", request.source)
        }
        None => request.source.clone(),
    };
    let disabled = match disabled {
        0 => String::new(),
        1 => " (1 disabled subscription would have: a disabled one delivers nothing)".to_owned(),
        n => format!(" ({n} disabled subscriptions would have: a disabled one delivers nothing)"),
    };
    ErrorAnswer::new(
        StatusCode::NOT_FOUND,
        codes::NO_ROUTE,
        format!(
            "no enabled event subscription of the account has the source {of} and the event \
             {}{disabled}; nothing was emitted",
            request.event
        ),
    )
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
    message_type: &'a str,
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
    let answer = match read_body(&app, body, codes::MESSAGE_SIZE_OUT_OF_BOUNDS).await {
        Ok(bytes) => answer(&app, &account, &bytes).map_err(Refusal::from),
        Err(refused) => Err(refused),
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
    let emitted = emit(app, account, &emit_request(&request)?)?;
    success(&EmitResult {
        message_type: &emitted.message_type,
        delivered: &emitted.delivered,
    })
    .map(Answer::Json)
}
