//! Pushes, pulls, acknowledges, retries, peeks and purges on one queue.
//!
//! With no credentials in the environment it starts the embedded emulator and
//! runs there, so it works offline:
//!
//! ```text
//! cargo run --all-features --example quickstart
//! ```
//!
//! Against Cloudflare: set `CLOUDFLARE_API_TOKEN` (or `CLOUDFLARE_API_KEY` and
//! `CLOUDFLARE_EMAIL`), `CLOUDFLARE_ACCOUNT_ID` and `CLOUDFLARE_QUEUE_ID`,
//! optionally `CLOUDFLARE_BASE_URL`, then run the same command.

use std::process::ExitCode;
use std::time::Duration;

use cf_queues::emulator::{Emulator, EmulatorHandle};
use cf_queues::{Acks, Batch, Client, Credentials, Message, PullOptions, Queue};

#[tokio::main]
async fn main() -> ExitCode {
    match run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("quickstart failed: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn run() -> Result<(), Box<dyn std::error::Error>> {
    let (queue, emulator) = connect().await?;
    println!(
        "using queue {} at {}",
        queue.id(),
        queue.client().base_url()
    );
    tour(&queue).await?;
    if let Some(emulator) = emulator {
        emulator.shutdown().await?;
    }
    Ok(())
}

/// The real API when credentials are set, the embedded emulator otherwise.
async fn connect() -> Result<(Queue, Option<EmulatorHandle>), Box<dyn std::error::Error>> {
    if Credentials::from_env()?.is_none() {
        println!("no Cloudflare credentials set: starting the embedded emulator");
        let emulator = Emulator::new().start().await?;
        let queue = emulator.client()?.queue("quickstart")?;
        return Ok((queue, Some(emulator)));
    }
    let account = std::env::var("CLOUDFLARE_ACCOUNT_ID").unwrap_or_default();
    let queue_id = std::env::var("CLOUDFLARE_QUEUE_ID").unwrap_or_default();
    if account.is_empty() || queue_id.is_empty() {
        return Err("credentials are set: also set CLOUDFLARE_ACCOUNT_ID and CLOUDFLARE_QUEUE_ID \
                    (and optionally CLOUDFLARE_BASE_URL), or unset the credentials to use the emulator"
            .into());
    }
    Ok((Client::from_env()?.queue(queue_id)?, None))
}

/// The whole tour: every operation once, printing what happens.
async fn tour(queue: &Queue) -> Result<(), Box<dyn std::error::Error>> {
    queue.push(Message::text("hello from cf-queues")).await?;
    println!("pushed a text message");
    let order = serde_json::json!({"order": 42, "items": ["tea", "scones"]});
    queue.push(Message::json(&order)?).await?;
    println!("pushed a JSON message: {order}");
    let batch = Batch::new((1..=3).map(|i| Message::text(format!("batch message {i}"))));
    let receipt = queue.push_batch(batch).await?;
    println!("pushed a batch of 3; metrics: {:?}", receipt.metrics);

    let pulled = queue
        .pull(
            PullOptions::new()
                .batch_size(10)
                .visibility_timeout(Duration::from_secs(30)),
        )
        .await?;
    println!(
        "pulled {} messages ({} in the backlog)",
        pulled.messages.len(),
        pulled.backlog_count
    );
    let mut acks = Acks::new();
    for (i, message) in pulled.messages.iter().enumerate() {
        let shown = match message.body().json::<serde_json::Value>() {
            Ok(json) => json.to_string(),
            Err(_) => message
                .body()
                .text()
                .map_or_else(|e| e.to_string(), str::to_owned),
        };
        println!(
            "  [{}] attempt {} {}: {shown}",
            message.id,
            message.attempts,
            message.content_type()
        );
        // Retry one message, acknowledge the rest.
        acks = if i == 0 {
            acks.retry(message)
        } else {
            acks.ack(message)
        };
    }
    let outcome = queue.ack(acks).await?;
    println!(
        "acked {}, retried {}, warnings {:?}",
        outcome.acked, outcome.retried, outcome.warnings
    );

    let peeked = queue.peek(10).await?;
    println!("peeked {} messages", peeked.len());
    for message in &peeked {
        println!("  [{}] {}", message.id, message.body().raw());
    }
    if !peeked.is_empty() {
        let purged = queue.purge(&peeked).await?;
        println!(
            "purged {} refs; warnings {:?}",
            peeked.len(),
            purged.warnings
        );
    }
    Ok(())
}
