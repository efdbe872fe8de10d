//! What the dashboard changes: each action a form posted, checked as the
//! pages are (plus the session's form token), carried out on the locked
//! broker as an API call would be (journaled with a data directory; a
//! redrive moves its messages under one lock), and never counted against
//! the emulated limits. Each answers with a redirect to the page it came
//! from, which then says what it did (a one-time note).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::header::LOCATION;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use serde_json::{Map, Value, json};

use super::access::Denied;
use super::{Dashboard, answer, pages, refused};
use crate::EMULATOR_ACCOUNT_ID;
use crate::http::{
    EmitRequest, ErrorAnswer, Object, consumer_spec, emit as emit_event, push_by_hand,
    settings_change,
};
use crate::latency::Latency;
use crate::random::random_hex;
use crate::ratelimit::{RateLimitModel, RateLimiter};
use crate::state::{AccountError, At, ConsumerKind, QueueRecord, SettingsChange};

/// The most messages one "send" generates: a form's action, not a load
/// generator (a program under test pushes through the API).
pub(crate) const MAX_GENERATED: usize = 10_000;
/// The most body bytes one "send" generates, all copies together (64 MiB):
/// each copy is held until the send stores them all at once, and one form
/// must not take the emulator's memory.
pub(crate) const MAX_GENERATED_BYTES: usize = 64 << 20;
/// Notes kept for pages not loaded yet.
const MAX_NOTES: usize = 64;

/// One-time notes: what an action did, shown once by the page it
/// redirects to, then forgotten.
#[derive(Debug, Default)]
pub(crate) struct Notes {
    kept: Mutex<VecDeque<(String, String)>>,
}

impl Notes {
    fn add(&self, text: String) -> String {
        let id = random_hex();
        let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        if kept.len() == MAX_NOTES {
            kept.pop_front();
        }
        kept.push_back((id.clone(), text));
        id
    }

    pub(crate) fn take(&self, id: &str) -> Option<String> {
        let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        let at = kept.iter().position(|(i, _)| i == id)?;
        kept.remove(at).map(|(_, text)| text)
    }
}

/// A posted form's fields, in order (a name may repeat: the selected
/// messages).
struct Form(Vec<(String, String)>);

impl Form {
    fn parse(body: &[u8]) -> Form {
        Form(
            body.split(|&b| b == b'&')
                .filter(|pair| !pair.is_empty())
                .map(|pair| {
                    let mut parts = pair.splitn(2, |&b| b == b'=');
                    let name = decode(parts.next().unwrap_or_default());
                    let value = decode(parts.next().unwrap_or_default());
                    (name, value)
                })
                .collect(),
        )
    }

    fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    fn text(&self, name: &str) -> &str {
        self.get(name).map_or("", str::trim)
    }

    /// A whole number field; `Ok(None)` when empty.
    fn number(&self, name: &str, label: &str) -> Result<Option<u64>, String> {
        match self.text(name) {
            "" => Ok(None),
            text => text
                .parse()
                .map(Some)
                .map_err(|_| format!("{label} must be a whole number, not {text:?}")),
        }
    }

    /// The selected messages.
    fn selected(&self) -> Vec<u64> {
        self.0
            .iter()
            .filter(|(n, _)| n == "m")
            .filter_map(|(_, v)| v.parse().ok())
            .collect()
    }
}

