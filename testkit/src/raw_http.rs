//! Raw HTTP to the emulator, without the client: for what the client never
//! sends (a bad body, a wrong method) and for reading Cloudflare's shapes
//! field by field, headers included.

use cf_queues_emulator::{EMULATOR_ACCOUNT_ID, EmulatorHandle};
pub use reqwest::Method;
use serde_json::{Value, json};

/// What one call answered.
#[derive(Debug)]
pub struct Answer {
    /// The status code.
    pub status: u16,
    /// Every header of the answer.
    pub headers: reqwest::header::HeaderMap,
    /// The body: its JSON when it parses, the text otherwise.
    pub body: Value,
}

impl Answer {
    /// Header `name`, when present and text.
    pub fn header(&self, name: &str) -> Option<String> {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    }

    /// The `content-type` header, or `""`.
    pub fn content_type(&self) -> String {
        self.header("content-type").unwrap_or_default()
    }

    /// The code of the first error, when there is one.
    pub fn code(&self) -> Option<u64> {
        self.body["errors"][0]["code"].as_u64()
    }

    /// The `result` of a success, checking the status and the envelope.
    pub fn result(&self) -> &Value {
        let body = &self.body;
        assert_eq!(self.status, 200, "{body}");
        assert_eq!(body["success"], json!(true), "{body}");
        assert_eq!(
            (&body["errors"], &body["messages"]),
            (&json!([]), &json!([]))
        );
        &body["result"]
    }

    /// The status and the first error's code and message of a failure,
    /// checking that the envelope says it failed.
    pub fn failure(&self) -> (u16, u64, String) {
        let body = &self.body;
        assert_eq!(body["success"], json!(false), "{body}");
        let error = &body["errors"][0];
        (
            self.status,
            error["code"].as_u64().unwrap_or(u64::MAX),
            error["message"].as_str().unwrap_or_default().to_owned(),
        )
    }
}

/// `/accounts/{account}/queues` of the emulator's account, then `rest`.
pub fn queues(rest: &str) -> String {
    format!("/accounts/{EMULATOR_ACCOUNT_ID}/queues{rest}")
}

/// `/accounts/{account}/event_subscriptions/subscriptions` of the
/// emulator's account, then `rest`.
pub fn subscriptions(rest: &str) -> String {
    format!("/accounts/{EMULATOR_ACCOUNT_ID}/event_subscriptions/subscriptions{rest}")
}

/// The path of `rest` (`"/messages"`, `"/messages/pull"`, ...) on `queue`
/// of the emulator's account.
pub fn queue_path(queue: &str, rest: &str) -> String {
    queues(&format!("/{queue}{rest}"))
}

