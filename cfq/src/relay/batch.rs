//! `--batch N`: several messages in one POST, and what the service's 2xx
//! answer says of each. Pure: records in, bytes out; an answer's body in,
//! a decision per message out.
//!
//! The request is a JSON array of cfq's records (version 1, the format of
//! `cfq pull` and `cfq drain`, without lease ids). A 2xx answer may name
//! the messages to retry:
//!
//! ```json
//! {"retry": [{"id": "<Cfq's id of the message>", "delay_seconds": 30}, {"id": "…"}]}
//! ```
//!
//! | 2xx answer's body | meaning |
//! |---|---|
//! | empty | every message delivered (acked) |
//! | a JSON object without `retry`, or with `"retry": null` | every message delivered |
//! | a JSON object whose `retry` is a list of `{"id", "delay_seconds"?}` | those retried (after `delay_seconds`, 0 to 86,400, else `--retry-delay` for their attempts), the others acked; an id the batch did not hold is ignored and reported |
//! | Lambda's `{"batchItemFailures": [{"itemIdentifier": "…"}]}` (without `retry`) | read as `retry` |
//! | anything else (not JSON, not an object, a `retry` of another shape, more than 64 KiB) | unreadable: every message retried with `--retry-delay`, and reported (nothing is acked that the service may have refused) |

use std::collections::HashMap;
use std::time::Duration;

use cf_queues::PulledMessage;
use serde_json::Value;

use crate::ndjson::Received;

/// The most of a batch answer read: a retry list for 100 messages with
/// long ids fits many times over.
pub const MAX_BATCH_ANSWER_BYTES: usize = 64 * 1024;

/// Lambda's partial batch response: `{"batchItemFailures":
/// [{"itemIdentifier": "…"}]}`, read as `retry`.
const LAMBDA_KEY: &str = "batchItemFailures";

/// The longest delay an answer may ask for: the API's limit on a retry.
const MAX_DELAY_SECONDS: u64 = 86_400;

/// One message's record, serialized once.
pub fn record(message: &PulledMessage) -> Vec<u8> {
    let record = Received::pulled(message).without_token().record();
    // A record of strings, numbers and a JSON map always serializes.
    serde_json::to_vec(&record).unwrap_or_default()
}

/// Records packed into requests of at most `max_records` records and
/// `max_bytes` bytes each (a record larger than that alone goes alone):
/// the indexes of each request's records, in order.
pub fn chunks(records: &[Vec<u8>], max_records: usize, max_bytes: usize) -> Vec<Vec<usize>> {
    let mut chunks: Vec<Vec<usize>> = Vec::new();
    let mut bytes = 0;
    for (index, record) in records.iter().enumerate() {
        // The brackets, and a comma before every record but the first.
        let added = record.len() + 1;
        match chunks.last_mut() {
            Some(chunk) if chunk.len() < max_records && bytes + added <= max_bytes => {
                chunk.push(index);
                bytes += added;
            }
            _ => {
                chunks.push(vec![index]);
                bytes = 1 + added;
            }
        }
    }
    chunks
}

/// The body of one request: the records at `indexes`, as a JSON array.
pub fn body(records: &[Vec<u8>], indexes: &[usize]) -> Vec<u8> {
    let mut body =
        Vec::with_capacity(indexes.iter().map(|&i| records[i].len() + 1).sum::<usize>() + 2);
    body.push(b'[');
    for (n, &index) in indexes.iter().enumerate() {
        if n > 0 {
            body.push(b',');
        }
        body.extend_from_slice(&records[index]);
    }
    body.push(b']');
    body
}

/// What a 2xx answer to a batch says of its messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BatchAnswer {
    /// Each message of the batch, in order: `None` to ack it, `Some` to
    /// retry it (with the delay the service asked for, if it asked).
    Each {
        retry: Vec<Option<Option<Duration>>>,
        /// Ids the service named that the batch did not hold.
        unknown: Vec<String>,
    },
    /// The body could not be read: every message is retried.
    Unreadable(String),
}

