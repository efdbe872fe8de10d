//! Pull and peek answers, serialized as the client reads them.
//!
//! A 100-message pull can be 77 MB of JSON (128 KB bodies of control
//! characters escape to six times their size). Serialized at once, it sat
//! in memory until the client read it, and a client that never did kept it
//! there: 60 such peeks held 4.4 GB. Here the answer is produced in chunks
//! of [`Listing::chunk`] bytes, and only when hyper asks for the next one,
//! which it does only once its write buffer (the per-connection response
//! buffer) has room. Message bodies are shared with the broker, not copied.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use base64::Engine as _;
use bytes::Bytes;
use http_body::{Frame, SizeHint};
use serde::Serialize;

use crate::server::Conn;
use crate::state::BodyKind;

/// An envelope whose result holds a `messages` array: each message's fields
/// are serialized up front (they are small), its body piece by piece.
pub(crate) struct Listing {
    /// Everything up to and including `"messages":[`.
    head: Vec<u8>,
    items: Vec<Chunk>,
    /// Everything after the array's `]`.
    tail: Vec<u8>,
    /// The size of the pieces produced.
    chunk: usize,
    /// The connection whose response buffer the pieces count against.
    conn: Option<Arc<Conn>>,
    next_item: usize,
    stage: Stage,
    scratch: Vec<u8>,
}

/// One message: its other fields as an unclosed JSON object, and its body.
pub(crate) struct Chunk {
    fields: Vec<u8>,
    kind: BodyKind,
    body: Arc<[u8]>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Head,
    Fields,
    Body { offset: usize },
    Tail,
    Done,
}

impl Chunk {
    /// `fields` serializes to a JSON object (every field but the body).
    pub(crate) fn new(
        fields: &impl Serialize,
        kind: BodyKind,
        body: Arc<[u8]>,
    ) -> serde_json::Result<Chunk> {
        let mut fields = serde_json::to_vec(fields)?;
        // The body goes last, inside the same object: drop the closing brace.
        fields.pop();
        let body = match (kind, std::str::from_utf8(&body)) {
            // Text bodies are UTF-8 by construction; a foreign one is shown
            // lossily, as a text body always was.
            (BodyKind::Text, Err(_)) => Arc::from(String::from_utf8_lossy(&body).as_bytes()),
            _ => body,
        };
        Ok(Chunk { fields, kind, body })
    }
}

impl Listing {
    /// `{"success":true,...,"result":{"messages":[...]` then `rest`, the
    /// other fields of the result, which serializes to a JSON object.
    pub(crate) fn new(
        items: Vec<Chunk>,
        rest: &impl Serialize,
        chunk: usize,
        conn: Option<Arc<Conn>>,
    ) -> serde_json::Result<Listing> {
        let head = br#"{"success":true,"errors":[],"messages":[],"result":{"messages":["#.to_vec();
        let rest = serde_json::to_vec(rest)?;
        let mut tail = b"]".to_vec();
        // `{"a":1}` continues the result object as `,"a":1}`; `{}` as `}`.
        if rest.len() > 2 {
            tail.push(b',');
        }
        tail.extend_from_slice(rest.get(1..).unwrap_or(b"}"));
        tail.push(b'}');
        Ok(Listing {
            head,
            items,
            tail,
            chunk: chunk.max(64),
            conn,
            next_item: 0,
            stage: Stage::Head,
            scratch: Vec::new(),
        })
    }

    pub(crate) fn is_done(&self) -> bool {
        self.stage == Stage::Done
    }

