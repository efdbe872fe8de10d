//! With the `schema` feature the generated wire types export JSON Schemas,
//! carrying the fragment's descriptions.
#![cfg(feature = "schema")]

use cf_queues::raw::types;

#[test]
fn wire_types_export_json_schemas() {
    let schema =
        serde_json::to_value(schemars::schema_for!(types::PulledMessage)).expect("serializable");
    let properties = &schema["properties"];
    for field in [
        "id",
        "attempts",
        "body",
        "lease_id",
        "metadata",
        "timestamp_ms",
    ] {
        assert!(
            properties.get(field).is_some(),
            "{field} missing from {schema}"
        );
    }
    assert_eq!(
        properties["lease_id"]["description"],
        "An opaque id for this in-flight message. Hold on to it to acknowledge or retry the message."
    );
    let ack = serde_json::to_value(schemars::schema_for!(types::AckResult)).expect("serializable");
    assert!(
        ack["properties"].get("ackCount").is_some(),
        "camelCase kept: {ack}"
    );
}