/// Decodes `application/x-www-form-urlencoded` text.
fn decode(bytes: &[u8]) -> String {
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3])
                    .ok()
                    .and_then(|h| u8::from_str_radix(h, 16).ok());
                match hex {
                    Some(b) => {
                        out.push(b);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Where an action sends the browser back to, with its note.
fn back(d: &Dashboard, to: &str, note: String) -> Response {
    let id = d.notes.add(note);
    let separator = if to.contains('?') { '&' } else { '?' };
    let location = format!("{to}{separator}note={id}");
    let mut response = answer(
        StatusCode::SEE_OTHER,
        "text/plain; charset=utf-8",
        String::new(),
    );
    if let Ok(value) = HeaderValue::from_str(&location) {
        response.headers_mut().insert(LOCATION, value);
    }
    response
}

/// Checks a posted form as the pages are checked, plus its form token.
fn admitted(d: &Dashboard, headers: &HeaderMap, body: &[u8]) -> Result<Form, Denied> {
    d.admit(headers)?;
    let form = Form::parse(body);
    d.access.check_form(headers, form.text("token"))?;
    Ok(form)
}

fn queue_page(id: &str) -> String {
    format!("/_dashboard/queues/{}", super::pages::url(id))
}

fn plural(n: usize, one: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {one}s")
    }
}

fn account_error(error: &AccountError) -> String {
    ErrorAnswer::from(error.clone()).text()
}

/// What every action does around its own work: admits the form, runs
/// `work` on it, and sends the browser back to `to` with what it did (or,
/// after `failed`, why it did nothing). As an API call: nothing is done
/// once the data directory failed, and the answer leaves only once every
/// change `work` made is committed, so that a crash after the answer
/// cannot undo what the page then says was done.
async fn act(
    d: &Dashboard,
    headers: &HeaderMap,
    body: &[u8],
    to: &str,
    failed: &str,
    work: impl FnOnce(&Form) -> Result<String, String>,
) -> Response {
    let form = match admitted(d, headers, body) {
        Ok(form) => form,
        Err(denied) => return refused(denied),
    };
    if let Some(why) = d.app.store_failed() {
        let note =
            format!("{failed}: the data directory failed ({why}); nothing changes any more.");
        return back(d, to, note);
    }
    let note = work(&form).unwrap_or_else(|why| format!("{failed}: {why}."));
    let note = match d.app.commit().await {
        Ok(()) => note,
        Err(why) => format!(
            "{failed} for sure: the data directory failed ({why}), and the change may be lost on restart."
        ),
    };
    back(d, to, note)
}

/// The queue `id` of the local account must still exist under the lock
/// the action runs under: a deletion answered meanwhile must not leave a
/// hidden state behind for the deleted id.
fn still_there(broker: &crate::state::Broker, id: &str) -> Result<QueueRecord, String> {
    broker.get_queue(local(id)).map_err(|e| account_error(&e))
}

/// The queue `id` of the local account.
fn local(id: &str) -> At<'_> {
    At {
        account: EMULATOR_ACCOUNT_ID,
        queue: id,
    }
}

/// `POST /_dashboard/queues/{id}/send`: a text or JSON message, with an
/// optional delay, or `count` of them, `{n}` in the body numbering each.
/// The body's size, and the count against the queue's room and
/// [`MAX_GENERATED_BYTES`], are checked once, before any copy is made;
/// the copies are then made one at a time, each kept only as the bytes it
/// is stored as.
pub(super) async fn send(
    State(d): State<Arc<Dashboard>>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Bytes,
) -> Response {
    act(
        &d,
        &headers,
        &body,
        &queue_page(&id),
        "Nothing sent",
        |form| {
            let count = form.number("count", "count")?.unwrap_or(1);
            let count = usize::try_from(count).unwrap_or(usize::MAX);
            if count == 0 || count > MAX_GENERATED {
                return Err(format!("count must be 1 to {MAX_GENERATED}"));
            }
            let delay = form.number("delay", "the delay")?;
            let json = form.text("content_type") == "json";
            let template = form.get("body").unwrap_or_default();
            let each = generated_bytes(template, count);
            let most = d.app.limits.max_message_bytes;
            if each > most {
                return Err(format!(
                    "the body is {} (with the numbers), and a message is at most {}",
                    pages::bytes(each as u64),
                    pages::bytes(most as u64)
                ));
            }
            let total = each.saturating_mul(count);
            if total > MAX_GENERATED_BYTES {
                return Err(format!(
                    "{count} copies of {} are {}; one send makes at most {}",
                    pages::bytes(each as u64),
                    pages::bytes(total as u64),
                    pages::bytes(MAX_GENERATED_BYTES as u64)
                ));
            }
            let held = d.app.with_broker(|broker, now| {
                still_there(broker, &id)?;
                Ok::<_, String>(broker.metrics(local(&id), now).backlog_bytes)
            })?;
            let room = d.app.max_backlog_bytes.saturating_sub(held);
            if total as u64 > room {
                return Err(format!(
                    "the queue holds {} of messages and may hold {}: {count} more of {} do not fit",
                    pages::bytes(held),
                    pages::bytes(d.app.max_backlog_bytes),
                    pages::bytes(each as u64)
                ));
            }
            let item = |n: usize| -> Result<Object, ErrorAnswer> {
                let text = template.replace("{n}", &n.to_string());
                let body = if json {
                    serde_json::from_str::<Value>(&text).map_err(|e| {
                        ErrorAnswer::invalid("/body", format!("the body is not JSON: {e}"))
                    })?
                } else {
                    Value::String(text)
                };
                let mut item: Object = Map::new();
                item.insert("body".into(), body);
                item.insert(
                    "content_type".into(),
                    json!(if json { "json" } else { "text" }),
                );
                if let Some(delay) = delay {
                    item.insert("delay_seconds".into(), json!(delay));
                }
                Ok(item)
            };
            let sent =
                push_by_hand(&d.app, local(&id), (1..=count).map(item)).map_err(|e| e.text())?;
            Ok(format!(
                "Sent {}{}.",
                plural(sent, "message"),
                delay.map_or_else(String::new, |s| format!(", delayed {s}s"))
            ))
        },
    )
    .await
}

