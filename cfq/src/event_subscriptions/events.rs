//! `cfq events`: the catalogue of documented events, and events emitted
//! into the subscribed queues of `cfq emulator` (its own route, `POST
//! /_emulator/accounts/{account_id}/events`, with the API's credentials).

use std::time::Duration;

use cf_queues::Credentials;
use cf_queues::event_subscriptions::resource_field_of;
use cf_queues_emulator::catalogue;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::args::{EventsEmitArgs, EventsListArgs};
use crate::exit::{Code, Failure};
use crate::output::Output;
use crate::session::Account;
use crate::stderr::note;

/// How long an emit may take: the emulator answers at once.
const EMIT_TIMEOUT: Duration = Duration::from_secs(30);
/// The most of an answer read.
const MAX_ANSWER_BYTES: usize = 1024 * 1024;

/// A documented event as `list` prints it in JSON.
#[derive(Debug, Serialize)]
struct EventLine<'a> {
    source: &'a str,
    event: &'a str,
    #[serde(rename = "type")]
    message_type: String,
    description: &'a str,
    example: &'a Value,
}

/// The catalogue, or one source's part of it.
pub fn list(out: Output, args: &EventsListArgs) -> Result<Code, Failure> {
    let listed: Vec<&catalogue::DocumentedEvent> = catalogue::events()
        .iter()
        .filter(|d| args.source.as_ref().is_none_or(|s| &d.source == s))
        .collect();
    if out.json() {
        for d in listed {
            out.json_line(&EventLine {
                source: &d.source,
                event: &d.event,
                message_type: d.message_type(),
                description: &d.description,
                example: &d.example,
            })?;
        }
        return Ok(Code::Ok);
    }
    let rows: Vec<Vec<String>> = listed
        .iter()
        .map(|d| vec![d.source.clone(), d.event.clone(), d.description.clone()])
        .collect();
    out.table(&["SOURCE", "EVENT", "DESCRIPTION"], &rows)?;
    note("images and workers.script: no Cloudflare page documents their events");
    Ok(Code::Ok)
}

/// What the route answers.
#[derive(Debug, Deserialize)]
struct Answered {
    success: Option<bool>,
    #[serde(default)]
    errors: Vec<Problem>,
    result: Option<Emitted>,
}

#[derive(Debug, Deserialize)]
struct Problem {
    message: Option<String>,
}

#[derive(Debug, Deserialize, Serialize)]
struct Emitted {
    #[serde(rename = "type")]
    message_type: String,
    delivered: Vec<Delivered>,
}

#[derive(Debug, Deserialize, Serialize)]
struct Delivered {
    subscription_id: String,
    queue_id: String,
}

