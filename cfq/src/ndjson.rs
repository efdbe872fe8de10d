//! The message file format: what `drain` writes and `push --file` and
//! `replay` read. Described for users in `cfq --help` (`args.rs`).
//!
//! A line is a *record* when it is a JSON object with a top-level `cfq`
//! key, and a *plain* message otherwise. Records carry what a received
//! message had (body, content type, attempts, timestamp, id, metadata) so
//! that a drained queue can be inspected and pushed back; plain lines let
//! people write message files by hand.
//!
//! Version 1 of a record:
//!
//! ```text
//! {"cfq":1,"id":"…","attempts":2,"timestamp_ms":1767225600000,
//!  "content_type":"json","body":{"order":42},"metadata":{"CF-Content-Type":"json"}}
//! ```
//!
//! `body` holds the decoded body (a string for `text`, any JSON value for
//! `json`); `body_raw` holds, instead, a body that cannot be decoded here
//! (`bytes`, `v8`, unknown types, `json` that does not parse), exactly as
//! the API sent it. Only `cfq`, `content_type` and `body` or `body_raw`
//! are needed to read a record; other keys are ignored.

use std::io::{self, BufRead};

use cf_queues::message::{ContentType, PeekedMessage};
use cf_queues::{Body, Message, PulledMessage};
use serde::Serialize;
use serde_json::{Map, Value};

/// The record version this build writes and reads.
pub const VERSION: u64 = 1;

/// A received message, whichever call received it.
#[derive(Debug, Clone, Copy)]
pub struct Received<'a> {
    pub id: &'a str,
    pub attempts: u32,
    pub timestamp_ms: u64,
    pub metadata: &'a Map<String, Value>,
    pub body: &'a Body,
    /// The lease id of a pulled message, the ref of a peeked one.
    pub token: Option<&'a str>,
    token_key: TokenKey,
}

#[derive(Debug, Clone, Copy)]
enum TokenKey {
    None,
    Lease,
    Ref,
}

/// A [`Received`] of any of the client's received messages: they have the
/// same fields but no type in common.
macro_rules! received {
    ($m:expr, $token:expr, $token_key:expr) => {
        Received {
            id: &$m.id,
            attempts: $m.attempts,
            timestamp_ms: $m.timestamp_ms,
            metadata: &$m.metadata,
            body: $m.body(),
            token: $token,
            token_key: $token_key,
        }
    };
}

impl<'a> Received<'a> {
    pub fn pulled(m: &'a PulledMessage) -> Received<'a> {
        // A message the API sent without a lease has none to print.
        let lease = Some(m.lease_id.as_str()).filter(|lease| !lease.is_empty());
        received!(m, lease, TokenKey::Lease)
    }

    pub fn peeked(m: &'a PeekedMessage) -> Received<'a> {
        received!(m, Some(m.peek_ref.as_str()), TokenKey::Ref)
    }

    /// The same message without its lease: what a drain file keeps, since
    /// a lease is worthless once acknowledged.
    pub fn without_token(mut self) -> Received<'a> {
        self.token = None;
        self.token_key = TokenKey::None;
        self
    }

    /// The record of this message.
    pub fn record(&self) -> Record<'a> {
        let (body, body_raw) = match decoded(self.body) {
            Some(value) => (Some(value), None),
            None => (None, Some(self.body.raw())),
        };
        let (lease_id, peek_ref) = match self.token_key {
            TokenKey::None => (None, None),
            TokenKey::Lease => (self.token, None),
            TokenKey::Ref => (None, self.token),
        };
        Record {
            cfq: VERSION,
            id: self.id,
            attempts: self.attempts,
            timestamp_ms: self.timestamp_ms,
            content_type: self.body.content_type().as_str().to_owned(),
            body,
            body_raw,
            metadata: self.metadata,
            lease_id,
            peek_ref,
        }
    }

    /// The body on one line, for a table.
    pub fn body_preview(&self) -> String {
        match decoded(self.body) {
            Some(Value::String(text)) => text,
            Some(value) => value.to_string(),
            None => format!(
                "<{} body, {} bytes raw>",
                self.body.content_type(),
                self.body.raw().len()
            ),
        }
    }
}

