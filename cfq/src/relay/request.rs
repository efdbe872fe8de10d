//! A pulled message as the relay's request: the body's bytes, its
//! Content-Type, and the `Cfq-*` headers. Pure: no I/O, every case unit
//! tested here.
//!
//! The prefix is `Cfq-`, not `CF-`: Cloudflare's edge sets and strips
//! `CF-*` headers of its own, so a service behind Cloudflare could see
//! ours spoofed or removed. Not `X-` either (RFC 6648).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use cf_queues::PulledMessage;
use cf_queues::message::{CONTENT_TYPE_KEY, ContentType};
use serde_json::{Map, Value};

/// The headers the relay sets on every request; `--header` cannot set
/// them (nor any other `Cfq-` name).
pub const MESSAGE_ID: &str = "cfq-message-id";
pub const ATTEMPTS: &str = "cfq-attempts";
pub const TIMESTAMP: &str = "cfq-timestamp";
pub const QUEUE_ID: &str = "cfq-queue-id";
pub const QUEUE_NAME: &str = "cfq-queue-name";
pub const CONTENT_TYPE: &str = "cfq-content-type";
pub const METADATA: &str = "cfq-metadata";
/// The prefix of one header per metadata entry.
pub const META_PREFIX: &str = "cfq-meta-";
/// The number of messages in a batch's request.
pub const BATCH_SIZE: &str = "cfq-batch-size";

/// The queue a request names.
#[derive(Debug, Clone)]
pub struct QueueNames {
    pub id: String,
    pub name: Option<String>,
}

/// One message's request, before the endpoint's own headers.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub body: Vec<u8>,
    pub content_type: &'static str,
    /// Lowercase names, values of visible ASCII only.
    pub headers: Vec<(String, String)>,
    /// A batch (`--batch`): a JSON array of records, whose 2xx answer may
    /// name messages to retry.
    pub batch: bool,
}

/// The request for a message whose body decodes: json as its JSON text
/// (byte for byte as the producer sent it), text as UTF-8, bytes decoded.
/// `None` for a body that does not decode, which the poison path sends
/// with [`undecoded`].
pub fn decoded(message: &PulledMessage, queue: &QueueNames) -> Option<Request> {
    let body = message.body();
    let content_type = match body.content_type() {
        ContentType::Json => "application/json",
        ContentType::Text => "text/plain; charset=utf-8",
        ContentType::Bytes => "application/octet-stream",
        _ => return None,
    };
    let bytes = body.bytes().ok()?;
    Some(Request {
        body: bytes,
        content_type,
        headers: headers(&Facts::of(message), queue),
        batch: false,
    })
}

/// The request for a message whose body cfq cannot decode (`v8`, an
/// unknown type, bad base64 or JSON); `Cfq-Content-Type` names the type.
pub fn undecoded(message: &PulledMessage, queue: &QueueNames) -> Request {
    Request {
        body: undecoded_body(message.body().raw()),
        content_type: "application/octet-stream",
        headers: headers(&Facts::of(message), queue),
        batch: false,
    }
}

/// The request of a batch: `body` (a JSON array of `count` records, from
/// `batch.rs`), with the queue's headers and the count.
pub fn batch(queue: &QueueNames, body: Vec<u8>, count: usize) -> Request {
    let mut headers = queue_headers(queue);
    headers.push((BATCH_SIZE.to_owned(), count.to_string()));
    Request {
        body,
        content_type: "application/json",
        headers,
        batch: true,
    }
}

fn queue_headers(queue: &QueueNames) -> Vec<(String, String)> {
    let mut headers = vec![(QUEUE_ID.to_owned(), visible(&queue.id))];
    if let Some(name) = &queue.name {
        headers.push((QUEUE_NAME.to_owned(), visible(name)));
    }
    headers
}

/// The API's text base64-decoded when it is base64 (as `v8` bodies
/// are), else as the API sent it.
fn undecoded_body(raw: &str) -> Vec<u8> {
    BASE64
        .decode(raw.trim())
        .unwrap_or_else(|_| raw.as_bytes().to_vec())
}

/// What the headers say of a message.
struct Facts<'a> {
    id: &'a str,
    attempts: u32,
    timestamp_ms: u64,
    content_type: &'a str,
    metadata: &'a Map<String, Value>,
}

