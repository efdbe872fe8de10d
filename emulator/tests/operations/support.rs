//! What the operations tests share beyond the test kit: raw-HTTP calls by
//! method, with the emulator's token and a JSON body, so that each request
//! reads on one line as the request it is.

use cf_queues_emulator::EmulatorHandle;
use cf_queues_testkit::raw_http::{Answer, call, create, enable_http_pull};
use reqwest::Method;
use serde_json::{Value, json};

/// `GET path`.
pub async fn get(handle: &EmulatorHandle, path: &str) -> Answer {
    call(handle, Method::GET, path, None).await
}

/// `DELETE path`, with no body.
pub async fn delete(handle: &EmulatorHandle, path: &str) -> Answer {
    call(handle, Method::DELETE, path, None).await
}

/// `POST path` with `body`.
pub async fn post(handle: &EmulatorHandle, path: &str, body: Value) -> Answer {
    call(handle, Method::POST, path, Some(body)).await
}

/// `PUT path` with `body`.
pub async fn put(handle: &EmulatorHandle, path: &str, body: Value) -> Answer {
    call(handle, Method::PUT, path, Some(body)).await
}

/// `PATCH path` with `body`.
pub async fn patch(handle: &EmulatorHandle, path: &str, body: Value) -> Answer {
    call(handle, Method::PATCH, path, Some(body)).await
}

/// Where the first error of `answer` points (`source.pointer`).
pub fn error_pointer(answer: &Answer) -> &Value {
    &answer.body["errors"][0]["source"]["pointer"]
}

/// The pointers of refused queue settings.
pub const RETENTION: &str = "/settings/message_retention_period";
/// See [`RETENTION`].
pub const DELIVERY_DELAY: &str = "/settings/delivery_delay";
/// See [`RETENTION`].
pub const PAUSED: &str = "/settings/delivery_paused";

/// The names of the queues a list answered, in its order.
pub fn queue_names(answer: &Answer) -> Vec<&str> {
    let listed = Answer::result(answer).as_array().into_iter().flatten();
    listed.filter_map(|q| q["queue_name"].as_str()).collect()
}

/// Creates queue `name` with an HTTP pull consumer of the default
/// settings; its id.
pub async fn http_pull_queue(handle: &EmulatorHandle, name: &str) -> String {
    let id = create(handle, name).await;
    enable_http_pull(handle, &id, json!({})).await;
    id
}

/// A text message of a push request.
pub fn text(body: &str) -> Value {
    json!({"body": body, "content_type": "text"})
}