/// Emits an event of a source one of the queue's subscriptions has: the
/// form's `event` is `subscription id|event` (ids and event names hold no
/// `|`), its `payload` a JSON object or empty (the documented example's).
pub(super) async fn emit(
    State(d): State<Arc<Dashboard>>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Bytes,
) -> Response {
    act(
        &d,
        &headers,
        &body,
        &queue_page(&id),
        "Nothing emitted",
        |form| {
            let chosen = form.text("event");
            let Some((id, event)) = chosen.split_once('|') else {
                return Err("choose an event".to_owned());
            };
            let subscription = d
                .app
                .with_broker(|broker, _| broker.get_subscription(EMULATOR_ACCOUNT_ID, id))
                .map_err(|_| "the subscription is gone".to_owned())?;
            let resource = subscription.resource().map(str::to_owned);
            let payload = match form.get("payload").map(str::trim).filter(|p| !p.is_empty()) {
                None => None,
                Some(text) => match serde_json::from_str(text) {
                    Ok(Value::Object(payload)) => Some(payload),
                    Ok(_) => return Err("the payload must be a JSON object".to_owned()),
                    Err(e) => return Err(format!("the payload is not JSON: {e}")),
                },
            };
            let request = EmitRequest {
                source: subscription.source_type().to_owned(),
                resource,
                event: event.to_owned(),
                payload,
                fields: Map::new(),
            };
            let emitted =
                emit_event(&d.app, EMULATOR_ACCOUNT_ID, &request).map_err(|e| e.text())?;
            Ok(format!(
                "Emitted {}: {} delivered.",
                emitted.message_type,
                plural(emitted.delivered.len(), "message")
            ))
        },
    )
    .await
}

/// The most bytes one of `count` messages made from `template` can have:
/// each `{n}` becomes a number of up to as many digits as `count` has.
fn generated_bytes(template: &str, count: usize) -> usize {
    let digits = count.to_string().len();
    let numbers = template.matches("{n}").count();
    template
        .len()
        .saturating_add(numbers.saturating_mul(digits.saturating_sub(3)))
}

/// `POST /_dashboard/queues/{id}/messages`: delete, retry (with a delay)
/// or move back (`redrive`, to the queue named by `to`) the selected
/// messages, or all of them for `redrive_all`.
pub(super) async fn messages(
    State(d): State<Arc<Dashboard>>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Bytes,
) -> Response {
    act(
        &d,
        &headers,
        &body,
        &queue_page(&id),
        "Nothing changed",
        |form| {
            let selected = form.selected();
            let action = form.text("action");
            if selected.is_empty() && action != "redrive_all" {
                return Err("select messages first".to_owned());
            }
            let now = d.app.clock.now_ms();
            match action {
                "delete" => {
                    let mut broker = d.app.broker();
                    still_there(&broker, &id)?;
                    let n = broker.delete_by_hand(local(&id), &selected, now);
                    Ok(format!("Deleted {}.", plural(n, "message")))
                }
                "retry" => {
                    let delay = form.number("delay", "the delay")?.unwrap_or(0);
                    if delay > 86_400 {
                        return Err("the delay is at most 24 hours (86400 s)".to_owned());
                    }
                    let mut broker = d.app.broker();
                    still_there(&broker, &id)?;
                    let n = broker.retry_by_hand(local(&id), &selected, delay * 1000, now);
                    Ok(format!(
                        "Retried {}: visible again in {delay}s, no attempt used.",
                        plural(n, "message")
                    ))
                }
                "redrive" | "redrive_all" => {
                    let target = form.text("to");
                    let mut broker = d.app.broker();
                    let record = still_there(&broker, &id)?;
                    let sources = broker.dead_letter_sources(EMULATOR_ACCOUNT_ID, &record.name);
                    let Some((target_id, target_name)) =
                        sources.iter().find(|(source, _)| source == target)
                    else {
                        return Err(format!(
                            "{target:?} does not name this queue as its dead-letter queue"
                        ));
                    };
                    let chosen = (action == "redrive").then_some(selected.as_slice());
                    let n = broker.move_by_hand(EMULATOR_ACCOUNT_ID, &id, target_id, chosen, now);
                    Ok(format!(
                        "Moved {} back to {target_name}.",
                        plural(n, "message")
                    ))
                }
                other => Err(format!("unknown action {other:?}")),
            }
        },
    )
    .await
}