/// Reads a 2xx answer's `body` to a batch of the messages `ids`, in order;
/// `unread` says why the body did not come whole (longer than the cap, cut
/// short), which makes it unreadable whatever came.
pub fn answer(body: &[u8], ids: &[&str], unread: Option<&str>) -> BatchAnswer {
    let each_acked = || BatchAnswer::Each {
        retry: vec![None; ids.len()],
        unknown: Vec::new(),
    };
    if let Some(why) = unread {
        return BatchAnswer::Unreadable(why.to_owned());
    }
    if body.iter().all(u8::is_ascii_whitespace) {
        return each_acked();
    }
    let Ok(Value::Object(object)) = serde_json::from_slice::<Value>(body) else {
        return BatchAnswer::Unreadable("the answer is not a JSON object".into());
    };
    // Lambda's spelling is read too, so that a service written for SQS's
    // partial batch responses never has its retries taken for acks.
    let (key, id_key) = if object.contains_key("retry") || !object.contains_key(LAMBDA_KEY) {
        ("retry", "id")
    } else {
        (LAMBDA_KEY, "itemIdentifier")
    };
    let list = match object.get(key) {
        None | Some(Value::Null) => return each_acked(),
        Some(Value::Array(list)) => list,
        Some(_) => return BatchAnswer::Unreadable(format!("{key:?} is not a list")),
    };
    let position: HashMap<&str, usize> = ids.iter().enumerate().map(|(i, id)| (*id, i)).collect();
    let mut retry = vec![None; ids.len()];
    let mut unknown = Vec::new();
    for entry in list {
        let Some(id) = entry.get(id_key).and_then(Value::as_str) else {
            return BatchAnswer::Unreadable(format!(
                "an entry of {key:?} has no string {id_key:?}"
            ));
        };
        let delay = match entry.get("delay_seconds") {
            None | Some(Value::Null) => None,
            Some(seconds) => match seconds.as_u64().filter(|s| *s <= MAX_DELAY_SECONDS) {
                Some(seconds) => Some(Duration::from_secs(seconds)),
                None => {
                    return BatchAnswer::Unreadable(format!(
                        "\"delay_seconds\" of {id:?} is not a whole number from 0 to \
                         {MAX_DELAY_SECONDS}"
                    ));
                }
            },
        };
        match position.get(id) {
            Some(&index) => retry[index] = Some(delay),
            None => unknown.push(id.to_owned()),
        }
    }
    BatchAnswer::Each { retry, unknown }
}

#[cfg(test)]
mod tests {
    use super::*;

    const IDS: [&str; 3] = ["a", "b", "c"];
    const SECOND: Duration = Duration::from_secs(1);

    fn each(retry: [Option<Option<Duration>>; 3], unknown: &[&str]) -> BatchAnswer {
        BatchAnswer::Each {
            retry: retry.to_vec(),
            unknown: unknown.iter().map(|s| (*s).to_owned()).collect(),
        }
    }

    fn read(body: &str) -> BatchAnswer {
        answer(body.as_bytes(), &IDS, None)
    }

    #[test]
    fn what_a_2xx_body_means() {
        let acked = each([None, None, None], &[]);
        assert_eq!(read(""), acked);
        assert_eq!(read(" \n"), acked);
        assert_eq!(read(r#"{"ok":true}"#), acked);
        assert_eq!(read(r#"{"retry":null}"#), acked);
        assert_eq!(read(r#"{"retry":[]}"#), acked);
        assert_eq!(
            read(r#"{"retry":[{"id":"b","delay_seconds":30},{"id":"c"},{"id":"zz"}]}"#),
            each([None, Some(Some(30 * SECOND)), Some(None)], &["zz"])
        );
        for unreadable in [
            "OK",
            "[1]",
            "{\"retry\":[{\"id\":\"a\"}",
            r#"{"retry":"a"}"#,
            r#"{"retry":[{"id":1}]}"#,
            r#"{"retry":[{"id":"a","delay_seconds":-1}]}"#,
            r#"{"retry":[{"id":"a","delay_seconds":86401}]}"#,
            r#"{"retry":[{"id":"a","delay_seconds":1.5}]}"#,
        ] {
            assert!(
                matches!(read(unreadable), BatchAnswer::Unreadable(_)),
                "{unreadable}"
            );
        }
        assert_eq!(
            read(r#"{"batchItemFailures":[{"itemIdentifier":"a"}]}"#),
            each([Some(None), None, None], &[])
        );
        assert!(matches!(
            read(r#"{"batchItemFailures":[{"id":"a"}]}"#),
            BatchAnswer::Unreadable(_)
        ));
        assert_eq!(
            answer(b"{}", &IDS, Some("cut short")),
            BatchAnswer::Unreadable("cut short".into()),
            "a body that did not come whole is never acked"
        );
    }

    #[test]
    fn chunks_keep_to_the_count_and_the_bytes() {
        let records: Vec<Vec<u8>> = [10, 10, 10, 50, 10, 10].map(|n| vec![b'x'; n]).to_vec();
        assert_eq!(
            chunks(&records, 2, 1_000),
            [vec![0, 1], vec![2, 3], vec![4, 5]]
        );
        // 1 + 11 + 11 + 11 = 34 bytes fit 40; 50 goes alone, over the cap.
        assert_eq!(
            chunks(&records, 10, 40),
            [vec![0, 1, 2], vec![3], vec![4, 5]]
        );
        assert_eq!(body(&records, &[0, 1]).len(), 1 + 10 + 1 + 10 + 1);
        assert_eq!(body(&[b"{}".to_vec(), b"[]".to_vec()], &[1, 0]), b"[[],{}]");
    }
}
