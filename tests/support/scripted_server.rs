// Unused by the root package (its tests use `cf-queues-testkit`); kept only for `cfq/tests/cli/support.rs`, which phase 2 of the test kit moves to the kit, removing this file.
//! A server that answers as a test's script says, for what the emulator
//! never does (a message without a lease id, more messages than asked for,
//! an ack answer without its counts, an ack applied and answered with a
//! 500), and the envelopes such scripts answer with.
//!
//! Shared by the consumer and producer tests and by `cfq`'s tests
//! (`#[path]`-included: test code of one repository, never published).

use cf_queues::Queue;
use cf_queues::retry::RetryPolicy;

/// Queue `id` of the client `builder` makes, set to send one request per
/// call and to keep no timers of its own (pool reaping) that would move
/// paused time.
pub fn one_request_per_call(builder: cf_queues::ClientBuilder, id: &str) -> Queue {
    builder
        .http_client(reqwest::Client::builder().pool_idle_timeout(None))
        .retry(RetryPolicy::none())
        .build()
        .expect("client")
        .queue(id)
        .expect("queue id")
}

/// What a scripted server answers: a status and a JSON body, from the
/// operation (the path's last segment: "pull", "ack", ...) and the request's
/// JSON body.
pub type Script = Box<dyn FnMut(&str, &serde_json::Value) -> (u16, serde_json::Value) + Send>;

/// A server on the test's runtime that answers as its script says, for what
/// the emulator never does (a message without a lease id, more messages than
/// asked for, an ack applied and answered with a 500). Loopback I/O on the
/// test's own runtime, like the emulator: paused time moves only when every
/// task waits on a timer.
pub struct Scripted {
    pub base_url: String,
    /// Every request, as (operation, JSON body).
    pub requests: std::sync::Arc<std::sync::Mutex<Vec<(String, serde_json::Value)>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Scripted {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Scripted {
    /// The bodies of the requests of one operation, in order.
    pub fn bodies(&self, operation: &str) -> Vec<serde_json::Value> {
        self.requests
            .lock()
            .expect("not poisoned")
            .iter()
            .filter(|(op, _)| op == operation)
            .map(|(_, body)| body.clone())
            .collect()
    }

    /// A queue on this server whose client retries as by default (with
    /// quick backoff), for what happens only on a retry.
    pub fn queue_with_retries(&self) -> Queue {
        cf_queues::Client::builder()
            .api_token("scripted-token")
            .account_id("023e105f4ecef8ad9ca31a8372d0c353")
            .base_url(&self.base_url)
            .http_client(reqwest::Client::builder().pool_idle_timeout(None))
            .retry(RetryPolicy::default().backoff(
                std::time::Duration::from_millis(10),
                std::time::Duration::from_millis(500),
            ))
            .build()
            .expect("client")
            .queue("scripted")
            .expect("queue id")
    }

    /// A queue on this server whose client makes one request per call.
    pub fn queue(&self) -> Queue {
        let builder = cf_queues::Client::builder()
            .api_token("scripted-token")
            .account_id("023e105f4ecef8ad9ca31a8372d0c353")
            .base_url(&self.base_url);
        one_request_per_call(builder, "scripted")
    }
}

pub async fn scripted(
    script: impl FnMut(&str, &serde_json::Value) -> (u16, serde_json::Value) + Send + 'static,
) -> Scripted {
    use axum::extract::State;
    use axum::http::{StatusCode, Uri, header};
    use axum::response::IntoResponse as _;
    use std::sync::{Arc, Mutex};

    type Shared = (
        Arc<Mutex<Script>>,
        Arc<Mutex<Vec<(String, serde_json::Value)>>>,
    );
    async fn answer(
        State((script, requests)): State<Shared>,
        uri: Uri,
        body: String,
    ) -> axum::response::Response {
        let body: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
        let operation = uri.path().rsplit('/').next().unwrap_or_default().to_owned();
        let (status, reply) = (script.lock().expect("not poisoned"))(&operation, &body);
        requests
            .lock()
            .expect("not poisoned")
            .push((operation, body));
        (
            StatusCode::from_u16(status).expect("a status"),
            [(header::CONTENT_TYPE, "application/json")],
            reply.to_string(),
        )
            .into_response()
    }

    let requests = Arc::default();
    let script: Script = Box::new(script);
    let router = axum::Router::new()
        .fallback(answer)
        .with_state((Arc::new(Mutex::new(script)), Arc::clone(&requests)));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let base_url = format!("http://{}", listener.local_addr().expect("address"));
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    Scripted {
        base_url,
        requests,
        task,
    }
}

/// Cloudflare's success envelope around `result`.
pub fn success(result: serde_json::Value) -> serde_json::Value {
    serde_json::json!({"success": true, "errors": [], "messages": [], "result": result})
}

/// Cloudflare's failure envelope.
pub fn failure(code: u32, message: &str) -> serde_json::Value {
    serde_json::json!({"success": false, "errors": [{"code": code, "message": message}], "messages": [], "result": null})
}

/// A pull's answer: text messages, each an id and a lease id (or none).
pub fn pulled(messages: &[(&str, Option<&str>)]) -> serde_json::Value {
    let messages: Vec<serde_json::Value> = messages
        .iter()
        .map(|(id, lease)| {
            let mut message = serde_json::json!({
                "id": id, "attempts": 1, "body": format!("body of {id}"),
                "metadata": {"CF-Content-Type": "text"}, "timestamp_ms": 1_710_950_954_154u64,
            });
            if let Some(lease) = lease {
                message["lease_id"] = (*lease).into();
            }
            message
        })
        .collect();
    success(serde_json::json!({"messages": messages, "message_backlog_count": 0}))
}

/// An ack's answer for `request`: everything applied, but for the lease
/// ids in `warned`, which get a warning each.
pub fn acked(request: &serde_json::Value, warned: &[&str]) -> serde_json::Value {
    let count = |key: &str| {
        request[key].as_array().map_or(0, |list| {
            list.iter()
                .filter(|e| !warned.contains(&e["lease_id"].as_str().unwrap_or_default()))
                .count()
        })
    };
    let warnings: serde_json::Map<String, serde_json::Value> = warned
        .iter()
        .map(|lease| ((*lease).to_owned(), "lease not found".into()))
        .collect();
    success(serde_json::json!({
        "ackCount": count("acks"), "retryCount": count("retries"), "warnings": warnings,
    }))
}

/// The lease ids of an ack request's `acks` (or `retries`).
pub fn lease_ids(request: &serde_json::Value, key: &str) -> Vec<String> {
    request[key]
        .as_array()
        .map(|list| {
            list.iter()
                .filter_map(|e| e["lease_id"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}
