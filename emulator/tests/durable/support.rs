//! What the durability tests share: raw HTTP calls to an emulator on a
//! data directory, and the directory's size.

use std::path::Path;

use cf_queues_emulator::{EMULATOR_ACCOUNT_ID, Emulator, EmulatorHandle};
use serde_json::{Value, json};

/// Starts an emulator on `dir`, configured further by `configure`.
pub async fn start_on(dir: &Path, configure: impl FnOnce(Emulator) -> Emulator) -> EmulatorHandle {
    configure(Emulator::new().data_dir(dir))
        .start()
        .await
        .expect("emulator starts on the data directory")
}

/// A raw client of one emulator.
pub struct Raw {
    base: String,
    token: String,
    http: reqwest::Client,
}

impl Raw {
    pub fn new(handle: &EmulatorHandle) -> Raw {
        Raw {
            base: format!("{}/accounts/{EMULATOR_ACCOUNT_ID}", handle.base_url()),
            token: handle.token().unwrap_or_default().to_owned(),
            http: reqwest::Client::new(),
        }
    }

    /// `method` on `path` under the account, with a JSON body.
    pub async fn call(&self, method: reqwest::Method, path: &str, body: Value) -> (u16, Value) {
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

    pub async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        self.call(reqwest::Method::POST, path, body).await
    }

    /// Pushes text bodies in one batch; the status.
    pub async fn push(&self, queue: &str, bodies: &[String]) -> u16 {
        let messages: Vec<Value> = bodies
            .iter()
            .map(|b| json!({"body": b, "content_type": "text"}))
            .collect();
        let path = format!("/queues/{queue}/messages/batch");
        self.post(&path, json!({ "messages": messages })).await.0
    }

    /// Pulls up to `n` messages: (body, lease id, attempts) each.
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

    /// Acks lease ids; (status, ackCount).
    pub async fn ack(&self, queue: &str, leases: &[String]) -> (u16, u64) {
        let acks: Vec<Value> = leases.iter().map(|l| json!({"lease_id": l})).collect();
        let path = format!("/queues/{queue}/messages/ack");
        let (status, answer) = self.post(&path, json!({"acks": acks, "retries": []})).await;
        (status, answer["result"]["ackCount"].as_u64().unwrap_or(0))
    }

    pub async fn backlog(&self, queue: &str) -> u64 {
        let path = format!("/queues/{queue}/metrics");
        let (_, answer) = self.call(reqwest::Method::GET, &path, Value::Null).await;
        answer["result"]["backlog_count"]
            .as_u64()
            .unwrap_or(u64::MAX)
    }
}

/// Bytes of every file in `dir`.
pub fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.metadata().ok())
        .map(|m| m.len())
        .sum()
}