    /// The next piece of the answer, about [`Listing::chunk`] bytes long;
    /// `None` at the end.
    pub(crate) fn next_chunk(&mut self) -> Option<Bytes> {
        let mut out = Vec::with_capacity(self.chunk.saturating_add(64));
        while out.len() < self.chunk {
            match self.stage {
                Stage::Head => {
                    out.extend_from_slice(&self.head);
                    self.stage = self.after_item();
                }
                Stage::Fields => {
                    let Some(item) = self.items.get(self.next_item) else {
                        self.stage = Stage::Tail;
                        continue;
                    };
                    if self.next_item > 0 {
                        out.push(b',');
                    }
                    out.extend_from_slice(&item.fields);
                    out.extend_from_slice(br#","body":""#);
                    self.stage = Stage::Body { offset: 0 };
                }
                Stage::Body { offset } => {
                    let room = self.chunk.saturating_sub(out.len()).max(64);
                    let Some(item) = self.items.get(self.next_item) else {
                        self.stage = Stage::Tail;
                        continue;
                    };
                    let end = encode_piece(item, offset, room, &mut out, &mut self.scratch);
                    if end < item.body.len() {
                        self.stage = Stage::Body { offset: end };
                    } else {
                        out.extend_from_slice(br#""}"#);
                        // Delivered: the broker's copy is the only one left.
                        if let Some(item) = self.items.get_mut(self.next_item) {
                            item.body = Arc::from(&[][..]);
                        }
                        self.next_item += 1;
                        self.stage = self.after_item();
                    }
                }
                Stage::Tail => {
                    out.extend_from_slice(&self.tail);
                    self.stage = Stage::Done;
                }
                Stage::Done => break,
            }
        }
        if out.is_empty() {
            return None;
        }
        if let Some(conn) = &self.conn {
            conn.produced(out.len());
        }
        Some(Bytes::from(out))
    }

    fn after_item(&self) -> Stage {
        if self.next_item < self.items.len() {
            Stage::Fields
        } else {
            Stage::Tail
        }
    }
}

/// Appends the JSON-string form of `item.body[offset..]`, at most about
/// `room` bytes of it, and returns where it stopped.
fn encode_piece(
    item: &Chunk,
    offset: usize,
    room: usize,
    out: &mut Vec<u8>,
    scratch: &mut Vec<u8>,
) -> usize {
    let body = &item.body;
    match item.kind {
        BodyKind::Text => {
            // Escaping makes at most six bytes of one (`\u0001`); at least
            // four input bytes hold a whole character.
            let mut end = offset.saturating_add((room / 6).max(4)).min(body.len());
            // Back off continuation bytes (10xxxxxx) to end on a character.
            while end > offset && body.get(end).is_some_and(|b| b & 0xc0 == 0x80) {
                end -= 1;
            }
            let piece =
                std::str::from_utf8(body.get(offset..end).unwrap_or_default()).unwrap_or_default();
            scratch.clear();
            if serde_json::to_writer(&mut *scratch, piece).is_ok() {
                // Without the quotes serde_json put around the piece.
                let inner = scratch
                    .get(1..scratch.len().saturating_sub(1))
                    .unwrap_or_default();
                out.extend_from_slice(inner);
            }
            end.max(offset.saturating_add(1)).min(body.len())
        }
        BodyKind::Json | BodyKind::Bytes | BodyKind::V8 => {
            // Whole groups of three bytes, so that padding only ends the body.
            let take = ((room / 4) * 3).max(3);
            let end = offset.saturating_add(take).min(body.len());
            let piece = body.get(offset..end).unwrap_or_default();
            let start = out.len();
            out.resize(
                start + base64::encoded_len(piece.len(), true).unwrap_or(0),
                0,
            );
            let written = base64::engine::general_purpose::STANDARD
                .encode_slice(piece, out.get_mut(start..).unwrap_or_default())
                .unwrap_or(0);
            out.truncate(start + written);
            end
        }
    }
}

/// A [`Listing`] as a response body, after its first chunk.
pub(crate) struct Streamed {
    first: Option<Bytes>,
    rest: Listing,
}

impl Streamed {
    pub(crate) fn new(first: Option<Bytes>, rest: Listing) -> Streamed {
        Streamed { first, rest }
    }
}

impl http_body::Body for Streamed {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let next = match self.first.take() {
            Some(first) => Some(first),
            None => self.rest.next_chunk(),
        };
        Poll::Ready(next.map(|data| Ok(Frame::data(data))))
    }

    fn is_end_stream(&self) -> bool {
        self.first.is_none() && self.rest.is_done()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    #[derive(Serialize)]
    struct Fields {
        id: &'static str,
    }

    #[derive(Serialize)]
    struct Rest {
        count: u32,
    }

    fn item(kind: BodyKind, body: &[u8]) -> Chunk {
        Chunk::new(&Fields { id: "m" }, kind, Arc::from(body)).expect("serializes")
    }

    fn collect(mut listing: Listing) -> (Value, usize) {
        let mut out = Vec::new();
        let mut largest = 0;
        while let Some(chunk) = listing.next_chunk() {
            largest = largest.max(chunk.len());
            out.extend_from_slice(&chunk);
        }
        assert!(listing.is_done());
        (serde_json::from_slice(&out).expect("valid JSON"), largest)
    }

    #[test]
    fn pieces_join_into_the_whole_answer() {
        let text = "a\u{1}\"\\é漢🦀\n".repeat(500);
        let bytes: Vec<u8> = (0..=255u8).cycle().take(10_001).collect();
        let items = [
            item(BodyKind::Text, text.as_bytes()),
            item(BodyKind::Json, br#"{"k":[1,2]}"#),
            item(BodyKind::Bytes, &bytes),
            item(BodyKind::Text, b""),
            item(BodyKind::Text, b"\xff\xfeok"),
        ];
        for chunk in [64, 100, 1024, 16 * 1024] {
            let listing = Listing::new(
                items
                    .iter()
                    .map(|i| Chunk {
                        fields: i.fields.clone(),
                        kind: i.kind,
                        body: Arc::clone(&i.body),
                    })
                    .collect(),
                &Rest { count: 7 },
                chunk,
                None,
            )
            .expect("serializes");
            let (answer, largest) = collect(listing);
            let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
            assert_eq!(
                answer,
                json!({
                    "success": true, "errors": [], "messages": [],
                    "result": {
                        "messages": [
                            {"id": "m", "body": text},
                            {"id": "m", "body": b64(br#"{"k":[1,2]}"#)},
                            {"id": "m", "body": b64(&bytes)},
                            {"id": "m", "body": ""},
                            {"id": "m", "body": "\u{fffd}\u{fffd}ok"},
                        ],
                        "count": 7,
                    }
                }),
                "chunk {chunk}"
            );
            assert!(largest <= chunk.max(64) + 128, "chunk {chunk}: {largest}");
        }
    }

    #[test]
    fn an_empty_listing_is_one_piece() {
        let mut listing = Listing::new(Vec::new(), &PeekRestLike {}, 1024, None).expect("ok");
        let first = listing.next_chunk().expect("one piece");
        assert!(listing.is_done());
        assert_eq!(
            serde_json::from_slice::<Value>(&first).expect("json"),
            json!({"success": true, "errors": [], "messages": [], "result": {"messages": []}})
        );
        assert!(listing.next_chunk().is_none());
    }

    #[derive(Serialize)]
    struct PeekRestLike {}
}
