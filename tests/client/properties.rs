//! Property tests: no input makes a decoder panic, and every message survives
//! the trip through the emulator and back, byte for byte.

use cf_queues::fuzzing::{decode_everything, decode_retry_after};
use cf_queues::{Acks, Message, PullOptions, Queue};
use cf_queues_emulator::EmulatorHandle;
use cf_queues_testkit::emulators::emulator;
use proptest::prelude::*;
use serde_json::{Map, Value, json};

fn json_value() -> impl Strategy<Value = Value> {
    let finite = any::<f64>().prop_filter("finite", |f| f.is_finite());
    // Each kind of number as likely as null, a boolean or a string.
    let number = prop_oneof![
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        finite.prop_map(Value::from),
    ];
    let leaf = prop_oneof![
        1 => Just(Value::Null),
        1 => any::<bool>().prop_map(Value::from),
        3 => number,
        1 => ".{0,20}".prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
            prop::collection::btree_map(".{0,8}", inner, 0..8)
                .prop_map(|m| Value::Object(m.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// Envelopes with plausible keys and arbitrary values: deeper than random bytes reach.
fn envelope_like() -> impl Strategy<Value = Vec<u8>> {
    let message = (
        json_value(),
        json_value(),
        json_value(),
        ".{0,12}",
        json_value(),
    )
        .prop_map(|(id, attempts, body, kind, lease)| {
            json!({"id": id, "attempts": attempts, "body": body, "lease_id": lease, "ref": lease,
               "metadata": {"CF-Content-Type": kind}, "timestamp_ms": attempts})
        });
    let messages = prop_oneof![
        prop::collection::vec(message, 0..4).prop_map(Value::Array),
        json_value()
    ];
    (any::<Option<bool>>(), json_value(), messages, json_value(), json_value()).prop_map(|(success, errors, messages, counts, warnings)| {
        // The fields of every operation's result, the six newer ones included.
        let result = json!({"messages": messages, "message_backlog_count": counts, "ackCount": counts,
                            "retryCount": counts, "extendCount": counts, "warnings": warnings,
                            "errors": errors, "backlog_count": counts, "backlog_bytes": counts,
                            "oldest_message_timestamp_ms": counts, "completed": warnings,
                            "started_at": counts, "queue_id": warnings, "queue_name": counts,
                            "created_on": counts, "modified_on": warnings, "consumers": errors,
                            "producers": counts,
                            "metadata": {"metrics": {"backlog_count": counts}}});
        serde_json::to_vec(&json!({"success": success, "errors": errors, "messages": [], "result": result})).unwrap_or_default()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_bytes_never_panic(body in prop::collection::vec(any::<u8>(), 0..2048)) {
        decode_everything(&body);
    }

    #[test]
    fn arbitrary_envelopes_never_panic(body in envelope_like()) {
        decode_everything(&body);
    }

    #[test]
    fn arbitrary_retry_after_never_panics(text in ".{0,40}") {
        let _ = decode_retry_after(&text);
    }
}

struct Roundtrip {
    runtime: tokio::runtime::Runtime,
    _emulator: EmulatorHandle,
    queue: Queue,
}

fn roundtrip() -> Roundtrip {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let emulator = runtime.block_on(emulator());
    let queue = emulator
        .client()
        .and_then(|c| c.queue("props"))
        .expect("queue");
    Roundtrip {
        runtime,
        _emulator: emulator,
        queue,
    }
}

impl Roundtrip {
    /// Pushes one message, pulls it back and acknowledges it.
    fn trip(&self, message: Message) -> cf_queues::PulledMessage {
        self.runtime.block_on(async {
            self.queue.push(message).await.expect("push");
            let mut batch = self
                .queue
                .pull(PullOptions::new().batch_size(1))
                .await
                .expect("pull");
            let pulled = batch.messages.pop().expect("one message");
            self.queue.ack(Acks::new().ack(&pulled)).await.expect("ack");
            pulled
        })
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn text_messages_survive_the_emulator(text in "\\PC{0,200}") {
        let trip = roundtrip();
        let pulled = trip.trip(Message::text(text.clone()));
        prop_assert_eq!(pulled.body().text().expect("text"), text.as_str());
    }

    #[test]
    fn json_messages_survive_the_emulator(value in json_value()) {
        let trip = roundtrip();
        // A json body is an object (Cloudflare's schema); anything goes inside.
        let object = json!({"value": value});
        let pulled = trip.trip(Message::json(&object).expect("serializable"));
        prop_assert_eq!(pulled.body().json::<Value>().expect("json"), object);
    }
}
