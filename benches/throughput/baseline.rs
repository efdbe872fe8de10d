//! The baseline every figure is compared with: the same push / pull / ack
//! cycle sent with a bare `reqwest::Client` and pre-built JSON, without the
//! client layer, so that what the client costs shows apart from the noise of
//! a shared machine.

use std::time::{Duration, Instant};

use bytes::Bytes;
use cf_queues_emulator::{EMULATOR_ACCOUNT_ID, EmulatorHandle};
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderValue};
use serde::de::IgnoredAny;
use serde::{Deserialize, Serialize};

use cf_queues_testkit::bench::{BATCH, Result, VISIBILITY};

/// The baseline: the same cycle with a bare `reqwest::Client`, pre-built JSON,
/// and a parse of the pull response just deep enough to find the lease ids.
#[derive(Clone)]
pub(crate) struct RawQueue {
    pub name: String,
    http: reqwest::Client,
    auth: HeaderValue,
    batch_url: String,
    pull_url: String,
    ack_url: String,
    batch_body: Bytes,
    pull_body: Bytes,
}

#[derive(Deserialize)]
struct Envelope<T> {
    success: bool,
    result: Option<T>,
}

#[derive(Deserialize)]
struct PullResult {
    messages: Vec<Leased>,
}

#[derive(Deserialize)]
struct Leased {
    lease_id: String,
}

#[derive(Deserialize)]
struct AckResult {
    #[serde(rename = "ackCount")]
    ack_count: usize,
}

#[derive(Serialize)]
struct AckBody<'a> {
    acks: Vec<AckLease<'a>>,
}

#[derive(Serialize)]
struct AckLease<'a> {
    lease_id: &'a str,
}

#[derive(Serialize)]
struct BatchBody<'a> {
    messages: Vec<TextMessage<'a>>,
}

#[derive(Serialize)]
struct TextMessage<'a> {
    body: &'a str,
    content_type: &'static str,
}

impl RawQueue {
    pub(crate) fn new(
        emulator: &EmulatorHandle,
        name: &str,
        bodies: &[String],
    ) -> Result<RawQueue> {
        let token = emulator
            .token()
            .ok_or("the emulator accepts any token; expected a generated one")?;
        let root = format!(
            "{}/accounts/{EMULATOR_ACCOUNT_ID}/queues/{name}/messages",
            emulator.base_url()
        );
        let batch = BatchBody {
            messages: bodies
                .iter()
                .map(|body| TextMessage {
                    body,
                    content_type: "text",
                })
                .collect(),
        };
        let pull = serde_json::json!({
            "batch_size": BATCH,
            "visibility_timeout_ms": VISIBILITY.as_millis() as u64,
        });
        Ok(RawQueue {
            name: name.to_owned(),
            http: reqwest::Client::new(),
            auth: HeaderValue::from_str(&format!("Bearer {token}"))?,
            batch_url: format!("{root}/batch"),
            pull_url: format!("{root}/pull"),
            ack_url: format!("{root}/ack"),
            batch_body: serde_json::to_vec(&batch)?.into(),
            pull_body: serde_json::to_vec(&pull)?.into(),
        })
    }

    async fn post<T: for<'de> Deserialize<'de>>(&self, url: &str, body: Bytes) -> Result<T> {
        let response = self
            .http
            .post(url)
            .header(AUTHORIZATION, self.auth.clone())
            .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
            .body(body)
            .send()
            .await
            .map_err(|e| format!("POST {url}: {e}"))?;
        let status = response.status();
        let bytes = response
            .bytes()
            .await
            .map_err(|e| format!("POST {url}: reading the response: {e}"))?;
        let snippet = || String::from_utf8_lossy(&bytes[..bytes.len().min(300)]).into_owned();
        if !status.is_success() {
            return Err(format!("POST {url}: HTTP {status}: {}", snippet()).into());
        }
        let envelope: Envelope<T> = serde_json::from_slice(&bytes)
            .map_err(|e| format!("POST {url}: unexpected response ({e}): {}", snippet()))?;
        match envelope {
            Envelope {
                success: true,
                result: Some(result),
            } => Ok(result),
            _ => Err(format!("POST {url}: not a success: {}", snippet()).into()),
        }
    }

    /// Pushes 100, pulls up to 100 and acks what it pulled: the time of each
    /// step, and how many messages it acked.
    pub(crate) async fn round(&self) -> Result<(Duration, Duration, Duration, usize)> {
        let t0 = Instant::now();
        self.post::<IgnoredAny>(&self.batch_url, self.batch_body.clone())
            .await?;
        let t1 = Instant::now();
        let pulled: PullResult = self.post(&self.pull_url, self.pull_body.clone()).await?;
        let t2 = Instant::now();
        let expected = pulled.messages.len();
        self.ack(&pulled.messages).await?;
        let t3 = Instant::now();
        Ok((t1 - t0, t2 - t1, t3 - t2, expected))
    }

    /// Pulls up to 100 and acks what it pulled, without a push: how many it acked.
    pub(crate) async fn pull_and_ack(&self) -> Result<usize> {
        let pulled: PullResult = self.post(&self.pull_url, self.pull_body.clone()).await?;
        self.ack(&pulled.messages).await?;
        Ok(pulled.messages.len())
    }

    /// Acks every pulled message; fewer acked is an error.
    async fn ack(&self, messages: &[Leased]) -> Result<()> {
        let expected = messages.len();
        if expected == 0 {
            return Ok(());
        }
        let acks = AckBody {
            acks: messages
                .iter()
                .map(|m| AckLease {
                    lease_id: &m.lease_id,
                })
                .collect(),
        };
        let body = Bytes::from(serde_json::to_vec(&acks)?);
        let result: AckResult = self.post(&self.ack_url, body).await?;
        if result.ack_count != expected {
            return Err(format!(
                "ack on {}: acked {} of {expected} leases",
                self.name, result.ack_count
            )
            .into());
        }
        Ok(())
    }
}