/// `POST /_dashboard/queues/{id}/settings`: the queue's delivery delay and
/// retention, checked as the API checks them.
pub(super) async fn settings(
    State(d): State<Arc<Dashboard>>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Bytes,
) -> Response {
    act(&d, &headers, &body, &queue_page(&id), "Not saved", |form| {
        let mut settings = Map::new();
        if let Some(delay) = form.number("delivery_delay", "the delivery delay")? {
            settings.insert("delivery_delay".into(), json!(delay));
        }
        if let Some(retention) = form.number("retention", "the retention period")? {
            settings.insert("message_retention_period".into(), json!(retention));
        }
        let mut request = Map::new();
        request.insert("settings".into(), Value::Object(settings));
        let change = settings_change(&request).map_err(|e| e.text())?;
        let record = d
            .app
            .with_broker(|broker, now| broker.update_queue(local(&id), None, change, false, now))
            .map_err(|e| account_error(&e))?;
        Ok(format!(
            "Saved: delivery delay {}s, retention {}s.",
            record.settings.delivery_delay_s, record.settings.retention_s
        ))
    })
    .await
}

/// `POST /_dashboard/queues/{id}/delivery`: pause or resume delivery.
pub(super) async fn delivery(
    State(d): State<Arc<Dashboard>>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Bytes,
) -> Response {
    act(
        &d,
        &headers,
        &body,
        &queue_page(&id),
        "Nothing changed",
        |form| {
            let paused = form.text("action") == "pause";
            let change = SettingsChange {
                delivery_paused: Some(paused),
                ..SettingsChange::default()
            };
            d.app
                .with_broker(|broker, now| {
                    broker.update_queue(local(&id), None, change, false, now)
                })
                .map_err(|e| account_error(&e))?;
            Ok(if paused {
                "Delivery paused: pulls are refused until it resumes.".to_owned()
            } else {
                "Delivery resumed.".to_owned()
            })
        },
    )
    .await
}

/// `POST /_dashboard/queues/{id}/consumer`: enable HTTP pull or change its
/// settings (`save`), or disable it (`disable`), checked as the API checks
/// a consumer.
pub(super) async fn consumer(
    State(d): State<Arc<Dashboard>>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Bytes,
) -> Response {
    act(
        &d,
        &headers,
        &body,
        &queue_page(&id),
        "Nothing changed",
        |form| {
            let at = local(&id);
            if form.text("action") == "disable" {
                return d.app.with_broker(|broker, now| {
                    let Some(consumer) = still_there(broker, &id)?.consumer else {
                        return Err("the queue has no consumer".to_owned());
                    };
                    broker
                        .delete_consumer(at, &consumer.id, now)
                        .map_err(|e| account_error(&e))?;
                    Ok("HTTP pull disabled.".to_owned())
                });
            }
            let mut settings = Map::new();
            for (key, label) in [
                ("batch_size", "the batch size"),
                ("max_retries", "max retries"),
                ("retry_delay", "the retry delay"),
                ("visibility_timeout_ms", "the visibility timeout"),
            ] {
                if let Some(value) = form.number(key, label)? {
                    settings.insert(key.into(), json!(value));
                }
            }
            let mut request = Map::new();
            request.insert("type".into(), json!("http_pull"));
            request.insert("settings".into(), Value::Object(settings));
            let dlq = form.text("dead_letter_queue");
            if !dlq.is_empty() {
                request.insert("dead_letter_queue".into(), json!(dlq));
            }
            let spec = consumer_spec(&request).map_err(|e| e.text())?;
            d.app.with_broker(|broker, now| {
                let current = still_there(broker, &id)?;
                let done = match &current.consumer {
                    Some(existing) if matches!(existing.spec.kind, ConsumerKind::HttpPull(_)) => {
                        broker
                            .update_consumer(at, &existing.id, spec, now)
                            .map(|_| "HTTP pull settings saved.")
                    }
                    Some(_) => Err(AccountError::ConsumerExists),
                    None => broker
                        .create_consumer(at, spec, now)
                        .map(|_| "HTTP pull enabled."),
                };
                done.map(str::to_owned).map_err(|e| account_error(&e))
            })
        },
    )
    .await
}

