//! A pull consumer on the local emulator: JSON orders handled concurrently,
//! a failing one retried, shutdown on Ctrl-C or once the queue is drained.
//!
//! `cargo run --example consumer --features consumer`

use std::time::Duration;

use cf_queues::Message;
use cf_queues::consumer::{Consumer, RetryDelay, Verdict};
use cf_queues_emulator::Emulator;

#[derive(serde::Deserialize)]
struct Order {
    id: u64,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let emulator = Emulator::new().start().await?;
    let queue = emulator.client()?.queue("orders")?;
    for id in 0..20 {
        queue
            .push(Message::json(&serde_json::json!({ "id": id }))?)
            .await?;
    }

    let consumer = Consumer::builder(queue)
        .batch_size(10)
        .retry_delay(RetryDelay::fixed(Duration::from_secs(1)))
        .build()?;
    let stop = consumer.shutdown_token();
    let monitor = consumer.monitor();
    tokio::spawn(async move {
        // Stop once everything is acknowledged (or on Ctrl-C, in a real service).
        while monitor.snapshot().acked < 20 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        stop.cancel();
    });

    let summary = consumer
        .run(|message| async move {
            let order: Order = message.body().json()?;
            if order.id == 7 && message.attempts == 1 {
                // Fails once: retried after a second.
                return Err(format!("order {} is not ready", order.id).into());
            }
            println!("order {} (attempt {})", order.id, message.attempts);
            Ok::<_, Box<dyn std::error::Error + Send + Sync>>(Verdict::Ack)
        })
        .await?;
    println!(
        "handled {}, acked {}, handler errors {}, leases lost {}",
        summary.handled, summary.acked, summary.handler_errors, summary.leases_lost
    );
    Ok(())
}