/// The decoded body, when this build can decode it.
fn decoded(body: &Body) -> Option<Value> {
    match body.content_type() {
        ContentType::Text => body.text().ok().map(|t| Value::String(t.to_owned())),
        ContentType::Json => body.json::<Value>().ok(),
        _ => None,
    }
}

/// A record as written; the field order is the documented one.
#[derive(Debug, Serialize)]
pub struct Record<'a> {
    cfq: u64,
    id: &'a str,
    attempts: u32,
    timestamp_ms: u64,
    content_type: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    body: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    body_raw: Option<&'a str>,
    metadata: &'a Map<String, Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    lease_id: Option<&'a str>,
    #[serde(rename = "ref", skip_serializing_if = "Option::is_none")]
    peek_ref: Option<&'a str>,
}

impl Record<'_> {
    /// Whether HTTP can push this body again.
    pub fn pushable(&self) -> bool {
        match self.content_type.as_str() {
            "text" => matches!(self.body, Some(Value::String(_))),
            "json" => matches!(self.body, Some(Value::Object(_))),
            _ => false,
        }
    }
}

/// What one line of a message file is.
#[derive(Debug)]
pub enum Line {
    /// Empty or white space only: skipped.
    Blank,
    Message(Message),
    /// Cannot be read: a broken record, text that is not UTF-8.
    Bad(String),
    /// Read, but HTTP cannot push it: it stays in the file.
    NotPushable(String),
}

/// Reads one line (without its line ending).
///
/// A line this cannot trust is [`Line::Bad`], wherever it stands in the
/// file: one holding a NUL byte (a crash on some file systems leaves the
/// unwritten end of a file as zeros), and, unless `text_only`, one that
/// starts with `{` but is not a JSON object. That covers every record
/// torn by a crash, with or without the line ending `drain` adds when it
/// next opens the file, as well as a hand-written object with a typo:
/// pushed as text, either would reach consumers as something nobody
/// wrote. `text_only` (`--text`) takes every other line as written.
pub fn parse_line(line: &str, text_only: bool) -> Line {
    if line.contains('\0') {
        return Line::Bad(
            "contains a NUL byte (a crash can leave zeros where a line was being written)".into(),
        );
    }
    if line.trim().is_empty() {
        return Line::Blank;
    }
    if text_only {
        return Line::Message(Message::text(line));
    }
    let trimmed = line.trim_start();
    if !trimmed.starts_with('{') {
        return Line::Message(Message::text(line));
    }
    match serde_json::from_str::<Value>(line) {
        Ok(Value::Object(object)) if object.contains_key("cfq") => record(object),
        Ok(Value::Object(object)) => match Message::json(&object) {
            Ok(message) => Line::Message(message),
            Err(e) => Line::Bad(e.to_string()),
        },
        _ if looks_like_record(trimmed) || torn_opening(trimmed) => {
            Line::Bad("starts like a cfq record but is not a whole one (a torn line?)".into())
        }
        // A line that opens with `{` can only parse as an object.
        Ok(_) => Line::Bad("starts with { but is not a JSON object".into()),
        Err(e) => Line::Bad(format!(
            "starts with {{ but is not a JSON object: {}",
            json_fault(&e)
        )),
    }
}

/// What is wrong with a line's JSON, located by column: serde's own text
/// says "line 1", which reads as the file's first line.
fn json_fault(error: &serde_json::Error) -> String {
    match error.classify() {
        serde_json::error::Category::Eof => "it ends before the object does".to_owned(),
        _ => {
            let text = error.to_string();
            let what = text.split(" at line ").next().unwrap_or(&text);
            format!("{what} at column {}", error.column())
        }
    }
}

fn looks_like_record(trimmed: &str) -> bool {
    trimmed
        .trim_start_matches('{')
        .trim_start()
        .starts_with(RECORD_KEY)
}

/// How every record opens, after its `{`.
const RECORD_KEY: &str = "\"cfq\"";

/// A record cut within its first bytes (`{`, `{"c`) no longer says it is
/// one; named as what it most likely is.
fn torn_opening(trimmed: &str) -> bool {
    match trimmed.strip_prefix('{') {
        Some(rest) => RECORD_KEY.starts_with(rest.trim_start()),
        None => false,
    }
}