/// `POST /_dashboard/queues/{id}/purge` and `.../delete`: the queue's
/// name typed in `confirm` first. A deleted queue's page is gone: the
/// browser goes back to the account page.
pub(super) async fn purge_or_delete(
    State(d): State<Arc<Dashboard>>,
    headers: HeaderMap,
    Path((id, what)): Path<(String, String)>,
    body: Bytes,
) -> Response {
    let to = if what == "delete" {
        "/_dashboard/".to_owned()
    } else {
        queue_page(&id)
    };
    act(&d, &headers, &body, &to, "Nothing changed", |form| {
        let at = local(&id);
        // The name checked and the queue purged or deleted under one lock,
        // as the API's purge is: a deletion in between would otherwise
        // leave a hidden state behind for the deleted id.
        d.app.with_broker(|broker, now| {
            let record = still_there(broker, &id)?;
            if form.text("confirm") != record.name {
                return Err(format!(
                    "type the queue's name, {}, to confirm",
                    record.name
                ));
            }
            match what.as_str() {
                "purge" => {
                    broker.purge_all(at, now);
                    Ok(format!("Purged {}: every message deleted.", record.name))
                }
                "delete" => {
                    broker.delete_queue(at).map_err(|e| account_error(&e))?;
                    Ok(format!("Deleted the queue {}.", record.name))
                }
                other => Err(format!("unknown action {other:?}")),
            }
        })
    })
    .await
}

/// `POST /_dashboard/queues`: creates a queue by name.
pub(super) async fn create(
    State(d): State<Arc<Dashboard>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    act(&d, &headers, &body, "/_dashboard/", "Not created", |form| {
        let name = form.text("name");
        d.app
            .with_broker(|broker, now| {
                broker.create_queue(EMULATOR_ACCOUNT_ID, name, SettingsChange::default(), now)
            })
            .map_err(|e| account_error(&e))?;
        Ok(format!("Created the queue {name}."))
    })
    .await
}

/// `POST /_dashboard/emulator`: the round trip added to every request and
/// the rate-limit model, switched while serving.
pub(super) async fn knobs(
    State(d): State<Arc<Dashboard>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    act(
        &d,
        &headers,
        &body,
        "/_dashboard/",
        "Nothing changed",
        |form| {
            let round_trip = form.number("round_trip_ms", "the round trip")?.unwrap_or(0);
            if round_trip > 10_000 {
                return Err("the round trip is at most 10000 ms".to_owned());
            }
            let limits = match form.text("rate_limits") {
                "cloudflare" => Some(RateLimitModel::cloudflare()),
                "off" | "" => None,
                other => return Err(format!("unknown rate limits {other:?}")),
            };
            d.server.latency.set(
                (round_trip > 0).then(|| Latency::round_trip(Duration::from_millis(round_trip))),
            );
            let on = limits.is_some();
            *d.app.rate_limiter() = limits.map(RateLimiter::new);
            Ok(format!(
                "Every request now takes a round trip of {round_trip} ms; Cloudflare's rate limits are {}.",
                if on { "on" } else { "off" }
            ))
        },
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_form_is_decoded_with_its_repeated_fields() {
        let form = Form::parse(b"token=ab&m=3&m=7&body=a+b%26c%3D%7Bn%7D&bad=%zz&delay=");
        assert_eq!(form.get("token"), Some("ab"));
        assert_eq!(form.selected(), [3, 7]);
        assert_eq!(form.get("body"), Some("a b&c={n}"));
        assert_eq!(form.get("bad"), Some("%zz"));
        assert_eq!(form.number("delay", "the delay"), Ok(None));
        assert!(Form::parse(b"n=x").number("n", "n").is_err());
        assert_eq!(decode(b"%"), "%");
        assert_eq!(decode(b"%4"), "%4");
        assert_eq!(decode(b"%41"), "A");
    }

    #[test]
    fn a_note_is_shown_once() {
        let notes = Notes::default();
        let id = notes.add("done".into());
        assert_eq!(notes.take(&id).as_deref(), Some("done"));
        assert_eq!(notes.take(&id), None);
    }
}
