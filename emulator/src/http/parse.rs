//! Reading the fields of a request body, with Cloudflare's error codes.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::super::state::{BodyKind, NewMessage, bounded};
use super::error_answer::ErrorAnswer;
use cf_queues::codes;
use cf_queues::limits::Limits;

/// A pushed message as parsed: its delay is known once the queue's
/// `delivery_delay` is, for a message sent without one.
pub(super) struct Pushed {
    pub(super) message: NewMessage,
    /// The bytes it counts for against the limits.
    pub(super) counted: usize,
    /// Its own delay, or its batch's; `None` when neither gave one.
    pub(super) delay_ms: Option<u64>,
}

impl Pushed {
    /// The message, delayed by its own delay or else by the queue's.
    pub(super) fn with_queue_delay(mut self, queue_delay_ms: u64) -> NewMessage {
        self.message.delay_ms = self.delay_ms.unwrap_or(queue_delay_ms);
        self.message
    }
}

/// Parses one pushed message.
pub(super) fn parse_message(
    item: &Map<String, Value>,
    pointer: &str,
    default_delay_ms: Option<u64>,
    limits: &Limits,
) -> Result<Pushed, ErrorAnswer> {
    let kind = match item.get("content_type") {
        Some(Value::String(t)) if t == "text" => BodyKind::Text,
        Some(Value::String(t)) if t == "json" => BodyKind::Json,
        None | Some(Value::Null) => BodyKind::Json,
        // Cloudflare's error-code table: 10203 MessageMetadataInvalid,
        // "invalid content type" (developers.cloudflare.com/queues/reference/error-codes/).
        Some(_) => {
            return Err(ErrorAnswer::bad_request(
                codes::MESSAGE_METADATA_INVALID,
                "MessageMetadataInvalid: content_type must be \"text\" or \"json\"",
            )
            .at(&format!("{pointer}/content_type")));
        }
    };
    let body = match (kind, item.get("body")) {
        (_, None) => {
            return Err(ErrorAnswer::invalid(
                &format!("{pointer}/body"),
                "body is required",
            ));
        }
        (BodyKind::Text, Some(Value::String(text))) => text.clone().into_bytes(),
        (BodyKind::Text, Some(_)) => {
            return Err(ErrorAnswer::invalid(
                &format!("{pointer}/body"),
                "a text body must be a string",
            ));
        }
        (_, Some(value)) => value.to_string().into_bytes(),
    };
    let counted = body.len().saturating_add(limits.message_metadata_bytes);
    if counted > limits.max_message_bytes {
        return Err(too_large(Size::Message, counted, limits.max_message_bytes));
    }
    let delay = delay_ms(
        item,
        "delay_seconds",
        &format!("{pointer}/delay_seconds"),
        codes::MESSAGE_METADATA_INVALID,
        limits,
    )?;
    Ok(Pushed {
        message: NewMessage {
            kind,
            body,
            delay_ms: 0,
        },
        counted,
        delay_ms: delay.or(default_delay_ms),
    })
}

pub(super) fn number(
    object: &Map<String, Value>,
    key: &str,
    pointer: &str,
) -> Result<Option<f64>, ErrorAnswer> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => Ok(n.as_f64()),
        Some(_) => Err(ErrorAnswer::invalid(
            pointer,
            format!("{key} must be a number"),
        )),
    }
}

pub(super) fn delay_ms(
    object: &Map<String, Value>,
    key: &str,
    pointer: &str,
    code: u32,
    limits: &Limits,
) -> Result<Option<u64>, ErrorAnswer> {
    let Some(seconds) = number(object, key, pointer)? else {
        return Ok(None);
    };
    let max = limits.max_delay.as_secs_f64();
    if !(0.0..=max).contains(&seconds) {
        let name = if code == codes::BATCH_DELAY_INVALID {
            "BatchDelayInvalid"
        } else {
            "MessageMetadataInvalid"
        };
        return Err(ErrorAnswer::bad_request(
            code,
            format!("{name}: {key} must be from 0 to {max}"),
        )
        .at(pointer));
    }
    Ok(Some((seconds * 1000.0).round() as u64))
}

/// What a size limit bounds: one message, or a whole batch.
#[derive(Debug, Clone, Copy)]
pub(super) enum Size {
    Message,
    Batch,
}