/// Asks the emulator to emit one event.
pub async fn emit(account: &Account, args: &EventsEmitArgs) -> Result<Code, Failure> {
    // Checked here first, naming the source's events: nothing is sent.
    catalogue::find(&args.source, &args.event).map_err(Failure::usage)?;
    match (&args.resource, resource_field_of(&args.source)) {
        (Some(resource), _) if resource.trim().is_empty() => {
            return Err(Failure::usage("--resource must not be empty"));
        }
        (Some(_), None) => {
            return Err(Failure::usage(format_args!(
                "--resource does not apply to a {} source, which names no resource",
                args.source
            )));
        }
        _ => {}
    }
    let mut body = Map::new();
    body.insert("source".to_owned(), Value::from(args.source.as_str()));
    body.insert("event".to_owned(), Value::from(args.event.as_str()));
    if let Some(resource) = &args.resource {
        body.insert("resource".to_owned(), Value::from(resource.as_str()));
    }
    if let Some(payload) = &args.payload {
        body.insert("payload".to_owned(), payload_object(payload)?);
    }
    if !args.field.is_empty() {
        body.insert("fields".to_owned(), Value::Object(fields(&args.field)?));
    }
    let client = &account.client;
    let url = format!(
        "{}/_emulator/accounts/{}/events",
        client.base_url().trim_end_matches('/'),
        client.account_id()
    );
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(EMIT_TIMEOUT)
        .build()
        .map_err(|e| Failure::local(format_args!("cannot make an HTTP client: {e}")))?;
    let mut request = http.post(&url).json(&Value::Object(body));
    let credentials = Credentials::from_env().map_err(|e| Failure::usage(format_args!("{e}")))?;
    if let Some(credentials) = &credentials {
        request = credentials.authorize(request);
    }
    let network = |e: reqwest::Error| {
        Failure::new(Code::Network, format_args!("cannot reach the emulator at {url}: {e}"))
            .with_hint("`cfq events emit` works against `cfq emulator`, whose base URL it takes from --base-url or CLOUDFLARE_BASE_URL")
    };
    let mut response = request.send().await.map_err(network)?;
    let status = response.status().as_u16();
    let mut bytes = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(network)? {
        if bytes.len() + chunk.len() > MAX_ANSWER_BYTES {
            return Err(Failure::new(
                Code::Api,
                format_args!(
                    "{url} answered HTTP {status} with more than {MAX_ANSWER_BYTES} bytes"
                ),
            )
            .with_hint("`cfq events emit` works against `cfq emulator` only"));
        }
        bytes.extend_from_slice(&chunk);
    }
    let answered: Option<Answered> = serde_json::from_slice(&bytes).ok();
    match answered {
        Some(Answered {
            success: Some(true),
            result: Some(emitted),
            ..
        }) if status == 200 => print_emitted(account.out, &emitted),
        Some(answered) => {
            let message = answered
                .errors
                .into_iter()
                .find_map(|p| p.message)
                .unwrap_or_else(|| format!("HTTP {status}"));
            let code = match status {
                404 => Code::NotFound,
                400 => Code::Usage,
                401 | 403 => Code::Auth,
                _ => Code::Api,
            };
            Err(Failure::new(code, message))
        }
        None => Err(Failure::new(
            Code::Api,
            format_args!("{url} answered HTTP {status}, not the emulator's envelope"),
        )
        .with_hint("`cfq events emit` works against `cfq emulator` only")),
    }
}

fn print_emitted(out: Output, emitted: &Emitted) -> Result<Code, Failure> {
    if out.json() {
        for delivered in &emitted.delivered {
            out.json_line(&serde_json::json!({
                "type": emitted.message_type,
                "subscription_id": delivered.subscription_id,
                "queue_id": delivered.queue_id,
            }))?;
        }
        return Ok(Code::Ok);
    }
    let count = emitted.delivered.len();
    out.line(&format!(
        "emitted {}: {count} message{} delivered",
        emitted.message_type,
        if count == 1 { "" } else { "s" }
    ))?;
    let rows: Vec<Vec<String>> = emitted
        .delivered
        .iter()
        .map(|d| vec![d.queue_id.clone(), d.subscription_id.clone()])
        .collect();
    out.table(&["QUEUE", "SUBSCRIPTION"], &rows)?;
    Ok(Code::Ok)
}

/// `--payload`: a JSON object.
fn payload_object(text: &str) -> Result<Value, Failure> {
    match serde_json::from_str(text) {
        Ok(Value::Object(payload)) => Ok(Value::Object(payload)),
        Ok(_) => Err(Failure::usage("--payload must be a JSON object")),
        Err(e) => Err(Failure::usage(format_args!("--payload is not JSON: {e}"))),
    }
}

/// `--field KEY=VALUE`s: a value that is JSON is taken as JSON, any other as text.
fn fields(given: &[String]) -> Result<Map<String, Value>, Failure> {
    let mut fields = Map::new();
    for field in given {
        let Some((key, value)) = field.split_once('=') else {
            return Err(Failure::usage(format_args!(
                "--field {field:?} is not KEY=VALUE"
            )));
        };
        if key.is_empty() {
            return Err(Failure::usage(format_args!("--field {field:?} has no key")));
        }
        let value = serde_json::from_str(value).unwrap_or_else(|_| Value::from(value));
        fields.insert(key.to_owned(), value);
    }
    Ok(fields)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fields_are_json_when_they_parse_and_text_otherwise() {
        let given = ["a=3", "b=true", "c=failed", r#"d="7""#, "e={\"x\":1}", "f="];
        let parsed = fields(&given.map(str::to_owned)).expect("valid");
        assert_eq!(
            Value::Object(parsed),
            json!({"a": 3, "b": true, "c": "failed", "d": "7", "e": {"x": 1}, "f": ""})
        );
        assert!(fields(&["novalue".to_owned()]).is_err());
        assert!(fields(&["=x".to_owned()]).is_err());
        assert!(payload_object("[1]").is_err());
        assert!(payload_object("{").is_err());
    }
}