impl<'a> Facts<'a> {
    fn of(message: &'a PulledMessage) -> Facts<'a> {
        Facts {
            id: &message.id,
            attempts: message.attempts,
            timestamp_ms: message.timestamp_ms,
            content_type: message.body().content_type().as_str(),
            metadata: &message.metadata,
        }
    }
}

fn headers(message: &Facts<'_>, queue: &QueueNames) -> Vec<(String, String)> {
    let mut headers = vec![
        (MESSAGE_ID.to_owned(), visible(message.id)),
        (ATTEMPTS.to_owned(), message.attempts.to_string()),
        (TIMESTAMP.to_owned(), message.timestamp_ms.to_string()),
    ];
    headers.extend(queue_headers(queue));
    headers.push((CONTENT_TYPE.to_owned(), visible(message.content_type)));
    let metadata = Value::Object(message.metadata.clone());
    headers.push((METADATA.to_owned(), ascii_json(&metadata)));
    for (key, value) in message.metadata {
        if key.eq_ignore_ascii_case(CONTENT_TYPE_KEY) || !is_token(key) {
            continue;
        }
        let value = match value {
            Value::String(text) => percent_encoded(text),
            other => ascii_json(other),
        };
        headers.push((format!("{META_PREFIX}{}", key.to_ascii_lowercase()), value));
    }
    headers
}

/// Compact JSON whose every character is visible ASCII: others (non-ASCII,
/// DEL) as `\uXXXX`, surrogate pairs above the BMP, as JSON allows.
fn ascii_json(value: &Value) -> String {
    let text = value.to_string();
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if (' '..='~').contains(&c) {
            out.push(c);
        } else {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        }
    }
    out
}

/// UTF-8 percent-encoded: every byte outside visible ASCII, and `%`.
fn percent_encoded(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if (b'!'..=b'~').contains(&byte) && byte != b'%' {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// A value the server chose (an id, a name) made safe for a header:
/// percent-encoded where it is not visible ASCII, so nothing can end the
/// header or start another.
fn visible(text: &str) -> String {
    if text.bytes().all(|b| (b'!'..=b'~').contains(&b)) {
        text.to_owned()
    } else {
        percent_encoded(text)
    }
}

/// Whether `name` is an HTTP token (RFC 9110's `tchar`s), so a header name.
pub fn is_token(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn queue() -> QueueNames {
        QueueNames {
            id: "0123456789abcdef0123456789abcdef".into(),
            name: Some("orders".into()),
        }
    }

    fn headers_of(content_type: &str, metadata: &Value) -> Vec<(String, String)> {
        let Value::Object(metadata) = metadata else {
            panic!("an object")
        };
        let facts = Facts {
            id: "m1",
            attempts: 2,
            timestamp_ms: 1_767_225_600_000,
            content_type,
            metadata,
        };
        headers(&facts, &queue())
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn every_header_of_a_message() {
        let metadata = json!({"CF-Content-Type": "json", "app": "x y%", "n": 3});
        assert_eq!(
            headers_of("json", &metadata),
            pairs(&[
                ("cfq-message-id", "m1"),
                ("cfq-attempts", "2"),
                ("cfq-timestamp", "1767225600000"),
                ("cfq-queue-id", "0123456789abcdef0123456789abcdef"),
                ("cfq-queue-name", "orders"),
                ("cfq-content-type", "json"),
                (
                    "cfq-metadata",
                    r#"{"CF-Content-Type":"json","app":"x y%","n":3}"#
                ),
                ("cfq-meta-app", "x%20y%25"),
                ("cfq-meta-n", "3"),
            ])
        );
    }

    #[test]
    fn what_the_server_chose_cannot_break_a_header() {
        let metadata = json!({"Ok": "a\r\nb", "clé": "ü😀", "n\r": "1"});
        let headers = headers_of("weird\r\nX: y", &metadata);
        let get = |name: &str| {
            headers
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(get(CONTENT_TYPE), Some("weird%0D%0AX:%20y"));
        assert_eq!(
            get(METADATA),
            Some(r#"{"Ok":"a\r\nb","cl\u00e9":"\u00fc\ud83d\ude00","n\r":"1"}"#)
        );
        assert_eq!(get("cfq-meta-ok"), Some("a%0D%0Ab"));
        assert!(
            headers
                .iter()
                .all(|(n, v)| is_token(n) && v.bytes().all(|b| (b' '..=b'~').contains(&b))),
            "{headers:?}"
        );
        assert_eq!(
            headers
                .iter()
                .filter(|(n, _)| n.starts_with(META_PREFIX))
                .count(),
            1,
            "keys that are no header name stay in cfq-metadata only"
        );
    }

    #[test]
    fn an_undecodable_body_goes_decoded_from_base64_when_it_is() {
        assert_eq!(
            undecoded_body(&BASE64.encode([0xffu8, 0x0d, 0x22])),
            [0xff, 0x0d, 0x22]
        );
        assert_eq!(undecoded_body("not base64!"), b"not base64!");
    }

    #[test]
    fn tokens() {
        assert!(is_token("X-Api-Key"));
        assert!(!is_token(""));
        assert!(!is_token("a b"));
        assert!(!is_token("é"));
    }
}