/// The answer to a message or a batch of `counted` bytes over its `limit`:
/// Cloudflare's code and the name of its error.
pub(super) fn too_large(size: Size, counted: usize, limit: usize) -> ErrorAnswer {
    let (code, name) = match size {
        Size::Message => (codes::MESSAGE_SIZE_OUT_OF_BOUNDS, "MessageSizeOutOfBounds"),
        Size::Batch => (codes::BATCH_SIZE_OUT_OF_BOUNDS, "BatchSizeOutOfBounds"),
    };
    ErrorAnswer::bad_request(
        code,
        format!("{name}: {counted} bytes exceed the limit of {limit}"),
    )
}

/// `batch_size` of a pull, peek or preview: `None` when absent (a pull
/// then takes its consumer's, peek and preview 5).
pub(super) fn batch_size(
    request: &Map<String, Value>,
    limits: &Limits,
) -> Result<Option<usize>, ErrorAnswer> {
    let max = f64::from(limits.max_pull_batch_size);
    Ok(from_one_to(request, "batch_size", max, Whole::Only)?.map(|n| n as usize))
}

/// `visibility_timeout_ms` of a pull or an extension: `None` when absent
/// (the HTTP pull consumer's then applies, 30 s by default).
///
/// Below 1 ms a lease ends as it is granted: every ack would come late,
/// and the message would be redelivered at once until its retries ran
/// out. The client refuses 0 already; over raw HTTP the code is an
/// assumption (see "Assumptions").
pub(super) fn visibility_ms(
    request: &Map<String, Value>,
    limits: &Limits,
) -> Result<Option<u64>, ErrorAnswer> {
    let max = limits.max_visibility_timeout.as_millis() as f64;
    let ms = from_one_to(request, "visibility_timeout_ms", max, Whole::OrFraction)?;
    Ok(ms.map(|ms| ms.round() as u64))
}

/// Whether a number must be whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Whole {
    Only,
    OrFraction,
}

/// The number at the request's `key`, from 1 to `max`: `None` when absent,
/// an error pointing at the key otherwise.
fn from_one_to(
    request: &Map<String, Value>,
    key: &str,
    max: f64,
    whole: Whole,
) -> Result<Option<f64>, ErrorAnswer> {
    let pointer = format!("/{key}");
    let Some(n) = number(request, key, &pointer)? else {
        return Ok(None);
    };
    let (fraction, kind) = match whole {
        Whole::Only => (n.fract() != 0.0, "a whole number "),
        Whole::OrFraction => (false, ""),
    };
    if fraction || !(1.0..=max).contains(&n) {
        return Err(ErrorAnswer::invalid(
            &pointer,
            format!("{key} must be {kind}from 1 to {max}"),
        ));
    }
    Ok(Some(n))
}

pub(crate) type Object = Map<String, Value>;

/// The `lease_id`s of `acks` or `retries`, each with its object.
pub(super) fn leases<'a>(
    request: &'a Object,
    key: &str,
) -> Result<Vec<(String, &'a Object)>, ErrorAnswer> {
    let items = match request.get(key) {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(_) => {
            return Err(ErrorAnswer::invalid(
                &format!("/{key}"),
                format!("{key} must be an array"),
            ));
        }
    };
    let mut leases = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        match item {
            Value::Object(object) => match object.get("lease_id") {
                Some(Value::String(lease)) => leases.push((lease.clone(), object)),
                _ => {
                    return Err(ErrorAnswer::invalid(
                        &format!("/{key}/{i}/lease_id"),
                        "lease_id must be a string",
                    ));
                }
            },
            _ => {
                return Err(ErrorAnswer::invalid(
                    &format!("/{key}/{i}"),
                    "must be an object",
                ));
            }
        }
    }
    Ok(leases)
}

/// A whole query parameter of at least 1.
pub(crate) fn page_number(
    query: &HashMap<String, String>,
    key: &str,
    max: u64,
) -> Result<Option<usize>, ErrorAnswer> {
    let Some(text) = query.get(key) else {
        return Ok(None);
    };
    let value: f64 = text.trim().parse().unwrap_or(f64::NAN);
    bounded(key, value, 1, max)
        .map(|v| Some(usize::try_from(v).unwrap_or(usize::MAX)))
        .map_err(|message| ErrorAnswer::bad_request(codes::JSON_REQUEST_BODY_INVALID, message))
}
