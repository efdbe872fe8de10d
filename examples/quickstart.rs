//! Creates a queue by name and enables HTTP pull on it, then pushes, pulls,
//! extends leases, acknowledges, retries, peeks and purges on it, and prints
//! its backlog.
//!
//! With no credentials in the environment it starts the embedded emulator and
//! runs there, so it works offline:
//!
//! ```text
//! cargo run --example quickstart
//! ```
//!
//! Against Cloudflare: set `CLOUDFLARE_API_TOKEN` (or `CLOUDFLARE_API_KEY` and
//! `CLOUDFLARE_EMAIL`), `CLOUDFLARE_ACCOUNT_ID` and `CLOUDFLARE_QUEUE_ID` (or
//! `CLOUDFLARE_QUEUE_NAME`: the queue is found by name), optionally
//! `CLOUDFLARE_BASE_URL`, then run the same command. It uses an existing
//! queue there, whose HTTP pull must be enabled (`cfq consumer enable`).

use std::process::ExitCode;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use cf_queues::batch::Batch;
use cf_queues::resources::HttpPullSettings;
use cf_queues::{Acks, Body, Client, Credentials, Message, PullOptions, Queue};
use cf_queues_emulator::{Emulator, EmulatorHandle};

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
        // The path a new queue takes on Cloudflare: created by name, then
        // HTTP pull enabled with the delivery settings (until then a pull
        // answers 405, `Error::is_pull_disabled`).
        let queue = emulator.client()?.create_queue("quickstart").await?;
        let consumer = queue
            .enable_http_pull(HttpPullSettings::new().max_retries(3))
            .await?;
        println!(
            "created queue {:?} ({}), HTTP pull enabled with max_retries {:?}",
            queue.name().unwrap_or_default(),
            queue.id(),
            consumer.settings.max_retries
        );
        return Ok((queue, Some(emulator)));
    }
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    let (account, queue_id, queue_name) = (
        var("CLOUDFLARE_ACCOUNT_ID"),
        var("CLOUDFLARE_QUEUE_ID"),
        var("CLOUDFLARE_QUEUE_NAME"),
    );
    if account.is_empty() || (queue_id.is_empty() && queue_name.is_empty()) {
        return Err(
            "credentials are set: also set CLOUDFLARE_ACCOUNT_ID and CLOUDFLARE_QUEUE_ID \
                    or CLOUDFLARE_QUEUE_NAME (and optionally CLOUDFLARE_BASE_URL), or unset the \
                    credentials to use the emulator"
                .into(),
        );
    }
    let client = Client::from_env()?;
    let queue = if queue_id.is_empty() {
        client.queue_by_name(&queue_name).await?
    } else {
        client.queue(queue_id)?
    };
    Ok((queue, None))
}

/// The whole tour: every operation once, printing what happens.
///
/// On a real queue other producers' messages may show up too: every message
/// this run pushes carries a run tag, and only tagged ones are acknowledged,
/// retried or purged. Others are put back at once (their attempt still
/// counts, as with any pull), so point it at a queue meant for testing.
async fn tour(queue: &Queue) -> Result<(), Box<dyn std::error::Error>> {
    let run = format!(
        "run-{:x}",
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    );
    queue
        .push(Message::text(format!("{run}: hello from cf-queues")))
        .await?;
    println!("pushed a text message");
    let order = serde_json::json!({"run": run, "order": 42, "items": ["tea", "scones"]});
    queue.push(Message::json(&order)?).await?;
    println!("pushed a JSON message: {order}");
    let batch = Batch::new((1..=3).map(|i| Message::text(format!("{run}: batch message {i}"))));
    let receipt = queue.push_batch(batch).await?;
    println!("pushed a batch of 3; metrics: {:?}", receipt.metrics);

    let options = PullOptions::new()
        .batch_size(10)
        .visibility_timeout(Duration::from_secs(30));
    let pulled = queue.pull(options).await?;
    println!(
        "pulled {} messages ({} in the backlog)",
        pulled.messages.len(),
        known(pulled.backlog_count)
    );
    let mut acks = Acks::new();
    let mut retried_one = false;
    let mut ours_pulled = Vec::new();
    for message in &pulled.messages {
        let (shown, ours) = describe(message.body(), &run);
        println!(
            "  [{}] attempt {} {}: {shown}",
            message.id,
            message.attempts,
            message.content_type()
        );
        if ours {
            ours_pulled.push(message);
        }
        acks = match (ours, retried_one) {
            (false, _) => acks.retry(message), // not ours: back on the queue at once
            (true, false) => {
                retried_one = true;
                acks.retry(message)
            }
            (true, true) => acks.ack(message),
        };
    }
    // Handling takes longer than planned: keep this run's leases for
    // another minute from now, without using an attempt.
    let extended = queue
        .extend(ours_pulled.iter().copied(), Duration::from_secs(60))
        .await?;
    println!(
        "extended {} of our {} leases by 60 s; warnings {:?}",
        known(extended.extended),
        ours_pulled.len(),
        extended.warnings
    );
    let outcome = queue.ack(acks).await?;
    println!(
        "acked {}, retried {}, warnings {:?}",
        known(outcome.acked),
        known(outcome.retried),
        outcome.warnings
    );

    let peeked = queue.peek(10).await?;
    println!("peeked {} messages", peeked.len());
    let mut ours = Vec::new();
    for message in &peeked {
        let (shown, is_ours) = describe(message.body(), &run);
        println!("  [{}] {shown}", message.id);
        if is_ours {
            ours.push(message);
        }
    }
    if !ours.is_empty() {
        let purged = queue.purge(ours.iter().copied()).await?;
        println!(
            "purged {} of our messages; warnings {:?}",
            ours.len(),
            purged.warnings
        );
    }

    let metrics = queue.metrics().await?;
    println!(
        "backlog now: {} messages, {} bytes, oldest pushed at {} ms",
        metrics.backlog_count, metrics.backlog_bytes, metrics.oldest_message_timestamp_ms
    );
    Ok(())
}

/// A body as text for printing, and whether this run pushed it.
fn describe(body: &Body, run: &str) -> (String, bool) {
    match body.json::<serde_json::Value>() {
        Ok(json) => {
            let ours = json.get("run").and_then(|r| r.as_str()) == Some(run);
            (json.to_string(), ours)
        }
        Err(_) => match body.text() {
            Ok(text) => (text.to_owned(), text.starts_with(run)),
            Err(e) => (e.to_string(), false),
        },
    }
}

/// A count the API may leave out: Cloudflare's answers do not always carry
/// one, and an absent count means unknown, not 0.
fn known(count: Option<impl std::fmt::Display>) -> String {
    count.map_or_else(|| "an unknown number of".to_owned(), |n| n.to_string())
}
