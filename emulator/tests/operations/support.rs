//! What the operations tests share beyond the test kit: raw-HTTP calls by
//! method, with the emulator's token and a JSON body, so that each request
//! reads on one line as the request it is.

use cf_queues_emulator::EmulatorHandle;
use cf_queues_testkit::raw_http::{Answer, call};
use reqwest::Method;
use serde_json::Value;

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