fn record(object: Map<String, Value>) -> Line {
    match object.get("cfq").and_then(Value::as_u64) {
        Some(VERSION) => {}
        Some(other) => {
            return Line::Bad(format!(
                "a cfq record of version {other}; this cfq reads version {VERSION}"
            ));
        }
        None => return Line::Bad("\"cfq\" must be the record version, 1".into()),
    }
    let Some(content_type) = object.get("content_type").and_then(Value::as_str) else {
        return Line::Bad("a cfq record needs a \"content_type\"".into());
    };
    let body = object.get("body");
    if body.is_none() && !object.contains_key("body_raw") {
        return Line::Bad("a cfq record needs a \"body\" or a \"body_raw\"".into());
    }
    match (content_type, body) {
        ("text", Some(Value::String(text))) => Line::Message(Message::text(text.as_str())),
        ("text", Some(_)) => Line::Bad("a text record's body must be a string".into()),
        // The client says what a body that is not an object is; over HTTP
        // no such body can be pushed, so the record is skipped, not bad.
        ("json", Some(value)) => match Message::json(value) {
            Ok(message) => Line::Message(message),
            Err(e) if value.is_object() => Line::Bad(e.to_string()),
            Err(e) => Line::NotPushable(e.to_string()),
        },
        ("json", None) => {
            Line::NotPushable("a json body that could not be decoded when it was saved".into())
        }
        ("bytes" | "v8", _) => Line::NotPushable(format!(
            "a {content_type} body: only Workers can push those"
        )),
        (other, _) => Line::NotPushable(format!(
            "a body of content type {other:?}, which HTTP cannot push"
        )),
    }
}

/// One line of a file.
#[derive(Debug)]
pub struct NumberedLine {
    /// From 1.
    pub number: u64,
    /// Its text without the line ending, or why it is not text.
    pub text: Result<String, String>,
    /// How many bytes it took in the file, line ending included.
    pub bytes: usize,
}

/// Reads the lines of a message file one by one, numbered from 1, without
/// their line endings (`\n`, or `\r\n`).
pub struct Lines<R> {
    reader: R,
    number: u64,
    buffer: Vec<u8>,
}

impl<R: BufRead> Lines<R> {
    pub fn new(reader: R) -> Lines<R> {
        Lines {
            reader,
            number: 0,
            buffer: Vec::new(),
        }
    }

    /// How many lines were read so far.
    pub fn number(&self) -> u64 {
        self.number
    }