/// A request to `path` with the emulator's token and `body` as JSON.
pub async fn call(
    handle: &EmulatorHandle,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> Answer {
    call_with(handle, handle.base_url(), method, path, body, &[]).await
}

/// A request to `root` then `path` with the emulator's token, these extra
/// headers, and `body` as JSON.
pub async fn call_with(
    handle: &EmulatorHandle,
    root: &str,
    method: Method,
    path: &str,
    body: Option<Value>,
    headers: &[(&str, &str)],
) -> Answer {
    let mut request = reqwest::Client::new()
        .request(method, format!("{root}{path}"))
        .bearer_auth(handle.token().unwrap_or_default());
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    if let Some(body) = body {
        request = request
            .header("content-type", "application/json")
            .body(body.to_string());
    }
    answer(request.send().await.expect("request completes")).await
}

/// A POST of `body` as it is, JSON or not, to `path` with the emulator's
/// token and a JSON content type: for what the client refuses to send.
pub async fn post_text(handle: &EmulatorHandle, path: &str, body: String) -> Answer {
    let response = reqwest::Client::new()
        .post(format!("{}{path}", handle.base_url()))
        .bearer_auth(handle.token().unwrap_or_default())
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .expect("request completes");
    answer(response).await
}

/// The status, headers and body of `response`.
async fn answer(response: reqwest::Response) -> Answer {
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let text = response.text().await.expect("body");
    Answer {
        status,
        headers,
        body: serde_json::from_str(&text).unwrap_or(Value::String(text)),
    }
}

/// Pushes `body` (a push request's JSON) to `queue`.
pub async fn push(handle: &EmulatorHandle, queue: &str, body: Value) -> Answer {
    let path = queue_path(queue, "/messages");
    call(handle, Method::POST, &path, Some(body)).await
}

/// Pushes `count` messages with bodies `"0"`, `"1"`, ... to `queue` in one
/// batch, checking that it was accepted.
pub async fn push_many(handle: &EmulatorHandle, queue: &str, count: usize) {
    let messages: Vec<Value> = (0..count)
        .map(|i| json!({ "body": i.to_string() }))
        .collect();
    let answer = call(
        handle,
        Method::POST,
        &queue_path(queue, "/messages/batch"),
        Some(json!({ "messages": messages })),
    )
    .await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
}

/// Pulls from `queue` with `body` (a pull request's JSON).
pub async fn pull(handle: &EmulatorHandle, queue: &str, body: Value) -> Answer {
    let path = queue_path(queue, "/messages/pull");
    call(handle, Method::POST, &path, Some(body)).await
}

/// The lease ids of the messages a pull answered.
pub fn lease_ids(answer: &Answer) -> Vec<String> {
    answer.body["result"]["messages"]
        .as_array()
        .map(|messages| {
            messages
                .iter()
                .filter_map(|m| m["lease_id"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// Whether `id` is 32 lowercase hex digits, as Cloudflare's ids are.
pub fn is_hex32(id: &str) -> bool {
    id.len() == 32
        && id
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Creates a queue by the API; returns its id, checked to be 32 hex digits.
pub async fn create(handle: &EmulatorHandle, name: &str) -> String {
    let answer = call(
        handle,
        Method::POST,
        &queues(""),
        Some(json!({"queue_name": name})),
    )
    .await;
    let id = answer.result()["queue_id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(is_hex32(&id), "{id:?}");
    id
}

/// Enables HTTP pull on queue `id` with the settings in `consumer`;
/// returns the consumer id.
pub async fn enable_http_pull(handle: &EmulatorHandle, id: &str, consumer: Value) -> String {
    let mut body = json!({"type": "http_pull"});
    if let (Some(body), Some(extra)) = (body.as_object_mut(), consumer.as_object()) {
        body.extend(extra.clone());
    }
    let answer = call(
        handle,
        Method::POST,
        &queue_path(id, "/consumers"),
        Some(body),
    )
    .await;
    answer.result()["consumer_id"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Body, lease id and attempts of each message a pull answered (`answer`
/// is the whole envelope).
pub fn leased(answer: &Value) -> Vec<(String, String, u64)> {
    answer["result"]["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|m| {
            (
                m["body"].as_str().unwrap_or_default().to_owned(),
                m["lease_id"].as_str().unwrap_or_default().to_owned(),
                m["attempts"].as_u64().unwrap_or_default(),
            )
        })
        .collect()
}

/// A raw client of one emulator that outlives no handle of it: it keeps
/// the base URL and token, for a test that stops and starts the emulator
/// on its data directory. Paths are under the emulator's account.
pub struct Raw {
    base: String,
    token: String,
    http: reqwest::Client,
}

impl std::fmt::Debug for Raw {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The token stays out of test output.
        f.debug_struct("Raw")
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

impl Raw {
    /// A client of `handle`'s emulator.
    pub fn new(handle: &EmulatorHandle) -> Raw {
        Raw::at(handle.base_url(), handle.token().unwrap_or_default())
    }

    /// A client of the emulator at `base_url` (a `cfq emulator` child's,
    /// say) with `token`.
    pub fn at(base_url: &str, token: &str) -> Raw {
        Raw {
            base: format!("{base_url}/accounts/{EMULATOR_ACCOUNT_ID}"),
            token: token.to_owned(),
            http: reqwest::Client::new(),
        }
    }

    /// `method` on `path` under the account, with `body` as JSON unless it
    /// is null: the status and the JSON answer (null when it is not JSON).
    pub async fn call(&self, method: Method, path: &str, body: Value) -> (u16, Value) {
        let mut request = self
            .http
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(&self.token);
        if !body.is_null() {
            request = request.json(&body);
        }
        let response = request.send().await.expect("request sent");
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    /// `POST` of `body` to `path` under the account.
    pub async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        self.call(Method::POST, path, body).await
    }

    /// Pushes text bodies to `queue` in one batch; the status.
    pub async fn push(&self, queue: &str, bodies: &[String]) -> u16 {
        let messages: Vec<Value> = bodies
            .iter()
            .map(|b| json!({"body": b, "content_type": "text"}))
            .collect();
        let path = format!("/queues/{queue}/messages/batch");
        self.post(&path, json!({ "messages": messages })).await.0
    }

    /// Pulls up to `n` messages from `queue` for `visibility_ms`, checking
    /// the status: body, lease id and attempts of each.
    pub async fn pull(
        &self,
        queue: &str,
        n: u32,
        visibility_ms: u64,
    ) -> Vec<(String, String, u64)> {
        let path = format!("/queues/{queue}/messages/pull");
        let body = json!({"batch_size": n, "visibility_timeout_ms": visibility_ms});
        let (status, answer) = self.post(&path, body).await;
        assert_eq!(status, 200, "{answer}");
        leased(&answer)
    }

    /// Acks these lease ids on `queue`: the status and the `ackCount`.
    pub async fn ack(&self, queue: &str, leases: &[String]) -> (u16, u64) {
        let acks: Vec<Value> = leases.iter().map(|l| json!({"lease_id": l})).collect();
        let path = format!("/queues/{queue}/messages/ack");
        let (status, answer) = self.post(&path, json!({"acks": acks, "retries": []})).await;
        (status, answer["result"]["ackCount"].as_u64().unwrap_or(0))
    }

    /// The backlog of `queue` by its metrics (`u64::MAX` when unreadable).
    pub async fn backlog(&self, queue: &str) -> u64 {
        let path = format!("/queues/{queue}/metrics");
        let (_, answer) = self.call(Method::GET, &path, Value::Null).await;
        answer["result"]["backlog_count"]
            .as_u64()
            .unwrap_or(u64::MAX)
    }
}
