//! The message types' unit tests.

use serde_json::{Map, Value};

use super::received::{body, count_u32, count_u64};
use super::*;
use crate::error::BodyError;

fn body_of(content_type: &str, raw: &str) -> Body {
    let mut metadata = Map::new();
    metadata.insert(CONTENT_TYPE_KEY.into(), Value::from(content_type));
    body(Some(Value::from(raw)), &metadata)
}

#[test]
fn json_base64_and_plain() {
    let b64 = body_of("json", "eyJhIjoxfQ==");
    assert_eq!(b64.json::<Value>().ok(), Some(serde_json::json!({"a": 1})));
    let plain = body_of("json", r#"{"a":1}"#);
    assert_eq!(
        plain.json::<Value>().ok(),
        Some(serde_json::json!({"a": 1}))
    );
    let number = body_of("json", "1234");
    assert_eq!(number.json::<u32>().ok(), Some(1234));
}

#[test]
fn v8_and_unknown_are_typed_errors() {
    assert!(matches!(
        body_of("v8", "AAAA").json::<Value>(),
        Err(BodyError::UnsupportedContentType { content_type }) if content_type == "v8"
    ));
    assert!(matches!(
        body_of("v8", "AAAA").bytes(),
        Err(BodyError::UnsupportedContentType { .. })
    ));
    assert!(matches!(
        body_of("text", "hi").json::<Value>(),
        Err(BodyError::ContentTypeMismatch {
            requested: "json",
            ..
        })
    ));
}

#[test]
fn received_bodies_push_again_when_http_can_carry_them() {
    assert_eq!(
        body_of("text", "hi").to_message().ok(),
        Some(Message::text("hi"))
    );
    assert_eq!(
        body_of("json", "eyJhIjoxfQ==").to_message().ok(),
        Message::json(&serde_json::json!({"a": 1})).ok()
    );
    for (kind, raw) in [
        ("json", "WzFd"),
        ("bytes", "AAE="),
        ("v8", "AAE="),
        ("", "x"),
    ] {
        assert!(
            matches!(
                body_of(kind, raw).to_message(),
                Err(BodyError::NotPushable { .. })
            ),
            "{kind}"
        );
    }
}

#[test]
fn clamps_server_numbers() {
    assert_eq!(count_u32(Some(-1.0)), 0);
    assert_eq!(count_u32(Some(f64::NAN)), 0);
    assert_eq!(count_u32(Some(3.0)), 3);
    assert_eq!(count_u32(Some(1e20)), u32::MAX);
    assert_eq!(count_u64(None), 0);
    assert_eq!(known_u32(None), None);
    assert_eq!(known_u32(Some(-1.0)), None);
    assert_eq!(known_u32(Some(f64::NAN)), None);
    assert_eq!(known_u32(Some(0.0)), Some(0));
    assert_eq!(known_u32(Some(3.0)), Some(3));
    assert_eq!(known_u32(Some(1e20)), Some(u32::MAX));
    assert_eq!(known_u64(None), None);
    assert_eq!(known_u64(Some(7.0)), Some(7));
}

#[test]
fn token_debug_is_short() {
    let lease = LeaseId::from("a".repeat(100));
    assert_eq!(
        format!("{lease:?}"),
        format!("LeaseId({}…)", "a".repeat(16))
    );
}