    /// The next line, if any.
    pub fn next_line(&mut self) -> io::Result<Option<NumberedLine>> {
        self.buffer.clear();
        let read = self.reader.read_until(b'\n', &mut self.buffer)?;
        if read == 0 {
            return Ok(None);
        }
        self.number += 1;
        if self.buffer.last() == Some(&b'\n') {
            self.buffer.pop();
            if self.buffer.last() == Some(&b'\r') {
                self.buffer.pop();
            }
        }
        let text = String::from_utf8(std::mem::take(&mut self.buffer))
            .map_err(|_| "not UTF-8 text".to_owned());
        Ok(Some(NumberedLine {
            number: self.number,
            text,
            bytes: read,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str, text_only: bool) -> Line {
        parse_line(line, text_only)
    }

    fn message(line: &str) -> Message {
        match parse(line, false) {
            Line::Message(m) => m,
            other => panic!("{line}: {other:?}"),
        }
    }

    #[test]
    fn plain_lines() {
        assert_eq!(message("hello"), Message::text("hello"));
        assert_eq!(message("[1, 2]"), Message::text("[1, 2]"));
        assert_eq!(
            message(r#"{"order": 42}"#),
            Message::json(&serde_json::json!({"order": 42})).unwrap()
        );
        assert!(matches!(parse("   ", false), Line::Blank));
        assert!(matches!(parse(r#"{"cfq":1}"#, true), Line::Message(_)));
    }

    #[test]
    fn records() {
        assert_eq!(
            message(r#"{"cfq":1,"content_type":"text","body":"hi","attempts":3}"#),
            Message::text("hi")
        );
        assert_eq!(
            message(r#"{"cfq":1,"content_type":"json","body":{"cfq":"theirs"}}"#),
            Message::json(&serde_json::json!({"cfq": "theirs"})).unwrap()
        );
        for line in [
            r#"{"cfq":1,"content_type":"json","body":[1]}"#,
            r#"{"cfq":1,"content_type":"bytes","body_raw":"AAE="}"#,
            r#"{"cfq":1,"content_type":"v8","body_raw":"AAE="}"#,
        ] {
            assert!(matches!(parse(line, false), Line::NotPushable(_)), "{line}");
        }
        match parse(r#"{"cfq":1,"content_type":"json","body":"x"}"#, false) {
            Line::NotPushable(why) => assert!(why.ends_with("not a string"), "{why}"),
            other => panic!("{other:?}"),
        }
        for line in [
            r#"{"cfq":2,"content_type":"text","body":"x"}"#,
            r#"{"cfq":1,"body":"x"}"#,
            r#"{"cfq":1,"content_type":"text"}"#,
            r#"{"cfq":1,"content_type":"te"#,
        ] {
            assert!(matches!(parse(line, false), Line::Bad(_)), "{line}");
        }
    }

    #[test]
    fn line_endings() {
        let mut lines = Lines::new(&b"a\r\nb\n\xff\nc"[..]);
        let mut seen = Vec::new();
        while let Some(line) = lines.next_line().unwrap() {
            seen.push((line.number, line.text.ok(), line.bytes));
        }
        assert_eq!(
            seen,
            [
                (1, Some("a".into()), 3),
                (2, Some("b".into()), 2),
                (3, None, 2),
                (4, Some("c".into()), 1)
            ]
        );
    }

    fn bad(line: &str, text_only: bool) -> String {
        match parse(line, text_only) {
            Line::Bad(reason) => reason,
            other => panic!("{line:?}: {other:?}"),
        }
    }

    /// A torn record, wherever it stands and whether or not a line ending
    /// followed it (drain adds one to heal a torn tail), is refused:
    /// before, a terminated `{"cf` was pushed as text.
    #[test]
    fn a_torn_record_is_refused_wherever_it_stands() {
        let record =
            r#"{"cfq":1,"id":"m","attempts":1,"content_type":"text","body":"hi","metadata":{}}"#;
        for end in 1..record.len() {
            let reason = bad(&record[..end], false);
            assert!(reason.contains("torn"), "{:?}: {reason}", &record[..end]);
        }
        assert_eq!(message(record), Message::text("hi"));
        for tail in ["  { \"cf", "{ \"cfq\" : 1, \"co", "\t{"] {
            assert!(bad(tail, false).contains("torn"), "{tail:?}");
        }
    }

    /// A line that starts with `{` (after blanks) is a JSON object or is
    /// refused; it is never pushed as text. Before, these went as text.
    #[test]
    fn a_line_opening_with_a_brace_is_an_object_or_refused() {
        for (line, reason) in [
            (
                r#"{"broken": "#,
                "starts with { but is not a JSON object: it ends before the object does",
            ),
            (
                "{not json",
                "starts with { but is not a JSON object: key must be a string at column 2",
            ),
            (
                r#"  {"a": 1} trailing"#,
                "starts with { but is not a JSON object: trailing characters at column 12",
            ),
            (
                "{\"a\": 1,}",
                "starts with { but is not a JSON object: trailing comma at column 9",
            ),
        ] {
            assert_eq!(bad(line, false), reason, "{line:?}");
        }
        // --text keeps its meaning: every line as written.
        for line in [r#"{"broken": "#, "{not json", "{\"cf", "{\"cfq\":1,\"co"] {
            assert_eq!(
                match parse(line, true) {
                    Line::Message(m) => m,
                    other => panic!("{line:?}: {other:?}"),
                },
                Message::text(line)
            );
        }
        // Not opening with a brace: text, as before.
        assert_eq!(message("x{\"cf"), Message::text("x{\"cf"));
        assert_eq!(message("[1, 2"), Message::text("[1, 2"));
    }

    /// A NUL byte is refused in any mode, --text included: it is what a
    /// power loss leaves, not what anyone wrote.
    #[test]
    fn a_line_with_a_nul_byte_is_refused_in_every_mode() {
        for line in ["\0\0\0\0", "abc\0", "{\"a\":\"\0\"}", "\0"] {
            for text_only in [false, true] {
                assert!(
                    bad(line, text_only).contains("NUL byte"),
                    "{line:?} {text_only}"
                );
            }
        }
    }
}
